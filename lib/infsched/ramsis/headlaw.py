"""The slack-bucket law of the new head under variable batching, applied factor by factor.

:mod:`infsched.ramsis.variable` derives the ``b < n`` transition (paper §4.3.2 / §4.4, "similar
reasoning" to Eq. 2) as a product of three factors::

    P[(n', j') | (n, T_j), (m, b)] = Σ_a p(a | n, T_j) · H_a(j' | n, j, b, τ) · P(c = n' − n + b | a, τ)

the phase law ``p`` (Eq. 2's interval A, :func:`~infsched.ramsis.kernel.phase_law`), the bucket law
``H`` of the new head, whose offset after the old head is ``x = T_A · Beta(bK, k_A − bK + 1)`` with
``k_A = nK − a``, and the arrival law of ``c`` given ``a`` (:func:`~infsched.ramsis.variable.arrival_law`).
Storing ``p · H`` for every (state, model, batch), phase and bucket, as a sparse matrix, costs
``K`` numbers per reachable bucket of every pair: 18 GiB for 60 models at FLD D = 100. This module
stores only what ``H`` needs per *edge* (a bucket boundary a pair can reach) and regenerates the
``K`` phases inside a compiled loop, by the recurrence of the regularised incomplete beta function in
its second parameter (DLMF §8.17; the test suite checks it against ``betainc``)::

    I_u(α, β + 1) = I_u(α, β) + t_β,   t_β = u^α (1 − u)^β / (β B(α, β)),
    t_{β+1} = t_β · (1 − u) (α + β) / (β + 1).

Phases ``a = K, K − 1, …, 1`` are ``β = (n − b − 1)K + 1, …, (n − b)K``, so one ``betainc`` and one
Beta density per edge give all ``K`` values, each a positive term added to the last: no
cancellation. Memory is three numbers per edge; a sweep costs ``K`` multiply-adds per
(pair, bucket), with the new-arrival factor applied once per ``(τ, a, n − b, j')`` beforehand
(``Z`` in :mod:`~infsched.ramsis.variable`).

**Tails.** ``I_u(α, β)`` grows with ``β``, so below ``u_lo(b, n − b) = I⁻¹(bK, (n − b)K; ε)`` every phase
has ``F < ε`` and above ``u_hi = 1 − I⁻¹((n − b − 1)K + 1, bK; ε)`` every phase has ``1 − F < ε``. Edges
outside ``(u_lo, u_hi)`` are set to exactly 0 or 1, which moves at most ``ε`` of probability per
(pair, phase) into the neighbouring bucket. With ``ε = 1e-18`` (:data:`TAIL`) that is below the
rounding error of the masses themselves (differences of values near 1, unit roundoff 1.1e-16), so
the chain is the same to the precision it is computed in; the two inverses depend only on
``(b, n − b)``, a table of ``(N − 1)²`` numbers. For the same reason the loops stop after the last
phase whose weight ``p(a | s)`` exceeds ``ε`` (:func:`phase_stop`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from scipy.special import betainc, betaincinv, betaln

__all__ = ["TAIL", "EdgeTable", "tail_bounds", "edge_table", "phase_stop", "pair_values",
           "pair_rows"]

#: probability below which a Beta tail is dropped (see the module docstring)
TAIL = 1e-18

_BLOCK = 2_000_000  # edges per block while building: bounds the temporaries


def tail_bounds(workers: int, n_max: int, tail: float = TAIL) -> tuple[np.ndarray, np.ndarray]:
    """``(u_lo, u_hi)``, each ``(N, N)`` indexed ``[b, n − b]`` (row and column 0 unused): outside
    ``(u_lo, u_hi)`` every phase's CDF of ``x / T_A`` is within ``tail`` of 0 or 1.

    The inverses are checked forward: where one misses (it should not), the bound falls back to
    the whole interval, which is exact and only slower."""
    K, N = workers, n_max
    b = np.arange(N, dtype=float)[:, None]
    rem = np.arange(N, dtype=float)[None, :]
    ok = (b >= 1) & (rem >= 1) & (b + rem <= N)
    alpha = np.where(ok, b * K, 1.0)
    beta_hi = np.where(ok, rem * K, 1.0)                       # phase a = 1: the largest β
    beta_lo = np.where(ok, (rem - 1) * K + 1, 1.0)             # phase a = K: the smallest β
    with np.errstate(all="ignore"):
        u_lo = betaincinv(alpha, beta_hi, tail)
        u_hi = 1.0 - betaincinv(beta_lo, alpha, tail)
        bad_lo = ~(betainc(alpha, beta_hi, u_lo) <= 2 * tail)
        bad_hi = ~(betainc(beta_lo, alpha, 1.0 - u_hi) <= 2 * tail)
    u_lo = np.where(ok & ~bad_lo & np.isfinite(u_lo), u_lo, 0.0)
    u_hi = np.where(ok & ~bad_hi & np.isfinite(u_hi), u_hi, 1.0)
    return u_lo, u_hi


@dataclass(frozen=True, eq=False)
class EdgeTable:
    """The reachable, non-negligible bucket edges of every pair ``(n, j, b, τ)``.

    Pair ``p`` spreads its new head over buckets ``first[p] … first[p] + count[p]``; its interior
    edges are ``start[p] … start[p] + count[p] − 1`` of ``u`` (``x / T_A`` at the edge), ``I0``
    (``I_u(bK, (n − b − 1)K + 1)``, the CDF of phase ``a = K``) and ``t0`` (the recurrence's first
    term). ``rem = n − b`` and ``alpha = bK`` per pair."""

    first: np.ndarray
    count: np.ndarray
    start: np.ndarray
    rem: np.ndarray
    alpha: np.ndarray
    u: np.ndarray
    I0: np.ndarray
    t0: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in self.__dataclass_fields__)


def edge_counts(grid: np.ndarray, slo: float, workers: int, n: np.ndarray, j: np.ndarray,
                b: np.ndarray, tau: np.ndarray, bounds) -> tuple[np.ndarray, np.ndarray]:
    """``(first, count)`` per pair: the new head's first possible bucket and how many interior
    edges lie strictly inside the non-negligible range (none when ``T_A = 0``: all queued queries
    arrived with the head, ``x = 0``)."""
    grid = np.asarray(grid, dtype=float)
    J = grid.size
    u_lo, u_hi = bounds
    T_j = grid[j]
    T_A = slo - T_j
    rem = n - b
    # the new slack T_j + x − τ lies in [T_j − τ, SLO − τ): buckets first..last (today's head_law)
    first = np.clip(np.searchsorted(grid, T_j - tau, side="right") - 1, 0, J - 1)
    last = np.maximum(np.clip(np.searchsorted(grid, slo - tau, side="right") - 1, 0, J - 1), first)
    # interior edges are grid[first + 1 .. last]; keep those with u_lo < u < u_hi
    lo = np.searchsorted(grid, T_j - tau + u_lo[b, rem] * T_A, side="right")
    hi = np.searchsorted(grid, T_j - tau + u_hi[b, rem] * T_A, side="left")
    lo = np.clip(lo, first + 1, last + 1)
    hi = np.clip(hi, first + 1, last + 1)
    hi = np.maximum(hi, lo)
    zero = T_A <= 0
    lo = np.where(zero, first + 1, lo)
    hi = np.where(zero, first + 1, hi)
    return lo - 1, hi - lo


def edge_table(grid: np.ndarray, slo: float, workers: int, n: np.ndarray, j: np.ndarray,
               b: np.ndarray, tau: np.ndarray, bounds) -> EdgeTable:
    """The :class:`EdgeTable` of pairs ``(n, j, b, τ)`` (arrays of one length, ``b < n``)."""
    K = workers
    grid = np.asarray(grid, dtype=float)
    n, j, b = (np.asarray(v, dtype=np.int64) for v in (n, j, b))
    tau = np.asarray(tau, dtype=float)
    first, count = edge_counts(grid, slo, K, n, j, b, tau, bounds)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    E = int(count.sum())
    u = np.empty(E)
    I0 = np.empty(E)
    t0 = np.empty(E)
    rem = n - b
    alpha = (b * K).astype(float)
    T_j = grid[j]
    T_A = slo - T_j
    ends = np.cumsum(count)
    cuts = np.searchsorted(ends, np.arange(_BLOCK, E, _BLOCK))
    bounds_p = np.unique(np.concatenate([[0], cuts, [n.size]]))
    for p0, p1 in zip(bounds_p[:-1], bounds_p[1:]):
        cnt = count[p0:p1]
        e0 = int(start[p0]) if p1 > p0 else 0
        m = int(cnt.sum())
        if m == 0:
            continue
        owner = np.repeat(np.arange(p0, p1), cnt)
        k = np.arange(m) - (start[owner] - e0)
        g = first[owner] + 1 + k                                    # grid index of the edge
        uu = (grid[g] - T_j[owner] + tau[owner]) / T_A[owner]
        uu = np.clip(uu, 0.0, 1.0)
        a_ = alpha[owner]
        b0 = ((rem[owner] - 1) * K + 1).astype(float)
        sl = slice(e0, e0 + m)
        u[sl] = uu
        I0[sl] = betainc(a_, b0, uu)
        # t_β0 = u^α (1−u)^β0 / (β0 B(α, β0)), in logs (u is strictly inside (0, 1) here)
        with np.errstate(divide="ignore"):
            logt = a_ * np.log(uu) + b0 * np.log1p(-uu) - np.log(b0) - betaln(a_, b0)
        t0[sl] = np.exp(logt)
    return EdgeTable(first.astype(np.int64), count.astype(np.int64), start, rem.astype(np.int64),
                     alpha, u, I0, t0)


def phase_stop(phase: np.ndarray, tail: float = TAIL) -> np.ndarray:
    """Per state, how many phases the compiled loops visit: they run ``a = K, K − 1, …`` (``β``
    increasing) and stop after the last phase with ``p(a | s) > tail``. The phase law is a window of
    a Poisson pmf, so it is negligible over a run of phases at one end (on the 60-model MD grid
    the loops visit 26 of 60 phases on average); what is skipped weighs at most ``K · tail`` per
    state, the precision of :data:`TAIL` again. ``tail = 0`` visits every phase with a non-zero
    weight."""
    K = phase.shape[1]
    sig = phase[:, ::-1] > tail                              # column i: phase a = K − i
    last = K - 1 - np.argmax(sig[:, ::-1], axis=1)
    return np.where(sig.any(axis=1), last + 1, 0).astype(np.int64)


@njit(cache=True)
def _load(p, first, count, start, u, I0, t0, F, t, q):
    """Fill ``F`` (CDF at the edges, phase a = K), ``t`` and ``q = 1 − u`` for pair ``p``;
    return the number of buckets."""
    c = count[p]
    e0 = start[p]
    L = c + 1
    F[0] = 0.0
    F[L] = 1.0
    for k in range(c):
        F[k + 1] = I0[e0 + k]
        t[k + 1] = t0[e0 + k]
        q[k + 1] = 1.0 - u[e0 + k]
    return L


@njit(cache=True)
def _values(lo, hi, pairs, state, tau_loc, first, count, start, rem, alpha, u, I0, t0, phase,
            stop, Z, workers, size, out):
    K = workers
    F = np.empty(size)
    t = np.empty(size)
    q = np.empty(size)
    for idx in range(lo, hi):
        p = pairs[idx]
        s = state[p]
        r = rem[p]
        uz = tau_loc[p]
        f0 = first[p]
        L = _load(p, first, count, start, u, I0, t0, F, t, q)
        al = alpha[p]
        beta = (r - 1) * K + 1.0
        acc = 0.0
        for i in range(stop[s]):                                 # later phases are negligible
            a = K - 1 - i                                        # phase a − 1 (a-order)
            ph = phase[s, a]
            if ph > 0.0:
                inner = 0.0
                for l in range(L):
                    m = F[l + 1] - F[l]
                    if m > 0.0:
                        inner += m * Z[uz, a, r - 1, f0 + l]
                acc += ph * inner
            if i < K - 1 and L > 1:                              # next phase: β + 1
                g = (al + beta) / (beta + 1.0)
                for k in range(1, L):
                    F[k] += t[k]
                    t[k] *= g * q[k]
            beta += 1.0
        out[p] = acc


@njit(cache=True, parallel=True)
def pair_values(pairs, state, tau_loc, first, count, start, rem, alpha, u, I0, t0, phase, stop,
                Z, workers, out):
    """``out[p] = Σ_a p(a | s) Σ_{j'} H_a(j') Z[τ, a, n − b, j']`` for each ``p`` in ``pairs``:
    the expected continuation value of pair ``p`` given ``Z`` (the new-arrival factor already
    applied; ``Z[u, a − 1, n − b − 1, j']`` with ``u = tau_loc[p]`` its τ within ``Z``). Phases run
    ``a = K, K − 1, …`` and stop after ``stop[s]`` of them (:func:`phase_stop`). Pairs are
    independent, so blocks of them run on numba's threads; each pair's sum is sequential, so the
    result does not depend on the thread count."""
    size = 2 + count.max() if count.size else 2
    blocks = 64
    n = pairs.size
    for k in prange(blocks):
        _values(k * n // blocks, (k + 1) * n // blocks, pairs, state, tau_loc, first, count,
                start, rem, alpha, u, I0, t0, phase, stop, Z, workers, size, out)


@njit(cache=True)
def pair_rows(pairs, rows, state, tau_idx, first, count, start, rem, alpha, u, I0, t0, phase,
              stop, pmf, sf, workers, n_max, n_grid, out):
    """Add the transition row of pair ``pairs[i]`` to ``out[rows[i]]`` (over the ``N·J + 1``
    states): the bucket law times the arrival law ``pmf[τ, a − 1, c]``, the overflow ``sf``."""
    K, N, J = workers, n_max, n_grid
    size = 2 + count.max() if count.size else 2
    F = np.empty(size)
    t = np.empty(size)
    q = np.empty(size)
    for idx in range(pairs.size):
        p = pairs[idx]
        row = rows[idx]
        s = state[p]
        r = rem[p]
        uz = tau_idx[p]
        f0 = first[p]
        L = _load(p, first, count, start, u, I0, t0, F, t, q)
        al = alpha[p]
        beta = (r - 1) * K + 1.0
        for i in range(stop[s]):
            a = K - 1 - i
            ph = phase[s, a]
            if ph > 0.0:
                over = 0.0
                for l in range(L):
                    m = F[l + 1] - F[l]
                    if m > 0.0:
                        w = ph * m
                        for c in range(N - r + 1):
                            out[row, (r + c - 1) * J + f0 + l] += w * pmf[uz, a, c]
                        over += w
                out[row, N * J] += over * sf[uz, a, N - r]
            if i < K - 1 and L > 1:
                g = (al + beta) / (beta + 1.0)
                for k in range(1, L):
                    F[k] += t[k]
                    t[k] *= g * q[k]
            beta += 1.0
