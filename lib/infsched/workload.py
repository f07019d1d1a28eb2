"""Arrival processes: homogeneous Poisson, piecewise-constant-rate Poisson, MMPP.

Every generator takes a ``numpy.random.Generator`` (never a seed or the global state), so a
run that spawns its generators from one ``SeedSequence`` gets the same numbers anywhere.
Arrival times are returned as sorted ``float64`` arrays, in the same time unit as the rates'
reciprocal (rates per second give times in seconds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError, as_float, require

__all__ = [
    "poisson_arrivals",
    "PiecewiseRate",
    "piecewise_poisson_arrivals",
    "mmpp_arrivals",
]


def _check_rng(rng: object) -> np.random.Generator:
    require(
        isinstance(rng, np.random.Generator),
        "rng",
        rng,
        "must be a numpy.random.Generator (e.g. np.random.default_rng(seed))",
    )
    return rng  # type: ignore[return-value]


def _check_positive_finite(name: str, value: float, *, allow_zero: bool = False) -> float:
    try:
        v = as_float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r}: must be a number") from None
    ok = np.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    require(bool(ok), name, value, "must be a finite number " + (">= 0" if allow_zero else "> 0"))
    return v


def poisson_arrivals(
    rate: float,
    *,
    n: int | None = None,
    horizon: float | None = None,
    rng: np.random.Generator,
) -> np.ndarray:
    """Arrival times of a homogeneous Poisson process of intensity ``rate``.

    Give exactly one of ``n`` (return the first ``n`` arrivals) or ``horizon`` (return every
    arrival in ``[0, horizon)``; the count is then Poisson(rate * horizon)).
    """
    rng = _check_rng(rng)
    rate = _check_positive_finite("rate", rate)
    require((n is None) != (horizon is None), "n/horizon", (n, horizon),
            "give exactly one of n (number of arrivals) or horizon (time span)")
    if n is not None:
        require(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0,
                "n", n, "must be an integer >= 0")
        return np.cumsum(rng.exponential(1.0 / rate, size=int(n)))
    horizon = _check_positive_finite("horizon", horizon, allow_zero=True)  # type: ignore[arg-type]
    count = rng.poisson(rate * horizon)
    # Given the count, Poisson arrival times are i.i.d. uniform on [0, horizon).
    return np.sort(rng.uniform(0.0, horizon, size=count))


@dataclass(frozen=True)
class PiecewiseRate:
    """A piecewise-constant arrival rate: ``rates[i]`` on ``[breakpoints[i], breakpoints[i+1])``.

    ``breakpoints`` start at 0 and increase strictly; the last rate holds from the last
    breakpoint onwards. Rates are finite and >= 0 (a zero rate is an idle period).
    """

    breakpoints: tuple[float, ...]
    rates: tuple[float, ...]
    _bp: np.ndarray = field(init=False, repr=False, compare=False)
    _r: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            bp = np.asarray(self.breakpoints, dtype=float).ravel()
            r = np.asarray(self.rates, dtype=float).ravel()
        except (TypeError, ValueError):
            raise ConfigError(
                f"breakpoints/rates = {self.breakpoints!r}/{self.rates!r}: must be sequences of numbers"
            ) from None
        require(bp.size >= 1, "breakpoints", self.breakpoints, "must hold at least one value (0)")
        require(bool(np.all(np.isfinite(bp))), "breakpoints", self.breakpoints, "must be finite")
        require(bp[0] == 0.0, "breakpoints", self.breakpoints, "must start at 0")
        require(bool(np.all(np.diff(bp) > 0)), "breakpoints", self.breakpoints,
                "must be strictly increasing")
        require(r.size == bp.size, "rates", self.rates,
                f"must have one rate per breakpoint ({bp.size}), got {r.size}")
        require(bool(np.all(np.isfinite(r)) and np.all(r >= 0)), "rates", self.rates,
                "must be finite and >= 0")
        object.__setattr__(self, "breakpoints", tuple(bp.tolist()))
        object.__setattr__(self, "rates", tuple(r.tolist()))
        object.__setattr__(self, "_bp", bp)
        object.__setattr__(self, "_r", r)

    def rate_at(self, t: float | np.ndarray) -> float | np.ndarray:
        """The rate in force at time(s) ``t`` (t >= 0)."""
        ta = np.asarray(t, dtype=float)
        require(bool(np.all(ta >= 0)), "t", t, "must be >= 0")
        out = self._r[np.searchsorted(self._bp, ta, side="right") - 1]
        return float(out) if out.ndim == 0 else out

    def pieces(self, horizon: float) -> list[tuple[float, float, float]]:
        """``(start, end, rate)`` of each piece clipped to ``[0, horizon)``."""
        ends = np.append(self._bp[1:], np.inf)
        return [(float(a), float(min(b, horizon)), float(r))
                for a, b, r in zip(self._bp, ends, self._r) if a < horizon]

    def mean_count(self, horizon: float) -> float:
        """Expected number of arrivals in ``[0, horizon)``: the integral of the rate."""
        return float(sum((b - a) * r for a, b, r in self.pieces(horizon)))


def piecewise_poisson_arrivals(
    schedule: PiecewiseRate, horizon: float, rng: np.random.Generator
) -> np.ndarray:
    """Arrivals of a non-homogeneous Poisson process with a piecewise-constant rate.

    Exact, piece by piece: each piece draws a Poisson count and uniform times in its interval
    (no thinning), so a piece with rate 0 contributes nothing.
    """
    rng = _check_rng(rng)
    require(isinstance(schedule, PiecewiseRate), "schedule", schedule, "must be a PiecewiseRate")
    horizon = _check_positive_finite("horizon", horizon, allow_zero=True)
    parts = []
    for a, b, r in schedule.pieces(horizon):
        k = rng.poisson(r * (b - a))
        parts.append(np.sort(rng.uniform(a, b, size=k)))
    return np.concatenate(parts) if parts else np.empty(0)


def mmpp_arrivals(
    rates: list[float] | np.ndarray,
    generator: list[list[float]] | np.ndarray,
    horizon: float,
    rng: np.random.Generator,
    *,
    initial_state: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A Markov-modulated Poisson process on ``[0, horizon)``.

    ``generator`` is the CTMC generator matrix Q (rows sum to 0, off-diagonals >= 0); while in
    state ``i`` arrivals come at ``rates[i]``. The initial state is drawn from the stationary
    distribution unless ``initial_state`` is given. Returns ``(times, states)``: the arrival
    times and the modulating state at each arrival.
    """
    rng = _check_rng(rng)
    lam = np.asarray(rates, dtype=float).ravel()
    Q = np.asarray(generator, dtype=float)
    m = lam.size
    require(m >= 1 and bool(np.all(np.isfinite(lam)) and np.all(lam >= 0)), "rates", rates,
            "must be a non-empty sequence of finite rates >= 0")
    require(Q.shape == (m, m), "generator", generator, f"must be a {m}x{m} matrix (one row per rate)")
    off = Q - np.diag(np.diag(Q))
    require(bool(np.all(off >= 0) and np.allclose(Q.sum(axis=1), 0.0)), "generator", generator,
            "must have off-diagonal entries >= 0 and rows summing to 0")
    horizon = _check_positive_finite("horizon", horizon, allow_zero=True)
    if initial_state is None:
        # stationary distribution: pi Q = 0, sum pi = 1 (least squares handles reducible chains)
        A = np.vstack([Q.T, np.ones(m)])
        b = np.zeros(m + 1)
        b[-1] = 1.0
        pi = np.clip(np.linalg.lstsq(A, b, rcond=None)[0], 0, None)
        state = int(rng.choice(m, p=pi / pi.sum()))
    else:
        require(isinstance(initial_state, (int, np.integer)) and 0 <= initial_state < m,
                "initial_state", initial_state, f"must be an integer in [0, {m - 1}]")
        state = int(initial_state)
    t = 0.0
    times: list[np.ndarray] = []
    states: list[np.ndarray] = []
    while t < horizon:
        out_rate = -Q[state, state]
        sojourn = rng.exponential(1.0 / out_rate) if out_rate > 0 else np.inf
        end = min(t + sojourn, horizon)
        k = rng.poisson(lam[state] * (end - t))
        times.append(np.sort(rng.uniform(t, end, size=k)))
        states.append(np.full(k, state, dtype=int))
        t = end
        if t < horizon:
            p = off[state] / out_rate
            state = int(rng.choice(m, p=p))
    if not times:
        return np.empty(0), np.empty(0, dtype=int)
    return np.concatenate(times), np.concatenate(states)
