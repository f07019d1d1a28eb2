"""Raw profile CSVs: one row per (model, batch size) with the latency statistics of repeated
timed calls, as ``infsched profile`` (:func:`infsched.profiling.profile_zoo`) writes them and the
RAMSIS artifact summarises its own. :func:`read_raw` checks one and says which line is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import ConfigError
from infsched.profiles.tables import read_checked_csv

__all__ = ["RAW_COLUMNS", "STAT_COLUMNS", "MAX_LATENCY_MS", "read_raw"]

#: the summary columns of one (model, batch) row, in ms (the RAMSIS raw schema)
STAT_COLUMNS = ("n_samples", "mean_ms", "std_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")
#: the largest latency statistic a raw profile may hold (ms): beyond it, a unit or parsing error
MAX_LATENCY_MS = 1e6
#: every column of a raw profile CSV
RAW_COLUMNS = ("task", "model", "batch", *STAT_COLUMNS, "device", "device_name", "threads",
               "precision", "compiled", "input", "torch")


def read_raw(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A raw profile CSV (written by :func:`infsched.profiling.profile_zoo` or ``infsched profile``), checked: the
    columns of :data:`RAW_COLUMNS` (the where-measured ones may be absent, as in the RAMSIS
    artifact's summary), finite positive statistics, no repeated (model, batch)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"profile file {p}: not found")
    try:
        head = pd.read_csv(p, nrows=0).columns
    except Exception as exc:  # empty, binary or not CSV: the file's fault, say which file
        why = "it is empty" if isinstance(exc, pd.errors.EmptyDataError) else \
            "it is not text (binary?)" if isinstance(exc, UnicodeDecodeError) else " ".join(str(exc).split())
        raise ConfigError(f"profile file {p}: cannot be read as a CSV profile: {why}") from None
    cols = tuple(c for c in RAW_COLUMNS if c in head) if set(RAW_COLUMNS[:11]) <= set(head) else RAW_COLUMNS
    df = read_checked_csv(p, cols, "profile file")
    if df.empty:
        raise ConfigError(f"profile file {p}: no rows")
    for c in ("batch", *STAT_COLUMNS):
        v = pd.to_numeric(df[c], errors="coerce")
        bad = ~np.isfinite(v.to_numpy(dtype=float)) | (v.to_numpy(dtype=float) < (1 if c in ("batch", "n_samples") else 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ConfigError(f"profile file {p}: line {i + 2} (model {df['model'].iloc[i]!r}): "
                              f"{c} = {str(df[c].iloc[i])!r} must be a finite number >= "
                              f"{1 if c in ('batch', 'n_samples') else 0}")
        if c in ("batch", "n_samples"):
            frac = v.to_numpy(dtype=float) % 1 != 0
            if frac.any():
                i = int(np.flatnonzero(frac)[0])
                raise ConfigError(f"profile file {p}: line {i + 2} (model {df['model'].iloc[i]!r}): "
                                  f"{c} = {str(df[c].iloc[i])!r} must be a whole number")
        elif (v.to_numpy(dtype=float) > MAX_LATENCY_MS).any():
            i = int(np.flatnonzero(v.to_numpy(dtype=float) > MAX_LATENCY_MS)[0])
            raise ConfigError(f"profile file {p}: line {i + 2} (model {df['model'].iloc[i]!r}): "
                              f"{c} = {str(df[c].iloc[i])!r} ms is not a plausible latency: it "
                              f"must be at most {MAX_LATENCY_MS:g} ms (a batch taking over 16 minutes)")
        df[c] = v
    df["batch"] = df["batch"].astype(int)
    bad_task = ~df["task"].isin(["image", "text"])
    if bad_task.any():
        i = int(np.flatnonzero(bad_task)[0])
        raise ConfigError(f"profile file {p}: line {i + 2}: task = {df['task'].iloc[i]!r} must be "
                          "'image' or 'text'")
    dup = df.duplicated(["model", "batch"])
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise ConfigError(f"profile file {p}: line {i + 2}: (model, batch) = "
                          f"({df['model'].iloc[i]!r}, {df['batch'].iloc[i]}) appears twice")
    return df
