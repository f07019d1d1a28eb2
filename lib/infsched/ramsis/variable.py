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
:class:`~infsched.ramsis.mdp.WorkerMDP` exactly).

**Fast value iteration.** The ``b = n`` actions are :class:`~infsched.ramsis.mdp.WorkerMDP`'s. For
``b < n`` the sum over ``c`` depends on the state only through ``n_rem = n − b``, on the phase through
``a`` and on the action through ``τ``, so each sweep first computes, for every distinct ``τ``,

    ``Z_τ[a, n_rem, j'] = Σ_c P(c | a, τ) · V(n_rem + c, j') + P(n_rem + c > N | a, τ) · V(φ, ∅)``

(one ``(|τ|·K·(N−1)) × (N+1)`` by ``(N+1) × J`` matrix product) and then
``Q(s, (m, b)) = R + Σ_{r, j'} p(r|s) · P(j' | k_A, b, T_j, τ) · Z_τ[K − r, n − b, j']``: one sparse
matrix (a row per valid ``(state, b < n)`` pair, ``p(r|s)·P(j'|…)`` as entries) times ``Z``. Only the
``j'`` a pair can reach are stored: the new head's slack lies in ``[T_j − τ, SLO − τ)``. The incomplete
beta functions are evaluated once, when the MDP is built, never inside a sweep.

Ties (equal ``Q``) go to ``b = n`` first (faster model first, as in :mod:`~infsched.ramsis.mdp`), then
to ``b < n`` by faster model, then by larger ``b``.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
from scipy import sparse
from scipy.special import betainc, pdtr, pdtrc

from infsched.errors import ConfigError, one_of, require
from infsched.ramsis import kernel as kern
from infsched.ramsis.mdp import WorkerMDP
from infsched.ramsis.model import MDPConfig

__all__ = ["BATCH_SIZES", "MemoryLimitError", "VariableMDP", "arrival_law", "head_law", "transition_row",
           "brute_force_row"]

#: Which ``b < n`` a :class:`VariableMDP` offers besides ``b = n``: every ``1 ≤ b < n`` (the paper's
#: variable batching), powers of two (the artifact's ``max_action_batch`` option), or none
#: (maximal batching through this class, for checking it against :class:`WorkerMDP`).
BATCH_SIZES = ("all", "pow2", "max")

_CHUNK = 4_000_000  # (edge point × phase) values per block while building: bounds memory


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

    Same surface as :class:`~infsched.ramsis.mdp.WorkerMDP` where the solver needs it: ``grid``,
    ``S``, ``valid``, ``q_values(V)``, ``transition_matrix(action)``, plus ``step(action)`` (the chain's
    transpose for the stationary law) and ``decode(action)``. Action columns: ``0..M−1`` are
    ``(m, n)``, ``M`` the fallback ``(m_min, n)``, ``M + 1 + k`` the state's ``k``-th ``b < n`` pair
    (``pair_model``, ``pair_batch`` via ``slot``), ordered by model then decreasing ``b``.

    ``batch_sizes``: one of :data:`BATCH_SIZES`. ``late_flush``: whether the fallback
    ``(m_min, n)`` (reward 0) stays available wherever no ``b = n`` action meets the slack, even
    when a smaller batch would (see the module docstring). ``prune``: drop weights
    ``p(r|s)·P(j'|…)`` at or below it (0, the default, keeps every non-zero one: exact).
    ``max_gib``: the memory the build and solve may take; a larger MDP is refused with a
    :class:`MemoryLimitError`, a ``ConfigError`` (the paper's |M| = 60 variable rows timed out; here MD with 60 models would
    need tens of GiB). ``reward`` mirrors the base MDP's for ``b = n`` (``q_values`` reads those from ``base``).
    """

    batching = "variable"

    def __init__(self, profile, cfg: MDPConfig, *, batch_sizes: str = "all",
                 late_flush: bool = True, prune: float = 0.0, max_gib: float = 8.0) -> None:
        t0 = time.perf_counter()
        require(isinstance(cfg, MDPConfig), "cfg", cfg, "must be an MDPConfig")
        one_of("batch_sizes", batch_sizes, BATCH_SIZES)
        require(isinstance(late_flush, (bool, np.bool_)), "late_flush", late_flush,
                "must be True (the artifact's action set) or False (§4.3.1 read literally)")
        require(isinstance(prune, (int, float)) and 0.0 <= prune < 1e-6, "prune", prune,
                "must be a number in [0, 1e-6): weights at or below it are dropped")
        require(isinstance(max_gib, (int, float)) and max_gib > 0, "max_gib", max_gib,
                "must be a positive number of GiB")
        # the b = n actions, fallback and overflow state are exactly the maximal-batching MDP's
        self.base = base = WorkerMDP(profile, replace(cfg, batching="max"))
        self.profile, self.cfg = profile, cfg
        self.batch_sizes, self.late_flush = batch_sizes, bool(late_flush)
        self.grid, self.S = base.grid, base.S
        self.n_of, self.j_of = base.n_of, base.j_of
        K, N, J, S = cfg.workers, cfg.n_max, base.grid.size, base.S
        lat = profile.latency_table(N)
        M = lat.shape[0]
        self.M = M
        acc = np.asarray(profile.accuracy, dtype=float) / 100.0

        # valid (state, m, b < n) with l(m, b) <= T_j; the overflow state has none
        bs = np.arange(1, N)
        if batch_sizes == "pow2":
            bs = bs[(bs & (bs - 1)) == 0]
        elif batch_sizes == "max":
            bs = bs[:0]
        s_dec = np.arange(S - 1)
        slack = self.grid[self.j_of[s_dec]]
        ok = ((bs[None, None, :] < self.n_of[s_dec, None, None])
              & (lat[None, :, bs - 1] <= slack[:, None, None] + 1e-9))
        ps, pm, pb = np.nonzero(ok)                           # state, model, batch index
        order = np.lexsort((-bs[pb], pm, ps))                 # state, faster model, larger b
        ps, pm, pb = ps[order], pm[order], bs[pb[order]]
        self.pair_state, self.pair_model, self.pair_batch = ps, pm, pb
        P = ps.size
        counts = np.bincount(ps, minlength=S)
        self.width = int(counts.max()) if P else 0
        rank = np.arange(P) - np.concatenate([[0], np.cumsum(counts)[:-1]])[ps]
        self.slot = np.full((S, self.width), -1, dtype=np.int64)
        self.slot[ps, rank] = np.arange(P)
        self.pair_col = M + 1 + rank
        self.pair_reward = acc[pm] * pb / self.n_of[ps]
        pair_tau = lat[pm, pb - 1]
        self.taus, self.pair_tau = np.unique(pair_tau, return_inverse=True)
        U = self.taus.size

        # b = n actions are WorkerMDP's. The late flush (m_min, n) stays wherever no b = n action
        # meets the slack (the artifact); the literal rule keeps it only where no (m, b) does
        flush = base.valid[:, M:] if late_flush else base.valid[:, M:] & (counts == 0)[:, None]
        self.valid = np.concatenate([base.valid[:, :M], flush, self.slot >= 0], axis=1)
        self.reward = np.zeros(self.valid.shape)
        self.reward[:, : M + 1] = base.reward
        self.reward[ps, self.pair_col] = self.pair_reward

        # the solver holds a few dense S × S matrices, the carry and ~24 bytes per weight: refuse
        # up front what would not fit, rather than be killed while building
        reach = self._reach()
        need = (24.0 * float(reach[-1] if reach.size else 0) + 4 * 8.0 * S * S
                + 8.0 * U * K * max(N - 1, 0) * (N + 1))
        grid_name = "md" if cfg.discretisation == "md" else f"fld d={cfg.d}"
        if need > max_gib * 2**30:
            raise MemoryLimitError(
                f"cfg = '{grid_name}, {M} models, {S} states' needs about {need / 2**30:.1f} GiB "
                f"for variable batching (max_gib = {max_gib:g}): use fewer models, a coarser grid "
                "(fld with a smaller d), batch_sizes='pow2', or raise max_gib", need / 2**30)

        # carry: Z_τ = A_τ @ [V(n', ·) for n' = 1..N ; V(φ, ∅)], rows (τ, a, n_rem)
        A = np.zeros((U, K, max(N - 1, 0), N + 1))
        for u, tau in enumerate(self.taus):
            pmf, sf = arrival_law(cfg.lam, K, N, tau)
            for rem in range(1, N):
                A[u, :, rem - 1, rem - 1:N] = pmf[:, : N - rem + 1]
                A[u, :, rem - 1, N] = sf[:, N - rem]
        # mostly zeros (c beyond a few K-strides of λτ underflows): sparse halves a sweep
        self.carry = sparse.csr_matrix(A.reshape(U * K * max(N - 1, 0), N + 1))

        # weights: row per pair, column (τ, a, n_rem, j') of Z flattened
        self.weights = self._weights(prune, reach)
        self.build_seconds = time.perf_counter() - t0

    def _reach(self) -> np.ndarray:
        """Cumulative upper bound on the (head cell × phase) weights of the pairs, in pair
        order: the new head's slack lies in ``[T_j − τ, SLO − τ)``."""
        K = self.cfg.workers
        T_j = self.grid[self.j_of[self.pair_state]]
        tau = self.taus[self.pair_tau]
        return np.cumsum((np.searchsorted(self.grid, self.cfg.slo_ms - tau, side="right")
                          - np.searchsorted(self.grid, T_j - tau, side="right") + 3)
                         * K).astype(np.int64)

    def _weights(self, prune: float, reach: np.ndarray) -> sparse.csr_matrix:
        cfg, base = self.cfg, self.base
        K, N, J = cfg.workers, cfg.n_max, self.grid.size
        P = self.pair_state.size
        X = self.taus.size * K * max(N - 1, 0) * J
        n = self.n_of[self.pair_state]
        j = self.j_of[self.pair_state]
        rem = n - self.pair_batch
        tau = self.taus[self.pair_tau]
        # the head's reach in buckets bounds the work per pair; cut the pairs into blocks
        cuts = np.searchsorted(reach, np.arange(_CHUNK, int(reach[-1]) if P else 0, _CHUNK))
        bounds = np.unique(np.concatenate([[0], cuts, [P]]))
        data, cols, rows = [], [], []
        aa = np.arange(K)[None, :]
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            sel = np.arange(lo, hi)
            owner, jp, mass = head_law(self.grid, cfg.slo_ms, K, n[sel], j[sel],
                                       self.pair_batch[sel], tau[sel])
            pr = sel[owner]
            w = mass * base.phase[self.pair_state[pr]]
            col = (((self.pair_tau[pr][:, None] * K + aa) * (N - 1) + (rem[pr] - 1)[:, None]) * J
                   + jp[:, None])
            keep = w > prune
            data.append(w[keep])
            cols.append(col[keep])
            rows.append(np.broadcast_to(pr[:, None], w.shape)[keep])
        data = np.concatenate(data) if data else np.zeros(0)
        cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=P))])
        idx_type = np.int32 if X < 2**31 else np.int64
        return sparse.csr_matrix((data, cols.astype(idx_type), indptr.astype(idx_type)),
                                 shape=(P, X))

    @property
    def n_actions(self) -> int:
        return int(self.valid.sum())

    def _z(self, V: np.ndarray) -> np.ndarray:
        N, J = self.cfg.n_max, self.grid.size
        Vm = np.empty((N + 1, J))
        Vm[:N] = V[: N * J].reshape(N, J)
        Vm[N] = V[N * J]
        return (self.carry @ Vm).reshape(-1)

    def q_values(self, V: np.ndarray) -> np.ndarray:
        """``Q(s, a)`` for every state and action column (``-inf`` where invalid)."""
        M = self.M
        Qb = self.base.q_values(V)
        Q = np.full(self.valid.shape, -np.inf)
        Q[:, : M + 1] = np.where(self.valid[:, : M + 1], Qb, -np.inf)
        if self.pair_state.size:
            Q[self.pair_state, self.pair_col] = (self.reward[self.pair_state, self.pair_col]
                                                 + self.weights @ self._z(V))
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

    def step(self, action: np.ndarray):
        """The map ``π ↦ π P_action`` (one step of the chain under ``action``), factorised: the
        ``b = n`` states through the maximal kernels, the ``b < n`` states through the weights and the
        arrival law."""
        K, N, J, S, M = self.cfg.workers, self.cfg.n_max, self.grid.size, self.S, self.M
        base = self.base
        action = np.asarray(action)
        full = action <= M
        u = base.tau_idx[np.flatnonzero(full), action[full]]
        ph = base.phase[full]
        pairs = self.slot[np.flatnonzero(~full), action[~full] - M - 1]
        WT = self.weights[pairs].T.tocsr()
        states = self.pair_state[pairs]
        carryT = self.carry.T.tocsr()

        def apply(pi: np.ndarray) -> np.ndarray:
            y = np.zeros((base.taus.size, K))
            np.add.at(y, u, pi[full][:, None] * ph)
            out = y.reshape(-1) @ base.kernels
            if pairs.size:
                z = (WT @ pi[states]).reshape(-1, J)
                mass = carryT @ z                              # (N + 1, J)
                out[: N * J] += mass[:N].reshape(-1)
                out[N * J] += mass[N].sum()
            return out

        return apply

    def transition_matrix(self, action: np.ndarray) -> np.ndarray:
        """The dense ``S × S`` transition matrix of the chain under ``action`` (column per state).

        ``b = n`` rows are ``p(·|s) · Kern_τ``, one matrix product per distinct ``τ``; ``b < n`` rows
        regroup the weights by ``(state, j')`` and multiply by the arrival law of ``c``, so no
        ``S × K × S`` intermediate is formed.
        """
        self._check_action(action)
        K, N, J, S, M = self.cfg.workers, self.cfg.n_max, self.grid.size, self.S, self.M
        base = self.base
        action = np.asarray(action)
        out = np.zeros((S, S))
        rows = np.flatnonzero(action <= M)
        u = base.tau_idx[rows, action[rows]]
        blocks = base.kernels.reshape(base.taus.size, K, S)
        for t in np.unique(u):
            r = rows[u == t]
            out[r] = base.phase[r] @ blocks[t]
        prow = np.flatnonzero(action > M)
        if prow.size:
            W = self.weights[self.slot[prow, action[prow] - M - 1]].tocoo()
            g, jp = np.divmod(W.col.astype(np.int64), J)
            W2 = sparse.csr_matrix((W.data, (W.row.astype(np.int64) * J + jp, g)),
                                   shape=(prow.size * J, self.carry.shape[0]))
            mass = (W2 @ self.carry.toarray()).reshape(prow.size, J, N + 1)
            out[prow, : N * J] = mass[:, :, :N].transpose(0, 2, 1).reshape(prow.size, N * J)
            out[prow, N * J] = mass[:, :, N].sum(axis=1)
        return out

    def evaluate(self, action: np.ndarray) -> tuple[np.ndarray, float]:
        """Relative values ``h`` (``h(1, SLO) = 0``) and gain ``g`` of the policy ``action``:
        ``h + g = r + P h``, solved directly. Every policy is unichain (with no arrivals the queue
        drains to ``(1, SLO)``), so the system is regular."""
        P = self.transition_matrix(action)
        ref = self.grid.size - 1
        A = np.eye(self.S) - P
        A[:, ref] = 1.0                                         # h(ref) = 0 frees its column for g
        x = np.linalg.solve(A, self.reward[np.arange(self.S), action])
        g = float(x[ref])
        x[ref] = 0.0
        return x, g

    def stationary(self, action: np.ndarray) -> np.ndarray:
        """The stationary law of the chain under ``action``, by a direct solve of
        ``π (I − P) = 0, Σ π = 1``. Power iteration would need thousands of steps here: near the
        pool's capacity a variable-batching policy keeps long queues long (it may only serve the
        batches that meet the head's slack), so the chain mixes slowly."""
        P = self.transition_matrix(action)
        ref = self.grid.size - 1
        A = (np.eye(self.S) - P).T
        A[ref] = 1.0
        rhs = np.zeros(self.S)
        rhs[ref] = 1.0
        pi = np.maximum(np.linalg.solve(A, rhs), 0.0)
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
        from infsched.ramsis.mdp import ConvergenceError

        action = np.argmax(self.q_values(np.zeros(self.S)), axis=1)    # the myopic policy
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
        return float(pi[np.asarray(action) <= self.M].sum() / pi.sum())


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

        def below(e: float) -> float:                       # P(x < e)
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
