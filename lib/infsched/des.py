"""Discrete-event helpers shared by the chapters' simulators.

The fast engines keep their event sets in binary min-heaps over two parallel arrays (keys and
payloads), compiled with numba; the simpy reference models need timeouts that fire at an exact
time. Both are here once, for every package's ``sim.py`` and ``reference.py``.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = ["heap_push", "heap_sift_down", "heap_pop", "timeout_at"]


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
def heap_sift_down(ht, hs, size, t, s):
    """Place (t, s) at the root of a heap of ``size`` entries and restore heap order."""
    i = 0
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
