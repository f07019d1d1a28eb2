"""Plain-Python event loops over ``heapq``: fair yardsticks (b) for the compiled engines.

Each loop simulates the same model as its engine, on the same inputs, written as a competent
engineer would in plain Python: ``heapq`` for the future events, lists and ``bisect`` for sorted
queues, no simpy, no numba, no numpy in the loop. They are not the references the tests hold the
engines to (those are the simpy models, which read like the papers); they are here so that a
speed ratio says how much the compiled engine buys over good Python, not over simpy. Where a
loop is checked against its engine, the benchmark asserts identical results on a small case.

- :func:`flex_heapq`: Shepherd's FLEX (Algorithm 1, largest-batch BATCHGEN, no preemption delay,
  no controller): per-model queues as sorted lists with the hopeless prefix dropped by bisection,
  BATCHGEN by bisection for the best start (as the engine: the size's two terms cross once),
  busy GPUs skipped when λ·|B_c| exceeds any candidate (the engine's exact shortcut), a heap of
  completions with stale entries of preempted batches skipped.
- :func:`ramsis_heapq`: the RAMSIS serving system (round robin over K workers, per-worker FIFO
  queues, the MDP policy looked up at every decision, p95 batch latencies, the load known).
- :func:`kairos_heapq`: KAIROS's query distribution (Eqs. 4–8): a heap of completions, the
  pending queries in a list, the cost matrix built in lists and solved by
  ``scipy.optimize.linear_sum_assignment`` (the one numpy call in the loop: the assignment is
  what a competent engineer would not write by hand).

TAD's plain-Python loop is :func:`bench_tad.heapq_tad`; the KV-cache chapter's readable Python
loop (``engine="python"``) already is such a loop (it is that engine's reference).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections import deque

# ============================================================================ Shepherd FLEX

def flex_heapq(arrival, deadline, model, L, n_gpus: int, lam: float, b_max: int):
    """FLEX on one group; returns the completion time of every request (NaN if dropped).

    ``L[m][b]``: the latency table of :func:`infsched.shepherd.sim.latency_table` (lists).
    """
    n = len(arrival)
    M = len(L)
    L1 = [row[1] for row in L]
    Q = [[] for _ in range(M)]                 # (deadline, request), ascending
    g_bid = [-1] * n_gpus                      # running batch id, -1 idle
    g_batch = [[] for _ in range(n_gpus)]      # its requests, by (deadline, index)
    g_model = [-1] * n_gpus
    completion = [math.nan] * n
    heap = []                                  # (end, batch id, gpu)
    next_bid = 0

    def cap(Lm, ts, d, kmax):
        """Largest k ≤ kmax with ts + L[m][k] ≤ d (0 if none): binary search, L rises in k."""
        lo, hi = 0, kmax
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if ts + Lm[mid] <= d:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def largest(m, S, ts):
        """Spec §2.2 (c): max over i of min(s − i, B_max, cap(i)); ties to the smallest i. The
        first term falls and cap rises in i (S is sorted by deadline), so the optimum sits where
        they cross: found by bisection, as the engine does, instead of scanning every start."""
        Lm = L[m]
        s = len(S)
        g = lambda i: cap(Lm, ts, S[i][0], b_max)
        f = lambda i: min(s - i, b_max)
        lo, hi = 0, s                          # i* = the first i with cap(i) ≥ f(i), or s
        while lo < hi:
            mid = (lo + hi) >> 1
            if g(mid) >= f(mid):
                hi = mid
            else:
                lo = mid + 1
        istar = lo
        best_i, best = (istar, f(istar)) if istar < s else (0, 0)
        if istar > 0:
            v = g(istar - 1)                   # before i*, the size is cap(i), rising
            if v > 0 and v >= best:
                lo, hi = 0, istar - 1          # the first i reaching v (ties: smallest i)
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if g(mid) >= v:
                        hi = mid
                    else:
                        lo = mid + 1
                best_i, best = lo, v
        return best_i, best

    def batchgen(g, t, ts):
        """BATCHGEN(g) at start ts: (model, start index, size, candidate list)."""
        best = (-1, 0, 0, None)
        best_dens = 0.0
        for m in range(M):
            q = Q[m]
            if q:
                k = bisect_left(q, (t + L1[m], -1))         # the hopeless prefix leaves Q_m
                if k:
                    del q[:k]
            if g_bid[g] >= 0 and g_model[g] == m:
                S = sorted(q + g_batch[g])
            else:
                S = q
            if not S:
                continue
            i, size = largest(m, S, ts)
            if size == 0:
                continue
            dens = size / L[m][size]
            if size > best[2] or (size == best[2] and dens > best_dens):
                best, best_dens = (m, i, size, S), dens
        return best

    def execute(g, m, i, size, S, t, ts):
        nonlocal next_bid
        members = S[i:i + size]
        if S is Q[m]:
            del Q[m][i:i + size]
        else:
            chosen = set(members)
            Q[m] = [x for x in Q[m] if x not in chosen]
        if g_bid[g] >= 0:                                   # preemption: the rest goes back
            mc = g_model[g]
            chosen = set(members)
            for x in g_batch[g]:
                if x not in chosen and x[0] >= t + L1[mc]:
                    insort(Q[mc], x)
        bid = next_bid
        next_bid += 1
        g_bid[g], g_batch[g], g_model[g] = bid, members, m
        heapq.heappush(heap, (ts + L[m][size], bid, g))

    def upper_bound():
        return min(b_max, max(len(q) for q in Q) + max((len(b) for b in g_batch), default=0))

    i = 0
    while i < n or heap:
        t_arr = arrival[i] if i < n else math.inf
        if heap and heap[0][0] <= t_arr:                    # completions first at equal times
            t, bid, g = heapq.heappop(heap)
            if g_bid[g] != bid:
                continue                                    # a preempted batch
            for _, r in g_batch[g]:
                completion[r] = t
            g_bid[g], g_batch[g] = -1, []
            m, s0, size, S = batchgen(g, t, t)
            if size:
                execute(g, m, s0, size, S, t, t)
            continue
        t = t_arr
        while i < n and arrival[i] == t:                    # one arrival event per instant
            insort(Q[model[i]], (deadline[i], i))
            i += 1
        for _ in range(n_gpus + 1):                         # "go to line 11", at most G re-runs
            idle = [g for g in range(n_gpus) if g_bid[g] < 0]
            busy = sorted((g for g in range(n_gpus) if g_bid[g] >= 0),
                          key=lambda g: (len(g_batch[g]), g))
            preempted = False
            for g in idle:
                m, s0, size, S = batchgen(g, t, t)
                if size:
                    execute(g, m, s0, size, S, t, t)
            if busy:
                ub = upper_bound()
                for g in busy:
                    if lam * len(g_batch[g]) > ub:
                        continue                            # could not preempt: skip BATCHGEN
                    m, s0, size, S = batchgen(g, t, t)
                    if size and size >= lam * len(g_batch[g]):
                        execute(g, m, s0, size, S, t, t)
                        preempted = True
                        break
            if not preempted:
                break
    return completion


# ============================================================================ RAMSIS

def ramsis_heapq(arrivals, slo, workers, lat, slope, model_tab, batch_tab, n_max, fallback,
                 grid):
    """RAMSIS with the load known (one policy row): returns (queries served within the SLO,
    their mean response in ms, batches run).

    ``lat[m][b]``: the p95 latency of a batch of b ≥ 1 (``lat[m][0]`` unused), extrapolated by
    ``slope[m]`` per query beyond the table;
    ``model_tab[n][j]``, ``batch_tab[n][j]``: the policy for n queued and slack cell j (the
    slack rounded down on ``grid``, as :meth:`PolicyTable.slack_index`).
    """
    K = workers
    queues = [deque() for _ in range(K)]
    busy = [False] * K
    heap = []                                  # (end, worker, batch)
    n = len(arrivals)
    ok = batches = 0
    resp = 0.0
    i = rr = 0
    while i < n or heap:
        t_arr = arrivals[i] if i < n else math.inf
        t = heap[0][0] if heap and heap[0][0] <= t_arr else t_arr
        woke = []
        while heap and heap[0][0] == t:                     # every completion of this instant
            _, k, batch = heapq.heappop(heap)
            for q in batch:
                ok += t <= arrivals[q] + slo
                resp += t - arrivals[q]
            busy[k] = False
            woke.append(k)
        while i < n and arrivals[i] == t:                   # and every arrival
            queues[rr].append(i)
            woke.append(rr)
            rr = (rr + 1) % K
            i += 1
        for k in woke:                                      # then the decisions
            q = queues[k]
            if busy[k] or not q:
                continue
            nq = len(q)
            if nq > n_max:                                  # beyond the MDP: all, fastest
                m, b = fallback, nq
            else:
                j = max(bisect_right(grid, slo - (t - arrivals[q[0]])) - 1, 0)
                m, b = model_tab[nq][j], batch_tab[nq][j]
            batch = [q.popleft() for _ in range(b)]
            busy[k] = True
            batches += 1
            row = lat[m]
            lt = row[b] if b < len(row) else row[-1] + (b - len(row) + 1) * slope[m]
            heapq.heappush(heap, (t + lt, k, batch))
    return ok, resp / max(n, 1), batches


# ============================================================================ KAIROS

def kairos_heapq(arrival, pred, actual, typ, coef, qos: float, xi: float = 0.98):
    """KAIROS (spec §2.1, Eqs. 4–8 with the paper's penalty, no early abort) on one
    configuration; returns ``(start, finish, instance)`` per query.

    ``pred[k][q]``, ``actual[k][q]``: predicted and actual service time of query q on type k
    (ms); ``typ[j]``, ``coef[j]``: instance j's type and ``C_j``, instances ordered by type.
    At every event with a pending query and an idle instance the first ``min(m, 2n)`` pending
    queries are matched to all ``n`` instances, busy ones with their predicted remaining time;
    only pairs with an idle instance start. Events as :mod:`infsched.kairos.sim`: one at a
    time, a completion before an arrival at equal times, completions in instance order (the
    heap's ``(time, instance)`` order).
    """
    from scipy.optimize import linear_sum_assignment

    N, n = len(arrival), len(typ)
    lim, miss = xi * qos, 10.0 * qos
    pred_j = [pred[k] for k in typ]            # per instance: its type's row
    actual_j = [actual[k] for k in typ]
    start, finish, where = [math.nan] * N, [math.nan] * N, [-1] * N
    busy = [False] * n
    pfin = [0.0] * n                           # predicted finish of the query in service
    heap = []                                  # (finish, instance)
    pending = []                               # FIFO
    i = n_started = n_busy = 0
    while n_started < N:
        if heap and (i >= N or heap[0][0] <= arrival[i]):
            t, j = heapq.heappop(heap)
            busy[j] = False
            n_busy -= 1
        else:
            t = arrival[i]
            pending.append(i)
            i += 1
        if not pending or n_busy == n:
            continue
        window = pending[:2 * n]
        r = [pfin[j] - t if busy[j] and pfin[j] > t else 0.0 for j in range(n)]
        cost = []
        for q in window:
            W = t - arrival[q]
            row = []
            for j in range(n):
                L = r[j] + pred_j[j][q]
                row.append(coef[j] * (L if L + W <= lim else miss))
            cost.append(row)
        rows, cols = linear_sum_assignment(cost)
        sent = set()
        for a, j in zip(rows.tolist(), cols.tolist()):
            if busy[j]:
                continue                       # matched to a busy instance: stays queued
            q = window[a]
            f = t + actual_j[j][q]
            start[q], finish[q], where[q] = t, f, j
            busy[j] = True
            n_busy += 1
            pfin[j] = t + pred_j[j][q]
            heapq.heappush(heap, (f, j))
            sent.add(q)
            n_started += 1
        if sent:
            pending = [q for q in pending if q not in sent]
    return start, finish, where
