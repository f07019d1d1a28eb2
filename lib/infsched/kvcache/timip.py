"""The hindsight optimum by HiGHS's branch and bound on the strengthened time-indexed program of
:mod:`~infsched.kvcache.tibound`, to certify optima at sizes where the plain program (1)–(3)
cannot be closed.

**Why it is exact.** The program has every column ``(i, k)`` of the windows (start ``k`` of
request ``i`` with ``a_i ≤ k ≤ min(a_i + W, H* − o_i)``, which hold an optimal schedule:
:mod:`~infsched.kvcache.tibound`'s lemmas), binary, with one start per request (2), the memory
rows (1b), the exclusive rows (1a) and the clique rows that :func:`~infsched.kvcache.tibound.ti_bound`
generated. Every row holds for every feasible schedule, so the optimal schedule's incidence
vector is a solution; and every 0/1 solution is a feasible schedule (one start each, and (1b)
charges each request at least its memory, so (3) holds). So the program's optimum is OPT, its
incumbents are feasible schedules (re-checked by :func:`~infsched.kvcache.model.check_schedule`)
and its dual bound is a lower bound on OPT. Its LP relaxation is the time-indexed bound at the
rows given, far above (1)–(3)'s, which is what lets branch and bound close it.

Work is limited by HiGHS's node count, never by time: the same instance gives the same answer on
any machine (one thread).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance, check_schedule

__all__ = ["TIMipResult", "ti_optimum"]


@dataclass(frozen=True)
class TIMipResult:
    """``objective``: the best schedule's total latency (the starting schedule's when branch and
    bound found none better); ``starts`` that schedule; ``bound``: the best lower bound (the
    time-indexed bound or HiGHS's dual bound, whichever is higher); ``certified``: ``bound``
    within 1 of ``objective`` (latencies are integers); ``ti_bound``: the time-indexed bound
    alone; ``nodes``: branch-and-bound nodes used; ``columns``, ``rows``: the program's size."""

    objective: float
    starts: np.ndarray
    bound: float
    certified: bool
    ti_bound: float
    nodes: int
    columns: int
    rows: int


def ti_optimum(inst: Instance, upper_starts=None, *, rounds: int = 150,
               node_limit: int = 10_000) -> TIMipResult:
    """OPT of ``inst`` by branch and bound on the strengthened time-indexed program (module
    docstring): :func:`~infsched.kvcache.tibound.ti_bound` for ``rounds`` rounds from
    ``upper_starts`` (the local search's schedule when omitted) gives its clique rows and its
    bound, then HiGHS's MIP over every window column, at most ``node_limit`` nodes, with that
    schedule as its first incumbent."""
    import highspy

    from infsched.kvcache.hindsight import window_of
    from infsched.kvcache.tibound import _exclusive_offset, _Master, horizon_cap, ti_bound

    require(isinstance(inst, Instance), "inst", type(inst).__name__, "must be an Instance")
    require(isinstance(node_limit, (int, np.integer)) and not isinstance(node_limit, bool)
            and node_limit >= 0, "node_limit", node_limit, "must be an integer >= 0")
    if upper_starts is None:
        from infsched.kvcache.improve import improve_schedule
        from infsched.kvcache.policies import mc_sf

        upper_starts, _ = improve_schedule(inst, mc_sf(inst))
    upper_starts = np.asarray(upper_starts, dtype=np.int64)
    upper = check_schedule(inst, upper_starts).require().tel
    tb = ti_bound(inst, upper_starts, rounds=rounds)
    a, o, n = inst.arrival, inst.output, inst.n
    last = np.minimum(a + window_of(inst, upper_starts), horizon_cap(inst) - o)
    H = int(max((last + o).max(), (upper_starts + o).max()))
    m = _Master(inst, H, _exclusive_offset(inst), simplex_iters=10**9)
    width = last - a + 1
    ii = np.repeat(np.arange(n), width)
    kk = a[ii] + np.arange(ii.size) - np.repeat(np.cumsum(width) - width, width)
    m.add_columns(np.arange(n), upper_starts)          # the incumbent's columns, in case its
    m.add_columns(ii, kk)                              # starts lie outside the capped windows
    m.add_cuts(list(tb.clique_rows))
    h = m.h
    ncol = int(m.ci.size)
    h.changeColsIntegrality(ncol, np.arange(ncol, dtype=np.int32),
                            np.full(ncol, highspy.HighsVarType.kInteger))
    h.changeColsBounds(ncol, np.arange(ncol, dtype=np.int32), np.zeros(ncol), np.ones(ncol))
    h.setOptionValue("presolve", "on")
    h.setOptionValue("mip_max_nodes", int(node_limit))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1.0 - 1e-6)        # integer latencies: within 1 is optimal
    hint = highspy.HighsSolution()
    hint.col_value = (m.ck == upper_starts[m.ci]).astype(float).tolist()
    h.setSolution(hint)
    h.run()
    info = h.getInfo()
    best, starts = upper, upper_starts
    x = np.asarray(h.getSolution().col_value)
    if x.size == ncol and info.primal_solution_status == highspy.kSolutionStatusFeasible:
        pick = x > 0.5
        cand = np.full(n, -1, np.int64)
        cand[m.ci[pick]] = m.ck[pick]
        if (cand >= 0).all() and np.bincount(m.ci[pick], minlength=n).max() == 1:
            tel = check_schedule(inst, cand).require().tel     # a bug, not a bound, if it fails
            if tel < best:
                best, starts = tel, cand
    dual = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else -np.inf
    bound = max(tb.bound, min(dual, best))
    return TIMipResult(float(best), starts, float(bound), bool(np.ceil(bound - 1e-6) >= best),
                       float(tb.bound), int(info.mip_node_count), ncol, int(h.getNumRow()))
