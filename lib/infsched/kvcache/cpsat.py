"""The hindsight program of Section 3 as a CP-SAT model (OR-Tools), for the paper's sizes.

**Import this module only in a process that has not loaded highspy** (cvxpy imports it): the two
libraries cannot live in one Python process (kvcache spec, fact 7). The library calls it through
:func:`infsched.kvcache.hindsight.solve_hindsight` with ``solver="cpsat"``, which runs it in a
separate process started with ``spawn``; scipy's own HiGHS (``scipy.optimize.milp``/``linprog``)
coexists with it.

Model. One integer start ``p_i ∈ [a_i, a_i + W]`` per request (``W``: the total waiting time of a
feasible schedule, the window of :func:`~infsched.kvcache.hindsight.build_model`), objective
``min Σ_i p_i`` (objective 1 less its constant ``Σ_i (o_i − a_i)``). Constraint (3), the ramp
``s_i + (τ − p_i)`` at rounds ``τ = p_i + 1 … p_i + o_i``, is one cumulative constraint of capacity
``M`` over fixed-size intervals that all move with ``p_i``: a base interval ``[p_i + 1, p_i + o_i]``
of demand ``s_i + 1`` and, for ``j = 2 … o_i``, a step ``[p_i + j, p_i + o_i]`` of demand 1. At
round ``p_i + k`` the request then holds ``s_i + 1 + (k − 1) = s_i + k``, exactly the ramp, so the
model is exact for integer rounds. Requests with equal ``(a_i, s_i, o_i)`` are interchangeable; we
order their starts (``p_i ≤ p_j`` for ``i < j``), which removes symmetric copies of every schedule
and keeps at least one optimum.

Search, in two phases, each limited by CP-SAT's *deterministic time* (a count of work, in units
meant to be close to a second on the machine the counts were fitted on; here one unit costs
about ten CPU seconds), never by wall-clock time:

1. the full portfolio (``share_prove`` of the budget; none when it is 0) from the hint, which on
   small instances proves the optimum;
2. if not proven, large-neighbourhood search only (``use_lns_only``) from phase 1's best schedule
   for the rest of the budget: on paper-size instances it finds far better schedules per unit of
   work than the full portfolio.

Both phases use ``interleave_search`` with a fixed batch size, so the search is a function of the
model, the parameters (budget, ``workers``, ``seed``) and the OR-Tools build: the same inputs give
the same schedule and bound under any machine load. What is *not* guaranteed: the same answer
with a different ``workers`` (the interleaved portfolio changes with it, measured here), or a
different OR-Tools version or CPU architecture (not documented by OR-Tools; the version is pinned
in ``requirements.txt``). CP-SAT guarantees that a status of OPTIMAL is a proof and that
``best_objective_bound`` is a valid lower bound; nothing is guaranteed about how close a schedule
found within the budget is to the optimum. The caller checks every schedule it returns with
:func:`~infsched.kvcache.model.check_schedule` rather than trusting it.
"""

from __future__ import annotations

import time

import numpy as np
from ortools.sat.python import cp_model

__all__ = ["solve_arrays"]

#: tasks per synchronisation of the interleaved search; fixed so the answer does not depend on
#: the number of threads CP-SAT would otherwise choose
BATCH_SIZE = 6


def _model(a, s, o, M: int, window: int, hint) -> tuple[cp_model.CpModel, list]:
    m = cp_model.CpModel()
    n = len(a)
    p = [m.new_int_var(int(a[i]), int(a[i] + window), f"p{i}") for i in range(n)]
    intervals, demands = [], []
    for i in range(n):
        oi = int(o[i])
        intervals.append(m.new_fixed_size_interval_var(p[i] + 1, oi, f"base{i}"))
        demands.append(int(s[i]) + 1)
        for j in range(2, oi + 1):
            intervals.append(m.new_fixed_size_interval_var(p[i] + j, oi - j + 1, f"step{i}_{j}"))
            demands.append(1)
    m.add_cumulative(intervals, demands, int(M))
    last: dict[tuple[int, int, int], int] = {}
    for i in range(n):
        key = (int(a[i]), int(s[i]), int(o[i]))
        if key in last:
            m.add(p[last[key]] <= p[i])
        last[key] = i
    m.minimize(sum(p))
    for i in range(n):
        m.add_hint(p[i], int(hint[i]))
    return m, p


def _order_hint(hint, a, s, o) -> np.ndarray:
    """Re-order the hint within groups of identical requests so it satisfies the symmetry cuts
    (the same schedule up to relabelling)."""
    h = np.asarray(hint, dtype=np.int64).copy()
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i in range(len(a)):
        groups.setdefault((int(a[i]), int(s[i]), int(o[i])), []).append(i)
    for idx in groups.values():
        if len(idx) > 1:
            h[idx] = np.sort(h[idx])
    return h


def _phase(model, p, hint, budget: float, *, lns: bool, workers: int, seed: int):
    model.clear_hints()
    for var, v in zip(p, hint):
        model.add_hint(var, int(v))
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.max_deterministic_time = float(budget)
    prm.num_workers = int(workers)
    prm.interleave_search = True
    prm.interleave_batch_size = BATCH_SIZE
    prm.random_seed = int(seed)
    prm.use_lns_only = bool(lns)
    status = solver.solve(model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        starts = np.array([solver.value(v) for v in p], dtype=np.int64)
    else:                                              # cannot happen with a feasible hint
        starts = np.asarray(hint, dtype=np.int64)
    return (solver.status_name(status), starts, float(solver.best_objective_bound),
            float(solver.deterministic_time))


def solve_arrays(a, s, o, M: int, hint, window: int, *, effort: float, workers: int = 1,
                 seed: int = 0, share_prove: float = 0.2) -> dict:
    """Minimise ``Σ p_i`` for the instance ``(a, s, o, M)`` from the feasible schedule ``hint``.

    Returns ``status`` ("OPTIMAL" when proven, else "FEASIBLE"), ``starts``, ``bound`` (CP-SAT's
    lower bound on ``Σ p_i``, valid whatever the status), ``work`` (deterministic time used) and
    ``cpu_seconds`` (this process's CPU time, for information).
    Plain types and numpy arrays only, so it can cross a process boundary.
    """
    cpu0 = time.process_time()
    a, s, o = (np.asarray(x, dtype=np.int64) for x in (a, s, o))
    hint = _order_hint(hint, a, s, o)
    model, p = _model(a, s, o, M, window, hint)
    if share_prove > 0:
        status, starts, bound, work = _phase(model, p, hint, share_prove * effort, lns=False,
                                             workers=workers, seed=seed)
    else:
        status, starts, bound, work = "FEASIBLE", hint, 0.0, 0.0
    if status != "OPTIMAL" and effort - work > 1e-9:
        # the LNS phase carries the first phase's best schedule forward as its hint
        status2, starts2, _, work2 = _phase(model, p, starts, effort - work, lns=True,
                                            workers=workers, seed=seed)
        work += work2
        if status2 == "OPTIMAL" or starts2.sum() < starts.sum():
            starts = starts2
        if status2 == "OPTIMAL":
            status, bound = status2, float(starts2.sum())
    return {"status": status, "starts": starts, "bound": bound, "work": work,
            "cpu_seconds": time.process_time() - cpu0}


def _serve() -> None:
    """The child's loop (``python -m infsched.kvcache.cpsat``): read pickled keyword arguments of
    :func:`solve_arrays` from stdin, write ``("ok", result)`` or ``("error", message)`` to the
    original stdout, until stdin closes. Anything else the process prints goes to stderr."""
    import os
    import pickle
    import sys

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                                      # stray prints must not corrupt the protocol
    inp = sys.stdin.buffer
    while True:
        try:
            kw = pickle.load(inp)
        except EOFError:
            return
        try:
            reply = ("ok", solve_arrays(**kw))
        except Exception as exc:                      # reported to the caller, not lost here
            reply = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(reply, out)
        out.flush()


if __name__ == "__main__":
    _serve()
