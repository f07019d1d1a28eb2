"""A latency/accuracy profile of a model set, its Pareto front and synthetic model sets.

A :class:`Profile` holds, for ``M`` models, the accuracy of each model and its p95 latency at
every batch size ``1..B`` (spec ramsis §1: ``l(m, b)``), plus optionally the latency's spread
(quantiles relative to p95) so a simulator can sample service times. Every chapter that needs
model latencies reads them through :mod:`infsched.profiles`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from infsched.errors import ConfigError, config_error, one_of, require

__all__ = ["QUANTILE_LEVELS", "EXTRAPOLATIONS", "Profile", "pareto_mask", "interpolate_models"]

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


def pareto_mask(latency_b1: np.ndarray | Iterable[float],
                accuracy: np.ndarray | Iterable[float]) -> np.ndarray:
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

    def subset(self, names: Iterable[str], *, name: str | None = None) -> Profile:
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

    def pareto_front(self) -> Profile:
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
                       size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
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
