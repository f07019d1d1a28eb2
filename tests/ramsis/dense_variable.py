"""The variable-batching solver as it was before the factor-by-factor one (issue 22), kept as
the equivalence tests' oracle: it stores ``p(r|s) · P(j' | k_A, b, T_j, τ)`` for every pair, phase
and reachable bucket as one sparse matrix and evaluates policies by dense ``np.linalg.solve``.
Only for small MDPs (tens of MiB for the 9-model set at D ≤ 20).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from scipy import sparse

from infsched.errors import one_of, require
from infsched.ramsis.mdp import WorkerMDP
from infsched.ramsis.model import MDPConfig
from infsched.ramsis.variable import BATCH_SIZES, MemoryLimitError, arrival_law, head_law

__all__ = ["DenseVariableMDP"]

_CHUNK = 4_000_000  # (edge point × phase) values per block while building: bounds memory


class DenseVariableMDP:
    """The variable-batching MDP of one worker for ``profile`` (models sorted fastest first).

    Same surface as :class:`~infsched.ramsis.mdp.WorkerMDP` where the solver needs it: ``grid``,
    ``S``, ``valid``, ``q_values(V)``, ``transition_matrix(action)``, ``decode(action)``. Action columns: ``0..M−1`` are
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
        K, N, S = cfg.workers, cfg.n_max, base.S
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
