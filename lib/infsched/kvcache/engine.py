"""The batch simulation of :mod:`infsched.kvcache.sim`, compiled with numba.

One function runs every policy round by round exactly as the readable loop in ``sim`` does (which
stays as the reference the tests compare against, result for result): the same waiting heap
ordered by (key, arrival, index), the same order of running requests, the same clearing draws
from the same generator, the same floating-point sums. See ``sim`` for the rules.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

__all__ = ["POLICY_CODES", "run"]

#: policy name -> code understood by :func:`run`
POLICY_CODES = {"mc-sf": 0, "mc-benchmark": 1, "alpha": 2, "alpha-beta": 3}


@njit(cache=True)
def _grow(x, need):
    """``x`` itself if index ``need`` fits, else a copy at least twice as long (zero-filled)."""
    if need < x.size:
        return x
    y = np.zeros(max(2 * x.size, need + 1), dtype=x.dtype)
    y[: x.size] = x
    return y


@njit(cache=True)
def run(order, a, s, o, M, policy, alpha, beta, max_evictions, max_rounds,
        kappa, floor_ms, intercept_ms, per_token_ms, per_kv_token_ms, prefill_sq_ms, rng):
    """Returns ``(completion, rounds, evictions, stalls, terminated, memory, clock, queued)``."""
    n = a.size
    ledger_policy = policy <= 1
    cap = (1.0 - alpha) * M
    empty_s = kappa * max(floor_ms, intercept_ms) / 1000.0

    start = np.full(n, -1, dtype=np.int64)
    progress = np.zeros(n, dtype=np.int64)
    completion = np.full(n, np.nan)
    active = np.zeros(n, dtype=np.int64)
    n_act = 0
    new = np.zeros(n, dtype=np.int64)
    ledger = np.zeros(1024, dtype=np.int64)
    mem_log = np.zeros(1024, dtype=np.int64)
    clock_log = np.zeros(1024, dtype=np.float64)
    queue_log = np.zeros(1024, dtype=np.int64)
    heap = [(0.0, 0.0, np.int64(0))]
    heap.pop()

    nxt = 0
    done = 0
    r = 0
    clock = 0.0
    evictions = 0
    stalls = 0
    terminated = True
    while done < n:
        if r >= max_rounds or evictions > max_evictions:
            terminated = False
            break
        while nxt < n and a[order[nxt]] <= clock:
            i = order[nxt]
            key = float(o[i]) if policy == 0 else 0.0
            heapq.heappush(heap, (key, a[i], i))
            nxt += 1
        if n_act == 0 and len(heap) == 0:
            clock = a[order[nxt]]
            continue
        n_new = 0
        stalled = False
        if ledger_policy:
            while len(heap) > 0:
                i = heap[0][2]
                si, oi = s[i], o[i]
                ledger = _grow(ledger, r + oi + 1)
                fits = True
                for j in range(1, oi + 1):
                    if ledger[r + j] + si + j > M:
                        fits = False
                        break
                if not fits:
                    break
                heapq.heappop(heap)
                for j in range(1, oi + 1):
                    ledger[r + j] += si + j
                new[n_new] = i
                n_new += 1
        else:
            need = 0
            for k in range(n_act):
                j = active[k]
                need += s[j] + r + 1 - start[j]
            if need > M:
                kept = 0
                for k in range(n_act):
                    j = active[k]
                    clear = True if policy == 2 else rng.random() < beta
                    if clear:
                        heapq.heappush(heap, (0.0, a[j], j))
                        evictions += 1
                        progress[j] = 0
                        start[j] = -1
                    else:
                        active[kept] = j
                        kept += 1
                n_act = kept
                need = 0
                for k in range(n_act):
                    j = active[k]
                    need += s[j] + r + 1 - start[j]
                stalled = need > M
            while len(heap) > 0 and not stalled:
                i = heap[0][2]
                if need + s[i] + 1 > cap:
                    break
                heapq.heappop(heap)
                need += s[i] + 1
                new[n_new] = i
                n_new += 1
        mem_log = _grow(mem_log, r)
        clock_log = _grow(clock_log, r)
        queue_log = _grow(queue_log, r)
        if stalled:
            stalls += 1
            clock += empty_s
            m = 0
            for k in range(n_act):
                j = active[k]
                m += s[j] + progress[j]
            mem_log[r] = m
            clock_log[r] = clock
            queue_log[r] = len(heap)
            r += 1
            continue
        kv = 0
        for k in range(n_act):
            j = active[k]
            kv += s[j] + progress[j]
        p_tok = 0
        p_sq = 0.0
        for k in range(n_new):
            i = new[k]
            start[i] = r
            p_tok += s[i]
            p_sq += float(s[i]) ** 2
            active[n_act + k] = i
        n_q = n_act + p_tok
        ms = (max(floor_ms, intercept_ms + per_token_ms * n_q) + per_kv_token_ms * float(kv)
              + prefill_sq_ms * p_sq)
        n_act += n_new
        clock += kappa * ms / 1000.0
        m = 0
        kept = 0
        for k in range(n_act):
            j = active[k]
            progress[j] += 1
            m += s[j] + progress[j]
            if progress[j] >= o[j]:
                completion[j] = clock
                done += 1
            else:
                active[kept] = j
                kept += 1
        n_act = kept
        mem_log[r] = m
        clock_log[r] = clock
        queue_log[r] = len(heap)
        r += 1
    return (completion, r, evictions, stalls, terminated, mem_log[:r].copy(),
            clock_log[:r].copy(), queue_log[:r].copy())
