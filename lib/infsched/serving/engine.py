"""The compiled event loop of the neutral serving simulator (issue 23, spec headtohead §1).

One loop serves every policy but FLEX: queries arrive in time order; a free worker asks the policy
(:mod:`.policies`) which head queries to drop and which (model, batch) to start; a batch on model
``m`` of ``b`` queries holds its worker for ``l(m, b)`` times a multiplier drawn in advance.
Workers' completions sit in a binary heap (:mod:`infsched.des`), so an event costs ``O(log K)``
plus the routing rule's own cost. Queues are FIFO linked lists through one ``nxt`` array
(index ``K`` is the central queue), so memory is ``O(n + K)`` whatever the routing does.

Ties: a completion at the same instant as an arrival is handled first, so the arrival sees the
freed worker (the simpy reference does the same).

FLEX (``SELECT_FLEX``; Shepherd Algorithms 1-2, spec shepherd §2.2) runs its own event loop
(:func:`run_flex`, same inputs, outputs and tie rules): its central queue is an array
(BATCHGEN takes a window from the middle, and a preemption puts queries back), and it follows
Shepherd's event rules: all queries arriving at one instant form one arrival event; an
arrival lets idle workers (by index) start BATCHGEN and, with ``PREEMPT_FLEX``, preempts the
first busy worker (ascending ``|B_c|``, then index) whose BATCHGEN over the queue and its running
batch reaches ``λ |B_c|``; the running batch stops (its work is wasted), its queries not in the
new batch go back to the queue if they can still meet their deadline alone, and the pass
re-runs (at most ``K`` times). A preempted batch's completion is taken out of the heap.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..des import heap_pop, heap_push, heap_remove
from .policies import (
    PREEMPT_FLEX,
    QUEUE_CENTRAL,
    ROUTE_RJIQ,
    ROUTE_ROUND_ROBIN,
    ROUTE_TAD,
    ROUTE_TADOP,
    SERVICE_EXPONENTIAL,
    SERVICE_JITTER,
    flex_candidate,
    flex_split,
    must_drop,
    route,
    route_rjiq,
    route_tad,
    route_tadop,
    select,
)

__all__ = ["run", "run_flex"]


@njit(cache=True)
def _multiplier(service, svc, k, spread, levels, m, b):
    """Service-time multiplier of the ``k``-th batch: 1, an Exp(1) draw, or the profile's
    quantile function (piecewise linear through ``spread[m, b-1]``) at a uniform draw."""
    if service == SERVICE_EXPONENTIAL:
        return svc[k % svc.size]
    if service == SERVICE_JITTER:
        u = svc[k % svc.size]  # (a preempting policy may start more batches than queries)
        q = spread[m, min(b, spread.shape[1]) - 1]  # past B: the spread at B
        j = 0
        while j < levels.size - 2 and u > levels[j + 1]:
            j += 1
        return q[j] + (q[j + 1] - q[j]) * (u - levels[j]) / (levels[j + 1] - levels[j])
    return 1.0


@njit(cache=True)
def _batch_latency(lat, slope, m, b):
    """``l(m, b)``: the profile's table for ``b <= B``, beyond it the secant ``slope[m]`` per
    extra query (only RAMSIS's fallback batch of a queue longer than its N goes past B)."""
    B = lat.shape[1]
    if b <= B:
        return lat[m, b - 1]
    return lat[m, B - 1] + (b - B) * slope[m]


@njit(cache=True)
def _level(plan_loads, arr, mlo, i, now, window):
    """The load monitor: the rate of the arrivals ``arr[mlo:i]`` in ``(now - window, now]``
    (queries/s) and the lowest planned level at or above it (the last above them all).
    Returns (level, the monitor's new ``mlo``)."""
    while mlo < i and arr[mlo] <= now - window:
        mlo += 1
    p = np.searchsorted(plan_loads, (i - mlo) / (window / 1000.0))
    if p >= plan_loads.size:
        p = plan_loads.size - 1
    return p, mlo


@njit(cache=True)
def _flex_drop(fq, fh, fe, arr, slo, l1, now, start, finish, model):
    """Drop the queue's head queries that cannot meet their deadline even alone (Algorithm 2
    line 4, spec shepherd §2.2 (a): ``d < now + l(m, 1)``); returns the new head."""
    while fh < fe and arr[fq[fh]] + slo < now + l1:
        j = fq[fh]
        start[j] = now
        finish[j] = np.nan
        model[j] = -1
        fh += 1
    return fh


@njit(cache=True)
def _flex_take(w, V, ist, preempt, now, fq, fh, fe, gmem, gsize, tmp, back, arr, slo, l1,
               start, finish, model, wstat):
    """Take the window of ranks ``[ist, ist + V)`` of merge(queue, worker ``w``'s running batch
    if ``preempt``) as ``w``'s new batch (``gmem[w, :V]``, sorted). When preempting, the old
    batch stops now; its queries outside the window rejoin the queue if ``d >= now + l(m, 1)``
    (Algorithm 1 line 19), else are dropped. Returns the queue's new head."""
    na = fe - fh
    kc = gsize[w] if preempt else 0
    cm = gmem[w]
    j0 = flex_split(fq, fh, na, cm, kc, ist)
    j1 = flex_split(fq, fh, na, cm, kc, ist + V)
    a0 = ist - j0
    a1 = ist + V - j1
    x = fh + a0
    y = j0
    for q in range(V):  # merge Q[a0:a1] and C[j0:j1]
        if y < j1 and (x >= fh + a1 or cm[y] < fq[x]):
            tmp[q] = cm[y]
            y += 1
        else:
            tmp[q] = fq[x]
            x += 1
    k = a1 - a0  # remove Q[a0:a1]: the (short) prefix before it moves up
    for p in range(fh + a0 - 1, fh - 1, -1):
        fq[p + k] = fq[p]
    fh += k
    if preempt:
        nb = 0
        for q in range(kc):
            if j0 <= q < j1:
                continue
            r = cm[q]
            if arr[r] + slo >= now + l1:
                back[nb] = r
                nb += 1
            else:
                start[r] = now
                finish[r] = np.nan
                model[r] = -1
        wstat[w, 1] += kc
        wstat[w, 2] += 1
        if nb > 0:  # merge them back in front (they left the queue earlier: there is room)
            x = fh
            p = fh - nb
            fh = p
            y = 0
            while y < nb:
                if x < fe and fq[x] < back[y]:
                    fq[p] = fq[x]
                    x += 1
                else:
                    fq[p] = back[y]
                    y += 1
                p += 1
    for q in range(V):
        cm[q] = tmp[q]
    gsize[w] = V
    return fh


@njit(cache=True)
def _flex_start(v, V, ist, preempt, now, fq, fh, fe, gmem, gsize, tmp, back, arr, slo, lrow, mf,
                start, finish, model, bsize, wstat, service, svc, nb, spread, levels, ht, hs, hsize,
                wprev, over):
    """Start the window ``[ist, ist + V)`` on worker ``v`` (preempting its batch if ``preempt``):
    take it (:func:`_flex_take`), time it, record it, and put its completion in the heap (a
    preempted batch's completion leaves it). ``over`` = (switch, dispatch, preemption) costs in
    ms (issue 33, item 6): the batch starts ``dispatch`` after the decision and is lengthened by
    ``switch`` if its model differs from the worker's previous batch's, and by ``preemption`` if
    it preempts. Returns (queue head, batches, heap size)."""
    fh = _flex_take(v, V, ist, preempt, now, fq, fh, fe, gmem, gsize, tmp, back, arr, slo,
                    lrow[0], start, finish, model, wstat)
    t0 = now + over[1]
    extra = over[0] if (wprev[v] >= 0 and wprev[v] != mf) else 0.0
    if preempt:
        extra += over[2]
    # (with every overhead 0 these are the same floats as now + l(m, V) x draw)
    end = t0 + lrow[V - 1] * _multiplier(service, svc, nb, spread, levels, mf, V) + extra
    wprev[v] = mf
    for q in range(V):
        j = gmem[v, q]
        start[j] = t0
        finish[j] = end
        model[j] = mf
        bsize[j] = V
    if preempt:
        for k in range(hsize):
            if hs[k] == v:
                hsize = heap_remove(ht, hs, hsize, k)
                break
    hsize = heap_push(ht, hs, hsize, end, v)
    return fh, nb + 1, hsize


@njit(cache=True)
def run_flex(arr, slo, lat, K, mf, cap, service, svc, spread, levels, preempt, lam,
              start, finish, model, bsize, wstat, plan_loads, plan_model, plan_cap, window,
              switch_ms, dispatch_ms, preempt_ms):
    """FLEX's event loop (Shepherd Algorithms 1-2, spec shepherd §2.2) on model ``mf``: the
    central queue is an array ``fq[fh:fe]`` of query indices in deadline order, each worker's
    running batch ``gmem[w, :gsize[w]]``. A completion frees its worker, which starts BATCHGEN;
    an arrival event (every query arriving at one instant) lets idle workers, by index, start
    BATCHGEN and, with ``PREEMPT_FLEX``, offers the workers busy when the pass began, by
    ascending ``|B_c|`` then index, BATCHGEN over the queue and their running batch: the first
    whose batch reaches ``λ |B_c|`` is preempted and the pass re-runs (at most ``K`` times).
    ``wstat[w]`` (K, 3) receives per worker the queries of its completed batches, the queries of
    its preempted batches and its number of preemptions. With ``plan_loads`` (P,) FLEX
    estimates the load as the re-planning contenders do (issue 33): at every event the arrivals
    of the last ``window`` ms give the level ``p``, and BATCHGEN, the drop rule and the
    preemption rule of that event run on model ``plan_model[p]`` with cap ``plan_cap[p]``
    (``cap`` must be at least every ``plan_cap``: it sizes the batches' arrays). Overheads:
    see :func:`_flex_start`. Returns the number of batches started (preempted ones included)."""
    n = arr.size
    busy = np.zeros(K, np.bool_)
    n_idle = K
    ht = np.empty(K, np.float64)
    hs = np.empty(K, np.int64)
    hsize = 0
    nb = 0
    i = 0
    fq = np.empty(n, np.int64)
    fh = 0
    fe = 0
    gmem = np.empty((K, cap), np.int64)
    gsize = np.zeros(K, np.int64)
    tmp = np.empty(cap, np.int64)
    back = np.empty(cap, np.int64)
    cand = np.empty(K, np.int64)
    lrow = lat[mf]
    l1 = lrow[0]
    wcap = cap
    mlo = 0  # the load monitor (plan_loads): arrivals arr[mlo:i] arrived in (now - window, now]
    wprev = np.full(K, -1, np.int64)  # each worker's previous model (switch cost)
    over = np.array([switch_ms, dispatch_ms, preempt_ms])
    while i < n or hsize > 0:
        if hsize > 0 and (i >= n or ht[0] <= arr[i]):
            # completion (Algorithm 1 lines 4-8): the freed worker starts BATCHGEN
            now = ht[0]
            w = hs[0]
            hsize = heap_pop(ht, hs, hsize)
            wstat[w, 0] += gsize[w]
            gsize[w] = 0
            busy[w] = False
            n_idle += 1
            if plan_loads is not None:  # the model of the level in force (issue 33)
                p, mlo = _level(plan_loads, arr, mlo, i, now, window)
                mf = plan_model[p]
                wcap = plan_cap[p]
                lrow = lat[mf]
                l1 = lrow[0]
            fh = _flex_drop(fq, fh, fe, arr, slo, l1, now, start, finish, model)
            V, ist = flex_candidate(fq, fh, fe - fh, tmp, 0, arr, slo, lrow, now, wcap)
            if V > 0:
                fh, nb, hsize = _flex_start(w, V, ist, False, now, fq, fh, fe, gmem, gsize, tmp,
                                            back, arr, slo, lrow, mf, start, finish, model, bsize,
                                            wstat, service, svc, nb, spread, levels, ht, hs, hsize,
                                            wprev, over)
                busy[w] = True
                n_idle -= 1
            continue
        # arrival event (Algorithm 1 lines 9-19)
        now = arr[i]
        while i < n and arr[i] == now:
            fq[fe] = i
            fe += 1
            i += 1
        if plan_loads is not None:  # the level once per arrival event, these arrivals counted
            p, mlo = _level(plan_loads, arr, mlo, i, now, window)
            mf = plan_model[p]
            wcap = plan_cap[p]
            lrow = lat[mf]
            l1 = lrow[0]
        rerun = 0
        while True:
            nc_ = 0  # the busy workers at the start of the pass: preemption candidates
            if preempt == PREEMPT_FLEX:
                for v in range(K):
                    if busy[v]:
                        cand[nc_] = v
                        nc_ += 1
            if n_idle > 0:  # idle workers, by index, start BATCHGEN
                fh = _flex_drop(fq, fh, fe, arr, slo, l1, now, start, finish, model)
                for v in range(K):
                    if busy[v]:
                        continue
                    V, ist = flex_candidate(fq, fh, fe - fh, tmp, 0, arr, slo, lrow, now, wcap)
                    if V == 0:
                        break
                    fh, nb, hsize = _flex_start(v, V, ist, False, now, fq, fh, fe, gmem, gsize,
                                                tmp, back, arr, slo, lrow, mf, start, finish, model,
                                                bsize, wstat, service, svc, nb, spread, levels, ht,
                                                hs, hsize, wprev, over)
                    busy[v] = True
                    n_idle -= 1
            if nc_ == 0:
                break
            # a batch from the queue and B_c has at most ub + |B_c| queries (and cap): only
            # workers with λ|B_c| <= min(cap, ub + |B_c|) can be preempted (exact pruning)
            fh = _flex_drop(fq, fh, fe, arr, slo, l1, now, start, finish, model)
            ub, _ = flex_candidate(fq, fh, fe - fh, tmp, 0, arr, slo, lrow, now, wcap)
            m_ = 0
            for c in range(nc_):
                v = cand[c]
                kc = gsize[v]
                if lam * kc <= wcap and lam * kc <= ub + kc:
                    p = m_  # insertion by (|B_c|, index): the visiting order
                    while p > 0 and gsize[cand[p - 1]] > kc:
                        cand[p] = cand[p - 1]
                        p -= 1
                    cand[p] = v
                    m_ += 1
            restart = False
            for c in range(m_):
                v = cand[c]
                kc = gsize[v]
                V, ist = flex_candidate(fq, fh, fe - fh, gmem[v], kc, arr, slo, lrow, now, wcap)
                if V > 0 and V >= lam * kc:  # the preemption rule (Algorithm 1 line 16)
                    fh, nb, hsize = _flex_start(v, V, ist, True, now, fq, fh, fe, gmem, gsize,
                                                tmp, back, arr, slo, lrow, mf, start, finish, model,
                                                bsize, wstat, service, svc, nb, spread, levels, ht,
                                                hs, hsize, wprev, over)
                    restart = True
                    break
            if not restart or rerun == K:
                break
            rerun += 1
    for p in range(fh, fe):  # (none is left: a queue that no batch can use is dropped)
        j = fq[p]
        finish[j] = np.nan
        model[j] = -1
    return nb


@njit(cache=True)
def run(arr, slo, lat, by_accuracy, fastest, K, queue, routing, select_code, worker_model, cap,
        service, svc, spread, levels, u_route, worker_class, cls_start, cls_members, d, tup, cum_p,
        grid, pmodel, pbatch, fallback, start, finish, model, bsize, plan_loads, plan_model,
        plan_cap, window, slope, switch_ms, dispatch_ms):
    """Simulate ``arr.size`` queries (arrival times ``arr`` in ms, sorted) on ``K`` workers.

    ``worker_model[w]`` is the model a fixed-model policy runs on worker ``w``; the class arrays
    (``worker_class``, ``cls_start``, ``cls_members``, ``d``) are the TAD paper's server classes,
    ``tup`` TAD-OP's routing tuples, ``cum_p`` R-JIQ's cumulative class probabilities, and
    ``grid``, ``pmodel``, ``pbatch``, ``fallback`` RAMSIS's policy (see
    :meth:`.config.ServingConfig.layout`). Fills, per query: ``start`` (batch start, or drop
    time), ``finish`` (NaN if dropped), ``model`` (-1 if dropped) and ``bsize`` (its batch's
    size). ``plan_loads`` (P,) are the
    load levels (queries/s) a re-planning policy planned for (None: none; a separate
    compilation, so the other policies pay nothing for the monitor): at each decision the
    arrivals of the last ``window`` ms give the rate estimate, and level ``p`` is the lowest at or
    above it (the last above them all); RAMSIS then reads ``pmodel[p]``, ``pbatch[p]`` (its
    policies are (P, N+1, J)), a fixed-model policy ``plan_model[p]`` with cap ``plan_cap[p]``.
    ``slope`` (M,) extends ``l(m, b)`` past the table's largest batch (RAMSIS's fallback on a
    queue longer than its N serves it whole, as the RAMSIS engine does). R-JIQ's ``cum_p`` is
    (P, C): with ``plan_loads`` each arrival is routed with the split of the level its own
    arrival completes (the monitor counts it), else row 0. Overheads (issue 33, item 6):
    ``switch_ms`` lengthens a batch whose model differs from its worker's previous batch's, and
    ``dispatch_ms`` delays a batch's start after the decision (the worker is held meanwhile).
    Returns ``(number of batches, final Δ, min Δ)`` (Δ in ``d``'s units; 0 without TAD).
    """
    n = arr.size
    central = queue == QUEUE_CENTRAL
    # FIFO queues as linked lists; queue K is the central queue
    qhead = np.full(K + 1, -1, np.int64)
    qtail = np.full(K + 1, -1, np.int64)
    qlen = np.zeros(K + 1, np.int64)
    nxt = np.full(n, -1, np.int64)
    busy = np.zeros(K, np.bool_)
    load = np.zeros(K, np.int64)  # queued + in-service queries per worker (least-loaded routing)
    inserv = np.zeros(K, np.int64)
    n_idle = K
    cidle = np.zeros(cls_start.size - 1, np.int64)  # idle workers per class (TAD)
    for w in range(K):
        cidle[worker_class[w]] += 1
    delta = np.int64(0)
    min_delta = np.int64(0)
    ht = np.empty(K, np.float64)
    hs = np.empty(K, np.int64)
    hsize = 0
    nb = 0
    i = 0
    mlo = 0  # the load monitor: arrivals arr[mlo:i] arrived in (now - window, now]
    wprev = np.full(K, -1, np.int64)  # each worker's previous model (-1: none yet; switch cost)
    while i < n or hsize > 0:
        if hsize > 0 and (i >= n or ht[0] <= arr[i]):
            now = ht[0]
            w = hs[0]
            hsize = heap_pop(ht, hs, hsize)
            busy[w] = False
            n_idle += 1
            cidle[worker_class[w]] += 1
            load[w] -= inserv[w]
            inserv[w] = 0
        else:
            now = arr[i]
            if central:
                q = K
                w = -1
                if n_idle > 0:
                    for v in range(K):  # the lowest-index idle worker takes it
                        if not busy[v]:
                            w = v
                            break
            elif routing == ROUTE_TAD or routing == ROUTE_TADOP or routing == ROUTE_RJIQ:
                if routing == ROUTE_TAD:
                    w, k = route_tad(delta, d, cidle, cls_start, cls_members, busy, u_route[i])
                elif routing == ROUTE_TADOP:
                    w, k = route_tadop(delta, tup, cidle, cls_start, cls_members, busy, u_route[i])
                else:
                    pr = 0
                    if plan_loads is not None:  # R-JIQ on the monitor: the split of the level now
                        pr, mlo = _level(plan_loads, arr, mlo, i + 1, now, window)
                    w, k = route_rjiq(cum_p[pr], cidle, cls_start, cls_members, busy, u_route[i])
                delta += d[k]
                min_delta = min(min_delta, delta)
                q = w
                load[w] += 1
            elif routing == ROUTE_ROUND_ROBIN:
                w = i % K
                q = w
                load[w] += 1
            else:
                w = route(routing, load, busy, n_idle, u_route[i] if u_route.size > 0 else 0.0)
                q = w
                load[w] += 1
            if qlen[q] == 0:
                qhead[q] = i
            else:
                nxt[qtail[q]] = i
            qtail[q] = i
            qlen[q] += 1
            i += 1
            if w < 0 or busy[w]:
                continue
        # worker w is free at `now`: let the policy drop and start a batch from its queue
        q = K if central else w
        while qlen[q] > 0 and must_drop(select_code, slo - (now - arr[qhead[q]]), lat, fastest):
            j = qhead[q]
            start[j] = now
            finish[j] = np.nan
            model[j] = -1
            qhead[q] = nxt[j]
            qlen[q] -= 1
            if not central:
                load[w] -= 1
        if qlen[q] == 0:
            continue
        p = 0
        fixed = worker_model[w]
        wcap = cap
        if plan_loads is not None:  # re-planning: the level of the rate estimate (RAMSIS §6)
            p, mlo = _level(plan_loads, arr, mlo, i, now, window)
            if plan_model.size > 0:
                fixed = plan_model[p]
                wcap = plan_cap[p]
        m, b = select(select_code, slo - (now - arr[qhead[q]]), qlen[q], lat, by_accuracy,
                      fixed, wcap, fastest, grid, pmodel, pbatch, fallback, p)
        # (with both overheads 0 the sums below are the same floats as now + l(m, b) x draw)
        t0 = now + dispatch_ms
        extra = switch_ms if (wprev[w] >= 0 and wprev[w] != m) else 0.0
        end = t0 + _batch_latency(lat, slope, m, b) * _multiplier(service, svc, nb, spread, levels, m, b) + extra
        wprev[w] = m
        nb += 1
        for _ in range(b):
            j = qhead[q]
            start[j] = t0
            finish[j] = end
            model[j] = m
            bsize[j] = b
            qhead[q] = nxt[j]
        qlen[q] -= b
        busy[w] = True
        n_idle -= 1
        cidle[worker_class[w]] -= 1
        inserv[w] = b
        hsize = heap_push(ht, hs, hsize, end, w)
    return nb, delta, min_delta
