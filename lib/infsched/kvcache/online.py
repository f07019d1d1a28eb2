"""An online policy that re-plans: MC-SF's information, a better plan (issue 34, item 2).

MC-SF decides each round from what has arrived so far (prompt ``s_i`` and output ``o_i`` of every
waiting request) and the memory the running requests will hold. :func:`replan` uses exactly that
and nothing else, but instead of admitting the shortest-first prefix it keeps a *plan*: a start
round for every waiting request, feasible against the committed memory, built by local search
on the waiting requests. Each round it starts the requests the plan puts in this round; a new
arrival (and, with ``every = k``, every ``k``-th round) triggers a new plan:

1. **MC-SF's own plan**: what MC-SF would do from here if nothing more arrived. With every
   waiting request available, MC-SF admits request ``k`` of its order (shortest output first,
   then arrival, then index) at the earliest round, no earlier than request ``k − 1``, at which
   it fits beside requests ``1 … k − 1`` and the running ones: a *monotone serial* placement,
   round for round MC-SF's decisions.
2. **The previous plan, kept**: its start rounds for the requests that were already waiting, and
   the new arrivals placed after them, each at its earliest fitting round (shortest first).
3. **Local search** from the better of the two (ties to MC-SF's): the order of its starts, then
   swaps and moves of requests at most ``window`` places apart, each order turned into a schedule
   by the *serial* scheme of :mod:`~infsched.kvcache.improve` (each request at its earliest
   fitting round), keeping a change when the sum of starts drops, for at most ``evals``
   schedules. ``depth`` (optional) confines the search to the first ``depth`` requests of the
   order and judges a change by their starts alone (for large queues); the result is still
   compared with the incumbent on every waiting request.

The plan kept is the one with the smallest sum of start rounds, hence the smallest total latency
of the known requests (their arrivals and outputs are fixed); the search result replaces the
incumbent only if strictly better.

**Memory.** Every plan is feasible against the committed memory of the running requests: each
request in it is placed where its whole ramp fits beside the running ones and the requests
placed before it. A round starts a subset of the plan's requests, and dropping requests only
lowers memory, so what starts always fits; the policy checks it again against a ledger of the
committed memory before starting anything, and raises if not (it never happens). Requests are
never evicted.

**Where it is MC-SF.** With ``evals = 0`` the plan is MC-SF's own plan, recomputed whenever
something arrives, so the schedule is MC-SF's, start for start (tested). When at every re-plan
neither the kept plan nor the search is strictly better than MC-SF's plan (for example when every
request fits at once), it is MC-SF's too. With all requests at time 0 (Arrival Model 1) there is one plan, the
local search from MC-SF's order: the hindsight search of
:func:`~infsched.kvcache.improve.improve_schedule`, with MC-SF's own schedule as the fallback.

The search is deterministic and limited by the number of schedules it builds, never by time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba as nb
import numpy as np

from infsched.errors import require
from infsched.kvcache.improve import _fit, _move
from infsched.kvcache.model import Instance

__all__ = ["OnlineRun", "replan", "replan_run"]


@nb.njit(cache=True)
def _place(order, s, o, M, mem, starts, monotone):
    """Place ``order`` onto ``mem`` (modified): each request at its earliest round ``p ≥ 0``
    (``≥`` the previous one's with ``monotone``) where ``mem[p + j] + s + j ≤ M`` for
    ``j = 1 … o``. Returns the sum of the starts."""
    total = 0
    prev = 0
    for k in range(order.size):
        i = order[k]
        p = _fit(prev if monotone else 0, s[i], o[i], M, mem)
        for j in range(1, o[i] + 1):
            mem[p + j] += s[i] + j
        starts[i] = p
        total += p
        if monotone:
            prev = p
    return total


@nb.njit(cache=True)
def _add(idx, p, s, o, mem):
    """Lay the ramps of requests ``idx`` started at rounds ``p`` onto ``mem``; the sum of ``p``."""
    total = 0
    for k in range(idx.size):
        i = idx[k]
        for j in range(1, o[i] + 1):
            mem[p[k] + j] += s[i] + j
        total += p[k]
    return total


@nb.njit(cache=True)
def _eval(order, m, s, o, M, base, mem, starts):
    """Serial placement of the first ``m`` requests of ``order`` onto a copy of ``base``."""
    mem[:] = base
    return _place(order[:m], s, o, M, mem, starts, False)


@nb.njit(cache=True)
def _search(order, depth, s, o, M, base, mem, starts, max_evals, window):
    """First-improvement swaps and moves within the first ``depth`` places of ``order``
    (modified in place), judged by the sum of those requests' serial starts; returns the number
    of schedules built."""
    best = _eval(order, depth, s, o, M, base, mem, starts)
    evals = 1
    improved = True
    while improved and evals < max_evals:
        improved = False
        for swap in (True, False):                       # swaps first, then moves
            for x in range(depth):
                lo = x + 1 if swap else max(0, x - window)
                for y in range(lo, min(depth, x + window + 1)):
                    if y == x or evals >= max_evals:
                        continue
                    if swap:
                        order[x], order[y] = order[y], order[x]
                    else:
                        _move(order, x, y)
                    v = _eval(order, depth, s, o, M, base, mem, starts)
                    evals += 1
                    if v < best:
                        best = v
                        improved = True
                    elif swap:
                        order[x], order[y] = order[y], order[x]
                    else:
                        _move(order, y, x)
    return evals


@dataclass(frozen=True)
class OnlineRun:
    """One run of :func:`replan`: ``starts`` (rounds), ``plans`` made, ``improved`` (plans in
    which the search beat the incumbent), ``kept`` (plans whose incumbent was the previous plan
    rather than MC-SF's), ``evals`` (schedules built by the searches), ``rounds`` (first arrival
    to last completion) and ``cpu_seconds`` (process CPU time of the whole run, for information:
    no result depends on it)."""

    starts: np.ndarray
    plans: int
    improved: int
    kept: int
    evals: int
    rounds: int
    cpu_seconds: float

    @property
    def cpu_per_round(self) -> float:
        return self.cpu_seconds / max(self.rounds, 1)


def _positive_int(name: str, v, minimum: int) -> int:
    require(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            and v >= minimum, name, v, f"must be an integer >= {minimum}")
    return int(v)


class _Planner:
    """The state of a run: committed memory by absolute round, and the current plan."""

    def __init__(self, inst: Instance, evals: int, window: int, depth: int | None) -> None:
        self.a, self.s, self.o, self.M = inst.arrival, inst.prompt, inst.output, inst.M
        self.evals, self.window, self.depth = evals, window, depth
        n = inst.n
        # MC-SF's order: output, then arrival, then index (its heap key)
        self.rank = np.empty(n, dtype=np.int64)
        self.rank[np.lexsort((np.arange(n), self.a, self.o))] = np.arange(n)
        self.max_o = int(self.o.max())
        self.ledger = np.zeros(int(self.a.max() + self.o.sum() + 2 * self.max_o + 2), dtype=np.int64)
        self.plan = np.full(n, -1, dtype=np.int64)      # absolute planned start of waiting ones
        self.plans = self.improved = self.kept = self.total_evals = 0

    def _base(self, t: int, waiting: np.ndarray) -> np.ndarray:
        size = int(self.o[waiting].sum()) + 2 * self.max_o + 2
        base = np.zeros(size, dtype=np.int64)
        k = min(size, self.ledger.size - t)
        base[:k] = self.ledger[t: t + k]
        return base

    def make_plan(self, t: int, waiting: np.ndarray, new: np.ndarray) -> None:
        """Re-plan every waiting request (``new``: a mask over ``waiting`` of the arrivals since
        the last plan)."""
        self.plans += 1
        m = waiting.size
        s, o = self.s[waiting], self.o[waiting]
        base = self._base(t, waiting)
        mem = np.empty_like(base)
        by_rank = np.argsort(self.rank[waiting], kind="stable")
        # 1. MC-SF's own plan (monotone serial placement in its order)
        mem[:] = base
        inc = np.empty(m, dtype=np.int64)
        v_inc = _place(by_rank, s, o, self.M, mem, inc, True)
        if self.evals == 0:
            self.plan[waiting] = t + inc
            return
        # 2. the previous plan kept, the new arrivals placed after it
        old = np.flatnonzero(~new)
        if old.size:
            mem[:] = base
            kept = np.empty(m, dtype=np.int64)
            kept[old] = self.plan[waiting[old]] - t
            v_kept = _add(old, kept[old], s, o, mem)
            fresh = by_rank[new[by_rank]]
            v_kept += _place(fresh, s, o, self.M, mem, kept, False)
            if v_kept < v_inc:
                inc, v_inc = kept, v_kept
                self.kept += 1
        # 3. local search from the incumbent's order
        order = np.lexsort((self.rank[waiting], inc)).astype(np.int64)
        depth = m if self.depth is None else min(self.depth, m)
        found = np.empty(m, dtype=np.int64)
        self.total_evals += int(_search(order, depth, s, o, self.M, base, mem, found,
                                        self.evals, self.window))
        v = _eval(order, m, s, o, self.M, base, mem, found)
        if v < v_inc:
            inc = found
            self.improved += 1
        self.plan[waiting] = t + inc

    def start(self, t: int, i: int) -> None:
        s, o = int(self.s[i]), int(self.o[i])
        ramp = s + np.arange(1, o + 1)
        seg = self.ledger[t + 1: t + o + 1]
        if int((seg + ramp).max()) > self.M:            # never: every plan is feasible
            raise AssertionError(f"request {i} does not fit at round {t}")
        seg += ramp


def replan_run(inst: Instance, *, evals: int = 2_000, window: int = 8, every: int = 0,
               depth: int | None = None) -> OnlineRun:
    """The re-planning policy of this module on ``inst``, with its counts (:class:`OnlineRun`).

    ``evals``: schedules each plan's local search may build (0: MC-SF exactly); ``window``: how
    far apart two requests it swaps or moves may be; ``every``: also re-plan every ``every``
    rounds while requests wait (0: only when something arrives); ``depth``: search only the first
    ``depth`` requests of the plan's order (None: all)."""
    require(isinstance(inst, Instance), "inst", type(inst).__name__, "must be an Instance")
    evals = _positive_int("evals", evals, 0)
    window = _positive_int("window", window, 1)
    every = _positive_int("every", every, 0)
    if depth is not None:
        depth = _positive_int("depth", depth, 2)
    cpu0 = time.process_time()
    n = inst.n
    a = inst.arrival
    by_arrival = np.lexsort((np.arange(n), a))
    pl = _Planner(inst, evals, window, depth)
    starts = np.full(n, -1, dtype=np.int64)
    waiting = np.zeros(0, dtype=np.int64)
    is_new = np.zeros(0, dtype=bool)
    nxt, done = 0, 0
    t = int(a[by_arrival[0]])
    last_plan = t
    while done < n:
        k = nxt
        while nxt < n and a[by_arrival[nxt]] <= t:
            nxt += 1
        if nxt > k:
            waiting = np.concatenate([waiting, by_arrival[k:nxt]])
            is_new = np.concatenate([is_new, np.ones(nxt - k, dtype=bool)])
        due = bool(is_new.any()) or (every > 0 and t - last_plan >= every)
        if due and waiting.size:
            pl.make_plan(t, waiting, is_new)
            is_new[:] = False
            last_plan = t
        go = pl.plan[waiting] == t
        for i in waiting[go]:
            pl.start(t, int(i))
            starts[i] = t
        done += int(go.sum())
        waiting, is_new = waiting[~go], is_new[~go]
        if waiting.size == 0 and nxt < n:
            t = max(t + 1, int(a[by_arrival[nxt]]))       # nothing waits: jump to the next arrival
        else:
            t += 1
    rounds = int((starts + inst.output).max()) - int(a.min())
    return OnlineRun(starts, pl.plans, pl.improved, pl.kept, pl.total_evals, rounds,
                     time.process_time() - cpu0)


def replan(inst: Instance, *, evals: int = 2_000, window: int = 8, every: int = 0,
           depth: int | None = None) -> np.ndarray:
    """Start rounds of every request under :func:`replan_run` (the same parameters)."""
    return replan_run(inst, evals=evals, window=window, every=every, depth=depth).starts
