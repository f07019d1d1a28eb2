"""From a raw profile (one row per model and batch size, :data:`~infsched.profiles.raw.RAW_COLUMNS`)
to what the chapters load.

- :func:`linear_fit`: Shepherd's batch-latency model ``ℓ(b) = α·b + β`` (Shepherd Eq. 1, Table 4),
  fitted per model by least squares with ``α, β ≥ 0``, with R² and the largest relative residual;
  :func:`infsched.shepherd.measured.measured_model_set` turns the fits into Shepherd's models.
- :func:`monotone_table`: RAMSIS's post-processed p95 table (spec ramsis §5.1: raw p95 per
  profiled size, an OLS line for the sizes not profiled, a downward sweep that makes it
  non-decreasing) with the latency spread, in the schema of ``data/profiles/ramsis_<task>.csv``;
  :func:`measured_profile` turns it into a :class:`infsched.profiles.Profile` with the published
  accuracies.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from infsched.errors import ConfigError, one_of, require
from infsched.profiles.profile import QUANTILE_LEVELS, Profile
from infsched.profiles.raw import read_raw
from infsched.profiles.tables import (
    _ACCURACY_COLUMNS,
    _ACCURACY_FILE,
    TABLE_COLUMNS,
    fill_p95,
    postprocess_p95,
    read_checked_csv,
)

__all__ = ["linear_fit", "fit_residuals", "monotone_table", "measured_profile", "as_raw",
           "TABLE_COLUMNS"]

# raw statistic -> spread column, in the order of infsched.profiles.QUANTILE_LEVELS
_SPREAD = {"min_ms": "q0", "p50_ms": "q50", "p95_ms": "q95", "p99_ms": "q99", "max_ms": "q100"}
assert len(_SPREAD) == len(QUANTILE_LEVELS)
_STATS = ("mean_ms", "p50_ms", "p95_ms", "p99_ms", "min_ms", "max_ms")


def as_raw(raw: pd.DataFrame | str | os.PathLike[str]) -> pd.DataFrame:
    """A raw profile: a DataFrame as it is, or a CSV path read and checked by
    :func:`~infsched.profiles.raw.read_raw`."""
    if isinstance(raw, pd.DataFrame):
        need = {"model", "batch", "p95_ms"}
        require(need <= set(raw.columns), "raw", sorted(raw.columns),
                "must be a raw profile with at least the columns model, batch, p95_ms")
        return raw
    return read_raw(raw)


def _nnls_line(b: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares ``y ≈ α b + β`` with ``α, β ≥ 0`` (a negative β would give a batch of one
    a negative fixed cost; scipy's NNLS equals OLS whenever OLS is already non-negative)."""
    from scipy.optimize import nnls

    A = np.column_stack([b, np.ones_like(b)])
    (alpha, beta), _ = nnls(A, y)
    return float(alpha), float(beta)


def linear_fit(raw: pd.DataFrame | str | os.PathLike[str], stat: str = "mean_ms",
               max_batch: int | None = None) -> pd.DataFrame:
    """Per model, ``ℓ(b) = α·b + β`` (ms) fitted to ``stat`` over the profiled batch sizes
    (those ``<= max_batch`` if given), with ``α, β ≥ 0``.

    Columns: ``model, alpha_ms, beta_ms, r2, max_rel_residual`` (the largest
    ``|fit − measured| / measured`` over the sizes used), ``n_batches``, ``b_max`` (the largest
    size used). A model profiled at a single size gets ``α = 0`` and ``r2 = NaN``.
    """
    df = as_raw(raw)
    one_of("stat", stat, _STATS)
    require(max_batch is None or (isinstance(max_batch, int) and max_batch >= 1), "max_batch",
            max_batch, "must be None or an integer >= 1")
    rows = []
    for model, g in df.groupby("model", sort=False):
        g = g.sort_values("batch")
        if max_batch is not None:
            g = g[g["batch"] <= max_batch]
        if g.empty:
            continue
        b = g["batch"].to_numpy(dtype=float)
        y = g[stat].to_numpy(dtype=float)
        if b.size == 1:
            alpha, beta = 0.0, float(y[0])
        else:
            alpha, beta = _nnls_line(b, y)
        pred = alpha * b + beta
        ss_res = float(np.sum((y - pred) ** 2))
        ss_tot = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - ss_res / ss_tot if b.size > 1 and ss_tot > 0 else float("nan")
        rows.append({"model": str(model), "alpha_ms": alpha, "beta_ms": beta, "r2": r2,
                     "max_rel_residual": float(np.max(np.abs(pred - y) / y)),
                     "n_batches": int(b.size), "b_max": int(b.max())})
    return pd.DataFrame(rows, columns=["model", "alpha_ms", "beta_ms", "r2", "max_rel_residual",
                                       "n_batches", "b_max"])


def fit_residuals(raw: pd.DataFrame | str | os.PathLike[str], fits: pd.DataFrame,
                  stat: str = "mean_ms") -> pd.DataFrame:
    """Each profiled (model, batch) beside its linear fit: ``measured_ms``, ``fit_ms``,
    ``residual_ms`` (measured − fit) and ``residual_rel`` (that over the measured)."""
    df = as_raw(raw)
    one_of("stat", stat, _STATS)
    m = df[["model", "batch", stat]].merge(fits[["model", "alpha_ms", "beta_ms"]], on="model")
    m = m.rename(columns={stat: "measured_ms"})
    m["fit_ms"] = m["alpha_ms"] * m["batch"] + m["beta_ms"]
    m["residual_ms"] = m["measured_ms"] - m["fit_ms"]
    m["residual_rel"] = m["residual_ms"] / m["measured_ms"]
    return m.drop(columns=["alpha_ms", "beta_ms"])


def monotone_table(raw: pd.DataFrame | str | os.PathLike[str], max_batch: int = 32) -> pd.DataFrame:
    """RAMSIS's profile table from a raw profile (spec ramsis §5.1), one row per
    (model, ``batch = 1..max_batch``), columns :data:`TABLE_COLUMNS`, models in name order.

    - ``p95_ms``: :func:`infsched.profiles.postprocess_p95` of the raw p95s (OLS fill of the sizes
      not profiled, then a downward sweep, so the table is non-decreasing in ``b``);
    - ``q0..q100``: the latency's shape relative to its p95 (min, p50, p95, p99, max over p95),
      taken from the batch size ``p95_ms`` comes from (the sweep sets ``l(b)`` to the smallest
      filled value at any size ``>= b``, so a lowered entry borrows the shape of the size it was
      lowered to), via its nearest profiled size ``<=`` it. ``q100`` continues the p95 -> p99
      slope over the last 1 % and stops there, or at the measured maximum if that is lower: a
      raw maximum is one call among many and would put 1 % of sampled latencies in a range that
      held one.
    """
    df = as_raw(raw)
    require(isinstance(max_batch, int) and max_batch >= 1, "max_batch", max_batch,
            "must be an integer >= 1")
    missing = [c for c in _SPREAD if c not in df.columns]
    if missing:
        raise ConfigError(f"raw profile: columns {', '.join(missing)} are needed for the spread")
    rows = []
    for model in sorted(df["model"].astype(str).unique()):
        prof = df[df["model"].astype(str) == model].sort_values("batch")
        batches = prof["batch"].to_numpy(dtype=int)
        raw_p95 = prof["p95_ms"].to_numpy(dtype=float)
        try:
            filled = fill_p95(batches, raw_p95, max_batch)
            p95 = postprocess_p95(batches, raw_p95, max_batch)
        except ConfigError as exc:
            raise ConfigError(f"raw profile, model {model!r}: {exc}") from None
        for b in range(1, max_batch + 1):
            carried = b + int(np.argmin(filled[b - 1:]))      # the size l(b) comes from
            le = batches[batches <= carried]
            src = prof[prof["batch"] == (le.max() if le.size else batches.min())].iloc[0]
            row = {"model": model, "batch": b, "p95_ms": p95[b - 1]}
            row.update({q: src[c] / src["p95_ms"] for c, q in _SPREAD.items()})
            row["q100"] = min(row["q100"], row["q99"] + (row["q99"] - row["q95"]) / 4.0)
            rows.append(row)
    out = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    # round as a CSV holds them, so a table read back compares equal to a fresh one
    num = list(TABLE_COLUMNS[2:])
    out[num] = np.round(out[num].to_numpy(dtype=float), 6)
    return out


def measured_profile(raw: pd.DataFrame | str | os.PathLike[str], task: str = "image",
                     max_batch: int = 32, data_dir: str | os.PathLike[str] | None = None,
                     name: str | None = None) -> Profile:
    """A :class:`~infsched.profiles.Profile` of the ``task`` models (``"image"``: RAMSIS's 26
    TorchVision models, ``"text"``: its 5 BERTs) from a measured raw profile: latencies from
    :func:`monotone_table`, accuracies the published ones (``data/profiles/ramsis_accuracy.csv``).
    Models of the raw profile without a published accuracy are left out; models with one but
    no measurement are absent from the result (``Profile.models`` says which remain)."""
    from infsched.report import find_data_dir

    one_of("task", task, ("image", "text"))
    df = as_raw(raw)
    if "task" in df.columns:
        df = df[df["task"] == task]
    acc_path = find_data_dir(data_dir) / "profiles" / _ACCURACY_FILE
    acc = read_checked_csv(acc_path, _ACCURACY_COLUMNS)
    acc = acc[acc["task"] == task]
    accuracy = dict(zip(acc["model"].astype(str), acc["top1_accuracy"].astype(float)))
    df = df[df["model"].astype(str).isin(accuracy)]
    if df.empty:
        raise ConfigError(f"raw profile: no {task} model with a published accuracy; the {task} models "
                          f"are {', '.join(accuracy)}")
    table = monotone_table(df, max_batch)
    models = list(dict.fromkeys(table["model"]))
    lat = table["p95_ms"].to_numpy(dtype=float).reshape(len(models), max_batch)
    spread = table[list(TABLE_COLUMNS[3:])].to_numpy(dtype=float).reshape(len(models), max_batch, -1)
    where = ""
    cols = ["device_name", "device", "threads", "precision"]
    if set(cols) <= set(df.columns) and df[cols].iloc[0].notna().all():
        d = df.iloc[0]
        where = f" on {d['device_name']} ({d['device']}, {int(d['threads'])} threads, {d['precision']})"
    src = (str(raw) if not isinstance(raw, pd.DataFrame) else "a measured profile")
    return Profile(name=name or f"measured-{task}", models=tuple(models),
                   accuracy=np.array([accuracy[m] for m in models]), latency_ms=lat, spread=spread,
                   source=f"measured with infsched.profiling{where}: {src}; post-processed as in "
                          "spec ramsis §5.1; accuracies as published")
