"""The published profiles and the RAMSIS artifact's recipe for a batch-latency table.

:func:`load_profile` reads a published profile by name from ``data/profiles`` (the RAMSIS
artifact's image and text model sets, spec ramsis §5.1); :func:`postprocess_p95` is the
artifact's table from profiled p95s; :func:`read_checked_csv` the header check every profile
file goes through.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import ConfigError, config_error, require
from infsched.profiles.profile import QUANTILE_LEVELS, Profile, _is_int

__all__ = ["fill_p95", "postprocess_p95", "load_profile", "PROFILE_NAMES", "read_checked_csv",
           "TABLE_COLUMNS"]


# --------------------------------------------------------------------------- post-processing

def fill_p95(batches: np.ndarray | Iterable[int], p95: np.ndarray | Iterable[float],
             max_batch: int = 32) -> np.ndarray:
    """Steps 1–2 of :func:`postprocess_p95`: the profiled p95s at their batch sizes, and an OLS
    line ``p95 ~ b`` fitted on all profiled sizes for every missing ``b <= max_batch``."""
    require(_is_int(max_batch) and max_batch >= 1, "max_batch", max_batch, "must be an integer >= 1")
    try:
        b = np.asarray(batches, dtype=float).ravel()
        y = np.asarray(p95, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ConfigError(f"batches/p95 = {batches!r}/{p95!r}: must be sequences of numbers") from None
    require(b.size >= 1, "batches", batches, "must hold at least one profiled batch size")
    require(y.size == b.size, "p95", y.size, f"must have one value per batch size ({b.size})")
    require(bool(np.all(np.isfinite(b)) and np.all(b >= 1) and np.all(b == np.round(b))),
            "batches", batches, "must be integers >= 1")
    require(np.unique(b).size == b.size, "batches", batches, "must not repeat a batch size")
    require(bool(np.all(np.isfinite(y)) and np.all(y > 0)), "p95", p95, "must be finite and > 0")
    table = np.full(max_batch, np.nan)
    inside = b <= max_batch
    table[b[inside].astype(int) - 1] = y[inside]
    missing = np.isnan(table)
    if missing.any():
        require(b.size >= 2, "batches", batches,
                "needs at least two profiled batch sizes to fit the line that fills the others")
        slope, intercept = np.polyfit(b, y, 1)
        fill_b = np.flatnonzero(missing) + 1.0
        table[missing] = intercept + slope * fill_b
    return table


def postprocess_p95(batches: np.ndarray | Iterable[int], p95: np.ndarray | Iterable[float],
                    max_batch: int = 32) -> np.ndarray:
    """The RAMSIS artifact's batch-latency table from profiled p95s (spec ramsis §5.1).

    1. ``p95[i]`` is the p95 latency measured at batch size ``batches[i]``;
    2. an OLS line ``p95 ~ b`` fitted on all profiled sizes fills every missing ``b <= max_batch``;
    3. sweeping from ``b = max_batch`` downwards, ``l(b-1) = l(b)`` whenever ``l(b) < l(b-1)``,
       so the table is non-decreasing (outliers are lowered, never raised): ``l(b)`` is the
       smallest filled value at any batch size ``>= b``.

    Returns the length-``max_batch`` array ``l(1..max_batch)``. Profiled sizes above
    ``max_batch`` take part in the fit but not in the table.
    """
    table = np.minimum.accumulate(fill_p95(batches, p95, max_batch)[::-1])[::-1].copy()
    if not (np.all(np.isfinite(table)) and np.all(table > 0)):
        b = np.asarray(batches, dtype=float).ravel()
        y = np.asarray(p95, dtype=float).ravel()
        lo, hi = int(np.argmin(b)), int(np.argmax(b))
        if y[hi] < y[lo]:  # the cause, not the negative latency the line through it reaches
            raise ConfigError(
                f"p95_ms = {y[lo]:.4g} ms at batch {int(b[lo])}, {y[hi]:.4g} ms at batch {int(b[hi])}: "
                "falls as the batch grows, so the line fitted to fill the batch sizes not profiled "
                "reaches a latency <= 0; a batch's latency must grow with its size (was the "
                "latency of one query recorded instead of the batch's?)")
    require(bool(np.all(np.isfinite(table)) and np.all(table > 0)), "p95 (post-processed)",
            np.round(table, 3).tolist(),
            "the fitted line gives a latency <= 0 at a filled batch size; profile more small batches")
    return table


# --------------------------------------------------------------------------- loading

#: Profile name -> (task in the accuracy file, latency table file) under ``<data>/profiles``.
_PROFILES: dict[str, tuple[str, str]] = {
    "ramsis-image": ("image", "ramsis_image.csv"),
    "ramsis-text": ("text", "ramsis_text.csv"),
}
PROFILE_NAMES: tuple[str, ...] = tuple(_PROFILES)
_ACCURACY_FILE = "ramsis_accuracy.csv"
_ACCURACY_COLUMNS = ("task", "model", "top1_accuracy", "metric")
#: the columns of a RAMSIS-style profile table (``data/profiles/ramsis_<task>.csv``)
TABLE_COLUMNS = ("model", "batch", "p95_ms", "q0", "q50", "q95", "q99", "q100")
_TABLE_COLUMNS = TABLE_COLUMNS
_SPREAD_COLUMNS = _TABLE_COLUMNS[3:]
_RAMSIS_SOURCE = ("Mendoza, Romero, Trippel, EuroSys '24; RAMSIS artifact github.com/dmmendo/RAMSIS "
                  "@9b74967, GCP n1 4-vCPU CPU; post-processed as in spec ramsis §5.1")


def read_checked_csv(path: Path, columns: tuple[str, ...], what: str = "profile file") -> pd.DataFrame:
    """Read ``path`` and check its header is exactly ``columns`` (in any order); every error is a
    ConfigError that starts with ``what`` and the path."""
    if not path.is_file():
        raise ConfigError(f"{what} {path}: not found (data directory: {path.parent.parent})")
    try:
        df = pd.read_csv(path)
    except Exception as exc:  # a parser error is the file's fault, say which file
        raise ConfigError(f"{what} {path}: cannot be read as CSV ({exc})") from None
    missing = [c for c in columns if c not in df.columns]
    unknown = [c for c in df.columns if c not in columns]
    if missing or unknown:
        raise ConfigError(f"{what} {path}: columns must be {', '.join(columns)}"
                          + (f"; missing: {', '.join(missing)}" if missing else "")
                          + (f"; unknown: {', '.join(map(str, unknown))}" if unknown else ""))
    return df


def _numeric(df: pd.DataFrame, col: str, path: Path) -> np.ndarray:
    vals = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        i = int(bad[0])
        # +2: 1-based line numbers, after the header line
        raise ConfigError(f"profile file {path}: line {i + 2} (model {df['model'].iloc[i]!r}): "
                          f"{col} = {str(df[col].iloc[i])!r} is not a finite number")
    return vals


def load_profile(name: str, data_dir: str | os.PathLike[str] | None = None) -> Profile:
    """Load a published profile by name from ``<data>/profiles``.

    Names: ``"ramsis-image"`` (26 TorchVision ImageNet models) and ``"ramsis-text"`` (5 BERTs
    on GLUE-MNLI), both from the RAMSIS artifact (spec ramsis §5.1; see
    ``data/profiles/README.md``). Latencies come from ``ramsis_<task>.csv`` (the post-processed
    p95 per batch size 1..32 and the spread), accuracies from ``ramsis_accuracy.csv``.
    ``data_dir`` defaults to the repository's ``data/`` (or ``$INFSCHED_DATA``).
    A malformed file raises a ConfigError naming the file and the row or model at fault.
    """
    from infsched.report import find_data_dir

    if name not in _PROFILES:
        raise config_error("profile", name, "unknown; known profiles: " + ", ".join(map(repr, _PROFILES)))
    task, table_file = _PROFILES[name]
    folder = find_data_dir(data_dir) / "profiles"

    acc_path = folder / _ACCURACY_FILE
    acc_df = read_checked_csv(acc_path, _ACCURACY_COLUMNS)
    acc_df = acc_df[acc_df["task"] == task].reset_index(drop=True)
    if acc_df.empty:
        raise ConfigError(f"profile file {acc_path}: no rows for task {task!r}")
    acc_vals = _numeric(acc_df, "top1_accuracy", acc_path)
    dup = sorted(set(acc_df["model"][acc_df["model"].duplicated()]))
    if dup:
        raise ConfigError(f"profile file {acc_path}: model(s) listed twice for task {task!r}: {', '.join(dup)}")
    accuracy = dict(zip(acc_df["model"].astype(str), acc_vals))

    path = folder / table_file
    df = read_checked_csv(path, _TABLE_COLUMNS)
    if df.empty:
        raise ConfigError(f"profile file {path}: no rows")
    df["model"] = df["model"].astype(str)
    batch = _numeric(df, "batch", path)
    bad = np.flatnonzero((batch < 1) | (batch != np.round(batch)))
    if bad.size:
        i = int(bad[0])
        raise ConfigError(f"profile file {path}: line {i + 2} (model {df['model'].iloc[i]!r}): "
                          f"batch = {str(df['batch'].iloc[i])!r} must be an integer >= 1")
    df["batch"] = batch.astype(int)
    for col in _TABLE_COLUMNS[2:]:
        vals = _numeric(df, col, path)
        bad = np.flatnonzero(vals <= 0)
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"profile file {path}: line {i + 2} (model {df['model'].iloc[i]!r}, "
                              f"batch {df['batch'].iloc[i]}): {col} = {float(vals[i])!r} must be > 0")
        df[col] = vals
    dup = df[df.duplicated(["model", "batch"], keep="first")]
    if not dup.empty:
        i = int(dup.index[0])
        raise ConfigError(f"profile file {path}: line {i + 2}: duplicate (model, batch) = "
                          f"({df['model'].iloc[i]!r}, {df['batch'].iloc[i]})")

    models = list(dict.fromkeys(df["model"]))  # file order, first appearance
    no_acc = [m for m in models if m not in accuracy]
    if no_acc:
        raise ConfigError(f"profile file {path}: model(s) with latencies but no accuracy in "
                          f"{acc_path} (task {task!r}): {', '.join(no_acc)}")
    no_lat = [m for m in accuracy if m not in models]
    if no_lat:
        raise ConfigError(f"profile file {acc_path}: model(s) of task {task!r} with an accuracy but no "
                          f"latencies in {path}: {', '.join(no_lat)}")

    B = int(df["batch"].max())
    lat = np.empty((len(models), B))
    spread = np.empty((len(models), B, len(QUANTILE_LEVELS)))
    for k, m in enumerate(models):
        rows = df[df["model"] == m].sort_values("batch")
        got = rows["batch"].to_numpy()
        if not np.array_equal(got, np.arange(1, B + 1)):
            missing = sorted(set(range(1, B + 1)) - set(got.tolist()))
            raise ConfigError(f"profile file {path}: model {m!r} must have every batch size 1..{B}; "
                              f"missing: {missing}")
        lat[k] = rows["p95_ms"].to_numpy()
        drop = np.flatnonzero(np.diff(lat[k]) < 0)
        if drop.size:
            b = int(drop[0]) + 1
            raise ConfigError(f"profile file {path}: model {m!r}: p95_ms must be non-decreasing in "
                              f"batch, but batch {b + 1} ({lat[k, b]:g}) < batch {b} ({lat[k, b - 1]:g})")
        spread[k] = rows[list(_SPREAD_COLUMNS)].to_numpy()
        drop = np.argwhere(np.diff(spread[k], axis=1) < 0)
        if drop.size:
            b = int(drop[0, 0]) + 1
            raise ConfigError(f"profile file {path}: model {m!r}, batch {b}: the quantile columns "
                              f"{', '.join(_SPREAD_COLUMNS)} must be non-decreasing")
    return Profile(name=name, models=tuple(models), accuracy=np.array([accuracy[m] for m in models]),
                   latency_ms=lat, spread=spread, source=_RAMSIS_SOURCE)
