"""The fast serving simulator of Shepherd's online schedulers (spec §1, §2.2, §2.4): FLEX
(Algorithms 1 and 2, §5.2), SHEPHERD-NP (FLEX without preemption, §7.2) and the Clockwork-like
baseline (online, global, earliest-deadline-first, non-preemptive).

Semantics, shared exactly with the simpy reference (:mod:`infsched.shepherd.reference`):

- **Latency.** A batch of ``b`` requests of model ``m`` runs for
  ``L[m, b] = (1 + ε_exec)·ℓ_m(b)`` ms (Eq. 1 with the exit-point slowdown, spec §2.2); a
  batch started at ``ts`` is *feasible* iff ``ts + L[m, b] ≤ d_r`` for every member. The same
  table is used for the checks and the run, so every executed request meets its deadline
  (claim 4).
- **Events.** Requests reach the scheduler at their *release* time (their arrival, or their exit
  from the controller server, below). All requests released at the same instant form **one
  arrival event**: they are all enqueued before the GPU loop runs (this is what makes Thm A.1's
  burst of ω requests one event, and Fig 11(a)'s bursts of 1024). At equal times completions
  come before arrivals, and completions among themselves in the order their batches were
  started (batch id).
- **Queues.** One queue per model, ordered by (deadline, request index). Requests whose deadline
  can no longer be met even alone, ``d_r < t + L[m, 1]``, are dropped (spec §2.2 (a)); dropping
  is lazy (at the head of the sorted queue), which is exact because such a request can never be
  served later either.
- **BATCHGEN (Algorithm 2), ``batchgen="largest"``** (spec §2.2 (c), exact form): over the
  candidate set ``S`` sorted by deadline, ``size(i) = min(s − i, B_max, max{k : ts + L[m,k] ≤
  d_i})``, maximised over ``i`` (ties: smallest ``i``); found by binary search because the
  first term falls and the last rises in ``i``. ``S = Q_m ∪ B_c(n)`` when GPU ``n`` runs model
  ``m`` (re-batching). Across models: the largest batch, ties to higher ``|B|/L`` then lower
  model index. ``batchgen="literal"``: the prefix of ``S`` (after skipping requests that cannot
  make it even alone at ``ts``) grown while the head still meets its deadline (Alg. 2 lines 9–13
  with ``break`` on line 13).
- **FLEX arrival (Alg. 1 lines 9–19).** Enqueue, then visit the GPUs, idle ones first by index,
  then busy ones by ascending ``|B_c|`` (then index): an idle GPU starts ``BATCHGEN(n, t)`` if
  non-empty; a busy one is preempted iff ``|B_g| ≥ λ·|B_c|``. After a preemption the requests of
  ``B_c`` not in ``B_g`` go back to their queue if ``d_r ≥ t + L[m,1]`` and the loop restarts
  ("go to line 11"), at most ``G`` restarts per event. A GPU whose ``λ·|B_c|`` exceeds an upper
  bound on any candidate is skipped without computing BATCHGEN — that is exact (it could not
  preempt) and is what makes the engine fast under overload.
- **FLEX completion (lines 4–8).** The GPU's batch completes; it starts ``BATCHGEN(n, t)``.
- **Preemption delay** (spec §2.2, ours): ``preempt_delay="mean"`` gives ``δ = L_c/(2E_m)``,
  ``"uniform"`` gives ``δ = u·L_c/E_m`` with ``u`` a U(0,1) drawn per batch id from the run's
  seed, for the running batch ``c`` of model ``m`` with ``E_m`` exit points. A busy GPU's
  candidate is built for the start ``ts = t + δ_c``; the preempted batch occupies the GPU until
  ``ts`` (wasted). A batch still waiting out such a delay is replaced without a further delay.
- **Clockwork (spec §2.4).** On GPU ``n`` free at ``t`` (completion; or idle at an arrival, idle
  GPUs by index): drop every request with ``d < t + L[m,1]``; ``r*`` is the globally earliest
  deadline (ties: lower index), ``m`` its model; ``b`` is the largest ``b ≤ min(B_max, |Q_m|)``
  (a power of two with ``cw_pow2``) with ``t + L[m,b] ≤ d_{r*}``; the ``b`` earliest-deadline
  requests of ``Q_m`` run, non-preemptively.
- **Controller capacity** (spec §2.4, ours, calibrated not measured): every request first passes
  a FIFO single server costing ``controller_us`` µs; a request reaching the head at ``h`` with
  ``h + c + L[m,1] > d`` (it could not be served even right after the controller) is discarded
  at zero cost. One server per scheduler instance: simulate each group separately.

Everything runs to exhaustion (no horizon cut), so no batch is in flight at the end.

Why one module of about 850 lines: it is one compiled engine. Its helpers (the heap, the queue
operations, BATCHGEN and the preemption test) are the engine's inner loops, compiled into it and
written against its array layout; they have no use apart from it. Its heap orders completions by
(time, batch id) (the tie rule above), which is why it does not use :mod:`infsched.des`'s heap,
whose ties keep no order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from infsched.errors import one_of, require
from infsched.limits import check_memory, warn_long
from infsched.shepherd.model import B_MAX, ModelSet, Requests

__all__ = ["POLICIES", "BATCHGENS", "PREEMPT_DELAYS", "LAMBDA", "SimResult", "simulate",
           "latency_table", "delay_uniforms", "controller_release", "batchgen_size"]

POLICIES = ("flex", "flex-np", "clockwork")
BATCHGENS = ("largest", "literal")
PREEMPT_DELAYS = ("none", "mean", "uniform")
#: the preemption threshold of Theorem 5.2
LAMBDA = 3.03

_FLEX, _NP, _CW = 0, 1, 2
_DELAY = {"none": 0, "mean": 1, "uniform": 2}


# --------------------------------------------------------------------------- shared inputs

def latency_table(models: ModelSet, eps_exec: float, b_max: int) -> np.ndarray:
    """``L[m, b] = (1 + ε)·(α_m b + β_m)`` ms for ``b = 0..b_max`` (``L[:, 0] = 0``, unused):
    the one table both engines use for feasibility checks and execution times."""
    b = np.arange(b_max + 1, dtype=float)
    L = (1.0 + eps_exec) * (models.alpha[:, None] * b[None, :] + models.beta[:, None])
    L[:, 0] = 0.0
    return np.ascontiguousarray(L)


def delay_uniforms(n: int, seed: int, mode: str) -> np.ndarray:
    """U(0,1) draws for ``preempt_delay="uniform"``: batch id ``k`` uses ``u[k % len(u)]``."""
    if mode != "uniform":
        return np.zeros(1)
    return np.random.default_rng(np.random.SeedSequence(seed)).random(max(n, 1) + 1)


@njit(cache=True)
def _controller(arrival, deadline, model, L1, c_ms):
    """FIFO single server of cost ``c_ms`` per request (spec §2.4); returns the release times
    and the indices of the requests that pass, in release order."""
    n = arrival.size
    rel_t = np.empty(n)
    rel_i = np.empty(n, np.int64)
    k = 0
    free = -np.inf
    for i in range(n):
        h = arrival[i] if arrival[i] > free else free
        if c_ms > 0.0:
            if h + c_ms + L1[model[i]] > deadline[i]:
                continue                       # unmeetable at the head: discarded, zero cost
            free = h + c_ms
            rel_t[k] = free
        else:
            rel_t[k] = arrival[i]
        rel_i[k] = i
        k += 1
    return rel_t[:k], rel_i[:k]


def controller_release(requests: Requests, L: np.ndarray, controller_us: float):
    """Release times (ms) and indices of the requests that pass the controller (spec §2.4)."""
    return _controller(requests.arrival, requests.deadline, requests.model,
                       np.ascontiguousarray(L[:, 1]), float(controller_us) / 1000.0)


# --------------------------------------------------------------------------- small helpers

@njit(cache=True, inline="always")
def _less(dl, a, b):
    """Queue order: by deadline, then request index."""
    return dl[a] < dl[b] or (dl[a] == dl[b] and a < b)


@njit(cache=True)
def _hpush(ht, hb, size, t, b):
    """Push completion (t, batch id) onto a heap ordered by (t, batch id)."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if ht[p] < t or (ht[p] == t and hb[p] < b):
            break
        ht[i] = ht[p]
        hb[i] = hb[p]
        i = p
    ht[i] = t
    hb[i] = b
    return size + 1


@njit(cache=True)
def _hpop(ht, hb, size):
    """Remove the root of the (t, batch id) heap; returns the new size."""
    size -= 1
    t = ht[size]
    b = hb[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hb[c + 1] < hb[c])):
            c += 1
        if t < ht[c] or (t == ht[c] and b < hb[c]):
            break
        ht[i] = ht[c]
        hb[i] = hb[c]
        i = c
    if size > 0:
        ht[i] = t
        hb[i] = b
    return size


@njit(cache=True)
def _split(dl, qbuf, h, na, cm, nc, k):
    """How many of the first ``k`` elements of merge(A, C) come from C, where A is the sorted
    queue ``qbuf[h:h+na]`` and C the sorted running batch ``cm[:nc]``."""
    lo = k - na
    if lo < 0:
        lo = 0
    hi = k if k < nc else nc
    while lo < hi:
        j = (lo + hi) >> 1
        if _less(dl, cm[j], qbuf[h + k - j - 1]):
            lo = j + 1
        else:
            hi = j
    return lo


@njit(cache=True)
def _kth(dl, qbuf, h, na, cm, nc, k):
    """The request of rank ``k`` in merge(A, C)."""
    if nc == 0:
        return qbuf[h + k]
    j = _split(dl, qbuf, h, na, cm, nc, k)
    i = k - j
    if j < nc and (i >= na or _less(dl, cm[j], qbuf[h + i])):
        return cm[j]
    return qbuf[h + i]


@njit(cache=True)
def _hcap(d, ts, Lm, kmax):
    """``max{k ≤ kmax : ts + L[m,k] ≤ d}`` (0 if none)."""
    lo = 0
    hi = kmax
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if ts + Lm[mid] <= d:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True)
def _candidate(dl, qbuf, h, na, cm, nc, Lm, ts, bmax, literal):
    """Algorithm 2 lines 5–13 for one model: the largest feasible batch of merge(Q_m, C) at
    start time ``ts``. Returns (size, first rank); size 0 if none."""
    s = na + nc
    if s == 0:
        return 0, 0
    if literal:
        lo = 0
        hi = s
        while lo < hi:                          # first request that can make it alone
            mid = (lo + hi) >> 1
            if ts + Lm[1] <= dl[_kth(dl, qbuf, h, na, cm, nc, mid)]:
                hi = mid
            else:
                lo = mid + 1
        if lo == s:
            return 0, 0
        kmax = s - lo if s - lo < bmax else bmax
        return _hcap(dl[_kth(dl, qbuf, h, na, cm, nc, lo)], ts, Lm, kmax), lo
    # size(i) = min(g(i), h(i)), g(i) = min(s-i, B) falls, h(i) rises: find the crossing
    lo = 0
    hi = s
    while lo < hi:
        mid = (lo + hi) >> 1
        g = s - mid if s - mid < bmax else bmax
        if ts + Lm[g] <= dl[_kth(dl, qbuf, h, na, cm, nc, mid)]:
            hi = mid
        else:
            lo = mid + 1
    ic = lo
    if ic == s:
        return 0, 0                             # h(i) < g(i) ≤ ... everywhere: h(s-1) = 0
    V = s - ic if s - ic < bmax else bmax
    if ic > 0:
        gp = s - ic + 1 if s - ic + 1 < bmax else bmax
        hp = _hcap(dl[_kth(dl, qbuf, h, na, cm, nc, ic - 1)], ts, Lm, gp - 1)
        if hp > V:
            V = hp
    lo = 0
    hi = ic
    while lo < hi:                              # smallest i with h(i) ≥ V
        mid = (lo + hi) >> 1
        if ts + Lm[V] <= dl[_kth(dl, qbuf, h, na, cm, nc, mid)]:
            hi = mid
        else:
            lo = mid + 1
    return V, lo


def batchgen_size(deadlines, t: float, alpha: float, beta: float, b_max: int = B_MAX,
                  literal: bool = False) -> tuple[int, int]:
    """BATCHGEN's (size, first index) for one model queue with these ``deadlines`` at time ``t``
    (a test hook for the binary search; the deadlines are sorted here)."""
    d = np.sort(np.asarray(deadlines, dtype=float))
    Lm = alpha * np.arange(b_max + 1, dtype=float) + beta
    Lm[0] = 0.0
    q = np.arange(d.size, dtype=np.int64)
    v, i = _candidate(d, q, 0, d.size, np.empty(0, np.int64), 0, Lm, float(t), int(b_max),
                      bool(literal))
    return int(v), int(i)


# --------------------------------------------------------------------------- queue operations

@njit(cache=True)
def _q_append(dl, qbuf, qh, qe, m, r):
    """Insert request r into model m's sorted queue (from the tail: O(1) with one SLO/model)."""
    pos = qe[m]
    while pos > qh[m] and _less(dl, r, qbuf[pos - 1]):
        qbuf[pos] = qbuf[pos - 1]
        pos -= 1
    qbuf[pos] = r
    qe[m] += 1


@njit(cache=True)
def _q_drop(dl, qbuf, qh, qe, m, t, L):
    """Algorithm 2 line 4: drop the head requests that cannot meet their deadline even alone."""
    lim = L[m, 1]
    while qh[m] < qe[m] and dl[qbuf[qh[m]]] < t + lim:
        qh[m] += 1


@njit(cache=True)
def _q_remove(qbuf, qh, m, a0, a1):
    """Remove queue ranks [a0, a1) of model m (a window; the prefix before it shifts right)."""
    k = a1 - a0
    if k == 0:
        return
    h = qh[m]
    for p in range(h + a0 - 1, h - 1, -1):
        qbuf[p + k] = qbuf[p]
    qh[m] = h + k


@njit(cache=True)
def _q_reenqueue(dl, qbuf, qh, qe, m, R, nr):
    """Merge the sorted requests ``R[:nr]`` back into model m's queue, in front (re-enqueued
    requests were dequeued before, so there is room before the head)."""
    i = qh[m]
    w = qh[m] - nr
    qh[m] = w
    j = 0
    while j < nr:
        if i < qe[m] and _less(dl, qbuf[i], R[j]):
            qbuf[w] = qbuf[i]
            i += 1
        else:
            qbuf[w] = R[j]
            j += 1
        w += 1


# --------------------------------------------------------------------------- the engine

@njit(cache=True)
def _batchgen(dl, qbuf, qh, qe, ub, L, n_models, t, ts, mc, cm, kc, bmax, literal):
    """Algorithm 2 for one GPU: the largest candidate over all models at start time ``ts``,
    with the running batch ``cm[:kc]`` of model ``mc`` re-batchable (``mc = -1``: idle).
    Returns (size, model, first rank). ``ub[m]`` bounds model m's candidate without C."""
    bestV = 0
    bestm = -1
    besti = 0
    bestdens = 0.0
    for m in range(n_models):
        _q_drop(dl, qbuf, qh, qe, m, t, L)
        na = qe[m] - qh[m]
        nc = kc if m == mc else 0
        if na + nc == 0:
            continue
        if nc == 0 and ub[m] < bestV:
            continue                            # cannot win: exact pruning
        V, i = _candidate(dl, qbuf, qh[m], na, cm, nc, L[m], ts, bmax, literal)
        if nc == 0 and ts == t and not literal:
            ub[m] = V                           # exact now, an upper bound later
        if V == 0:
            continue
        dens = V / L[m, V]
        if V > bestV or (V == bestV and dens > bestdens):
            bestV = V
            bestm = m
            besti = i
            bestdens = dens
    return bestV, bestm, besti


@njit(cache=True)
def _refresh_ub(dl, qbuf, qh, qe, ub, L, m, t, bmax, literal):
    """Recompute the bound ``ub[m]`` at t after model m's queue changed: the *largest* feasible
    batch of Q_m, which only falls as time passes and requests leave, and bounds the literal
    rule's batch too (that one can grow when a blocking head leaves, so it is no bound)."""
    _q_drop(dl, qbuf, qh, qe, m, t, L)
    v, _ = _candidate(dl, qbuf, qh[m], qe[m] - qh[m], qbuf, 0, L[m], t, bmax, False)
    ub[m] = v


@njit(cache=True)
def _engine(policy, rel_t, rel_i, dl, mdl, n, n_models, G, L, bmax, lam, literal,
            delay_mode, E, u, cw_pow2):
    nrel = rel_i.size
    # per-model queues: one segment of qbuf each, sized by the model's request count
    cnt = np.zeros(n_models, np.int64)
    for k in range(nrel):
        cnt[mdl[rel_i[k]]] += 1
    qh = np.zeros(n_models, np.int64)
    acc = 0
    for m in range(n_models):
        qh[m] = acc
        acc += cnt[m]
    qe = qh.copy()
    qbuf = np.empty(max(acc, 1), np.int64)
    ub = np.zeros(n_models, np.int64)
    touched = np.zeros(n_models, np.bool_)

    comp = np.full(n, np.nan)
    rbatch = np.full(n, -1, np.int64)

    g_bid = np.full(G, -1, np.int64)
    g_size = np.zeros(G, np.int64)
    g_model = np.zeros(G, np.int64)
    g_start = np.zeros(G)
    g_delay = np.zeros(G)
    g_mem = np.empty((G, bmax), np.int64)
    tmp = np.empty(bmax, np.int64)
    back = np.empty(bmax, np.int64)
    order = np.empty(G, np.int64)

    cap = nrel + 16 + G * (G + 2)
    r_gpu = np.empty(cap, np.int64)
    r_model = np.empty(cap, np.int64)
    r_size = np.empty(cap, np.int64)
    r_start = np.empty(cap)
    r_end = np.empty(cap)
    r_pre = np.zeros(cap, np.bool_)
    ht = np.empty(cap)
    hb = np.empty(cap, np.int64)
    nrec = 0
    hs = 0
    n_idle = G
    ulen = u.size

    ai = 0
    while ai < nrel or hs > 0:
        if nrec + G * (G + 2) + 2 > cap:        # grow the batch records and the heap
            ncap = 2 * cap
            a1 = np.empty(ncap, np.int64); a1[:nrec] = r_gpu[:nrec]; r_gpu = a1
            a2 = np.empty(ncap, np.int64); a2[:nrec] = r_model[:nrec]; r_model = a2
            a3 = np.empty(ncap, np.int64); a3[:nrec] = r_size[:nrec]; r_size = a3
            a4 = np.empty(ncap); a4[:nrec] = r_start[:nrec]; r_start = a4
            a5 = np.empty(ncap); a5[:nrec] = r_end[:nrec]; r_end = a5
            a6 = np.zeros(ncap, np.bool_); a6[:nrec] = r_pre[:nrec]; r_pre = a6
            a7 = np.empty(ncap); a7[:hs] = ht[:hs]; ht = a7
            a8 = np.empty(ncap, np.int64); a8[:hs] = hb[:hs]; hb = a8
            cap = ncap

        if hs > 0 and (ai >= nrel or ht[0] <= rel_t[ai]):
            # ---- completion (Algorithm 1 lines 4-8)
            t = ht[0]
            bid = hb[0]
            hs = _hpop(ht, hb, hs)
            gn = r_gpu[bid]
            if g_bid[gn] != bid:
                continue                        # a preempted batch's stale completion
            for k in range(g_size[gn]):
                r = g_mem[gn, k]
                comp[r] = t
                rbatch[r] = bid
            g_bid[gn] = -1
            g_size[gn] = 0
            n_idle += 1
            V = 0
            m = -1
            istar = 0
            if policy == _CW:
                V, m = _cw_pick(dl, qbuf, qh, qe, L, n_models, t, bmax, cw_pow2)
            else:
                V, m, istar = _batchgen(dl, qbuf, qh, qe, ub, L, n_models, t, t, -1, tmp, 0,
                                        bmax, literal)
            if V > 0:
                nrec, hs = _start(gn, V, m, istar, t, t, False, dl, qbuf, qh, qe, ub, L, bmax,
                                  literal, g_bid, g_size, g_model, g_start, g_delay, g_mem,
                                  tmp, back, r_gpu, r_model, r_size, r_start, r_end, r_pre,
                                  ht, hb, hs, nrec, delay_mode, E, u, ulen, policy)
                n_idle -= 1
            continue

        # ---- arrival event: every request released at t (Algorithm 1 line 10)
        t = rel_t[ai]
        while ai < nrel and rel_t[ai] == t:
            r = rel_i[ai]
            _q_append(dl, qbuf, qh, qe, mdl[r], r)
            touched[mdl[r]] = True
            ai += 1
        if policy == _CW:
            if n_idle > 0:
                for gn in range(G):
                    if g_bid[gn] >= 0:
                        continue
                    V, m = _cw_pick(dl, qbuf, qh, qe, L, n_models, t, bmax, cw_pow2)
                    if V == 0:
                        break
                    nrec, hs = _start(gn, V, m, 0, t, t, False, dl, qbuf, qh, qe, ub, L,
                                      bmax, literal, g_bid, g_size, g_model, g_start, g_delay,
                                      g_mem, tmp, back, r_gpu, r_model, r_size, r_start, r_end,
                                      r_pre, ht, hb, hs, nrec, delay_mode, E, u, ulen, policy)
                    n_idle -= 1
            for m in range(n_models):
                touched[m] = False
            continue
        for m in range(n_models):
            if touched[m]:
                touched[m] = False
                _refresh_ub(dl, qbuf, qh, qe, ub, L, m, t, bmax, literal)
        if policy == _NP:
            if n_idle > 0:
                for gn in range(G):
                    if g_bid[gn] >= 0:
                        continue
                    V, m, istar = _batchgen(dl, qbuf, qh, qe, ub, L, n_models, t, t, -1, tmp,
                                            0, bmax, literal)
                    if V == 0:
                        break
                    nrec, hs = _start(gn, V, m, istar, t, t, False, dl, qbuf, qh, qe, ub, L,
                                      bmax, literal, g_bid, g_size, g_model, g_start, g_delay,
                                      g_mem, tmp, back, r_gpu, r_model, r_size, r_start, r_end,
                                      r_pre, ht, hb, hs, nrec, delay_mode, E, u, ulen, policy)
                    n_idle -= 1
            continue
        # FLEX: Algorithm 1 lines 11-19, re-run after each preemption (at most G times)
        rerun = 0
        while True:
            ubmax = 0
            for m in range(n_models):
                if ub[m] > ubmax:
                    ubmax = ub[m]
            need = False
            for gn in range(G):
                if g_bid[gn] < 0:
                    if ubmax > 0:
                        need = True
                        break
                elif _may_preempt(g_size[gn], ub[g_model[gn]], ubmax, bmax, lam):
                    need = True
                    break
            if not need:
                break                           # a pass would change nothing
            # visiting order: idle by index, then busy by (|B_c|, index)
            no = 0
            for gn in range(G):
                if g_bid[gn] < 0:
                    order[no] = gn
                    no += 1
            nidle_o = no
            for gn in range(G):
                if g_bid[gn] >= 0:
                    p = no
                    while p > nidle_o and g_size[order[p - 1]] > g_size[gn]:
                        order[p] = order[p - 1]
                        p -= 1
                    order[p] = gn
                    no += 1
            restart = False
            for oi in range(G):
                gn = order[oi]
                if g_bid[gn] < 0:
                    V, m, istar = _batchgen(dl, qbuf, qh, qe, ub, L, n_models, t, t, -1, tmp,
                                            0, bmax, literal)
                    if V > 0:
                        nrec, hs = _start(gn, V, m, istar, t, t, False, dl, qbuf, qh, qe, ub,
                                          L, bmax, literal, g_bid, g_size, g_model, g_start,
                                          g_delay, g_mem, tmp, back, r_gpu, r_model, r_size,
                                          r_start, r_end, r_pre, ht, hb, hs, nrec, delay_mode,
                                          E, u, ulen, policy)
                        n_idle -= 1
                    continue
                kc = g_size[gn]
                mc = g_model[gn]
                if not _may_preempt(kc, ub[mc], ubmax, bmax, lam):
                    continue
                ts = g_start[gn] if t < g_start[gn] else t + g_delay[gn]
                V, m, istar = _batchgen(dl, qbuf, qh, qe, ub, L, n_models, t, ts, mc,
                                        g_mem[gn], kc, bmax, literal)
                if V > 0 and V >= lam * kc:     # the preemption rule (line 16)
                    nrec, hs = _start(gn, V, m, istar, t, ts, True, dl, qbuf, qh, qe, ub, L,
                                      bmax, literal, g_bid, g_size, g_model, g_start, g_delay,
                                      g_mem, tmp, back, r_gpu, r_model, r_size, r_start, r_end,
                                      r_pre, ht, hb, hs, nrec, delay_mode, E, u, ulen, policy)
                    restart = True
                    break
            if not restart or rerun == G:
                break
            rerun += 1
    return (comp, rbatch, r_gpu[:nrec].copy(), r_model[:nrec].copy(), r_size[:nrec].copy(),
            r_start[:nrec].copy(), r_end[:nrec].copy(), r_pre[:nrec].copy())


@njit(cache=True, inline="always")
def _may_preempt(kc, ub_mc, ubmax, bmax, lam):
    """Whether a candidate could reach ``λ·|B_c|``: candidates are ≤ B_max, ≤ ub of other
    models, and ≤ ub[m_c] + |B_c| for the re-batched running model."""
    bound = ub_mc + kc
    if ubmax > bound:
        bound = ubmax
    if bmax < bound:
        bound = bmax
    return lam * kc <= bound


@njit(cache=True)
def _cw_pick(dl, qbuf, qh, qe, L, n_models, t, bmax, cw_pow2):
    """Clockwork-like dispatch (spec §2.4): drop hopeless requests, take the globally earliest
    deadline r*, and the largest batch of its model that still meets d_{r*}. (size, model)."""
    best = -1
    bm = -1
    for m in range(n_models):
        _q_drop(dl, qbuf, qh, qe, m, t, L)
        if qh[m] < qe[m]:
            r = qbuf[qh[m]]
            if best < 0 or _less(dl, r, best):
                best = r
                bm = m
    if bm < 0:
        return 0, -1
    d = dl[best]
    q = qe[bm] - qh[bm]
    kmax = q if q < bmax else bmax
    if cw_pow2:
        b = 1
        while 2 * b <= kmax and t + L[bm, 2 * b] <= d:
            b *= 2
        return b, bm
    return _hcap(d, t, L[bm], kmax), bm


@njit(cache=True)
def _start(gn, V, m, istar, t, ts, preempt, dl, qbuf, qh, qe, ub, L, bmax, literal,
           g_bid, g_size, g_model, g_start, g_delay, g_mem, tmp, back,
           r_gpu, r_model, r_size, r_start, r_end, r_pre, ht, hb, hs, nrec,
           delay_mode, E, u, ulen, policy):
    """Start the batch of ranks [istar, istar+V) of merge(Q_m, B_c) on GPU gn at ts; when
    preempting, B_c stops at ts (wasted) and its other requests are re-enqueued (line 19)."""
    h = qh[m]
    na = qe[m] - h
    mc = g_model[gn]
    kc = g_size[gn] if preempt else 0
    nc = kc if (preempt and mc == m) else 0
    cm = g_mem[gn]
    j0 = _split(dl, qbuf, h, na, cm, nc, istar)
    j1 = _split(dl, qbuf, h, na, cm, nc, istar + V)
    a0 = istar - j0
    a1 = istar + V - j1
    # the new batch, sorted: merge A[a0:a1] and C[j0:j1]
    i = a0
    j = j0
    for w in range(V):
        if j < j1 and (i >= a1 or _less(dl, cm[j], qbuf[h + i])):
            tmp[w] = cm[j]
            j += 1
        else:
            tmp[w] = qbuf[h + i]
            i += 1
    _q_remove(qbuf, qh, m, a0, a1)
    if preempt:
        old = g_bid[gn]
        r_end[old] = ts                         # ran (or waited) until ts: wasted work
        r_pre[old] = True
        nb = 0
        lim = t + L[mc, 1]
        for k in range(kc):
            if nc > 0 and j0 <= k < j1:
                continue                        # moved into the new batch
            r = cm[k]
            if dl[r] >= lim:                    # can still meet its deadline
                back[nb] = r
                nb += 1
        if nb > 0:
            _q_reenqueue(dl, qbuf, qh, qe, mc, back, nb)
            if mc != m and policy == _FLEX:
                _refresh_ub(dl, qbuf, qh, qe, ub, L, mc, t, bmax, literal)
    for w in range(V):
        g_mem[gn, w] = tmp[w]
    lat = L[m, V]
    bid = nrec
    g_bid[gn] = bid
    g_size[gn] = V
    g_model[gn] = m
    g_start[gn] = ts
    if delay_mode == 1:
        g_delay[gn] = lat / (2.0 * E[m])
    elif delay_mode == 2:
        g_delay[gn] = u[bid % ulen] * lat / E[m]
    else:
        g_delay[gn] = 0.0
    r_gpu[bid] = gn
    r_model[bid] = m
    r_size[bid] = V
    r_start[bid] = ts
    r_end[bid] = ts + lat
    r_pre[bid] = False
    hs = _hpush(ht, hb, hs, ts + lat, bid)
    if policy == _FLEX:
        _refresh_ub(dl, qbuf, qh, qe, ub, L, m, t, bmax, literal)
    return nrec + 1, hs


# --------------------------------------------------------------------------- public API

@dataclass(frozen=True, eq=False)
class SimResult:
    """One run. Per request: ``completion`` (ms, NaN if not served), ``ok`` (served by its
    deadline) and ``batch`` (the id of the batch that completed it, -1). Per batch (ids in start
    order): ``batch_gpu``, ``batch_model``, ``batch_size``, ``batch_start``, ``batch_end`` (its
    completion, or when a preempted batch stopped) and ``batch_preempted``."""

    policy: str
    n_gpus: int
    lam: float
    arrival: np.ndarray
    deadline: np.ndarray
    model: np.ndarray
    completion: np.ndarray
    batch: np.ndarray
    batch_gpu: np.ndarray
    batch_model: np.ndarray
    batch_size: np.ndarray
    batch_start: np.ndarray
    batch_end: np.ndarray
    batch_preempted: np.ndarray
    released: np.ndarray

    @property
    def n(self) -> int:
        return int(self.arrival.size)

    @property
    def served(self) -> np.ndarray:
        return ~np.isnan(self.completion)

    @property
    def ok(self) -> np.ndarray:
        """Served and completed by the deadline (goodput, spec §1.4)."""
        with np.errstate(invalid="ignore"):
            return self.served & (self.completion <= self.deadline)

    @property
    def latency(self) -> np.ndarray:
        """``c_r − a_r`` (ms) of the served requests (Fig 8)."""
        s = self.served
        return self.completion[s] - self.arrival[s]

    @property
    def preemptions(self) -> int:
        return int(self.batch_preempted.sum())

    @property
    def batches(self) -> int:
        """Completed (not preempted) batches."""
        return int((~self.batch_preempted).sum())

    def _per_gpu(self, w: np.ndarray) -> np.ndarray:
        return np.bincount(self.batch_gpu, weights=w, minlength=self.n_gpus)

    @property
    def busy_ms(self) -> np.ndarray:
        """Per GPU, time occupied by batches, including work later wasted by preemption."""
        return self._per_gpu(self.batch_end - self.batch_start)

    @property
    def wasted_ms(self) -> np.ndarray:
        """Per GPU, time spent on batches that were preempted."""
        return self._per_gpu(np.where(self.batch_preempted, self.batch_end - self.batch_start,
                                      0.0))

    def goodput(self, t0_ms: float, t1_ms: float) -> float:
        """Requests arriving in [t0, t1) served by their deadline, per second of window."""
        require(t1_ms > t0_ms, "t1_ms", t1_ms, f"must exceed t0_ms = {t0_ms}")
        w = (self.arrival >= t0_ms) & (self.arrival < t1_ms)
        return float(np.count_nonzero(self.ok & w)) / ((t1_ms - t0_ms) / 1000.0)

    def utilization(self, t0_ms: float, t1_ms: float, useful: bool = False) -> float:
        """Busy GPU time inside [t0, t1) over ``G·(t1 − t0)``, exact from the batch records
        (``useful=True``: completed batches only, i.e. without wasted work)."""
        require(t1_ms > t0_ms, "t1_ms", t1_ms, f"must exceed t0_ms = {t0_ms}")
        s = np.clip(self.batch_start, t0_ms, t1_ms)
        e = np.clip(self.batch_end, t0_ms, t1_ms)
        busy = e - s
        if useful:
            busy = np.where(self.batch_preempted, 0.0, busy)
        return float(busy.sum()) / (self.n_gpus * (t1_ms - t0_ms))

    def preemption_chain(self) -> tuple[np.ndarray, np.ndarray]:
        """Per GPU, (Σ|preempted batches|, Σ|completed batches|): Eq. 21 gives
        ``preempted ≤ completed/(λ − 1)`` when nothing is in flight at the end (claim 6)."""
        pre = self._per_gpu(np.where(self.batch_preempted, self.batch_size, 0))
        done = self._per_gpu(np.where(self.batch_preempted, 0, self.batch_size))
        return pre, done


def bytes_per_gpu(b_max: int = B_MAX) -> int:
    """The engine's memory per GPU: its running batch's members and the two scratch rows
    (``b_max`` int64 each), and five scalars; a lower bound for the memory check."""
    return 8 * (3 * int(b_max) + 5)


#: seconds of one core per simulated request, plus per request and GPU of the group: on the fast
#: side of what was measured here (FLEX: 4.1 M requests/s on 12 GPUs, 0.38 M on 480), so that the
#: time a long run is announced to take is a lower bound
SECONDS_PER_REQUEST, SECONDS_PER_REQUEST_GPU = 1e-7, 2e-9


def _check(requests, models, n_gpus, policy, lam, b_max, batchgen, eps_exec, preempt_delay,
           controller_us, seed, cw_pow2) -> None:
    """Validate every argument of :func:`simulate` (ConfigError naming the parameter)."""
    one_of("policy", policy, POLICIES)
    one_of("batchgen", batchgen, BATCHGENS)
    one_of("preempt_delay", preempt_delay, PREEMPT_DELAYS)
    require(isinstance(requests, Requests), "requests", type(requests).__name__,
            "must be a shepherd.model.Requests")
    require(isinstance(models, ModelSet), "models", type(models).__name__,
            "must be a shepherd.model.ModelSet")
    require(isinstance(n_gpus, (int, np.integer)) and not isinstance(n_gpus, bool)
            and n_gpus >= 1, "n_gpus", n_gpus,
            "must be an integer >= 1 (GPUs in the group): a group limit of zero is not allowed")
    require(isinstance(lam, (int, float, np.number)) and np.isfinite(lam) and lam > 1, "lam",
            lam, "must be a finite number > 1 (the preemption threshold λ of Theorem 5.2)")
    require(isinstance(b_max, (int, np.integer)) and not isinstance(b_max, bool) and b_max >= 1,
            "b_max", b_max, "must be an integer >= 1 (the largest batch)")
    check_memory("n_gpus", n_gpus, n_gpus * bytes_per_gpu(b_max), f"the state of {n_gpus} GPUs")
    if isinstance(requests, Requests):  # a lower bound: faster than the engine ran here (issue 21)
        warn_long(f"simulating {requests.n} requests on n_gpus = {n_gpus} GPUs",
                  requests.n * (SECONDS_PER_REQUEST + SECONDS_PER_REQUEST_GPU * int(n_gpus)))
    require(isinstance(eps_exec, (int, float, np.number)) and np.isfinite(eps_exec)
            and eps_exec >= 0, "eps_exec", eps_exec, "must be a finite number >= 0")
    require(isinstance(controller_us, (int, float, np.number)) and np.isfinite(controller_us)
            and controller_us >= 0, "controller_us", controller_us,
            "must be a finite number >= 0 (µs per request; 0 = no controller bottleneck)")
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0,
            "seed", seed, "must be an integer >= 0")
    require(isinstance(cw_pow2, (bool, np.bool_)), "cw_pow2", cw_pow2, "must be a bool")
    if requests.n:
        mx = int(requests.model.max())
        require(mx < models.n, "requests.model", mx,
                f"must be a model index in [0, {models.n - 1}] of the ModelSet "
                f"({models.n} models)")
    if preempt_delay != "none":
        require(bool(np.all(models.exit_points >= 1)), "models.exit_points",
                models.exit_points.tolist(), "must be >= 1 for a preemption delay")


def simulate(requests: Requests, models: ModelSet, n_gpus: int, policy: str = "flex", *,
             lam: float = LAMBDA, b_max: int = B_MAX, batchgen: str = "largest",
             eps_exec: float = 0.0, preempt_delay: str = "none", controller_us: float = 0.0,
             seed: int = 0, cw_pow2: bool = False) -> SimResult:
    """Serve ``requests`` on one group of ``n_gpus`` GPUs with ``policy`` ∈ {"flex" (Algorithms
    1–2, §5.2), "flex-np" (SHEPHERD-NP, §7.2), "clockwork" (spec §2.4)}; see the module doc for
    the exact semantics. ``eps_exec`` scales every execution time (and the feasibility checks);
    ``preempt_delay`` ∈ {"none", "mean", "uniform"}; ``controller_us`` is the per-request cost
    of the scheduler's FIFO controller (0: none); ``seed`` drives the uniform delays only."""
    _check(requests, models, n_gpus, policy, lam, b_max, batchgen, eps_exec, preempt_delay,
           controller_us, seed, cw_pow2)
    L = latency_table(models, float(eps_exec), int(b_max))
    rel_t, rel_i = controller_release(requests, L, controller_us)
    u = delay_uniforms(requests.n, int(seed), preempt_delay)
    pol = POLICIES.index(policy)
    out = _engine(pol, rel_t, rel_i, requests.deadline, requests.model, requests.n, models.n,
                  int(n_gpus), L, int(b_max), float(lam), batchgen == "literal",
                  _DELAY[preempt_delay], models.exit_points.astype(float), u, bool(cw_pow2))
    comp, rb, bg, bm, bs, bst, ben, bpre = out
    released = np.zeros(requests.n, dtype=bool)
    released[rel_i] = True
    return SimResult(policy, int(n_gpus), float(lam), requests.arrival, requests.deadline,
                     requests.model, comp, rb, bg, bm, bs, bst, ben, bpre, released)
