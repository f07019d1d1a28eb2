"""The compiled event loop of the neutral serving simulator (issue 23, spec headtohead §1).

One loop serves every policy: queries arrive in time order; a free worker asks the policy
(:mod:`.policies`) which head queries to drop and which (model, batch) to start; a batch on model
``m`` of ``b`` queries holds its worker for ``l(m, b)`` times a multiplier drawn in advance.
Workers' completions sit in a binary heap (:mod:`infsched.des`), so an event costs ``O(log K)``
plus the routing rule's own cost. Queues are FIFO linked lists through one ``nxt`` array
(index ``K`` is the central queue), so memory is ``O(n + K)`` whatever the routing does.

Ties: a completion at the same instant as an arrival is handled first, so the arrival sees the
freed worker (the simpy reference does the same).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..des import heap_pop, heap_push
from .policies import (QUEUE_CENTRAL, ROUTE_RJIQ, ROUTE_ROUND_ROBIN, ROUTE_TAD, ROUTE_TADOP,
                       SERVICE_EXPONENTIAL,
                       SERVICE_JITTER, must_drop, route, route_rjiq, route_tad, route_tadop, select)

__all__ = ["run"]


@njit(cache=True)
def _multiplier(service, svc, k, spread, levels, m, b):
    """Service-time multiplier of the ``k``-th batch: 1, an Exp(1) draw, or the profile's
    quantile function (piecewise linear through ``spread[m, b-1]``) at a uniform draw."""
    if service == SERVICE_EXPONENTIAL:
        return svc[k]
    if service == SERVICE_JITTER:
        u = svc[k]
        q = spread[m, b - 1]
        j = 0
        while j < levels.size - 2 and u > levels[j + 1]:
            j += 1
        return q[j] + (q[j + 1] - q[j]) * (u - levels[j]) / (levels[j + 1] - levels[j])
    return 1.0


@njit(cache=True)
def run(arr, slo, lat, by_accuracy, fastest, K, queue, routing, select_code, worker_model, cap,
        service, svc, spread, levels, u_route, worker_class, cls_start, cls_members, d, tup, cum_p,
        grid, pmodel, pbatch, fallback, start, finish, model, bsize):
    """Simulate ``arr.size`` queries (arrival times ``arr`` in ms, sorted) on ``K`` workers.

    ``worker_model[w]`` is the model a fixed-model policy runs on worker ``w``; the class arrays
    (``worker_class``, ``cls_start``, ``cls_members``, ``d``) are the TAD paper's server classes,
    ``tup`` TAD-OP's routing tuples, ``cum_p`` R-JIQ's cumulative class probabilities, and
    ``grid``, ``pmodel``, ``pbatch``, ``fallback`` RAMSIS's policy (see
    :meth:`.config.ServingConfig.layout`). Fills, per query: ``start`` (batch start, or drop
    time), ``finish`` (NaN if dropped), ``model`` (-1 if dropped) and ``bsize`` (its batch's
    size). Returns ``(number of batches, final Δ, min Δ)`` (Δ in ``d``'s units; 0 without TAD).
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
                    w, k = route_rjiq(cum_p, cidle, cls_start, cls_members, busy, u_route[i])
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
        while qlen[q] > 0 and must_drop(select_code, arr[qhead[q]] + slo - now, lat, fastest):
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
        m, b = select(select_code, arr[qhead[q]] + slo - now, qlen[q], lat, by_accuracy,
                      worker_model[w], cap, fastest, grid, pmodel, pbatch, fallback)
        end = now + lat[m, b - 1] * _multiplier(service, svc, nb, spread, levels, m, b)
        nb += 1
        for _ in range(b):
            j = qhead[q]
            start[j] = now
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
