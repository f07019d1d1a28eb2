"""Policy generation for one RAMSIS worker: the MDP of paper §4, solved by value iteration.

:class:`~infsched.ramsis.worker.WorkerMDP` (re-exported here) assembles the MDP for a profile and
an :class:`~infsched.ramsis.model.MDPConfig`:

* states ``(n, T_j)``, ``n = 1..N``, plus the overflow state ``(φ, ∅)`` (§4.2; the empty-queue
  states drop out because Eq. 1 always leads to ``(1, SLO)``);
* actions ``(m, n)`` for every model with ``l(m, n) ≤ T_j``, or, when none qualifies, only the
  fallback ``(m_min, n)`` (§4.3); the overflow state acts as ``(N, 0)``;
* reward ``R = Acc(m) · 1[l(m, n) ≤ T_j]`` per decision (§4.1), accuracy as a fraction;
* transitions by the factorised kernel of :mod:`infsched.ramsis.kernel` (Eqs. 1–3).

Because ``P[· | s, (m, n)] = p(· | s) · Kern(·, l(m, n))``, one value-iteration sweep computes
``W_τ = Kern_τ · V`` once per distinct latency ``τ`` and then ``Q(s, m) = R(s, m) + p(s) · W_{l(m,n)}``:
``O(|τ| K |S|)`` per sweep instead of the ``O(|S|² |A|)`` of §5.2.

:func:`solve` runs value iteration: undiscounted, from ``V = 0``. With ``horizon=None`` (default)
it is *relative* value iteration, stopped when the span of ``V_{h+1} − V_h`` falls below ``tol``:
the greedy policy is then optimal for the long-run reward per decision. With an integer
``horizon`` it runs exactly that many sweeps, which is the authors' artifact (100 sweeps).
:func:`expected_metrics` gives the policy's expected accuracy and violation rate (§5.1).

Variable batching (``cfg.batching == "variable"``, §4.3.2) is
:class:`~infsched.ramsis.variable.VariableMDP`; :func:`solve` and :func:`expected_metrics` take
either MDP, and maximal batching is unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from infsched.errors import require
from infsched.ramsis.model import MDPConfig
from infsched.ramsis.variable import VariableMDP
from infsched.ramsis.worker import ConvergenceError, WorkerMDP

__all__ = ["ConvergenceError", "WorkerMDP", "Solution", "solve", "expected_metrics"]


@dataclass(frozen=True, eq=False)
class Solution:
    """A solved worker MDP.

    ``model[n, j]`` / ``batch[n, j]``: the action in state ``(n, j)`` (row 0 unused, -1);
    ``satisfied[n, j]``: whether that action meets the earliest deadline. ``expected_accuracy``
    (%, per satisfied query) and ``expected_violation`` (fraction of queries) are the §5.1
    estimates under the stationary distribution ``stationary`` (over the ``N·J + 1`` states).
    Under variable batching ``batch[n, j]`` is the chosen ``b ≤ n``, and ``full_batch_fraction`` the
    stationary fraction of decisions that serve the whole queue (``b = n``; fallbacks and the
    overflow state included; 1 under maximal batching, NaN without metrics).
    """

    config: MDPConfig
    grid: np.ndarray
    model: np.ndarray
    batch: np.ndarray
    satisfied: np.ndarray
    overflow_model: int
    values: np.ndarray
    gain: float
    iterations: int
    converged: bool
    stationary: np.ndarray
    expected_accuracy: float
    expected_violation: float
    seconds: float
    full_batch_fraction: float = 1.0


def _stationary(mdp, action: np.ndarray, tol: float, max_iter: int) -> np.ndarray:
    """Stationary distribution of the chain under ``action`` by power iteration on the lazy
    chain ``(I + P)/2`` (same stationary law, no periodicity), in factorised form. A
    :class:`~infsched.ramsis.variable.VariableMDP` solves for it directly (its chains can mix
    too slowly for power iteration)."""
    if not isinstance(mdp, WorkerMDP):
        return mdp.stationary(action)
    S = mdp.S
    u = mdp.tau_idx[np.arange(S), action]
    # y[t] = Σ_{s: u_s = t} π_s · phase_s as one sparse product: each row of `by_tau` lists its
    # states in ascending order, so the sums run in np.add.at's order (the same bits), faster
    by_tau = sparse.csr_matrix((np.ones(S), (u, np.arange(S))), shape=(mdp.taus.size, S))
    step = mdp.kernels_csr.T                                      # y · kernels, on the non-zeros
    pi = np.zeros(S)
    pi[mdp.grid.size - 1] = 1.0                                   # start in (1, SLO)
    for _ in range(max_iter):
        y = by_tau @ (pi[:, None] * mdp.phase)
        nxt = 0.5 * (pi + step @ y.reshape(-1))
        nxt /= nxt.sum()
        if np.abs(nxt - pi).sum() < tol:
            return nxt
        pi = nxt
    raise ConvergenceError(
        f"stationary distribution did not converge in {max_iter} power iterations "
        f"(load_qps = {mdp.cfg.load_qps:g}, workers = {mdp.cfg.workers}); raise max_iter")


def expected_metrics(mdp, action: np.ndarray, *, tol: float = 1e-11,
                     max_iter: int = 20000) -> tuple[float, float, np.ndarray]:
    """Expected accuracy (%, per satisfied query) and violation rate (fraction) of a policy (§5.1).

    States are weighted by their stationary probability times the queries their action serves
    (``n``, or the chosen ``b`` under variable batching; ``N + 1`` for the overflow state, the
    artifact's count), so both are per query; a fallback action counts its whole batch as
    violated. Returns ``(accuracy, violation, π)``.
    """
    pi = _stationary(mdp, action, tol, max_iter)
    if isinstance(mdp, WorkerMDP):
        served = np.append(mdp.n_of[:-1], mdp.cfg.n_max + 1).astype(float)
        sat = action < mdp.valid.shape[1] - 1
        model = action
    else:                                                         # VariableMDP: b per state
        model, batch, sat = mdp.decode(action)
        served = np.append(batch[:-1], mdp.cfg.n_max + 1).astype(float)
    w = pi * served
    acc = np.asarray(mdp.profile.accuracy, dtype=float)
    ws = w[sat].sum()
    accuracy = float((w[sat] * acc[model[sat]]).sum() / ws) if ws > 0 else float("nan")
    violation = float(w[~sat].sum() / w.sum())
    return accuracy, violation, pi


def solve(profile, cfg: MDPConfig, *, horizon: int | None = None, tol: float = 1e-9,
          max_iter: int = 5000, metrics: bool = True) -> Solution:
    """Generate the RAMSIS policy for one worker (paper §4.1) by value iteration.

    ``horizon=None``: relative value iteration until ``span(V_{h+1} − V_h) < tol`` (rewards are
    accuracies as fractions), raising :class:`ConvergenceError` after ``max_iter`` sweeps.
    ``horizon=H``: exactly ``H`` undiscounted sweeps from ``V = 0`` (the artifact uses 100).
    Ties go to the faster model (lower index), the fallback last; under variable batching
    (``cfg.batching == "variable"``, or a prebuilt :class:`~infsched.ramsis.variable.VariableMDP`)
    to ``b = n`` first, then the faster model, then the larger ``b``. Variable batching with
    ``horizon=None`` uses policy iteration instead (:meth:`VariableMDP.policy_iteration`, ``tol``
    the least gain that switches an action, ``max_iter`` its rounds): relative value iteration
    converges there at the chain's slow mixing rate.
    """
    t0 = time.perf_counter()
    if isinstance(cfg, (WorkerMDP, VariableMDP)):
        mdp = cfg
    elif isinstance(cfg, MDPConfig) and cfg.batching == "variable":
        mdp = VariableMDP(profile, cfg)
    else:
        mdp = WorkerMDP(profile, cfg)
    cfg = mdp.cfg
    if horizon is not None:
        require(isinstance(horizon, int) and horizon >= 1, "horizon", horizon,
                "must be None (iterate to convergence) or an integer >= 1")
    require(tol > 0, "tol", tol, "must be > 0")
    V = np.zeros(mdp.S)
    gain, converged, it = float("nan"), False, 0
    limit = horizon if horizon is not None else max_iter
    if horizon is None and not isinstance(mdp, WorkerMDP):       # variable: policy iteration
        V, gain, it = mdp.policy_iteration(tol=tol, max_iter=max_iter)
        converged, limit = True, 0
    for it in range(1, limit + 1):  # noqa: B007 (`it` is the sweep count Solution returns)
        Q = mdp.q_values(V)
        V_new = Q.max(axis=1)
        diff = V_new - V
        gain = 0.5 * float(diff.max() + diff.min())
        span = float(diff.max() - diff.min())
        if horizon is None:
            V_new = V_new - V_new[mdp.grid.size - 1]              # relative to (1, SLO)
            if span < tol:
                V, converged = V_new, True
                break
        V = V_new
    if horizon is None and not converged:
        raise ConvergenceError(
            f"value iteration did not converge in max_iter = {max_iter} sweeps "
            f"(span of the last update {span:.2e} >= tol = {tol:g}) for load_qps = "
            f"{cfg.load_qps:g}, workers = {cfg.workers}, slo_ms = {cfg.slo_ms:g}; "
            f"raise max_iter or tol, or give a fixed horizon")
    Q = mdp.q_values(V)
    action = np.argmax(Q, axis=1)                                  # first max: faster model wins ties
    N, J = cfg.n_max, mdp.grid.size
    table = np.full((N + 1, J), -1, dtype=np.int32)
    sat = np.zeros((N + 1, J), bool)
    batch = np.zeros((N + 1, J), dtype=np.int32)
    if isinstance(mdp, WorkerMDP):
        M = mdp.valid.shape[1] - 1
        model = np.where(action == M, 0, action)
        table[1:] = model[:-1].reshape(N, J)
        sat[1:] = (action[:-1] < M).reshape(N, J)
        batch[1:] = np.arange(1, N + 1)[:, None]
    else:
        model, b, ok = mdp.decode(action)
        table[1:] = model[:-1].reshape(N, J)
        sat[1:] = ok[:-1].reshape(N, J)
        batch[1:] = b[:-1].reshape(N, J)
    if metrics:
        acc, viol, pi = expected_metrics(mdp, action)
        full = 1.0 if isinstance(mdp, WorkerMDP) else mdp.full_batch_fraction(action, pi)
    else:
        acc, viol, pi = float("nan"), float("nan"), np.empty(0)
        full = 1.0 if isinstance(mdp, WorkerMDP) else float("nan")
    return Solution(cfg, mdp.grid, table, batch, sat, int(model[-1]), V, gain, it,
                    converged or horizon is not None, pi, acc, viol, time.perf_counter() - t0,
                    full)
