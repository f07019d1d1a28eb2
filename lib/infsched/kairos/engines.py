"""The numba event loops of KAIROS's serving simulator, one per policy, and ORCL's.

Plain arrays in, per-query traces out: :mod:`infsched.kairos.sim` validates the inputs, builds
the arrays and calls them, and its docstring states the semantics they share (event order and
ties, the policies, early abort). Each returns ``(start, finish, instance, violations,
aborted)``; ``abort_limit`` is the violation count above which a run stops (``N`` disables it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from infsched.kairos.lsa import lsa

__all__ = ["engine_queues", "engine_clkwrk", "kairos_cost", "engine_kairos", "engine_orcl"]


@njit(cache=True)
def _advance_late(t, arr, qos, started, n_arrived, late_ptr, started_below):
    """Move the pointer over the queries whose wait alone already exceeds ``T_qos`` at ``t``
    (arrivals are sorted, so they are a prefix); count how many of them have started."""
    while late_ptr < n_arrived and t - arr[late_ptr] > qos:
        if started[late_ptr]:
            started_below += 1
        late_ptr += 1
    return late_ptr, started_below


@njit(cache=True)
def _next_completion(busy, fin):
    """Instance whose query finishes first (lowest index on ties), or -1 if all are idle."""
    jc = -1
    tc = np.inf
    for j in range(busy.size):
        if busy[j] and fin[j] < tc:
            tc = fin[j]
            jc = j
    return jc, tc


@njit(cache=True)
def engine_queues(arr, actual, typ, qcls, serves, n_cls, qos, abort_limit):
    """FCFS (one class) and DRS (two classes): one FIFO queue per class; an idle instance
    serves only its class ``serves[j]``; the head of a queue goes to the first idle instance
    of its class (instances are in type order, base first)."""
    N = arr.size
    n = typ.size
    start = np.full(N, np.nan)
    finish = np.full(N, np.nan)
    inst = np.full(N, -1, np.int64)
    started = np.zeros(N, np.bool_)
    busy = np.zeros(n, np.bool_)
    fin = np.zeros(n)
    order = np.argsort(qcls, kind="mergesort")  # each class's queries in arrival order
    off = np.zeros(n_cls + 1, np.int64)
    for q in range(N):
        off[qcls[q] + 1] += 1
    for c in range(n_cls):
        off[c + 1] += off[c]
    head = np.zeros(n_cls, np.int64)
    arrived = np.zeros(n_cls, np.int64)
    i_next = 0
    n_started = 0
    viol = 0
    late_ptr = 0
    started_below = 0
    aborted = False
    while n_started < N:
        jc, tc = _next_completion(busy, fin)
        ta = arr[i_next] if i_next < N else np.inf
        if jc < 0 and i_next >= N:
            break  # queries left that no instance may serve
        if jc >= 0 and tc <= ta:
            t = tc
            busy[jc] = False
        else:
            t = ta
            arrived[qcls[i_next]] += 1
            i_next += 1
        late_ptr, started_below = _advance_late(t, arr, qos, started, i_next, late_ptr,
                                                started_below)
        for c in range(n_cls):
            while head[c] < arrived[c]:
                j = -1
                for k in range(n):
                    if not busy[k] and serves[k] == c:
                        j = k
                        break
                if j < 0:
                    break
                q = order[off[c] + head[c]]
                head[c] += 1
                f = t + actual[typ[j], q]
                start[q] = t
                finish[q] = f
                inst[q] = j
                busy[j] = True
                fin[j] = f
                started[q] = True
                if q < late_ptr:
                    started_below += 1
                if f - arr[q] > qos:
                    viol += 1
                n_started += 1
        if viol + late_ptr - started_below > abort_limit:
            aborted = True
            break
    if aborted:
        viol += late_ptr - started_below
    else:
        viol += N - n_started  # queries no instance may serve: infinite latency
    return start, finish, inst, viol, aborted


@njit(cache=True)
def engine_clkwrk(arr, pred, actual, typ, qos, abort_limit):
    """CLKWRK: per-instance FIFO queues; on arrival, the instance of least predicted
    completion ``max(t, E_j) + Σ queued L̂ + L̂(type j, b)`` (strict ``<``: ties go to the
    lower index, i.e. the base type)."""
    N = arr.size
    n = typ.size
    start = np.full(N, np.nan)
    finish = np.full(N, np.nan)
    inst = np.full(N, -1, np.int64)
    started = np.zeros(N, np.bool_)
    busy = np.zeros(n, np.bool_)
    fin = np.zeros(n)
    pend_end = np.full(n, -np.inf)   # E_j: predicted end of the query in service
    qsum = np.zeros(n)               # Σ L̂ of the queries waiting at j
    qlen = np.zeros(n, np.int64)
    qhead = np.full(n, -1, np.int64)
    qtail = np.full(n, -1, np.int64)
    nxt = np.full(N, -1, np.int64)   # per-instance FIFO queues as linked lists
    i_next = 0
    n_started = 0
    viol = 0
    late_ptr = 0
    started_below = 0
    aborted = False
    while n_started < N:
        jc, tc = _next_completion(busy, fin)
        ta = arr[i_next] if i_next < N else np.inf
        q = -1
        if jc >= 0 and tc <= ta:
            t = tc
            busy[jc] = False
            pend_end[jc] = -np.inf
            j = jc
            if qlen[j] > 0:
                q = qhead[j]
                qhead[j] = nxt[q]
                qlen[j] -= 1
                qsum[j] = qsum[j] - pred[typ[j], q] if qlen[j] > 0 else 0.0
        else:
            t = ta
            qa = i_next
            i_next += 1
            j = 0
            best = np.inf
            for k in range(n):
                c = max(t, pend_end[k]) + qsum[k] + pred[typ[k], qa]
                if c < best:
                    best = c
                    j = k
            if busy[j]:
                if qlen[j] == 0:
                    qhead[j] = qa
                else:
                    nxt[qtail[j]] = qa
                qtail[j] = qa
                qlen[j] += 1
                qsum[j] += pred[typ[j], qa]
            else:
                q = qa
        late_ptr, started_below = _advance_late(t, arr, qos, started, i_next, late_ptr,
                                                started_below)
        if q >= 0:
            f = t + actual[typ[j], q]
            start[q] = t
            finish[q] = f
            inst[q] = j
            busy[j] = True
            fin[j] = f
            pend_end[j] = t + pred[typ[j], q]   # re-synchronised to the actual start
            started[q] = True
            if q < late_ptr:
                started_below += 1
            if f - arr[q] > qos:
                viol += 1
            n_started += 1
        if viol + late_ptr - started_below > abort_limit:
            aborted = True
            viol += late_ptr - started_below
            break
    return start, finish, inst, viol, aborted



@njit(cache=True)
def kairos_cost(cost, pend, w, arr, pred, typ, coef, r, t, qos, xi, penalty):
    """Fill ``cost[:w, :]`` with Eq. 8's ``C_j L'_ij`` (``penalty`` 0) or the artifact's
    constant-penalty variant (1), exactly as :func:`infsched.kairos.matching.cost_matrix`."""
    n = typ.size
    lim = xi * qos
    for a in range(w):
        q = pend[a]
        W = t - arr[q]
        for j in range(n):
            L = r[j] + pred[typ[j], q]
            if penalty == 0:
                cost[a, j] = coef[j] * (L if L + W <= lim else 10.0 * qos)
            else:
                slack = qos - (L + W)
                if W >= qos or slack >= 0.02 * qos:
                    cost[a, j] = coef[j] * L
                elif slack < 0:
                    cost[a, j] = 1000.0
                else:
                    cost[a, j] = 500.0


@njit(cache=True)
def engine_kairos(arr, pred, actual, typ, coef, qos, xi, penalty, abort_limit):
    """KAIROS (spec §2.1 and its operational rules 1–4)."""
    N = arr.size
    n = typ.size
    start = np.full(N, np.nan)
    finish = np.full(N, np.nan)
    inst = np.full(N, -1, np.int64)
    started = np.zeros(N, np.bool_)
    busy = np.zeros(n, np.bool_)
    fin = np.zeros(n)
    pfin = np.zeros(n)              # predicted finish of the query in service
    r = np.zeros(n)
    pend = np.empty(N, np.int64)    # pending queries, FIFO
    npend = 0
    cost_buf = np.empty((2 * n, n))
    i_next = 0
    n_started = 0
    n_busy = 0
    viol = 0
    late_ptr = 0
    started_below = 0
    aborted = False
    while n_started < N:
        jc, tc = _next_completion(busy, fin)
        ta = arr[i_next] if i_next < N else np.inf
        if jc >= 0 and tc <= ta:
            t = tc
            busy[jc] = False
            n_busy -= 1
        else:
            t = ta
            pend[npend] = i_next
            npend += 1
            i_next += 1
        late_ptr, started_below = _advance_late(t, arr, qos, started, i_next, late_ptr,
                                                started_below)
        if npend > 0 and n_busy < n:
            w = min(npend, 2 * n)
            for j in range(n):
                r[j] = max(0.0, pfin[j] - t) if busy[j] else 0.0
            cost = cost_buf[:w]
            kairos_cost(cost, pend, w, arr, pred, typ, coef, r, t, qos, xi, penalty)
            col = lsa(cost)
            keep = 0
            for a in range(w):
                q = pend[a]
                j = col[a]
                if j >= 0 and not busy[j]:
                    f = t + actual[typ[j], q]
                    start[q] = t
                    finish[q] = f
                    inst[q] = j
                    busy[j] = True
                    n_busy += 1
                    fin[j] = f
                    pfin[j] = t + pred[typ[j], q]
                    started[q] = True
                    if q < late_ptr:
                        started_below += 1
                    if f - arr[q] > qos:
                        viol += 1
                    n_started += 1
                else:
                    pend[keep] = q
                    keep += 1
            for a in range(w, npend):
                pend[keep] = pend[a]
                keep += 1
            npend = keep
        if viol + late_ptr - started_below > abort_limit:
            aborted = True
            viol += late_ptr - started_below
            break
    return start, finish, inst, viol, aborted


@njit(cache=True)
def engine_orcl(sizes_sorted, lat, typ, qos):
    """ORCL (spec §2.5): sizes sorted ascending; at each instance free time (lowest index on
    ties) a base instance takes the largest remaining query, an auxiliary one the smallest if
    it meets QoS there, else it retires. Returns the makespan (ms), inf if queries are left."""
    n = typ.size
    lo = 0
    hi = sizes_sorted.size - 1
    free = np.zeros(n)
    active = np.ones(n, np.bool_)
    while lo <= hi:
        j = -1
        best = np.inf
        for k in range(n):
            if active[k] and free[k] < best:
                best = free[k]
                j = k
        if j < 0:
            return np.inf
        if typ[j] == 0:
            free[j] += lat[0, sizes_sorted[hi]]
            hi -= 1
        else:
            s = lat[typ[j], sizes_sorted[lo]]
            if s <= qos:
                free[j] += s
                lo += 1
            else:
                active[j] = False
    return free.max()
