"""Variable batching for the RAMSIS worker MDP (paper §4.3.2, spec §2.9; Fig. 11, Table 2).

With variable batching the worker may serve only the first ``b`` of its ``n`` queued queries. In
state ``(n, T_j)`` the actions are ``(m, b)`` for ``1 ≤ b ≤ n`` with ``l(m, b) ≤ T_j``, plus the late
flush ``(m_min, n)`` (reward 0) wherever no ``b = n`` action meets the slack; the overflow state
acts as ``(N, 0)`` with the flush only. The reward is the artifact's
``Acc(m) · b / n · 1[l(m, b) ≤ T_j]`` (spec §2.4), which is the maximal-batching reward at
``b = n``, so the action set contains maximal batching's and the optimal gain can only grow.

The flush rule is the artifact's (``VarBatchSMDP.actions`` always appends ``(fastest, n)``).
§4.3.1 read literally keeps the fallback only where *no* ``(m, b)`` meets the slack
(``late_flush=False``); then a long queue can only be served in small on-time batches and never
flushed, and near capacity the policy is trapped in long queues: at 3200 QPS (K = 60, SLO 150,
D = 10, image Pareto models) its expected violation rate is 71 %, against 4 % for maximal
batching. The paper only says the transitions "follow similar reasoning" (§4.4); this module
derives them exactly under the same Markov approximation as Eq. 2.

**Derivation (b < n).** As in Eq. 2, the head query arrived at ``t_α``, ``T_A = SLO − T_j`` before
the decision ``t_s``, and the central queue saw ``k_A = (n−1)K + r`` arrivals since, with the phase
``r`` distributed as :func:`~infsched.ramsis.kernel.phase_law`. Given ``k_A``, the order statistics
of a Poisson process make those arrival times i.i.d. uniform on ``A``. Round robin sends the
worker central arrivals ``K, 2K, …`` after the head, so the ``(b+1)``-th queued query, the head
after the batch leaves, is central arrival ``bK``; its offset after ``t_α`` is

    ``x = T_A · Beta(bK, k_A − bK + 1)``.

At the next decision, ``τ = l(m, b)`` after ``t_s``, its slack is ``T_j + x − τ``, rounded down onto
the grid (``j' = 0`` below ``T_1``, negative included; the last bucket ends at ``SLO``: the
conventions of :func:`~infsched.ramsis.kernel.edge_times`). The queue then holds the ``n − b``
queries left behind plus ``c`` new worker arrivals during ``τ``; given ``k_A``, ``c`` depends only on
the Poisson increments after ``t_s`` and on ``a = K − r`` (the central arrivals still owed before
the worker's next query), so it is independent of ``x``. Its law is

    ``P(c = 0 | a, τ) = P[Pois(λτ) ≤ a − 1]``,
    ``P(c | a, τ) = P[a − 1 + (c−1)K < Pois(λτ) ≤ a − 1 + cK]``  (``c ≥ 1``),

the per-``n'`` marginal of the maximal-batching kernel (``Kernel.empty`` and ``Kernel.state``
summed over ``j'``). With ``n' = n − b + c`` (overflow when ``n' > N``; never empty, as ``n − b ≥ 1``):

    ``P[(n', j') | (n, T_j), (m, b)] = Σ_r p(r | n, T_j) · P(j' | k_A, b, T_j, τ) · P(c = n' − n + b | K − r, τ)``

with ``P(j' | …) = F(e_{j'+1}) − F(e_{j'})``, ``F`` the CDF of ``x`` (a regularised incomplete beta
function) and ``e_{j'} = T_{j'} − T_j + τ`` the offset that puts the new head exactly on ``T_{j'}``.
When ``T_A = 0`` (a queue at full slack) the phase law puts ``r = 0`` and every queued query
arrived with the head: ``x = 0``. For ``b = n`` the action is the maximal-batching one and uses
:mod:`infsched.ramsis.kernel` unchanged (so restricting to ``b = n`` reproduces
:class:`~infsched.ramsis.worker.WorkerMDP` exactly).

**Fast value iteration.** The ``b = n`` actions are :class:`~infsched.ramsis.worker.WorkerMDP`'s. For
``b < n`` the sum over ``c`` depends on the state only through ``n_rem = n − b``, on the phase through
``a`` and on the action through ``τ``, so each sweep first computes, for every distinct ``τ``,

    ``Z_τ[a, n_rem, j'] = Σ_c P(c | a, τ) · V(n_rem + c, j') + P(n_rem + c > N | a, τ) · V(φ, ∅)``

(one sparse ``(K·(N−1)) × (N+1)`` by ``(N+1) × J`` product per τ, in blocks of τ) and then

    ``Q(s, (m, b)) = R + Σ_a p(a|s) · Σ_{j'} H_a(j' | n, j, b, τ) · Z_τ[a, n − b, j']``.

The bucket law ``H`` is never stored per phase: :mod:`~infsched.ramsis.headlaw` keeps, for each
bucket edge a pair can reach with more than ``1e-18`` of probability, the incomplete beta function
of one phase and the first term of its recurrence in ``β``, and a compiled loop regenerates the
``K`` phases while it sums. Memory grows with the factors (``S × K`` phases, three numbers per edge,
``|τ|·K·(N+1)`` arrival probabilities), not with ``S²`` or with pairs × phases × buckets: the
60-model image set at FLD D = 100 peaks at about 1.3 GB (the maximal-batching kernels included)
where a stored ``p·H`` matrix needed 18 GiB.
Policy evaluation solves the dense ``S × S`` system of the chosen actions (LU, reused for the
stationary law).

Ties (equal ``Q``) go to ``b = n`` first (faster model first, as in :mod:`~infsched.ramsis.mdp`), then
to ``b < n`` by faster model, then by larger ``b``.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import splu
from scipy.special import betainc, pdtr, pdtrc

from infsched.errors import ConfigError, one_of, require
from infsched.ramsis import headlaw as hl, kernel as kern
from infsched.ramsis.model import MDPConfig, check_feasible, slack_grid
from infsched.ramsis.worker import ConvergenceError, WorkerMDP

__all__ = ["BATCH_SIZES", "MemoryLimitError", "VariableMDP", "arrival_law", "head_law", "transition_row",
           "brute_force_row"]

#: Which ``b < n`` a :class:`VariableMDP` offers besides ``b = n``: every ``1 ≤ b < n`` (the paper's
#: variable batching), powers of two (the artifact's ``max_action_batch`` option), or none
#: (maximal batching through this class, for checking it against :class:`WorkerMDP`).
BATCH_SIZES = ("all", "pow2", "max")

_Z_BYTES = 48 * 2**20  # the carried values Z of one block of τ: bounds a sweep's temporaries


class MemoryLimitError(ConfigError):
    """A variable-batching MDP too large for ``max_gib`` (its estimated size in ``need_gib``)."""

    def __init__(self, message: str, need_gib: float) -> None:
        super().__init__(message)
        self.need_gib = need_gib


def arrival_law(lam: float, workers: int, n_max: int, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """The law of ``c``, the worker's new queries during ``τ``, given ``a = 1..K`` central arrivals
    owed before its next one: ``(pmf, sf)``, both ``(K, N + 1)`` with ``pmf[a−1, c] = P(c)`` and
    ``sf[a−1, t] = P(c > t)`` for ``c, t = 0..N``.

    Worker query ``c`` is central arrival ``a + (c−1)K``, so ``c ≥ i`` iff
    ``Pois(λτ) ≥ a + (i−1)K``. Upper tails come from ``pdtrc`` directly, not from ``1 − CDF``, so the
    overflow mass keeps its relative precision.
    """
    K, N = workers, n_max
    a = np.arange(1, K + 1, dtype=float)[:, None]
    t = np.arange(N + 1, dtype=float)[None, :]
    mean = lam * tau
    sf = pdtrc(a - 1 + t * K, mean)                       # P[Pois ≥ a + tK] = P(c > t)
    pmf = np.empty((K, N + 1))
    pmf[:, 0] = pdtr(a[:, 0] - 1, mean)
    pmf[:, 1:] = np.maximum(sf[:, :-1] - sf[:, 1:], 0.0)
    return pmf, sf


def head_law(grid: np.ndarray, slo: float, workers: int, n: np.ndarray, j: np.ndarray,
             b: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``P(j' | k_A, b, T_j, τ)`` for a batch of pairs ``(n, j, b, τ)`` with ``b < n``, every phase.

    Returns ``(pair, jp, mass)`` over the reachable buckets only: for each row, ``pair`` indexes the
    inputs, ``jp`` is the new head's bucket and ``mass[:, a−1]`` its probability given
    ``k_A = (n−1)K + (K − a)`` (columns in ``a``-order, like ``WorkerMDP.phase``). The new slack lies
    in ``[T_j − τ, SLO − τ)`` (``x ∈ [0, T_A)``), so the buckets run from that of ``T_j − τ`` to that of
    ``SLO − τ``; at the interior edges ``F(e) = I_{e/T_A}(bK, k_A − bK + 1)``.
    """
    K = workers
    grid = np.asarray(grid, dtype=float)
    J = grid.size
    n, j, b = (np.asarray(v, dtype=np.int64) for v in (n, j, b))
    tau = np.asarray(tau, dtype=float)
    T_j = grid[j]
    T_A = slo - T_j
    ext = np.append(grid, slo)                           # T_J := SLO closes the last bucket
    first = np.clip(np.searchsorted(grid, T_j - tau, side="right") - 1, 0, J - 1)
    last = np.clip(np.searchsorted(grid, slo - tau, side="right") - 1, 0, J - 1)
    last = np.maximum(last, first)
    L = last - first + 1                                  # buckets per pair
    # edge points k = 0..L of each pair: k is the lower edge of bucket first + k
    pts = L + 1
    start = np.concatenate([[0], np.cumsum(pts)[:-1]])
    owner = np.repeat(np.arange(n.size), pts)
    k = np.arange(int(pts.sum())) - start[owner]
    G = np.zeros((k.size, K))
    G[k == L[owner]] = 1.0                                # above SLO − τ: certainly below
    inner = (k > 0) & (k < L[owner])                      # T_A > 0 here (T_A = 0 gives L = 1)
    if inner.any():
        o = owner[inner]
        e = ext[first[o] + k[inner]] - T_j[o] + tau[o]
        u = np.clip(e / T_A[o], 0.0, 1.0)
        aa = np.arange(1, K + 1)[None, :]
        alpha = (b[o] * K).astype(float)[:, None]
        beta = ((n[o] - b[o]) * K + 1)[:, None] - aa       # k_A − bK + 1 with r = K − a
        G[inner] = betainc(alpha, beta.astype(float), u[:, None])
    cell = k < L[owner]                                   # one row per bucket
    mass = np.maximum(G[np.flatnonzero(cell) + 1] - G[cell], 0.0)
    return owner[cell], first[owner[cell]] + k[cell], mass


def _phase_rows(lam: float, workers: int, n_max: int, grid: np.ndarray, slo: float) -> np.ndarray:
    """``WorkerMDP.phase`` without building the MDP: ``(N·J, K)`` in ``a``-order."""
    ph = kern.phase_law(lam, workers, n_max, grid, slo)
    return ph.reshape(n_max * grid.size, workers)[:, ::-1]


def transition_row(lam: float, workers: int, n_max: int, grid: np.ndarray, slo: float,
                   n: int, j: int, b: int, tau: float) -> np.ndarray:
    """``P[· | (n, T_j), (m, b)]`` with ``l(m, b) = τ`` over the ``N·J + 1`` decision states, by the
    same code as :class:`VariableMDP` (for ``b = n`` the maximal-batching kernel)."""
    K, N = workers, n_max
    grid = np.asarray(grid, dtype=float)
    J = grid.size
    require(1 <= n <= N and 0 <= j < J and 1 <= b <= n, "(n, j, b)", (n, j, b),
            f"must satisfy 1 <= b <= n <= n_max = {N} and 0 <= j < {J}")
    ph = _phase_rows(lam, K, N, grid, slo)[(n - 1) * J + j]
    if b == n:
        return ph @ kern.transition_kernel(lam, K, N, grid, slo, tau).dense()
    _, jp, mass = head_law(grid, slo, K, [n], [j], [b], [tau])
    pmf, sf = arrival_law(lam, K, N, tau)
    rem = n - b
    w = mass * ph[None, :]                                # (cells, K)
    out = np.zeros(N * J + 1)
    c = np.arange(N - rem + 1)
    block = w @ pmf[:, c]                                 # (cells, c)
    for ci in c:                                          # N − rem + 1 short columns
        np.add.at(out, (rem + ci - 1) * J + jp, block[:, ci])
    out[N * J] = float((w @ sf[:, N - rem]).sum())
    return out


class VariableMDP:
    """The variable-batching MDP of one worker for ``profile`` (models sorted fastest first).

    Same surface as :class:`~infsched.ramsis.worker.WorkerMDP` where the solver needs it: ``grid``,
    ``S``, ``valid``, ``q_values(V)``, ``transition_matrix(action)``, plus ``decode(action)``,
    ``evaluate`` and ``stationary``. Action columns: ``0..M−1`` are ``(m, n)``, ``M`` the fallback
    ``(m_min, n)``, ``M + 1 + k`` the state's ``k``-th ``b < n`` pair (``pair_model``, ``pair_batch``
    via ``slot``), ordered by model then decreasing ``b``.

    The ``b < n`` transitions are applied factor by factor (:mod:`~infsched.ramsis.headlaw`): the
    phase law (``base.phase``, ``S × K``), the head's bucket law (``edges``, three numbers per
    reachable bucket edge of each pair) and the new arrivals (``carry``, per ``(τ, a, n − b)``), so
    memory grows with those factors and never with ``S²`` or with pairs × phases × buckets.

    ``batch_sizes``: one of :data:`BATCH_SIZES`. ``late_flush``: whether the fallback
    ``(m_min, n)`` (reward 0) stays available wherever no ``b = n`` action meets the slack, even
    when a smaller batch would (see the module docstring). ``tail``: the Beta tail mass set to 0
    or 1 at an edge, and the phase weight below which a trailing run of phases is skipped
    (:data:`~infsched.ramsis.headlaw.TAIL`; 0 keeps every edge and phase). ``max_gib``: the
    memory the build and solve may take; a larger MDP is refused up front with a
    :class:`MemoryLimitError` (a ``ConfigError``) that states the estimate. ``reward`` mirrors the
    base MDP's for ``b = n`` (``q_values`` reads those from ``base``).
    """

    batching = "variable"

    def __init__(self, profile, cfg: MDPConfig, *, batch_sizes: str = "all",
                 late_flush: bool = True, tail: float = hl.TAIL, max_gib: float = 16.0) -> None:
        t0 = time.perf_counter()
        require(isinstance(cfg, MDPConfig), "cfg", cfg, "must be an MDPConfig")
        one_of("batch_sizes", batch_sizes, BATCH_SIZES)
        require(isinstance(late_flush, (bool, np.bool_)), "late_flush", late_flush,
                "must be True (the artifact's action set) or False (§4.3.1 read literally)")
        require(isinstance(tail, (int, float)) and not isinstance(tail, bool)
                and 0.0 <= tail <= 1e-12, "tail", tail,
                "must be a number in [0, 1e-12]: the Beta tail mass dropped at an edge")
        require(isinstance(max_gib, (int, float)) and max_gib > 0, "max_gib", max_gib,
                "must be a positive number of GiB")
        check_feasible(profile, cfg)
        self.profile, self.cfg = profile, cfg
        self.batch_sizes, self.late_flush = batch_sizes, bool(late_flush)
        K, N = cfg.workers, cfg.n_max
        grid = slack_grid(profile, cfg)
        J = grid.size
        S = kern.n_states(N, J)
        lat = profile.latency_table(N)
        M = lat.shape[0]
        self.M = M
        acc = np.asarray(profile.accuracy, dtype=float) / 100.0
        n_of = np.append(np.repeat(np.arange(1, N + 1), J), N)
        j_of = np.append(np.tile(np.arange(J), N), 0)

        # valid (state, m, b < n) with l(m, b) <= T_j; the overflow state has none
        bs = np.arange(1, N)
        if batch_sizes == "pow2":
            bs = bs[(bs & (bs - 1)) == 0]
        elif batch_sizes == "max":
            bs = bs[:0]
        s_dec = np.arange(S - 1)
        slack = grid[j_of[s_dec]]
        ok = ((bs[None, None, :] < n_of[s_dec, None, None])
              & (lat[None, :, bs - 1] <= slack[:, None, None] + 1e-9))
        ps, pm, pb = np.nonzero(ok)                           # state, model, batch index
        del ok
        order = np.lexsort((-bs[pb], pm, ps))                 # state, faster model, larger b
        ps, pm, pb = ps[order], pm[order], bs[pb[order]]
        P = ps.size
        pair_tau = lat[pm, pb - 1]
        taus, tau_idx = np.unique(pair_tau, return_inverse=True)
        U = taus.size

        # refuse up front what would not fit: the maximal-batching kernels (dense, and sparse for
        # evaluation), one dense S × S bound on the sparse LU factors and their fill, the edge
        # table, the arrival law and the action tables; peak RSS measured on the 9- and 60-model
        # image sets is 0.8–1.3 times that sum (interpreter included), so a quarter is added
        bounds = hl.tail_bounds(K, N, tail)
        _, count = hl.edge_counts(grid, cfg.slo_ms, K, n_of[ps], j_of[ps], pb, pair_tau, bounds)
        E = int(count.sum())
        counts = np.bincount(ps, minlength=S)
        width = int(counts.max()) if P else 0
        taus_max = np.unique(lat[lat <= cfg.slo_ms + 1e-9]).size + N
        need = 1.25 * (1.2 * 8.0 * taus_max * K * S + 8.0 * S * S + 24.0 * E + 80.0 * P
                       + 3 * 8.0 * U * K * (N + 1) + 2.0 * _Z_BYTES
                       + 4 * 8.0 * S * (M + 1 + width))
        grid_name = "md" if cfg.discretisation == "md" else f"fld d={cfg.d}"
        if need > max_gib * 2**30:
            raise MemoryLimitError(
                f"cfg = '{grid_name}, {M} models, {S} states' needs about {need / 2**30:.1f} GiB "
                f"for variable batching (max_gib = {max_gib:g}): use fewer models, a coarser grid "
                "(fld with a smaller d), batch_sizes='pow2', or raise max_gib", need / 2**30)

        # b = n actions, fallback and overflow state are exactly the maximal-batching MDP's
        self.base = base = WorkerMDP(profile, replace(cfg, batching="max"))
        self.grid, self.S, self.n_of, self.j_of = base.grid, base.S, base.n_of, base.j_of
        self.pair_state, self.pair_model, self.pair_batch = ps, pm, pb
        self.width = width
        rank = np.arange(P) - np.concatenate([[0], np.cumsum(counts)[:-1]])[ps]
        self.slot = np.full((S, width), -1, dtype=np.int64)
        self.slot[ps, rank] = np.arange(P)
        self.pair_col = M + 1 + rank
        self.pair_reward = acc[pm] * pb / n_of[ps]
        self.taus, self.pair_tau = taus, tau_idx.astype(np.int64)

        # the late flush (m_min, n) stays wherever no b = n action meets the slack (the artifact);
        # the literal rule keeps it only where no (m, b) does
        flush = base.valid[:, M:] if late_flush else base.valid[:, M:] & (counts == 0)[:, None]
        self.valid = np.concatenate([base.valid[:, :M], flush, self.slot >= 0], axis=1)
        self.reward = np.zeros(self.valid.shape)
        self.reward[:, : M + 1] = base.reward
        self.reward[ps, self.pair_col] = self.pair_reward

        # factor 2, the head's bucket law: three numbers per non-negligible edge of each pair
        self.edges = hl.edge_table(grid, cfg.slo_ms, K, n_of[ps], j_of[ps], pb, pair_tau, bounds)
        self.phase_stop = hl.phase_stop(base.phase, tail)

        # factor 3, the new arrivals: P(c | a, τ) and P(c > t | a, τ), and the carry
        # Z_τ = A_τ @ [V(n', ·) for n' = 1..N ; V(φ, ∅)] in blocks of τ (rows (τ, a, n − b))
        self.pmf = np.empty((U, K, N + 1))
        self.sf = np.empty((U, K, N + 1))
        for u, tau in enumerate(taus):
            self.pmf[u], self.sf[u] = arrival_law(cfg.lam, K, N, tau)
        per_tau = K * max(N - 1, 0) * J * 8
        step = max(1, int(_Z_BYTES // max(per_tau, 1)))
        self._blocks = []
        order = np.argsort(self.pair_tau, kind="stable")
        cuts = np.searchsorted(self.pair_tau[order], np.arange(0, U + step, step))
        for k, u0 in enumerate(range(0, U, step)):
            u1 = min(U, u0 + step)
            A = np.zeros((u1 - u0, K, max(N - 1, 0), N + 1))
            for rem in range(1, N):
                A[:, :, rem - 1, rem - 1:N] = self.pmf[u0:u1, :, : N - rem + 1]
                A[:, :, rem - 1, N] = self.sf[u0:u1, :, N - rem]
            # mostly zeros (c beyond a few K-strides of λτ underflows): sparse halves a sweep
            carry = sparse.csr_matrix(A.reshape(-1, N + 1))
            pairs = order[cuts[k]:cuts[k + 1]]
            self._blocks.append((u0, u1, carry, pairs))
        self._lu = None                                       # (action, factors) of the last policy
        self._q = None                                        # (V, Q) of the last q_values call
        self.build_seconds = time.perf_counter() - t0

    @property
    def n_actions(self) -> int:
        return int(self.valid.sum())

    def _vm(self, V: np.ndarray) -> np.ndarray:
        N, J = self.cfg.n_max, self.grid.size
        Vm = np.empty((N + 1, J))
        Vm[:N] = V[: N * J].reshape(N, J)
        Vm[N] = V[N * J]
        return Vm

    def continuation(self, V: np.ndarray) -> np.ndarray:
        """``E[V(next) | s, (m, b)]`` for every ``b < n`` pair (pair order), factor by factor:
        the new-arrival law applied per τ block (``Z``), then the phase and bucket laws."""
        K, N, J = self.cfg.workers, self.cfg.n_max, self.grid.size
        e = self.edges
        out = np.zeros(self.pair_state.size)
        Vm = self._vm(np.asarray(V, dtype=float))
        for u0, u1, carry, pairs in self._blocks:
            if not pairs.size:
                continue
            Z = (carry @ Vm).reshape(u1 - u0, K, N - 1, J)
            hl.pair_values(pairs, self.pair_state, self.pair_tau - u0, e.first, e.count,
                           e.start, e.rem, e.alpha, e.u, e.I0, e.t0, self.base.phase,
                           self.phase_stop, Z, K, out)
        return out

    def q_values(self, V: np.ndarray) -> np.ndarray:
        """``Q(s, a)`` for every state and action column (``-inf`` where invalid). The last ``V``
        and its ``Q`` are kept: :func:`~infsched.ramsis.mdp.solve` asks again for the values policy
        iteration ended on."""
        V = np.asarray(V, dtype=float)
        if self._q is not None and np.array_equal(self._q[0], V):
            return self._q[1].copy()
        M = self.M
        Qb = self.base.q_values(V)
        Q = np.full(self.valid.shape, -np.inf)
        Q[:, : M + 1] = np.where(self.valid[:, : M + 1], Qb, -np.inf)
        if self.pair_state.size:
            Q[self.pair_state, self.pair_col] = self.pair_reward + self.continuation(V)
        self._q = (V.copy(), Q.copy())
        return Q

    def decode(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per state: the model, the batch size ``b`` and whether the action meets the earliest
        deadline (not the fallback). The overflow state reports ``b = N``."""
        M = self.M
        self._check_action(action)
        action = np.asarray(action)
        pair = np.full(self.S, -1, dtype=np.int64)
        rows = np.flatnonzero(action > M)
        pair[rows] = self.slot[rows, action[rows] - M - 1]
        model = np.where(action < M, action, 0)
        batch = self.n_of.copy()
        model[pair >= 0] = self.pair_model[pair[pair >= 0]]
        batch[pair >= 0] = self.pair_batch[pair[pair >= 0]]
        return model, batch, action != M

    def transition_matrix(self, action: np.ndarray, *, sparse_out: bool = False):
        """The ``S × S`` transition matrix of the chain under ``action`` (column per state): dense,
        or with ``sparse_out`` a CSR matrix of its non-zero entries (a few per cent of them).

        ``b = n`` rows are ``p(·|s) · Kern_τ``, one product per distinct ``τ`` with the maximal
        kernels in sparse form; ``b < n`` rows are the three factors multiplied out in
        :func:`~infsched.ramsis.headlaw.pair_rows`."""
        self._check_action(action)
        K, N, J, S, M = self.cfg.workers, self.cfg.n_max, self.grid.size, self.S, self.M
        base = self.base
        action = np.asarray(action)
        rows = np.flatnonzero(action <= M)
        u = base.tau_idx[rows, action[rows]]
        parts, order = [], []
        for t in np.unique(u):
            r = rows[u == t]
            parts.append(sparse.csr_matrix(base.phase[r]) @ base.kernels_csr[t * K:(t + 1) * K])
            order.append(r)
        prow = np.flatnonzero(action > M)
        if prow.size:
            e = self.edges
            pairs = self.slot[prow, action[prow] - M - 1]
            dense = np.zeros((prow.size, S))
            hl.pair_rows(pairs, np.arange(prow.size), self.pair_state, self.pair_tau, e.first,
                         e.count, e.start, e.rem, e.alpha, e.u, e.I0, e.t0, base.phase,
                         self.phase_stop, self.pmf, self.sf, K, N, J, dense)
            parts.append(sparse.csr_matrix(dense))
            order.append(prow)
            del dense
        P = sparse.vstack(parts, format="csr")
        inv = np.empty(S, dtype=np.int64)
        inv[np.concatenate(order)] = np.arange(S)
        P = P[inv]
        return P if sparse_out else P.toarray()

    def _factor(self, action: np.ndarray):
        """Sparse LU factors (SuperLU) of ``I − P`` with the reference state's column set to 1: the
        matrix of the evaluation equations (``h(ref) = 0`` frees that column for the gain) and,
        transposed, of the stationary ones. Every policy is unichain (with no arrivals the queue
        drains to ``(1, SLO)``), so it is regular. Most of ``P`` is exactly zero (a row reaches a few
        queue lengths and the head's reachable buckets), so the sparse factors cost a fraction of
        dense LU; the last policy's factors are kept for :meth:`stationary`."""
        action = np.asarray(action)
        if self._lu is not None and np.array_equal(self._lu[0], action):
            return self._lu[1]
        S, ref = self.S, self.grid.size - 1
        A = (sparse.identity(S, format="csc") - self.transition_matrix(action, sparse_out=True)
             ).tocsc()
        # h(ref) = 0 frees its column for the gain: replace column ref by ones
        keep = np.ones(S)
        keep[ref] = 0.0
        A = A @ sparse.diags(keep) + sparse.csc_matrix(
            (np.ones(S), (np.arange(S), np.full(S, ref))), shape=(S, S))
        lu = splu(A.tocsc())
        self._lu = (action.copy(), lu)
        return lu

    def evaluate(self, action: np.ndarray) -> tuple[np.ndarray, float]:
        """Relative values ``h`` (``h(1, SLO) = 0``) and gain ``g`` of the policy ``action``:
        ``h + g = r + P h``, solved directly."""
        lu = self._factor(action)
        ref = self.grid.size - 1
        x = lu.solve(self.reward[np.arange(self.S), action])
        g = float(x[ref])
        x[ref] = 0.0
        return x, g

    def stationary(self, action: np.ndarray) -> np.ndarray:
        """The stationary law of the chain under ``action``: ``π (I − P) = 0, Σ π = 1``, solved
        directly with the evaluation's factors (the same matrix, transposed). Power iteration
        would need thousands of steps here: near the pool's capacity a variable-batching policy
        keeps long queues long, so the chain mixes slowly."""
        rhs = np.zeros(self.S)
        rhs[self.grid.size - 1] = 1.0
        pi = np.maximum(self._factor(action).solve(rhs, trans="T"), 0.0)
        return pi / pi.sum()

    def policy_iteration(self, *, tol: float = 1e-9, max_iter: int = 200
                         ) -> tuple[np.ndarray, float, int]:
        """Howard's policy iteration for the long-run reward per decision (spec §2.7 allows any
        exact method): evaluate the policy exactly (:meth:`evaluate`), then switch each state to
        its greedy action where that gains more than ``tol``. Returns ``(h, g, iterations)``.

        Relative value iteration converges at the chain's mixing rate, which the slow escape from
        long queues makes ~0.997 per sweep at 3200 QPS (K = 60, D = 10): thousands of sweeps.
        Policy iteration needs a handful of evaluations.
        """

        # the myopic policy: Q at V = 0 is the reward (no continuation to compute)
        action = np.argmax(np.where(self.valid, self.reward, -np.inf), axis=1)
        rows = np.arange(self.S)
        for it in range(1, max_iter + 1):
            h, g = self.evaluate(action)
            Q = self.q_values(h)
            better = Q.max(axis=1) > Q[rows, action] + tol
            if not better.any():
                return h, g, it
            action = np.where(better, np.argmax(Q, axis=1), action)
        raise ConvergenceError(
            f"policy iteration did not settle in max_iter = {max_iter} rounds for load_qps = "
            f"{self.cfg.load_qps:g}, workers = {self.cfg.workers}, slo_ms = {self.cfg.slo_ms:g}")

    def _check_action(self, action: np.ndarray) -> None:
        action = np.asarray(action)
        require(action.shape == (self.S,) and action.dtype.kind in "iu"
                and bool(np.all((action >= 0) & (action < self.valid.shape[1])))
                and bool(np.all(self.valid[np.arange(self.S), action])),
                "action", action.shape, f"must pick a valid column in each of the {self.S} states")

    def full_batch_fraction(self, action: np.ndarray, pi: np.ndarray) -> float:
        """Fraction of decisions (stationary law over decision epochs) that serve the whole
        queue, ``b = n``; fallbacks and the overflow state count as ``b = n``."""
        # one minus the partial share: a sum over a subset of π may round above the sum over all
        return 1.0 - float(pi[np.asarray(action) > self.M].sum() / pi.sum())


# ------------------------------------------------------------------------------ oracle

def brute_force_row(lam: float, workers: int, n_max: int, grid: np.ndarray, slo: float,
                    n: int, j: int, b: int, tau: float) -> np.ndarray:
    """``P[· | (n, T_j), (m, b)]`` summed literally, for the tests: over ``k_A`` with the truncated
    Poisson weights of Eq. 2, the bucket of the ``bK``-th of ``k_A`` uniform arrivals by the
    binomial sum ``P(x < e) = Σ_{i ≥ bK} C(k_A, i) u^i (1−u)^{k_A−i}``, and ``c`` by summing the
    central count during ``τ`` term by term. Small ``K``, ``N``, ``J`` only. ``b = n`` is
    :func:`~infsched.ramsis.kernel.brute_force_row`.
    """
    K, N = workers, n_max
    grid = np.asarray(grid, dtype=float)
    J = grid.size
    if b == n:
        return kern.brute_force_row(lam, K, N, grid, slo, n, j, tau)

    def PF(k: int, T: float) -> float:
        return float(np.exp(kern.poisson_log_pmf(np.asarray(k), lam * T)))

    T_j = float(grid[j])
    T_A = slo - T_j
    kA_range = range((n - 1) * K, n * K)
    norm = sum(PF(kA, T_A) for kA in kA_range)
    weights = {(n - 1) * K: 1.0} if norm == 0.0 else {kA: PF(kA, T_A) / norm for kA in kA_range}
    upper = list(grid[1:]) + [slo]
    rem = n - b
    out = np.zeros(N * J + 1)
    for kA, wA in weights.items():
        a = K - (kA - (n - 1) * K)

        def below(e: float, kA: int = kA) -> float:         # P(x < e); kA bound now
            if T_A == 0.0:
                return 1.0 if e > 0 else 0.0
            u = min(max(e / T_A, 0.0), 1.0)
            return sum(math.comb(kA, i) * u**i * (1 - u) ** (kA - i) for i in range(b * K, kA + 1))

        pj = [below(upper[jp] - T_j + tau) - (0.0 if jp == 0 else below(grid[jp] - T_j + tau))
              for jp in range(J)]
        pc = [0.0] * (N - rem + 1)
        for C in range(0, a + (N - rem + 1) * K):
            c = 0 if C < a else (C - a) // K + 1
            if c <= N - rem:
                pc[c] += PF(C, tau)
        for c, p in enumerate(pc):
            for jp in range(J):
                out[(rem + c - 1) * J + jp] += wA * pj[jp] * p
    out[N * J] = 1.0 - out[: N * J].sum()                    # Eq. 3
    return out
