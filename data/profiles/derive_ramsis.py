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

import pandas as pd

from infsched.profiling.fit import monotone_table

HERE = Path(__file__).resolve().parent
RAW = "ramsis_latency_raw.csv"
MAX_BATCH = 32  # the artifact's N = 32 (spec ramsis §10 item 3)
OUTPUTS = {"image": "ramsis_image.csv", "text": "ramsis_text.csv"}
FLOAT_FORMAT = "%.6f"


def derive(folder: Path = HERE, max_batch: int = MAX_BATCH) -> dict[str, pd.DataFrame]:
    """The derived table of each task (``image``, ``text``) from ``folder/RAW``: the same recipe
    :func:`infsched.profiling.fit.monotone_table` applies to a profile measured here."""
    raw = pd.read_csv(folder / RAW)
    return {task: monotone_table(raw[raw["task"] == task], max_batch) for task in OUTPUTS}


def main() -> None:
    for task, df in derive().items():
        path = HERE / OUTPUTS[task]
        df.to_csv(path, index=False, float_format=FLOAT_FORMAT)
        print(f"wrote {path} ({len(df)} rows, {df['model'].nunique()} models)")


if __name__ == "__main__":
    main()
