"""Derive the RAMSIS profile tables ``ramsis_image.csv`` and ``ramsis_text.csv``.

Reads only this folder's raw copy ``ramsis_latency_raw.csv`` (the artifact's per-(model, batch)
summary statistics) and writes, per task, one row per (model, batch = 1..32):

- ``p95_ms``: the artifact's post-processed p95 (spec ramsis §5.1), via
  :func:`infsched.profiles.postprocess_p95`: raw p95 per profiled batch size, an OLS line
  filling the unprofiled sizes, then the downward monotone sweep;
- ``q0, q50, q95, q99, q100``: the spread, i.e. the shape of the latency distribution relative to
  its p95, taken from the batch size that ``p95_ms`` actually comes from: the sweep sets
  l(b) to the smallest filled value at any size >= b, so a lowered entry borrows the shape of the
  size it was lowered to (otherwise an outlier's shape, scaled to a much smaller p95, would give
  draws below the model's batch-1 latency). That size's shape is the one of its nearest profiled
  size <= it (the largest profiled size beyond the profiled range): min/p50/p95/p99 divided by
  the raw p95. ``q100`` is not the raw maximum, a single call among up to 170,000 (up to 75x the
  p95): the quantile function continues the p95 -> p99 slope over the last 1 % and stops there,
  or at the raw maximum if that is lower.

Run from the repository root:  ``.venv/bin/python data/profiles/derive_ramsis.py``
(the tests re-run :func:`derive` and compare with the committed tables).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from infsched.profiles import fill_p95, postprocess_p95

HERE = Path(__file__).resolve().parent
RAW = "ramsis_latency_raw.csv"
MAX_BATCH = 32  # the artifact's N = 32 (spec ramsis §10 item 3)
OUTPUTS = {"image": "ramsis_image.csv", "text": "ramsis_text.csv"}
# raw statistic -> spread column, in the order of infsched.profiles.QUANTILE_LEVELS
SPREAD = {"min_ms": "q0", "p50_ms": "q50", "p95_ms": "q95", "p99_ms": "q99", "max_ms": "q100"}
FLOAT_FORMAT = "%.6f"


def derive(folder: Path = HERE, max_batch: int = MAX_BATCH) -> dict[str, pd.DataFrame]:
    """The derived table of each task (``image``, ``text``) from ``folder/RAW``."""
    raw = pd.read_csv(folder / RAW)
    out: dict[str, pd.DataFrame] = {}
    for task, fname in OUTPUTS.items():
        rows = []
        part = raw[raw["task"] == task]
        # models in name order so the file is stable whatever the raw file's order
        for model in sorted(part["model"].unique()):
            prof = part[part["model"] == model].sort_values("batch")
            batches = prof["batch"].to_numpy(dtype=int)
            raw_p95 = prof["p95_ms"].to_numpy(dtype=float)
            filled = fill_p95(batches, raw_p95, max_batch)
            p95 = postprocess_p95(batches, raw_p95, max_batch)
            for b in range(1, max_batch + 1):
                carried = b + int(np.argmin(filled[b - 1:]))      # the size l(b) comes from
                le = batches[batches <= carried]
                src = prof[prof["batch"] == (le.max() if le.size else batches.min())].iloc[0]
                row = {"model": model, "batch": b, "p95_ms": p95[b - 1]}
                row.update({q: src[c] / src["p95_ms"] for c, q in SPREAD.items()})
                row["q100"] = min(row["q100"], row["q99"] + (row["q99"] - row["q95"]) / 4.0)
                rows.append(row)
        df = pd.DataFrame(rows)
        # round as written, so a fresh derivation compares equal to the file read back
        num = ["p95_ms", *SPREAD.values()]
        df[num] = np.round(df[num].to_numpy(dtype=float), 6)
        out[task] = df
    return out


def main() -> None:
    for task, df in derive().items():
        path = HERE / OUTPUTS[task]
        df.to_csv(path, index=False, float_format=FLOAT_FORMAT)
        print(f"wrote {path} ({len(df)} rows, {df['model'].nunique()} models)")


if __name__ == "__main__":
    main()
