"""A per-query objective for the RAMSIS MDP (our extension, not the paper's).

The paper's reward is one accuracy per *decision* (Eq. ``R = Acc(m)·1[l(m, n) ≤ T_j]``), so value
iteration maximises accuracy per batch. What the paper measures, and what a user wants, is accuracy
per *query*: ``ρ(π) = E_π[Acc·1[met]·b] / E_π[b]`` over the stationary law of the chain, with ``b``
the queries a decision serves (late queries count as 0). A policy that runs many small batches on
an accurate model and a few large ones on the fastest scores well per decision while most queries
get the fastest model.

``ρ`` is a ratio of two long-run averages, so it is maximised by Dinkelbach's method: for a guess
``g``, solve the MDP with reward ``(Acc·1[met] − g)·b`` per decision; the optimal gain is positive
iff some policy beats ``g``. Setting ``g`` to the ratio of the policy just found and repeating
increases ``ρ`` monotonically and stops, in a few rounds, at the policy with the largest ``ρ``
(Dinkelbach 1967; for MDPs, e.g. Puterman §11.4 on ratio criteria).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from infsched.errors import require
from infsched.ramsis import mdp
from infsched.ramsis.model import MDPConfig

__all__ = ["solve_per_query", "per_query_accuracy"]


def per_query_accuracy(sol: mdp.Solution) -> float:
    """``ρ``: expected accuracy per query, late queries counting 0 (%)."""
    return sol.expected_accuracy * (1.0 - sol.expected_violation)


def solve_per_query(profile, cfg: MDPConfig, *, tol: float = 1e-6, max_rounds: int = 30,
                    **solve_kw) -> tuple[mdp.Solution, list[float]]:
    """The policy maximising expected accuracy per query, by Dinkelbach iterations over the
    per-decision MDP. Returns the solution and the ratio after each round (non-decreasing).

    Starts from the paper's per-decision policy, so the result is never worse than it in ``ρ``.
    Raises :class:`~infsched.ramsis.mdp.ConvergenceError` after ``max_rounds`` rounds.
    """
    require(isinstance(max_rounds, int) and max_rounds >= 1, "max_rounds", max_rounds,
            "must be an integer >= 1")
    t0 = time.perf_counter()
    worker = mdp.WorkerMDP(profile, cfg)
    base = worker.reward.copy()                               # Acc·1[met] per decision
    sol = mdp.solve(profile, worker, **solve_kw)
    served = np.append(worker.n_of[:-1], cfg.n_max + 1).astype(float)[:, None]
    ratios = [per_query_accuracy(sol)]
    for _ in range(max_rounds):
        g = ratios[-1] / 100.0                                # rewards are fractions
        worker.reward = np.where(worker.valid, (base - g) * served, 0.0)
        cand = mdp.solve(profile, worker, **solve_kw)
        worker.reward = base
        rho = per_query_accuracy(cand)
        if rho <= ratios[-1] + tol:
            return replace(sol, seconds=time.perf_counter() - t0), ratios
        sol = cand
        ratios.append(rho)
    raise mdp.ConvergenceError(
        f"Dinkelbach iterations did not settle in max_rounds = {max_rounds} (ratio "
        f"{ratios[-1]:.6f} %) for load_qps = {cfg.load_qps:g}, workers = {cfg.workers}")
