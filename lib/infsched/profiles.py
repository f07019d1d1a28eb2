"""Latency/accuracy profiles of model sets, batch-latency models and Pareto fronts.

A :class:`Profile` holds, for ``M`` models, the accuracy of each model and its p95 latency at
every batch size ``1..B`` (spec ramsis §1: ``l(m, b)``), plus optionally the latency's spread
(quantiles relative to p95) so a simulator can sample service times. Every chapter that needs
model latencies reads them through this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .errors import ConfigError, config_error, one_of, require

__all__ = [
    "QUANTILE_LEVELS",
    "Profile",
    "pareto_mask",
    "fill_p95",
    "postprocess_p95",
    "load_profile",
    "interpolate_models",
    "PROFILE_NAMES",
    "read_checked_csv",
]

#: Quantile levels of ``Profile.spread``'s last axis: min, p50, p95, p99, max.
QUANTILE_LEVELS: tuple[float, ...] = (0.0, 0.5, 0.95, 0.99, 1.0)
#: how a latency beyond the largest profiled batch is extrapolated (:meth:`Profile.extrapolation_slope`)
EXTRAPOLATIONS = ("secant", "lstsq")
_P95_COLUMN = QUANTILE_LEVELS.index(0.95)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def pareto_mask(latency_b1: "np.ndarray | Iterable[float]",
                accuracy: "np.ndarray | Iterable[float]") -> np.ndarray:
    """Boolean mask of the models on the (latency, accuracy) Pareto front.

    A model is kept iff every strictly faster model is strictly less accurate (spec ramsis
    §5.1, T10). Among models with equal latency only the most accurate can be kept, and an
    exact tie in both keeps the first one.
    """
    lat = np.asarray(latency_b1, dtype=float).ravel()
    acc = np.asarray(accuracy, dtype=float).ravel()
    require(lat.size == acc.size, "accuracy", acc.size,
            f"must have one value per latency ({lat.size})")
    keep = np.ones(lat.size, dtype=bool)
    for i in range(lat.size):
        # dominated: some other model no slower and at least as accurate, better in one
        no_slower = lat <= lat[i]
        at_least = acc >= acc[i]
        better = (lat < lat[i]) | (acc > acc[i])
        dom = no_slower & at_least & better
        # exact duplicates: keep only the first occurrence
        same = (lat == lat[i]) & (acc == acc[i])
        same[i:] = False
        keep[i] = not (dom.any() or same.any())
    return keep


@dataclass(frozen=True, eq=False)
class Profile:
    """Latency/accuracy profile of a model set.

    ``latency_ms[m, b-1]`` is model ``m``'s p95 latency (ms) for a batch of ``b`` queries
    (spec ramsis §1, ``l(m, b)``), defined for ``b = 1..B``; beyond ``B`` it is extrapolated
    linearly (:meth:`latency`). ``spread[m, b-1, :]`` holds the latency quantiles at
    :data:`QUANTILE_LEVELS` divided by that p95, used by :meth:`sample_latency`; ``None`` means
    the profile is deterministic only.

    On construction the models are sorted by batch-1 latency (stable, ties by name), so index 0
    is always the fastest model: the MDP and the baselines rely on that order.
    """

    name: str
    models: tuple[str, ...]
    accuracy: np.ndarray
    latency_ms: np.ndarray
    spread: np.ndarray | None = None
    source: str = ""

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name != "", "name", self.name,
                "must be a non-empty string")
        require(isinstance(self.source, str), "source", self.source, "must be a string")
        if isinstance(self.models, str):
            raise config_error("models", self.models, "must be a sequence of model names, not one string")
        try:
            models = tuple(self.models)
        except TypeError:
            raise config_error("models", self.models, "must be a sequence of model names") from None
        require(len(models) >= 1, "models", self.models, "must name at least one model")
        require(all(isinstance(m, str) and m != "" for m in models), "models", self.models,
                "must be non-empty strings")
        dup = sorted({m for m in models if models.count(m) > 1})
        require(not dup, "models", dup, "model names must be unique")
        M = len(models)

        try:
            acc = np.asarray(self.accuracy, dtype=float)
            lat = np.asarray(self.latency_ms, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError("accuracy/latency_ms: must be numeric arrays") from None
        require(acc.shape == (M,), "accuracy.shape", acc.shape, f"must be ({M},), one value per model")
        bad = [models[i] for i in np.flatnonzero(~(np.isfinite(acc) & (acc >= 0) & (acc <= 100)))]
        require(not bad, "accuracy", {m: float(acc[models.index(m)]) for m in bad},
                "must be finite and in [0, 100] (percent)")
        require(lat.ndim == 2 and lat.shape[0] == M and lat.shape[1] >= 1, "latency_ms.shape",
                lat.shape, f"must be ({M}, B) with B >= 1: one row per model, column b-1 = batch b")
        bad = [models[i] for i in np.flatnonzero(~np.all(np.isfinite(lat) & (lat > 0), axis=1))]
        require(not bad, "latency_ms", bad, "latencies must be finite and > 0 (rows of these models are not)")
        bad = [models[i] for i in np.flatnonzero(np.any(np.diff(lat, axis=1) < 0, axis=1))]
        require(not bad, "latency_ms", bad,
                "latency must be non-decreasing in the batch size (rows of these models are not)")
        B = lat.shape[1]

        spr = None
        if self.spread is not None:
            try:
                spr = np.asarray(self.spread, dtype=float)
            except (TypeError, ValueError):
                raise ConfigError("spread: must be a numeric array or None") from None
            Q = len(QUANTILE_LEVELS)
            require(spr.shape == (M, B, Q), "spread.shape", spr.shape,
                    f"must be ({M}, {B}, {Q}): quantiles at {QUANTILE_LEVELS} per (model, batch)")
            bad = [models[i] for i in np.flatnonzero(~np.all(np.isfinite(spr) & (spr > 0), axis=(1, 2)))]
            require(not bad, "spread", bad, "must be finite and > 0 (entries of these models are not)")
            bad = [models[i] for i in np.flatnonzero(np.any(np.diff(spr, axis=2) < 0, axis=(1, 2)))]
            require(not bad, "spread", bad,
                    "quantiles must be non-decreasing along the quantile axis (these models are not)")

        # Sort by batch-1 latency, ties by name: index 0 is the fastest model everywhere.
        order = sorted(range(M), key=lambda i: (lat[i, 0], models[i]))
        object.__setattr__(self, "models", tuple(models[i] for i in order))
        object.__setattr__(self, "accuracy", _readonly(acc[order]))
        object.__setattr__(self, "latency_ms", _readonly(lat[order]))
        object.__setattr__(self, "spread", None if spr is None else _readonly(spr[order]))

    # ------------------------------------------------------------------ shape
    @property
    def n_models(self) -> int:
        """Number of models ``M``."""
        return len(self.models)

    @property
    def max_batch(self) -> int:
        """Largest profiled batch size ``B``."""
        return int(self.latency_ms.shape[1])

    def __repr__(self) -> str:
        return (f"Profile(name={self.name!r}, n_models={self.n_models}, max_batch={self.max_batch}, "
                f"spread={'yes' if self.spread is not None else 'no'})")

    # ------------------------------------------------------------- selection
    def index(self, name: str) -> int:
        """Index of the model called ``name`` (in latency order)."""
        try:
            return self.models.index(name)
        except ValueError:
            raise config_error("model", name, f"unknown in profile {self.name!r}; known models: "
                               + ", ".join(self.models)) from None

    def subset(self, names: Iterable[str], *, name: str | None = None) -> "Profile":
        """A profile of only the models in ``names`` (re-sorted by batch-1 latency)."""
        if isinstance(names, str):
            names = [names]
        names = list(names)
        require(len(names) >= 1, "names", names, "must name at least one model")
        idx = [self.index(n) for n in names]
        require(len(set(idx)) == len(idx), "names", names, "must not repeat a model")
        return Profile(
            name=name or self.name,
            models=tuple(self.models[i] for i in idx),
            accuracy=self.accuracy[idx],
            latency_ms=self.latency_ms[idx],
            spread=None if self.spread is None else self.spread[idx],
            source=self.source,
        )

    def pareto_front(self) -> "Profile":
        """The models not dominated on (batch-1 p95 latency, accuracy) (spec ramsis §5.1, T10).

        A model is kept iff every faster model is strictly less accurate.
        """
        keep = pareto_mask(self.latency_ms[:, 0], self.accuracy)
        return self.subset([m for m, k in zip(self.models, keep) if k])

    # --------------------------------------------------------------- latency
    def _check_mb(self, m: int, b: int) -> None:
        require(_is_int(m) and 0 <= m < self.n_models, "m", m,
                f"must be a model index in [0, {self.n_models - 1}]")
        require(_is_int(b) and b >= 1, "b", b, "must be an integer batch size >= 1")

    def extrapolation_slope(self, rule: str = "secant") -> np.ndarray:
        """(M,) ms per extra query beyond ``B``; 0 if B == 1.

        ``rule="secant"`` (ours, the default): ``(l(m,B) - l(m,1)) / (B - 1)``, the line through
        batch 1 and batch B, which keeps the extrapolation non-decreasing and continuous at
        ``B`` (a batch above B only arises when a caller asks for it). ``rule="lstsq"``: the
        slope of the least-squares line through every profiled batch size, as the RAMSIS
        artifact fits it (``profile_utils.get_pt_latency_dist_accuracy_list``:
        ``sklearn.linear_model.LinearRegression`` over the measured batch sizes).
        """
        one_of("rule", rule, EXTRAPOLATIONS)
        B = self.max_batch
        if B == 1:
            return np.zeros(self.n_models)
        if rule == "lstsq":
            b = np.arange(1, B + 1, dtype=float)
            bc = b - b.mean()
            return (self.latency_ms - self.latency_ms.mean(axis=1, keepdims=True)) @ bc / (bc @ bc)
        return (self.latency_ms[:, -1] - self.latency_ms[:, 0]) / (B - 1)

    def _beyond(self, b: np.ndarray, rule: str) -> np.ndarray:
        """(M, len(b)) latencies at batches ``b > B`` under ``rule`` (see
        :meth:`extrapolation_slope`): the secant continued from ``l(m, B)``, or the
        least-squares line itself, ``α_m + β_m b`` (the artifact's values, not anchored at B)."""
        B = self.max_batch
        slope = self.extrapolation_slope(rule)[:, None]
        if rule == "lstsq":
            mean_l = self.latency_ms.mean(axis=1, keepdims=True)
            return mean_l + slope * (b[None, :] - (B + 1) / 2.0)
        return self.latency_ms[:, -1:] + slope * (b[None, :] - B)

    def latency(self, m: int, b: int, extrapolation: str = "secant") -> float:
        """``l(m, b)`` in ms: the profiled p95 for ``b <= B``, linear extrapolation beyond
        (``extrapolation``: ``"secant"``, ours, or ``"lstsq"``, the artifact's; see
        :meth:`extrapolation_slope`)."""
        self._check_mb(m, b)
        one_of("extrapolation", extrapolation, EXTRAPOLATIONS)
        B = self.max_batch
        if b <= B:
            return float(self.latency_ms[m, b - 1])
        if extrapolation == "lstsq":
            return float(self._beyond(np.array([float(b)]), "lstsq")[m, 0])
        return float(self.latency_ms[m, -1] + self.extrapolation_slope()[m] * (b - B))

    def latency_table(self, b_max: int, extrapolation: str = "secant") -> np.ndarray:
        """(M, b_max) table of ``l(m, b)`` for ``b = 1..b_max`` (extrapolated past ``B`` by
        ``extrapolation``: ``"secant"``, ours, or ``"lstsq"``, the artifact's)."""
        require(_is_int(b_max) and b_max >= 1, "b_max", b_max, "must be an integer >= 1")
        one_of("extrapolation", extrapolation, EXTRAPOLATIONS)
        B = self.max_batch
        if b_max <= B:
            return self.latency_ms[:, :b_max].copy()
        if extrapolation == "lstsq":
            return np.hstack([self.latency_ms,
                              self._beyond(np.arange(B + 1, b_max + 1, dtype=float), "lstsq")])
        extra = np.arange(1, b_max - B + 1, dtype=float)
        tail = self.latency_ms[:, -1:] + self.extrapolation_slope()[:, None] * extra[None, :]
        return np.hstack([self.latency_ms, tail])

    def sample_latency(self, m: int, b: int, rng: np.random.Generator,
                       size: "int | tuple[int, ...] | None" = None) -> "float | np.ndarray":
        """Random latency draw(s) (ms) of model ``m`` at batch ``b``.

        Inverse-CDF sampling: the quantile function is piecewise linear through
        ``spread[m, min(b, B) - 1]`` at :data:`QUANTILE_LEVELS`, scaled by ``latency(m, b)``.
        So the draws' p95 is ``l(m, b)`` and their p50 the profiled median ratio times it.
        """
        if self.spread is None:
            raise config_error("spread", None, f"profile {self.name!r} has no latency spread; "
                               "sampling needs one (use latency() for the deterministic p95)")
        self._check_mb(m, b)
        require(isinstance(rng, np.random.Generator), "rng", rng,
                "must be a numpy.random.Generator (e.g. np.random.default_rng(seed))")
        q = self.spread[m, min(b, self.max_batch) - 1]
        u = rng.random(size)
        out = np.interp(u, QUANTILE_LEVELS, q) * self.latency(m, b)
        return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------- post-processing

def fill_p95(batches: "np.ndarray | Iterable[int]", p95: "np.ndarray | Iterable[float]",
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


def postprocess_p95(batches: "np.ndarray | Iterable[int]", p95: "np.ndarray | Iterable[float]",
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
_TABLE_COLUMNS = ("model", "batch", "p95_ms", "q0", "q50", "q95", "q99", "q100")
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


def load_profile(name: str, data_dir: "str | os.PathLike[str] | None" = None) -> Profile:
    """Load a published profile by name from ``<data>/profiles``.

    Names: ``"ramsis-image"`` (26 TorchVision ImageNet models) and ``"ramsis-text"`` (5 BERTs
    on GLUE-MNLI), both from the RAMSIS artifact (spec ramsis §5.1; see
    ``data/profiles/README.md``). Latencies come from ``ramsis_<task>.csv`` (the post-processed
    p95 per batch size 1..32 and the spread), accuracies from ``ramsis_accuracy.csv``.
    ``data_dir`` defaults to the repository's ``data/`` (or ``$INFSCHED_DATA``).
    A malformed file raises a ConfigError naming the file and the row or model at fault.
    """
    from .report import find_data_dir

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


# --------------------------------------------------------------------------- synthetic models

def interpolate_models(profile: Profile, step: float = 0.5) -> Profile:
    """The synthetic many-model set of RAMSIS Fig. 8 (spec ramsis §6).

    Take the Pareto front of ``profile``; between each adjacent pair (i, i+1) in latency order
    add models at accuracies ``Acc_i + step*k`` (k = 1, 2, ... while < ``Acc_{i+1}``), whose
    latency at every batch size (and spread) is linearly interpolated in accuracy between the two
    neighbours. With the 9 image Pareto models and ``step = 0.5`` this gives 60 models.
    """
    require(isinstance(profile, Profile), "profile", profile, "must be a Profile")
    try:
        step_f = float(step)
    except (TypeError, ValueError):
        raise config_error("step", step, "must be a number > 0") from None
    require(bool(np.isfinite(step_f) and step_f > 0), "step", step, "must be a finite number > 0 (accuracy points)")
    front = profile.pareto_front()
    names = list(front.models)
    acc = list(front.accuracy)
    lat = list(front.latency_ms)
    spr = None if front.spread is None else list(front.spread)
    for i in range(front.n_models - 1):
        a0, a1 = front.accuracy[i], front.accuracy[i + 1]
        k = 1
        # the 1e-9 guard keeps a float round-off from adding a model that duplicates Acc_{i+1}
        while a0 + step_f * k < a1 - 1e-9:
            a = a0 + step_f * k
            w = (a - a0) / (a1 - a0)
            names.append(f"synthetic_{a:.3f}")
            acc.append(a)
            lat.append((1 - w) * front.latency_ms[i] + w * front.latency_ms[i + 1])
            if spr is not None:
                spr.append((1 - w) * front.spread[i] + w * front.spread[i + 1])  # type: ignore[index]
            k += 1
    return Profile(
        name=f"{profile.name}-interp{step_f:g}",
        models=tuple(names),
        accuracy=np.array(acc),
        latency_ms=np.array(lat),
        spread=None if spr is None else np.array(spr),
        source=(profile.source + "; " if profile.source else "")
        + f"Pareto models plus synthetic models every {step_f:g} accuracy points (spec ramsis §6 Fig. 8)",
    )
