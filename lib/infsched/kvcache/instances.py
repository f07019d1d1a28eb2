"""Instances of the paper: the synthetic arrival models of Section 5.1 (Fig. 2) and the
constructions behind Theorems 4.1 and 4.3, with the bounds those theorems state.
"""

from __future__ import annotations

import math

import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance

__all__ = ["arrival_model_1", "arrival_model_2", "theorem_41", "theorem_41_opt_bound",
           "equal_lengths", "equal_lengths_bound", "equal_lengths_dual"]


def _rng(rng) -> np.random.Generator:
    require(isinstance(rng, np.random.Generator), "rng", type(rng).__name__,
            "must be a numpy Generator (np.random.default_rng(seed))")
    return rng


def _range(name: str, r) -> tuple[int, int]:
    require(isinstance(r, tuple) and len(r) == 2 and all(isinstance(x, int) for x in r)
            and 1 <= r[0] <= r[1], name, r, "must be a pair of integers (lo, hi) with 1 <= lo <= hi")
    return r


def _sizes(rng: np.random.Generator, n: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """s_i ~ U{1..5}, o_i ~ U{1..M − s_i} (Section 5.1)."""
    s = rng.integers(1, 6, size=n)
    o = rng.integers(1, M - s + 1)
    return s, o


def arrival_model_1(rng: np.random.Generator, n_range: tuple[int, int] = (40, 60),
                    M_range: tuple[int, int] = (30, 50)) -> Instance:
    """Arrival Model 1: ``n ~ U{n_range}`` requests all at time 0, ``M ~ U{M_range}``,
    ``s_i ~ U{1..5}``, ``o_i ~ U{1..M − s_i}``. The paper's ``n_range`` is (40, 60)."""
    rng = _rng(rng)
    lo, hi = _range("n_range", n_range)
    mlo, mhi = _range("M_range", M_range)
    require(mlo >= 6, "M_range", M_range, "must start at 6 or more (s_i can be 5)")
    M = int(rng.integers(mlo, mhi + 1))
    n = int(rng.integers(lo, hi + 1))
    s, o = _sizes(rng, n, M)
    return Instance.at_zero(s, o, M)


def arrival_model_2(rng: np.random.Generator, T_range: tuple[int, int] = (40, 60),
                    rate_range: tuple[float, float] = (0.5, 1.5),
                    M_range: tuple[int, int] = (30, 50)) -> Instance:
    """Arrival Model 2: horizon ``T ~ U{T_range}``, rate ``λ ~ U[rate_range]``, and Poisson(λ)
    arrivals at each integer ``t = 1..T`` (our reading of "a stationary Poisson process on the
    discrete horizon"); sizes as in Model 1. Redrawn until at least one request arrives."""
    rng = _rng(rng)
    lo, hi = _range("T_range", T_range)
    mlo, mhi = _range("M_range", M_range)
    require(mlo >= 6, "M_range", M_range, "must start at 6 or more (s_i can be 5)")
    r0, r1 = rate_range
    require(0 < r0 <= r1, "rate_range", rate_range, "must be (lo, hi) with 0 < lo <= hi")
    M = int(rng.integers(mlo, mhi + 1))
    T = int(rng.integers(lo, hi + 1))
    lam = float(rng.uniform(r0, r1))
    while True:
        counts = rng.poisson(lam, size=T)
        if counts.sum() > 0:
            break
    a = np.repeat(np.arange(1, T + 1), counts)
    s, o = _sizes(rng, a.size, M)
    return Instance(a, s, o, M)


def theorem_41(M: int) -> Instance:
    """The lower-bound instance of Thm 4.1 against an algorithm that starts the long request at
    ``b = 0`` (as MC-SF does): ``s = 1``; one request with ``o = M − 1`` at 0; ``M/2`` requests
    with ``o = 1`` at ``r = M − ⌊√M / 2⌋``. ``M`` must be even and at least 16."""
    require(isinstance(M, int) and M >= 16 and M % 2 == 0, "M", M, "must be an even integer >= 16")
    r = M - math.isqrt(M) // 2
    k = M // 2
    a = np.concatenate([[0], np.full(k, r)])
    o = np.concatenate([[M - 1], np.ones(k, dtype=np.int64)])
    return Instance(a, np.ones(k + 1, dtype=np.int64), o, M)


def theorem_41_opt_bound(M: int) -> tuple[float, np.ndarray]:
    """An upper bound on OPT for :func:`theorem_41` and the schedule that attains it: the short
    requests start at ``r``, the long one waits until ``r + 1`` (so ``OPT ≤ M/2 + r + M``)."""
    inst = theorem_41(M)
    r = int(inst.arrival[1])
    starts = np.concatenate([[r + 1], np.full(inst.n - 1, r)])
    return float(np.sum(starts + inst.output - inst.arrival)), starts


def equal_lengths(n: int, s: int, o: int, M: int) -> Instance:
    """``n`` identical requests (prompt ``s``, output ``o``) at time 0: the setting of Thm 4.3's
    equal-length case, which needs ``M ≥ 2(s + o)``."""
    require(isinstance(n, int) and n >= 1, "n", n, "must be a positive integer")
    require(isinstance(M, int) and M >= 2 * (s + o), "M", M,
            f"must be an integer >= 2(s + o) = {2 * (s + o)} (Thm 4.3)")
    return Instance.at_zero(np.full(n, s), np.full(n, o), M)


def equal_lengths_bound(n: int, s: int, o: int, M: int) -> tuple[float, float]:
    """The two upper bounds on TEL(MC-SF) of App. B.3 for :func:`equal_lengths`:
    ``o·(m·k(k+1)/2 + p(k+1))`` with ``m = ⌊M/(s+o)⌋``, ``n = km + p``, and the looser
    ``o(s+o)n²/M + 5on/8``."""
    m = M // (s + o)
    k, p = divmod(n, m)
    return (o * (m * k * (k + 1) / 2 + p * (k + 1)),
            o * (s + o) * n * n / M + 5 * o * n / 8)


def equal_lengths_dual(n: int, s: int, o: int, M: int) -> tuple[float, float]:
    """App. B.3's dual certificate for :func:`equal_lengths`: ``(D, closed_form)``.

    With ``β = 2s + o + 1``, ``α' = 2(o − 1)(3s + 2o + 2) / (3β)``, ``ȳ = (βon/(2M) − α'/2)⁺``,
    ``λ_1 = (2ȳ + α')/(βo)`` and ``λ_t = (λ_1 − 2(t − 1)/(βo))⁺``, the dual value
    ``D = n·o + n·ȳ − M·Σ_t λ_t`` is a lower bound on OPT. The paper replaces ``M·Σ_t λ_t`` by
    the area ``M·λ_1²·βo/4``; the sum exceeds the area by about ``M·λ_1/2``, so that closed form
    (returned second) is *not* a valid lower bound (spec §1.4: 675 > OPT = 650 at
    ``s = o = 1, M = 4, n = 50``).
    """
    beta = 2 * s + o + 1
    alpha = 2 * (o - 1) * (3 * s + 2 * o + 2) / (3 * beta)
    y = max(beta * o * n / (2 * M) - alpha / 2, 0.0)
    lam1 = (2 * y + alpha) / (beta * o)
    steps = int(math.floor(lam1 * beta * o / 2)) + 2          # λ_t is 0 from here on
    lam = np.maximum(lam1 - 2 * np.arange(steps) / (beta * o), 0.0)
    return (n * o + n * y - M * float(lam.sum()),
            n * o + n * y - M * lam1 ** 2 * beta * o / 4)
