"""The binary min-heap of :mod:`infsched.des` that the fast engines keep their events in."""

import numpy as np
import pytest

from infsched.des import heap_pop, heap_push, heap_remove, heap_sift_down


def _is_heap(ht, size):
    return all(ht[(i - 1) // 2] <= ht[i] for i in range(1, size))


def test_push_pop_sorts():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 20, 200).astype(float)  # many ties
    ht, hs = np.empty(keys.size), np.empty(keys.size, np.int64)
    n = 0
    for j, t in enumerate(keys):
        n = heap_push(ht, hs, n, t, j)
        assert _is_heap(ht, n)
    out = []
    while n:
        out.append((ht[0], hs[0]))
        n = heap_pop(ht, hs, n)
        assert _is_heap(ht, n)
    assert [t for t, _ in out] == sorted(keys)
    assert all(keys[s] == t for t, s in out)  # each payload stays with its key


def test_sift_down_replaces_root():
    ht, hs = np.array([1.0, 2.0, 3.0, 4.0]), np.arange(4)
    heap_sift_down(ht, hs, 4, 5.0, 9)
    assert _is_heap(ht, 4) and sorted(ht) == [2.0, 3.0, 4.0, 5.0] and hs[ht == 5.0][0] == 9


@pytest.mark.parametrize("seed", range(5))
def test_remove_any_index(seed):
    """Interleaved pushes and removals at random indices keep the heap in order and remove
    exactly the entry asked for: the remaining (key, payload) pairs match a plain list."""
    rng = np.random.default_rng(seed)
    cap = 64
    ht, hs = np.empty(cap), np.empty(cap, np.int64)
    n, live, nxt = 0, {}, 0
    for _ in range(2000):
        if n < cap and (n == 0 or rng.random() < 0.55):
            t = float(rng.integers(0, 30))
            n = heap_push(ht, hs, n, t, nxt)
            live[nxt] = t
            nxt += 1
        else:
            k = int(rng.integers(0, n))
            gone = int(hs[k])
            n = heap_remove(ht, hs, n, k)
            assert live.pop(gone) is not None
        assert _is_heap(ht, n)
        assert sorted(zip(ht[:n], hs[:n])) == sorted((t, s) for s, t in live.items())


def test_remove_moves_up():
    """The last entry, placed in a hole deep in another subtree, can be earlier than its new
    parent and must move up (not only down)."""
    ht = np.array([0.0, 10.0, 1.0, 11.0, 12.0, 2.0, 3.0])
    hs = np.arange(7)
    n = heap_remove(ht, hs, 7, 4)  # the last entry (3.0) goes under 10.0
    assert n == 6 and _is_heap(ht, n) and ht[1] == 3.0 and hs[1] == 6
    assert heap_remove(ht, hs, n, n - 1) == 5 and _is_heap(ht, 5)  # the last: nothing moves
    assert heap_remove(ht, hs, 5, 0) == 4 and ht[0] == 1.0  # the root: a pop
