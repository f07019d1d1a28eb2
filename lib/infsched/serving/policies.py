"""The policy interface of the neutral serving simulator, and its policies (issue 23).

A policy answers at most three questions (spec headtohead §1, §3):

* **route** on arrival: which worker's queue a query joins (per-worker queues only; with a
  central queue every query joins the one queue);
* **select** when a worker is free: which model and how many queued queries (the batch) it
  starts, and which queries at the head it gives up (drops) because it knows they will miss;
* **preempt**: whether an arrival interrupts a running batch. Shepherd's FLEX does
  (``PREEMPT_FLEX``: Algorithm 1's rule ``|B_g| >= λ |B_c|``); every other policy is
  ``PREEMPT_NONE``.

The compiled engine calls the numba functions below with small integer codes; a
:class:`Policy` names the codes and the defaults a policy runs with. Adding a paper's policy
means adding a code and its branch here, never a special case in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["Policy", "POLICIES", "ROUTINGS", "QUEUES", "SERVICES", "TAD_FAMILY", "FLEX_FAMILY",
           "FLEX_LAMBDA", "route", "route_tad", "route_tadop", "route_rjiq", "select", "must_drop",
           "flex_candidate", "flex_split"]

# queue disciplines
QUEUE_CENTRAL, QUEUE_PER_WORKER = 0, 1
QUEUES = {"central": QUEUE_CENTRAL, "per-worker": QUEUE_PER_WORKER}

# routing on arrival (per-worker queues)
ROUTE_LEAST_LOADED, ROUTE_JIQ, ROUTE_RANDOM, ROUTE_TAD, ROUTE_TADOP, ROUTE_RJIQ = 0, 1, 2, 3, 4, 5
ROUTE_ROUND_ROBIN = 6
ROUTINGS = {"least-loaded": ROUTE_LEAST_LOADED, "jiq": ROUTE_JIQ, "random": ROUTE_RANDOM,
            "tad": ROUTE_TAD, "tad-op": ROUTE_TADOP, "r-jiq": ROUTE_RJIQ,
            "round-robin": ROUTE_ROUND_ROBIN}
#: the TAD paper's policies: server classes (one model per worker), routing on arrival only
TAD_FAMILY = ("tad", "tad-op", "r-jiq")

# model and batch selection when a worker is free
SELECT_FIXED, SELECT_SLACK_ACCURATE, SELECT_BATCH_GREEDY, SELECT_RAMSIS = 0, 1, 2, 3
SELECT_FLEX = 4
#: a reader's policy (:mod:`.plugins`): its own select function, its own event loop
SELECT_USER = 5

# preemption on arrival: none, or FLEX's rule |B_g| >= λ |B_c| (Shepherd Algorithm 1, line 16)
PREEMPT_NONE, PREEMPT_FLEX = 0, 1
#: Shepherd's FLEX and FLEX without preemption (SHEPHERD-NP)
FLEX_FAMILY = ("flex", "flex-np")
#: FLEX's preemption threshold λ (Shepherd Theorem 5.2)
FLEX_LAMBDA = 3.03

# service time of a batch: l(m, b) times a multiplier that is 1, Exp(1), or a profile draw
SERVICE_DETERMINISTIC, SERVICE_EXPONENTIAL, SERVICE_JITTER = 0, 1, 2
SERVICES = {"deterministic": SERVICE_DETERMINISTIC, "exponential": SERVICE_EXPONENTIAL,
            "jitter": SERVICE_JITTER}


@dataclass(frozen=True)
class Policy:
    """A named policy: its selection code, the queue and routing it runs with by default,
    its model default (``"most-accurate"`` within the SLO at batch 1, or ``"fastest"``),
    its default batch cap, and the constraint it promises (checked by the tests)."""

    name: str
    select: int
    queue: str
    routing: str
    model: str
    max_batch: int | None  # None: the profile's largest batch size
    preempt: int = PREEMPT_NONE
    constraint: str = ""


POLICIES: dict[str, Policy] = {p.name: p for p in (
    # Spec headtohead §3, the simple baselines: one model, least-loaded routing, batch 1.
    Policy("most-accurate", SELECT_FIXED, "per-worker", "least-loaded", "most-accurate", 1,
           constraint="its one model meets the SLO at batch 1: l(m, 1) <= SLO"),
    Policy("fastest", SELECT_FIXED, "per-worker", "least-loaded", "fastest", 1,
           constraint="its one model meets the SLO at batch 1: l(m, 1) <= SLO"),
    # The queueing baseline: a central FIFO queue, one model, every query served (M/D/c, M/M/c).
    Policy("fcfs", SELECT_FIXED, "central", "jiq", "most-accurate", 1,
           constraint="serves every query, first come first served"),
    # Deadline-aware, batch 1: the most accurate model that still serves the head in time;
    # a head that no model can serve in time is dropped (it would be a violation anyway).
    Policy("slack-accurate", SELECT_SLACK_ACCURATE, "central", "jiq", "most-accurate", 1,
           constraint="never starts a query that its deterministic l(m, 1) says will miss"),
    # Deadline-aware batching: the largest batch the fastest model serves within the head's
    # slack, then the most accurate model that serves that batch within it (throughput first).
    Policy("batch-greedy", SELECT_BATCH_GREEDY, "central", "jiq", "most-accurate", None,
           constraint="never starts a batch that its deterministic l(m, b) says will miss"),
    # TAD (TAD paper, Section 4; infsched.tad.policies.TAD): each worker holds one model (its
    # server class, ``worker_models``); an arrival joins the fastest class k that keeps the
    # accuracy surplus Δ + a_k − a* >= 0 and has an idle worker, else a class drawn uniformly
    # among those allowed, then a uniformly random worker of it. Batch 1 as in the paper;
    # ``max_batch`` > 1 lets each worker batch what is queued at it (spec headtohead §3).
    Policy("tad", SELECT_FIXED, "per-worker", "tad", "worker", 1,
           constraint="the accuracy of the routed queries averages >= a* after every arrival"),
    # TAD-OP (TAD paper Algorithm 2; infsched.tad.policies.TADOP): walk the LP's routing tuples
    # S*_opt by ascending v and route by the first whose classes have idle (q > 0) and busy
    # (q < 0) servers; a proper pair goes to its less accurate class when Δ > 0, else the more
    # accurate; no routable tuple: the most accurate class with an idle server; none idle: a
    # uniform class, then a uniform worker of it. Needs no λ.
    Policy("tad-op", SELECT_FIXED, "per-worker", "tad-op", "worker", 1,
           constraint="routes by the first routable tuple of S*_opt (Algorithm 2)"),
    # R-JIQ (TAD paper eq. 4; infsched.tad.policies.RJIQ): class ~ Categorical(p_RJIQ(λ)), then
    # join an idle server of that class, else a uniform one. Needs λ (``class_p``).
    Policy("r-jiq", SELECT_FIXED, "per-worker", "r-jiq", "worker", 1,
           constraint="the class of each arrival is drawn from p_RJIQ(λ)"),
    # RAMSIS (RAMSIS paper §4; infsched.ramsis): round-robin to the workers; a free worker looks
    # its state up in the MDP policy (``mdp_policy``): the queue length n <= N and the head's
    # slack rounded down onto the policy's grid give (model, batch); n > N: the fallback
    # (fastest) model on all n queries, l(m, n) extrapolated past the profile's largest batch B
    # on the secant through l(m, 1) and l(m, B), as the RAMSIS engine does (infsched.ramsis.sim);
    # no query is dropped. Needs λ (the policy's load).
    Policy("ramsis", SELECT_RAMSIS, "per-worker", "round-robin", "fastest", None,
           constraint="starts the batch its MDP policy prescribes for (n, slack)"),
    # FLEX (Shepherd §5.2, Algorithms 1-2; spec shepherd §2.2) on one model (``model``, the one
    # Shepherd's planner provisions): a central queue in deadline order; BATCHGEN, the largest
    # window of the queue (with the running batch's queries, when preempting) that meets every
    # member's deadline; hopeless heads dropped. On arrival, idle workers start BATCHGEN; a busy
    # worker (ascending |B_c|) is preempted iff |B_g| >= λ |B_c|, its other queries re-queued
    # if they can still make it, and the pass re-runs.
    Policy("flex", SELECT_FLEX, "central", "jiq", "fastest", None, preempt=PREEMPT_FLEX,
           constraint="never starts a late batch; preempts only for |B_g| >= λ |B_c|"),
    # SHEPHERD-NP: FLEX without the preemption branch (Algorithm 1 lines 16-19).
    Policy("flex-np", SELECT_FLEX, "central", "jiq", "fastest", None,
           constraint="never starts a late batch; never preempts"),
)}


@njit(cache=True)
def route(routing, load, busy, n_idle, u):
    """Worker for an arriving query (per-worker queues).

    least-loaded: the fewest queued plus in-service queries, ties to the lowest index.
    jiq: an idle worker chosen uniformly (the ``k``-th idle one in index order, ``k = floor(u n_idle)``,
    so the simpy reference picks the same one), else a uniformly random worker.
    random: a uniformly random worker.
    """
    K = load.size
    if routing == ROUTE_LEAST_LOADED:
        best = 0
        for w in range(1, K):
            if load[w] < load[best]:
                best = w
        return best
    if routing == ROUTE_JIQ and n_idle > 0:
        k = int(u * n_idle)
        for w in range(K):
            if not busy[w]:
                if k == 0:
                    return w
                k -= 1
    return min(int(u * K), K - 1)


@njit(cache=True)
def route_tad(delta, d, cidle, cls_start, cls_members, busy, u):
    """TAD's routing (TAD paper Section 4, spec tad §3.2) over server classes ordered fastest
    first: ``d[k] = a_k − a*`` and ``delta`` (Δ) in exact integer units. Returns (worker, class).

    Allowed: I = {k : Δ + d[k] >= 0}. The fastest class of I with an idle worker sends the query
    to its lowest-index idle worker (TAD's engine pops a LIFO stack of idle servers; any idle
    server of a class is equivalent). Otherwise class ``I[floor(u |I|)]`` and, from the same
    uniform's remainder, a uniformly random worker of it.
    """
    C = d.size
    for k in range(C):
        if delta + d[k] >= 0 and cidle[k] > 0:
            for j in range(cls_start[k], cls_start[k + 1]):
                if not busy[cls_members[j]]:
                    return cls_members[j], k
    na = 0
    for k in range(C):
        if delta + d[k] >= 0:
            na += 1
    x = u * na
    idx = min(int(x), na - 1)
    rest = x - idx
    k = 0
    for c in range(C):
        if delta + d[c] >= 0:
            if idx == 0:
                k = c
                break
            idx -= 1
    size = cls_start[k + 1] - cls_start[k]
    return cls_members[cls_start[k] + min(int(rest * size), size - 1)], k


@njit(cache=True)
def _idle_or_uniform(k, cidle, cls_start, cls_members, busy, rest):
    """A worker of class ``k``: its lowest-index idle worker, else the ``floor(rest size)``-th."""
    if cidle[k] > 0:
        for j in range(cls_start[k], cls_start[k + 1]):
            if not busy[cls_members[j]]:
                return cls_members[j]
    size = cls_start[k + 1] - cls_start[k]
    return cls_members[cls_start[k] + min(int(rest * size), size - 1)]


@njit(cache=True)
def route_tadop(delta, tup, cidle, cls_start, cls_members, busy, u):
    """TAD-OP's routing (TAD paper Algorithm 2, spec tad §3.3) over classes fastest first.

    ``tup`` holds one row per tuple of S*_opt in ascending v: ``[proper, lo, hi, pick,
    pos_0..pos_{C-1}, neg_0..neg_{C-1}]`` (see :meth:`.config.ServingConfig.layout`); ``delta``
    is Δ in exact integer units. Returns (worker, class).
    """
    C = cidle.size
    for t in range(tup.shape[0]):
        if tup[t, 0] == 1:
            lo = tup[t, 1]
            hi = tup[t, 2]
            k = lo if delta > 0 else hi  # Δ == 0 → hi, as written
            routable = cidle[lo] > 0 and cidle[hi] > 0
        else:
            k = tup[t, 3]
            routable = True
            for c in range(C):
                size = cls_start[c + 1] - cls_start[c]
                if (tup[t, 4 + c] == 1 and cidle[c] == 0) or (tup[t, 4 + C + c] == 1 and cidle[c] == size):
                    routable = False
                    break
        if routable:
            return _idle_or_uniform(k, cidle, cls_start, cls_members, busy, 0.0), k
    for k in range(C - 1, -1, -1):  # "for k ← K:1": the most accurate class with an idle server
        if cidle[k] > 0:
            return _idle_or_uniform(k, cidle, cls_start, cls_members, busy, 0.0), k
    x = u * C
    k = min(int(x), C - 1)
    return _idle_or_uniform(k, cidle, cls_start, cls_members, busy, x - k), k


@njit(cache=True)
def route_rjiq(cum_p, cidle, cls_start, cls_members, busy, u):
    """R-JIQ (TAD paper eq. 4): class ``k`` the first with ``u < cum_p[k]``, then an idle
    worker of it, else a uniform one (from the uniform's remainder). Returns (worker, class)."""
    C = cum_p.size
    k = C - 1
    lo = 0.0
    for c in range(C):
        if u < cum_p[c]:
            k = c
            break
        lo = cum_p[c]
    hi = cum_p[k]
    rest = (u - lo) / (hi - lo) if hi > lo else 0.0
    return _idle_or_uniform(k, cidle, cls_start, cls_members, busy, min(max(rest, 0.0), 1.0)), k


@njit(cache=True)
def must_drop(code, slack, lat, fastest):
    """True if the policy gives up a head query with ``slack`` ms left: deadline-aware policies
    drop a query that even the fastest model at batch 1 cannot serve in time. RAMSIS drops none
    (its engine serves every query, late or not: RAMSIS spec §3)."""
    if code == SELECT_FIXED or code == SELECT_RAMSIS:
        return False
    return lat[fastest, 0] > slack


@njit(cache=True)
def select(code, slack, qlen, lat, by_accuracy, fixed_model, cap, fastest, grid, pmodel, pbatch,
           fallback, p):
    """(model, batch size) for a free worker whose queue holds ``qlen`` queries, the head
    having ``slack`` ms to its deadline (after :func:`must_drop`, so the fastest model at
    batch 1 fits it for the deadline-aware codes). ``by_accuracy`` lists the models from the
    most to the least accurate. RAMSIS reads ``pmodel[p, n, j]`` and ``pbatch[p, n, j]`` (``p``
    the load level in force) with ``j``
    the grid cell holding the slack (``grid[j] <= slack < grid[j+1]``, 0 below ``grid[1]``)."""
    top = min(qlen, cap)
    if code == SELECT_FIXED:
        return fixed_model, top
    if code == SELECT_RAMSIS:
        if qlen > pmodel.shape[1] - 1:  # past the MDP's N: the fallback on the whole queue
            return fallback, qlen
        j = np.searchsorted(grid, slack, side="right") - 1
        if j < 0:
            j = 0
        return pmodel[p, qlen, j], min(pbatch[p, qlen, j], cap)
    b = 1
    if code == SELECT_BATCH_GREEDY:
        # queues are FIFO and every query has the same SLO, so the head has the least slack:
        # a batch that serves the head in time serves every query in it in time.
        b = top
        while b > 1 and lat[fastest, b - 1] > slack:
            b -= 1
    for j in range(by_accuracy.size):
        m = by_accuracy[j]
        if lat[m, b - 1] <= slack:
            return m, b
    return fastest, b


# ------------------------------------------------------------------ FLEX's BATCHGEN (one model)
# The candidate set S is the merge of the central queue Q = fq[fh:fh+na] and (when a busy
# worker is considered for preemption) its running batch C = mem[:nc], both sorted by query
# index. Arrivals are sorted and every query has the same SLO, so index order is deadline order
# (ties by index, as Shepherd orders its queues).

@njit(cache=True)
def flex_split(fq, fh, na, mem, nc, k):
    """How many of the first ``k`` queries of merge(Q, C) come from C."""
    lo = k - na if k > na else 0
    hi = k if k < nc else nc
    while lo < hi:
        j = (lo + hi) >> 1
        if mem[j] < fq[fh + k - j - 1]:
            lo = j + 1
        else:
            hi = j
    return lo


@njit(cache=True)
def _flex_kth(fq, fh, na, mem, nc, k):
    """The query of rank ``k`` in merge(Q, C)."""
    if nc == 0:
        return fq[fh + k]
    j = flex_split(fq, fh, na, mem, nc, k)
    i = k - j
    if j < nc and (i >= na or mem[j] < fq[fh + i]):
        return mem[j]
    return fq[fh + i]


@njit(cache=True)
def flex_candidate(fq, fh, na, mem, nc, arr, slo, lrow, t, cap):
    """BATCHGEN for one model at start time ``t`` (spec shepherd §2.2 (c), exact form): with
    ``S`` = merge(Q, C) in deadline order ``d_0 <= d_1 <= ...`` and ``s = |S|``, the size of the
    batch headed by rank ``i`` is ``min(s - i, cap, h(i))``, ``h(i) = max{k : t + l(k) <= d_i}``;
    returns ``(V, i*)``, the largest size and the smallest rank reaching it (``(0, 0)``: none).
    The first two terms fall and ``h`` rises in ``i``, so two binary searches find it."""
    s = na + nc
    if s == 0:
        return 0, 0
    lo = 0
    hi = s
    while lo < hi:  # the first rank whose deadline admits the largest batch it could head
        mid = (lo + hi) >> 1
        g = s - mid if s - mid < cap else cap
        if t + lrow[g - 1] <= arr[_flex_kth(fq, fh, na, mem, nc, mid)] + slo:
            hi = mid
        else:
            lo = mid + 1
    if lo == s:
        return 0, 0  # even the last query (the latest deadline) cannot be served alone
    V = s - lo if s - lo < cap else cap
    # ranks before `lo` head batches of h(i) < min(s - i, cap) <= V + 1, i.e. at most V: the
    # first rank whose deadline admits V is the answer
    hi = lo
    lo = 0
    while lo < hi:
        mid = (lo + hi) >> 1
        if t + lrow[V - 1] <= arr[_flex_kth(fq, fh, na, mem, nc, mid)] + slo:
            hi = mid
        else:
            lo = mid + 1
    return V, lo
