"""Transition probabilities of a RAMSIS worker MDP under maximal batching (paper §4.4).

A worker of K, fed round-robin from a central Poisson stream of rate λ, is in state
``(n, j)``: ``n`` queued queries, the earliest with slack in ``[T_j, T_{j+1})``. Taking action
``(m, n)`` occupies it for ``τ = l(m, n)``; the next state depends on how many queries reach it
during ``τ`` and when the first of them arrives (Eqs. 1–3, the four intervals A, B, C, D of
Fig. 4).

Eq. 2 depends on the current state only through the round-robin *phase* ``r = k_A mod K`` (the
central arrivals since the worker's last query), and on the action only through ``τ``
(spec §2.6). So the kernel factorises::

    P[s' | (n, T_j), (m, n)] = Σ_r p(r | n, T_j) · Kern(a = K − r, τ = l(m, n))[s']

:func:`phase_law` is the normalised interval-A term, :func:`transition_kernel` is ``Kern`` for one
``τ`` and every ``a``, built from Poisson CDFs as one small Toeplitz product per distinct
interval edge. :func:`brute_force_row` is Eq. 2 summed literally over ``(k_A, k_B, k_C, k_D)``;
it is exponentially slower and exists so the tests can hold the factorised form to it.

Conventions: times in ms, ``lam`` in queries per ms, ``grid`` the slack grid
``T_0 = 0 < … < T_{J-1} = SLO`` with ``T_J := SLO`` as the upper edge of the last bucket (the
artifact's rule). States ``(n', j')`` for ``n' = 1..N`` are indexed ``(n' − 1)·J + j'``, the overflow
state ``(φ, ∅)`` is index ``N·J``. A transition to an empty queue (``n' = 0``) is redirected to
``(1, SLO)`` (Eq. 1 composed with Eq. 2: the empty state is always followed by one arrival
with full slack), which drops the ``n = 0`` states from the decision chain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

__all__ = [
    "Kernel",
    "poisson_log_pmf",
    "phase_law",
    "edge_times",
    "transition_kernel",
    "brute_force_row",
    "n_states",
]


def n_states(n_max: int, n_grid: int) -> int:
    """``N·J + 1``: the decision states ``(n ≥ 1, j)`` plus the overflow state."""
    return n_max * n_grid + 1


def poisson_log_pmf(k: np.ndarray, mean: np.ndarray | float) -> np.ndarray:
    """``log PF(k, T)`` for a Poisson count of mean ``λT``; ``-inf`` where the pmf is 0."""
    k = np.asarray(k, dtype=float)
    mean = np.asarray(mean, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = k * np.log(mean) - mean - gammaln(k + 1.0)
    # mean 0: all mass at k = 0 (0 * log 0 is 0, not nan)
    return np.where(mean > 0, out, np.where(k == 0, 0.0, -np.inf))


def _poisson_cdf(mean: np.ndarray, kmax: int) -> np.ndarray:
    """``P[Pois(mean) ≤ k]`` for ``k = 0..kmax``; shape ``mean.shape + (kmax + 1,)``."""
    mean = np.asarray(mean, dtype=float)
    k = np.arange(kmax + 1, dtype=float)
    pmf = np.exp(poisson_log_pmf(k, mean[..., None]))
    return np.minimum(np.cumsum(pmf, axis=-1), 1.0)


def phase_law(lam: float, workers: int, n_max: int, grid: np.ndarray, slo: float) -> np.ndarray:
    """``p(r | n, T_j)`` for ``n = 1..N``, every ``j`` and ``r = 0..K−1``: shape ``(N, J, K)``.

    The interval-A factor of Eq. 2, normalised: the head query waited ``T_A = SLO − T_j`` and the
    central queue saw ``k_A = (n−1)K + r`` arrivals since, so ``p(r) ∝ PF((n−1)K + r, T_A)``. When
    ``T_A = 0`` the limit puts all mass on ``r = 0`` (the smallest ``k_A``).
    """
    K = workers
    n = np.arange(1, n_max + 1)[:, None, None]
    r = np.arange(K)[None, None, :]
    T_A = (slo - np.asarray(grid, dtype=float))[None, :, None]
    logw = np.broadcast_to(poisson_log_pmf((n - 1) * K + r, lam * T_A), (n_max, len(grid), K))
    top = logw.max(axis=2, keepdims=True)
    w = np.exp(logw - np.where(np.isfinite(top), top, 0.0))
    w[..., 0] = np.where(np.isfinite(top[..., 0]), w[..., 0], 1.0)  # every PF is 0: r = 0
    return w / w.sum(axis=2, keepdims=True)


def edge_times(grid: np.ndarray, slo: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """For each next-state bucket ``j'``, the window ``[t_lo, t_hi)`` after the decision in which
    the first new query must arrive for its slack at the next decision to fall in bucket ``j'``.

    Slack at the next decision is ``SLO − (τ − t)`` for arrival time ``t``; bucket ``j'`` holds
    ``T_{j'} ≤ slack < T_{j'+1}`` with ``T_J = SLO``; ``j' = 0`` also takes every smaller slack,
    negative included (so ``t_lo = 0`` there). These are the interval edges ``T_B`` and
    ``T_B + T_C`` of Fig. 4, clipped to ``[0, τ]``.
    """
    grid = np.asarray(grid, dtype=float)
    upper = np.append(grid[1:], slo)
    t_lo = np.clip(tau - slo + grid, 0.0, tau)
    t_lo[0] = 0.0
    t_hi = np.clip(tau - slo + upper, 0.0, tau)
    return t_lo, t_hi


@dataclass(frozen=True, eq=False)
class Kernel:
    """``Kern(a, τ)`` for one ``τ`` and ``a = 1..K`` (row ``a − 1``).

    ``state[a−1, n'−1, j']`` is the probability of ``n'`` new queries with the first in bucket
    ``j'``; ``empty[a−1]`` of none (redirected to ``(1, SLO)``); ``overflow[a−1]`` of more than
    ``N`` (Eq. 3: the rest of the mass).
    """

    tau: float
    state: np.ndarray
    empty: np.ndarray
    overflow: np.ndarray

    def dense(self) -> np.ndarray:
        """The kernel as a ``(K, N·J + 1)`` matrix over the decision states, with the empty-queue
        mass moved to ``(1, SLO)`` and the overflow mass in the last column."""
        K, N, J = self.state.shape
        out = np.zeros((K, N * J + 1))
        out[:, : N * J] = self.state.reshape(K, N * J)
        out[:, J - 1] += self.empty
        out[:, N * J] = self.overflow
        return out


def transition_kernel(lam: float, workers: int, n_max: int, grid: np.ndarray, slo: float,
                      tau: float) -> Kernel:
    """The factorised kernel (the module docstring) for one service time ``τ`` (ms).

    Given ``a`` central arrivals needed before the worker's next query, new worker queries come at
    central arrivals ``a, a+K, a+2K, …``. With ``W ~ Pois(λ(τ−t))`` and ``F_W`` its CDF,

    ``E(t)[a, n'] = Σ_{z<a} Pois(a−1−z; λt) · (F_W(n'K + z) − F_W((n'−1)K + z))``

    is the probability of no worker arrival before ``t`` and exactly ``n'`` in ``[0, τ]``; bucket
    ``j'`` then has probability ``E(t_lo) − E(t_hi)``. Each distinct edge ``t`` costs one
    ``K×K`` lower-triangular Toeplitz matrix times a ``K×N`` matrix.
    """
    K, N = workers, n_max
    grid = np.asarray(grid, dtype=float)
    J = grid.size
    t_lo, t_hi = edge_times(grid, slo, tau)
    edges, inverse = np.unique(np.concatenate([t_lo, t_hi]), return_inverse=True)
    lo_idx, hi_idx = inverse[:J], inverse[J:]

    # F_W for every edge: W counts central arrivals in (t, τ]
    cdf = _poisson_cdf(lam * (tau - edges), (N + 1) * K)          # (E, (N+1)K + 1)
    nn = np.arange(1, N + 1)[:, None]
    z = np.arange(K)[None, :]
    G = cdf[:, nn * K + z] - cdf[:, (nn - 1) * K + z]              # (E, N, K)
    # Pois(i; λt) for i = 0..K-1, arranged as L[a-1, z] = Pois(a-1-z; λt) for z <= a-1
    i = np.arange(K)
    pz = np.exp(poisson_log_pmf(i[None, :], lam * edges[:, None]))  # (E, K)
    diff = i[:, None] - i[None, :]
    L = np.where(diff >= 0, pz[:, np.clip(diff, 0, None)], 0.0)    # (E, K, K)
    E = L @ np.transpose(G, (0, 2, 1))                               # (E, K, N)
    state = np.transpose(E[lo_idx] - E[hi_idx], (1, 2, 0))          # (K, N, J)
    state = np.maximum(state, 0.0)  # differences of equal CDFs can round to -1e-17

    total = _poisson_cdf(np.asarray(lam * tau), (N + 1) * K)         # C ~ Pois(λτ)
    empty = total[:K]                                                # P[C ≤ a − 1], a = 1..K
    overflow = np.maximum(1.0 - empty - state.sum(axis=(1, 2)), 0.0)
    return Kernel(float(tau), state, empty, overflow)


def brute_force_row(lam: float, workers: int, n_max: int, grid: np.ndarray, slo: float,
                    n: int, j: int, tau: float) -> np.ndarray:
    """``P[· | (n, T_j), (m, n)]`` by summing Eq. 2 literally over ``(k_A, k_B, k_C, k_D)``.

    Returns a vector over the ``N·J + 1`` decision states (empty queue redirected to
    ``(1, SLO)``, overflow by Eq. 3). Only for small ``K``, ``N``, ``J``: the test oracle for
    :func:`transition_kernel` and :func:`phase_law`.
    """
    K, N = workers, n_max
    grid = np.asarray(grid, dtype=float)
    J = grid.size

    def PF(k: int, T: float) -> float:
        return float(np.exp(poisson_log_pmf(np.asarray(k), lam * T)))

    T_A = slo - grid[j]
    kA_range = range((n - 1) * K, n * K)
    norm = sum(PF(kA, T_A) for kA in kA_range)
    if norm == 0.0:  # T_A = 0 with n > 1: the limit of the normalised law is k_A = (n-1)K
        weights = {(n - 1) * K: 1.0}
    else:
        weights = {kA: PF(kA, T_A) / norm for kA in kA_range}

    t_lo, t_hi = edge_times(grid, slo, tau)
    out = np.zeros(N * J + 1)
    for kA, wA in weights.items():
        r = kA % K
        # n' = 0: fewer than K − r central arrivals in the whole of τ (intervals B, C, D merged)
        out[J - 1] += wA * sum(PF(k, tau) for k in range(K - r))
        for jp in range(J):
            T_B = t_lo[jp]
            T_C = t_hi[jp] - t_lo[jp]
            T_D = tau - t_hi[jp]
            for n_new in range(1, N + 1):
                p = 0.0
                for kB in range(0, K - r):
                    pB = PF(kB, T_B)
                    for kC in range(K - r - kB, (n_new + 1) * K - r - kB):
                        pC = PF(kC, T_C)
                        if pB * pC == 0.0:
                            continue
                        lo = max(0, n_new * K - r - kB - kC)
                        hi = (n_new + 1) * K - r - 1 - kB - kC
                        p += pB * pC * sum(PF(kD, T_D) for kD in range(lo, hi + 1))
                out[(n_new - 1) * J + jp] += wA * p
    out[N * J] = 1.0 - out[: N * J].sum()  # Eq. 3
    return out
