"""The maximal-batching MDP of one RAMSIS worker (paper §4): states, actions, rewards and the
factorised transition kernel, assembled for value iteration.

* states ``(n, T_j)``, ``n = 1..N``, plus the overflow state ``(φ, ∅)`` (§4.2; the empty-queue
  states drop out because Eq. 1 always leads to ``(1, SLO)``);
* actions ``(m, n)`` for every model with ``l(m, n) ≤ T_j``, or, when none qualifies, only the
  fallback ``(m_min, n)`` (§4.3); the overflow state acts as ``(N, 0)``;
* reward ``R = Acc(m) · 1[l(m, n) ≤ T_j]`` per decision (§4.1), accuracy as a fraction;
* transitions by the factorised kernel of :mod:`infsched.ramsis.kernel` (Eqs. 1–3).

The solver (:func:`infsched.ramsis.mdp.solve`) and the variable-batching MDP
(:class:`infsched.ramsis.variable.VariableMDP`, which builds on this one) sit above this module.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from infsched.errors import require
from infsched.ramsis import kernel as kern
from infsched.ramsis.model import MDPConfig, check_feasible, slack_grid

__all__ = ["ConvergenceError", "WorkerMDP"]


class ConvergenceError(RuntimeError):
    """Value iteration (or the stationary distribution) did not converge within its limit."""


class WorkerMDP:
    """The MDP of one worker for ``profile`` (models sorted fastest first) and ``cfg``."""

    def __init__(self, profile, cfg: MDPConfig) -> None:
        require(isinstance(cfg, MDPConfig), "cfg", cfg, "must be an MDPConfig")
        require(cfg.batching == "max", "cfg.batching", cfg.batching,
                "WorkerMDP is the maximal-batching MDP; for 'variable' use "
                "infsched.ramsis.variable.VariableMDP (or solve(), which picks it)")
        check_feasible(profile, cfg)
        self.profile, self.cfg = profile, cfg
        K, N = cfg.workers, cfg.n_max
        self.grid = grid = slack_grid(profile, cfg)
        J = grid.size
        self.S = kern.n_states(N, J)
        lat = profile.latency_table(N)                          # (M, N)
        M = lat.shape[0]
        acc = np.asarray(profile.accuracy, dtype=float) / 100.0

        # action columns 0..M-1: model m with b = n; column M: the fallback (m_min, n), reward 0
        n_of = np.append(np.repeat(np.arange(1, N + 1), J), N)   # overflow acts as (N, 0)
        j_of = np.append(np.tile(np.arange(J), N), 0)
        slack = grid[j_of]
        tau = np.empty((self.S, M + 1))
        tau[:, :M] = lat[:, n_of - 1].T
        tau[:, M] = lat[0, n_of - 1]
        valid = np.zeros((self.S, M + 1), bool)
        valid[:, :M] = tau[:, :M] <= slack[:, None] + 1e-9
        valid[-1, :M] = False                                    # overflow: slack treated as 0
        valid[:, M] = ~valid[:, :M].any(axis=1)
        self.valid = valid
        self.reward = np.where(valid[:, :M], acc[None, :], 0.0)
        self.reward = np.concatenate([self.reward, np.zeros((self.S, 1))], axis=1)

        self.taus, tau_idx = np.unique(tau[valid], return_inverse=True)
        self.tau_idx = np.full((self.S, M + 1), -1, dtype=np.int64)
        self.tau_idx[valid] = tau_idx
        self.n_of, self.j_of = n_of, j_of

        # phase law in a-order: ph[s, a-1] = p(r = K - a | s)
        ph = kern.phase_law(cfg.lam, K, N, grid, cfg.slo_ms)     # (N, J, K)
        ph = np.concatenate([ph.reshape(N * J, K), ph[N - 1, 0][None, :]], axis=0)
        self.phase = ph[:, ::-1].copy()
        # stacked kernels: rows u*K + (a-1), one block per distinct τ
        self.kernels = np.concatenate(
            [kern.transition_kernel(cfg.lam, K, N, grid, cfg.slo_ms, t).dense() for t in self.taus])
        self._csr: sparse.csr_matrix | None = None

    @property
    def kernels_csr(self) -> sparse.csr_matrix:
        """:attr:`kernels` in compressed sparse rows, built on first use. A kernel row is zero
        wherever ``n'`` new queries cannot all arrive within ``τ`` or no arrival can land in
        bucket ``j'``: 87–97 % of the entries at the paper's pools, so the products value
        iteration and the stationary law take run 3–4x faster on the non-zeros alone (the sums
        then differ from the dense ones in round-off only)."""
        if self._csr is None:
            self._csr = sparse.csr_matrix(self.kernels)
        return self._csr

    @property
    def n_actions(self) -> int:
        return int(self.valid.sum())

    def q_values(self, V: np.ndarray) -> np.ndarray:
        """``Q(s, a)`` for every state and action column (``-inf`` where invalid)."""
        K = self.cfg.workers
        W = (self.kernels_csr @ V).reshape(self.taus.size, K)
        Q = np.full(self.valid.shape, -np.inf)
        for c in range(self.valid.shape[1]):
            rows = np.flatnonzero(self.valid[:, c])
            if rows.size:
                Q[rows, c] = self.reward[rows, c] + np.einsum(
                    "sk,sk->s", self.phase[rows], W[self.tau_idx[rows, c]])
        return Q

    def transition_matrix(self, action: np.ndarray) -> np.ndarray:
        """The dense ``S × S`` transition matrix of the chain under ``action`` (column per state)."""
        K = self.cfg.workers
        u = self.tau_idx[np.arange(self.S), action]
        blocks = self.kernels.reshape(self.taus.size, K, self.S)
        return np.einsum("sk,skt->st", self.phase, blocks[u])
