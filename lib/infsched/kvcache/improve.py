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
every order gives 73 or more). That is what the exact solvers after it are for. In the Fig. 2
pipeline it supplies CP-SAT's hint and the window of the exact program
(:func:`infsched.kvcache.hindsight.solve_hindsight`).

:func:`iterated_search` restarts that descent from random perturbations of its best order
(iterated local search): on six of Fig. 2's paper-size trials, 100 restarts found schedules
1.1-1.7 % better than one descent, nearly all of it within the first 25
(``benchmarks/kvcache_search.py``), and the time-indexed bound's brackets rest on them
(:mod:`~infsched.kvcache.fig2_tibound`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance, check_schedule

__all__ = ["serial_schedule", "improve_schedule", "iterated_search"]


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
def _fit(p, si, oi, M, mem):
    """The earliest start ``≥ p`` at which a ramp ``si + 1 … si + oi`` fits on ``mem``. When it
    does not fit at ``p`` because round ``τ = p + j`` would hold ``mem[τ] + si + j > M``, no start
    ``p' < τ − max(0, M − si − mem[τ])`` fits either (round ``τ`` is then in its ramp, at step
    ``τ − p' > M − si − mem[τ]``), so the scan jumps there."""
    while True:
        fits = True
        for j in range(1, oi + 1):
            if mem[p + j] + si + j > M:
                fits = False
                p += j - max(0, M - si - mem[p + j])
                break
        if fits:
            return p


@nb.njit(cache=True)
def _place(order, a, s, o, M, mem, starts):
    """Serial generation: each request at its earliest fitting start; returns the TEL."""
    mem[:] = 0
    total = 0
    for k in range(order.size):
        i = order[k]
        p = _fit(a[i], s[i], o[i], M, mem)
        for j in range(1, o[i] + 1):
            mem[p + j] += s[i] + j
        starts[i] = p
        total += p + o[i] - a[i]
    return total


@nb.njit(cache=True)
def _search(order, a, s, o, M, mem, starts, max_evals, window):
    """First-improvement swaps and moves (``order`` modified in place, left at the best order);
    returns the best total latency and the number of schedules built."""
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


@nb.njit(cache=True)
def _iterate(order, a, s, o, M, mem, starts, max_evals, kicks, kick_evals, window):
    """Iterated local search: descend from ``order``, then per row of ``kicks`` (position
    pairs) swap those positions of the best order so far, descend again (up to ``kick_evals``
    schedules) and keep the result if it is no worse. Leaves the best order in ``order``."""
    best, evals = _search(order, a, s, o, M, mem, starts, max_evals, window)
    for k in range(kicks.shape[0]):
        cand = order.copy()
        for q in range(kicks.shape[1]):
            x, y = kicks[k, q, 0], kicks[k, q, 1]
            cand[x], cand[y] = cand[y], cand[x]
        v, e = _search(cand, a, s, o, M, mem, starts, kick_evals, window)
        evals += e
        if v <= best:                                    # equal: drift along a plateau
            best = v
            order[:] = cand
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


def _count(name: str, v, lo: int) -> None:
    require(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo, name, v,
            f"must be an integer >= {lo}")


def iterated_search(inst: Instance, starts, *, kicks: int = 100, seed: int | list[int] = 0,
                    max_evals: int = 20_000, kick_evals: int = 5_000, window: int = 8,
                    kick_swaps: int = 3, kick_span: int = 6) -> tuple[np.ndarray, int]:
    """Iterated local search (Lourenço, Martin and Stützle's scheme) over the serial scheme's
    orders: :func:`improve_schedule`'s descent from the order of ``starts``, then ``kicks``
    times: swap ``kick_swaps`` random pairs of requests at most ``kick_span`` places apart in
    the best order so far, descend again (at most ``kick_evals`` schedules) and keep the result
    when its total latency is no worse (equal: a step along a plateau). The kicks are drawn
    from a generator seeded by ``seed`` (an integer or a list of them, as numpy's
    ``default_rng`` takes it) before the search, so the result is a function of the arguments;
    more kicks extend the same sequence, so the schedule never gets worse with ``kicks``. The
    first descent is :func:`improve_schedule`'s, so the schedule returned is never worse than
    its; ``starts`` itself when nothing beats it. Returns the schedule and the number of
    schedules built."""
    for name, v, lo in (("kicks", kicks, 0), ("max_evals", max_evals, 1),
                        ("kick_evals", kick_evals, 1), ("window", window, 1),
                        ("kick_swaps", kick_swaps, 1), ("kick_span", kick_span, 1)):
        _count(name, v, lo)
    seeds = seed if isinstance(seed, (list, tuple)) else [seed]
    require(len(seeds) > 0 and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                   and v >= 0 for v in seeds), "seed", seed,
            "must be an integer >= 0 or a non-empty list of them")
    start_tel = check_schedule(inst, starts).require().tel
    a, s, o, mem = _arrays(inst)
    n = inst.n
    order = np.lexsort((o, np.asarray(starts, dtype=np.int64))).astype(np.int64)
    # one (position, offset) draw per swap, kick after kick: more kicks extend the same sequence
    u = np.random.default_rng(seed).random((kicks, kick_swaps, 2))
    x = (u[..., 0] * n).astype(np.int64)
    y = np.clip(x + (u[..., 1] * (2 * kick_span + 1)).astype(np.int64) - kick_span, 0, n - 1)
    pairs = np.ascontiguousarray(np.stack([x, y], axis=2), dtype=np.int64)
    found = np.empty(n, dtype=np.int64)
    tel, evals = _iterate(order, a, s, o, int(inst.M), mem, found, int(max_evals), pairs,
                          int(kick_evals), int(window))
    if tel < start_tel:
        check_schedule(inst, found).require()
        return found, int(evals)
    return np.asarray(starts, dtype=np.int64), int(evals)
