"""Better hindsight schedules fast: local search over the order in which requests are placed.

A *serial schedule generation scheme* (the standard construction for resource-constrained
scheduling) turns an order of the requests into a schedule: take the requests in that order and
start each at the earliest round ``p ≥ a_i`` at which its ramp ``s_i + 1 … s_i + o_i`` fits under
``M`` at rounds ``p + 1 … p + o_i`` beside the requests already placed. Every schedule it builds is
feasible by construction (and the caller checks it again with
:func:`~infsched.kvcache.model.check_schedule`).

:func:`improve_schedule` starts from the order of a given schedule's starts (MC-SF's), then
swaps two requests at most ``window`` places apart, or moves one request by at most ``window``
places, keeping a change whenever the total latency drops (first improvement), until a full pass
finds nothing or ``max_evals`` schedules have been built. It is a heuristic: it proves nothing
about the optimum, it only finds schedules, and it is deterministic (no randomness, limited by a
count of schedules built, not by time). It can miss the optimum for good: the serial scheme
starts every request as early as the ones before it allow, and an optimum may hold a request
back (the spec's worked example: the optimum, 71, starts a request two rounds after it could;
every order gives 73 or more). That is what the exact solvers after it are for. In the Fig. 2 pipeline it supplies CP-SAT's hint and the
window of the exact program (:func:`infsched.kvcache.hindsight.solve_hindsight`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance, check_schedule

__all__ = ["serial_schedule", "improve_schedule"]


@nb.njit(cache=True)
def _place(order, a, s, o, M, mem, starts):
    """Serial generation: each request at its earliest fitting start; returns the TEL."""
    mem[:] = 0
    total = 0
    for k in range(order.size):
        i = order[k]
        p = a[i]
        while True:
            fits = True
            for j in range(1, o[i] + 1):
                if mem[p + j] + s[i] + j > M:
                    fits = False
                    break
            if fits:
                break
            p += 1
        for j in range(1, o[i] + 1):
            mem[p + j] += s[i] + j
        starts[i] = p
        total += p + o[i] - a[i]
    return total


@nb.njit(cache=True)
def _move(order, x, y):
    """Move the request at position ``x`` to position ``y``, shifting those between;
    ``_move(order, y, x)`` undoes it (a swap is its own undo)."""
    moved = order[x]
    if y < x:
        for z in range(x, y, -1):
            order[z] = order[z - 1]
    else:
        for z in range(x, y):
            order[z] = order[z + 1]
    order[y] = moved


@nb.njit(cache=True)
def _search(order, a, s, o, M, mem, starts, max_evals, window):
    best = _place(order, a, s, o, M, mem, starts)
    evals = 1
    n = order.size
    improved = True
    while improved and evals < max_evals:
        improved = False
        for swap in (True, False):                       # swaps first, then moves
            for x in range(n):
                lo = x + 1 if swap else max(0, x - window)
                for y in range(lo, min(n, x + window + 1)):
                    if y == x or evals >= max_evals:
                        continue
                    if swap:
                        order[x], order[y] = order[y], order[x]
                    else:
                        _move(order, x, y)
                    v = _place(order, a, s, o, M, mem, starts)
                    evals += 1
                    if v < best:
                        best = v
                        improved = True
                    elif swap:
                        order[x], order[y] = order[y], order[x]
                    else:
                        _move(order, y, x)
    best = _place(order, a, s, o, M, mem, starts)
    return best, evals


def _arrays(inst: Instance):
    a, s, o = (np.ascontiguousarray(x, dtype=np.int64) for x in
               (inst.arrival, inst.prompt, inst.output))
    # every request fits once all others are done, so no start exceeds max a + Σ o
    mem = np.zeros(int(a.max() + o.sum() + o.max() + 2), dtype=np.int64)
    return a, s, o, mem


def serial_schedule(inst: Instance, order) -> np.ndarray:
    """The schedule the serial generation scheme builds from ``order`` (a permutation)."""
    order = np.asarray(order, dtype=np.int64)
    require(order.shape == (inst.n,) and np.array_equal(np.sort(order), np.arange(inst.n)),
            "order", order, f"must be a permutation of 0..{inst.n - 1}")
    a, s, o, mem = _arrays(inst)
    starts = np.empty(inst.n, dtype=np.int64)
    _place(order.copy(), a, s, o, int(inst.M), mem, starts)
    return starts


def improve_schedule(inst: Instance, starts, *, max_evals: int = 20_000,
                     window: int = 8) -> tuple[np.ndarray, int]:
    """Local search from the order of ``starts`` (ties: shorter output first); returns the best
    schedule found (``starts`` itself if nothing beats it) and the number of schedules built."""
    require(isinstance(max_evals, (int, np.integer)) and not isinstance(max_evals, bool)
            and max_evals >= 1, "max_evals", max_evals, "must be a positive integer")
    require(isinstance(window, (int, np.integer)) and not isinstance(window, bool)
            and window >= 1, "window", window, "must be a positive integer")
    start_tel = check_schedule(inst, starts).require().tel
    a, s, o, mem = _arrays(inst)
    order = np.lexsort((o, np.asarray(starts, dtype=np.int64))).astype(np.int64)
    found = np.empty(inst.n, dtype=np.int64)
    tel, evals = _search(order, a, s, o, int(inst.M), mem, found, int(max_evals), int(window))
    if tel < start_tel:
        check_schedule(inst, found).require()
        return found, int(evals)
    return np.asarray(starts, dtype=np.int64), int(evals)
