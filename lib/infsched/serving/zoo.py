"""The model zoo a serving simulation draws on: accuracy and ``l(m, b)`` per model.

Spec headtohead §1 ("Service"): a batch of ``b`` queries on model ``m`` takes ``l(m, b)`` from a
profile (the RAMSIS image profile by default, or any profile a user measures or passes). A
:class:`Zoo` is the engine's view of an :class:`infsched.profiles.Profile`: plain arrays, checked
once, in the profile's order (index 0 is the fastest model at batch 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, config_error, require
from ..profiles import QUANTILE_LEVELS, Profile, load_profile

__all__ = ["Zoo"]


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64).copy()
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Zoo:
    """Models, their accuracy (%) and latency table ``latency_ms[m, b-1] = l(m, b)`` in ms.

    ``spread`` (optional, shape ``(M, B, 5)``) holds the latency quantiles at
    :data:`infsched.profiles.QUANTILE_LEVELS` relative to ``l(m, b)``, for ``service="jitter"``.
    Build one with :meth:`of` from a profile name, a :class:`Profile` or a Zoo.
    """

    names: tuple[str, ...]
    accuracy: np.ndarray
    latency_ms: np.ndarray
    spread: np.ndarray | None = None

    def __post_init__(self) -> None:
        names = tuple(self.names)
        try:
            acc = np.asarray(self.accuracy, dtype=float).ravel()
            lat = np.asarray(self.latency_ms, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError("profile: accuracy and latency_ms must be numeric arrays") from None
        # An empty zoo is the one error a Profile cannot catch for us (a Zoo may be built from arrays).
        require(len(names) >= 1 and acc.size >= 1, "profile", f"<{len(names)} models>",
                "must hold at least one model (the profile is empty)")
        M = len(names)
        require(acc.shape == (M,), "accuracy.shape", acc.shape, f"must be ({M},), one per model")
        require(lat.ndim == 2 and lat.shape[0] == M and lat.shape[1] >= 1, "latency_ms.shape",
                lat.shape, f"must be ({M}, B) with B >= 1 (column b-1 = batch size b)")
        require(bool(np.all(np.isfinite(lat)) and np.all(lat > 0)), "latency_ms", "<table>",
                "every l(m, b) must be finite and > 0")
        require(bool(np.all(np.diff(lat, axis=1) >= 0)), "latency_ms", "<table>",
                "l(m, b) must be non-decreasing in b")
        require(bool(np.all(np.isfinite(acc))), "accuracy", acc.tolist(), "must be finite")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "accuracy", _frozen(acc))
        object.__setattr__(self, "latency_ms", _frozen(lat))
        if self.spread is not None:
            spr = np.asarray(self.spread, dtype=float)
            require(spr.shape == lat.shape + (len(QUANTILE_LEVELS),), "spread.shape", spr.shape,
                    f"must be {lat.shape + (len(QUANTILE_LEVELS),)}")
            object.__setattr__(self, "spread", _frozen(spr))

    @classmethod
    def of(cls, profile: str | Profile | Zoo) -> Zoo:
        """The zoo of a profile name (``"ramsis-image"``), a :class:`Profile` or a Zoo."""
        if isinstance(profile, Zoo):
            return profile
        if isinstance(profile, str):
            profile = load_profile(profile)
        if not isinstance(profile, Profile):
            raise config_error("profile", profile, "must be a profile name, a Profile or a Zoo")
        return cls(profile.models, profile.accuracy, profile.latency_ms, profile.spread)

    @classmethod
    def single(cls, latency_ms: float, accuracy: float = 100.0, max_batch: int = 1) -> Zoo:
        """One model with the same latency at every batch size up to ``max_batch``: the
        queueing-theory zoo (M/D/c, M/M/c with exponential service)."""
        return cls(("m0",), [accuracy], np.full((1, max_batch), float(latency_ms)))

    @property
    def n_models(self) -> int:
        return len(self.names)

    @property
    def max_batch(self) -> int:
        return int(self.latency_ms.shape[1])

    @property
    def fastest(self) -> int:
        """Index of the model with the smallest batch-1 latency (ties: the first)."""
        return int(np.argmin(self.latency_ms[:, 0]))

    @property
    def slope(self) -> np.ndarray:
        """(M,) ms per query beyond the largest batch ``B``: the secant through ``l(m, 1)`` and
        ``l(m, B)`` (0 if B == 1), the RAMSIS engine's rule
        (:meth:`infsched.profiles.Profile.extrapolation_slope`). Only RAMSIS's fallback batch
        of a queue longer than its MDP's N reads it."""
        B = self.max_batch
        if B == 1:
            return np.zeros(self.n_models)
        return (self.latency_ms[:, -1] - self.latency_ms[:, 0]) / (B - 1)

    def batch_latency(self, m: int, b: int) -> float:
        """``l(m, b)``: the table for ``b <= B``, the secant (:attr:`slope`) beyond."""
        B = self.max_batch
        if b <= B:
            return float(self.latency_ms[m, b - 1])
        return float(self.latency_ms[m, B - 1] + (b - B) * self.slope[m])

    def most_accurate_within(self, slo_ms: float, b: int = 1) -> int:
        """The most accurate model with ``l(m, b) <= slo_ms`` (ties: the faster); -1 if none."""
        ok = np.flatnonzero(self.latency_ms[:, b - 1] <= slo_ms)
        if ok.size == 0:
            return -1
        # among the most accurate, the fastest
        best = ok[self.accuracy[ok] == self.accuracy[ok].max()]
        return int(best[np.argmin(self.latency_ms[best, b - 1])])

    def capacity_qps(self, workers: int, slo_ms: float, max_batch: int | None = None) -> float:
        """Spec headtohead §1: ``K * max_b b / l(m_fast, b)`` over ``b`` with
        ``l(m_fast, b) <= SLO`` (the fastest model at its largest batch that fits the SLO), in
        queries per second. 0 if even batch 1 misses the SLO."""
        B = self.max_batch if max_batch is None else min(max_batch, self.max_batch)
        lat = self.latency_ms[self.fastest, :B]
        b = np.arange(1, B + 1)
        ok = lat <= slo_ms
        if not ok.any():
            return 0.0
        return float(workers * np.max(b[ok] / lat[ok]) * 1000.0)
