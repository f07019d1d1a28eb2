"""Discrete-event helpers shared by the chapters' simulators.

The fast engines keep their event sets in binary min-heaps over two parallel arrays (keys and
payloads), compiled with numba; the simpy reference models need timeouts that fire at an exact
time. Both are here once, for every package's ``sim.py`` and ``reference.py``.

A heap of ``size`` entries holds keys ``ht[:size]`` and payloads ``hs[:size]`` with
``ht[(i - 1) // 2] <= ht[i]``, so the earliest key is ``ht[0]``; an entry moves past another only
when its key is strictly earlier.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = ["heap_push", "heap_sift_down", "heap_pop", "heap_remove", "timeout_at"]


@njit(cache=True)
def heap_push(ht, hs, size, t, s):
    """Insert key ``t`` with payload ``s`` into a heap of ``size`` entries; returns the new size."""
    i = size
    while i > 0:
        par = (i - 1) >> 1
        if ht[par] <= t:
            break
        ht[i] = ht[par]
        hs[i] = hs[par]
        i = par
    ht[i] = t
    hs[i] = s
    return size + 1


@njit(cache=True)
def heap_sift_down(ht, hs, size, t, s, i=0):
    """Place (t, s) at the root (or in a hole at index ``i``) of a heap of ``size`` entries and
    restore heap order below it."""
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and ht[c + 1] < ht[c]:
            c += 1
        if ht[c] >= t:
            break
        ht[i] = ht[c]
        hs[i] = hs[c]
        i = c
    ht[i] = t
    hs[i] = s


@njit(cache=True)
def heap_pop(ht, hs, size):
    """Remove the root of a heap of ``size`` entries; returns the new size."""
    size -= 1
    if size > 0:
        heap_sift_down(ht, hs, size, ht[size], hs[size])
    return size


@njit(cache=True)
def heap_remove(ht, hs, size, k):
    """Remove entry ``k`` (any index, ``0 <= k < size``) of a heap of ``size`` entries; returns
    the new size.

    The last entry fills the hole at ``k`` and moves up if it is earlier than the hole's parent
    (as a push into the first ``k`` entries does), else down (never both): ``O(log size)``. A
    preempting scheduler uses it to withdraw a stopped batch's completion event;
    ``heap_remove(ht, hs, size, 0)`` is :func:`heap_pop`.
    """
    size -= 1
    if k == size:
        return size
    t = ht[size]
    s = hs[size]
    if k > 0 and ht[(k - 1) >> 1] > t:
        heap_push(ht, hs, k, t, s)
    else:
        heap_sift_down(ht, hs, size, t, s, k)
    return size


def timeout_at(env, t: float):
    """A simpy timeout that fires at exactly time ``t`` (≥ now).

    simpy only takes a delay and fires at ``now + delay``; ``t - now`` may round so that this
    misses ``t`` by an ulp, so step the delay to the neighbouring float until it lands on ``t``.
    """
    d = t - env.now
    while env.now + d < t:
        d = math.nextafter(d, math.inf)
    while d > 0 and env.now + d > t:
        d = math.nextafter(d, -math.inf)
    return env.timeout(d)
