"""Replications, confidence intervals and percentiles.

``replicate`` runs a seeded experiment once per seed and returns one row per seed;
``summarize`` turns those rows into means with Student-t confidence intervals. For one long
correlated run (waiting times of successive jobs) use ``batch_means_ci``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import ConfigError, require

__all__ = ["CI", "mean_ci", "batch_means_ci", "replicate", "summarize", "percentile"]


@dataclass(frozen=True)
class CI:
    """A mean with a two-sided confidence interval ``[low, high]`` at ``level``."""

    mean: float
    low: float
    high: float
    halfwidth: float
    n: int
    level: float = 0.95

    def __post_init__(self) -> None:
        require(0 < self.level < 1, "level", self.level, "must be in (0, 1)")
        require(self.n >= 1, "n", self.n, "must be >= 1")

    def contains(self, value: float) -> bool:
        """True if ``value`` lies in ``[low, high]``."""
        return bool(self.low <= value <= self.high)

    def __str__(self) -> str:
        return f"{self.mean:.4g} ± {self.halfwidth:.2g} ({self.level:.0%} CI, n={self.n})"


def _as_1d(name: str, x: Any) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {x!r}: must be a sequence of numbers") from None
    require(bool(np.all(np.isfinite(a))), name, f"<{a.size} values with NaN/inf>",
            "must hold only finite numbers")
    return a


def _check_level(level: float) -> float:
    require(isinstance(level, (int, float)) and 0 < level < 1, "level", level, "must be in (0, 1)")
    return float(level)


def mean_ci(x: Sequence[float] | np.ndarray, level: float = 0.95) -> CI:
    """Sample mean and Student-t confidence interval of i.i.d. observations ``x``.

    With one observation the half-width is infinite (no variance estimate).
    """
    a = _as_1d("x", x)
    level = _check_level(level)
    require(a.size >= 1, "x", x, "must hold at least one observation")
    n = a.size
    m = float(a.mean())
    if n == 1:
        return CI(m, -np.inf, np.inf, np.inf, 1, level)
    sem = float(a.std(ddof=1)) / np.sqrt(n)
    from scipy import stats  # here, not at the top: it costs a sweep worker ~1 s to import
    hw = float(stats.t.ppf(0.5 + level / 2, df=n - 1)) * sem
    return CI(m, m - hw, m + hw, hw, n, level)


def batch_means_ci(samples: Sequence[float] | np.ndarray, n_batches: int = 20,
                   level: float = 0.95) -> CI:
    """Confidence interval for the mean of one correlated run by non-overlapping batch means.

    The run is cut into ``n_batches`` equal consecutive batches (the first ``len % n_batches``
    samples, typically warm-up, are dropped); the batch means are treated as i.i.d.
    ``CI.n`` is the number of batches.
    """
    a = _as_1d("samples", samples)
    require(isinstance(n_batches, (int, np.integer)) and n_batches >= 2, "n_batches", n_batches,
            "must be an integer >= 2")
    require(a.size >= n_batches, "samples", f"<{a.size} values>",
            f"need at least n_batches = {n_batches} samples")
    size = a.size // n_batches
    a = a[a.size - size * n_batches:]
    return mean_ci(a.reshape(n_batches, size).mean(axis=1), level)


def replicate(fn: Callable[..., Mapping[str, Any] | pd.Series], seeds: Iterable[int],
              **kw: Any) -> pd.DataFrame:
    """Call ``fn(seed=s, **kw)`` for each seed; one row per seed with a ``seed`` column first.

    ``fn`` returns a mapping or a Series of scalar results.
    """
    require(callable(fn), "fn", fn, "must be callable")
    seeds = list(seeds)
    require(len(seeds) >= 1, "seeds", seeds, "must hold at least one seed")
    rows = []
    for s in seeds:
        out = fn(seed=s, **kw)
        if isinstance(out, pd.Series):
            out = out.to_dict()
        require(isinstance(out, Mapping), "fn", getattr(fn, "__name__", fn),
                f"must return a dict or Series, returned {type(out).__name__}")
        rows.append({"seed": s, **out})
    return pd.DataFrame(rows)


def summarize(df: pd.DataFrame, by: str | Sequence[str] | None, value: str | Sequence[str],
              level: float = 0.95) -> pd.DataFrame:
    """Mean and Student-t CI of ``value`` column(s) per group of ``by``.

    Returns one row per group with columns ``<by>..., n`` and, per value ``v``:
    ``v`` (the mean), ``v_low``, ``v_high``, ``v_halfwidth``. With a single value the
    columns are ``mean, low, high, halfwidth``. ``by=None`` summarizes the whole frame.
    """
    level = _check_level(level)
    require(isinstance(df, pd.DataFrame), "df", type(df).__name__, "must be a pandas DataFrame")
    keys = [] if by is None else ([by] if isinstance(by, str) else list(by))
    values = [value] if isinstance(value, str) else list(value)
    for c in keys + values:
        require(c in df.columns, "column", c, "must be one of " + ", ".join(map(repr, df.columns)))
    single = isinstance(value, str)
    rows = []
    groups = df.groupby(keys, sort=True) if keys else [((), df)]
    for gkey, g in groups:
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        row: dict[str, Any] = dict(zip(keys, gkey))
        row["n"] = len(g)
        for v in values:
            ci = mean_ci(g[v].to_numpy(), level)
            if single:
                row.update(mean=ci.mean, low=ci.low, high=ci.high, halfwidth=ci.halfwidth)
            else:
                row.update({v: ci.mean, f"{v}_low": ci.low, f"{v}_high": ci.high,
                            f"{v}_halfwidth": ci.halfwidth})
        rows.append(row)
    return pd.DataFrame(rows)


def percentile(x: Sequence[float] | np.ndarray, q: float | Sequence[float]) -> float | np.ndarray:
    """The ``q``-th percentile(s) of ``x`` (q in [0, 100]), linear interpolation."""
    a = _as_1d("x", x)
    require(a.size >= 1, "x", x, "must hold at least one observation")
    qa = np.asarray(q, dtype=float)
    require(bool(np.all((qa >= 0) & (qa <= 100))), "q", q, "must be in [0, 100]")
    out = np.percentile(a, qa)
    return float(out) if np.ndim(out) == 0 else out
