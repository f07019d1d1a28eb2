"""simpy reference model of KAIROS's serving system (spec §1.5, §2.1, §2.5): slow, but it reads
like the paper.

A *controller* holds the pending queries and decides where each goes; every instance is a
simpy process that serves one query at a time. Arrivals are one process that hands each query to
the controller at its arrival time; after every arrival and every completion the controller
applies its policy:

- KAIROS (Section 5.1, Eqs. 4–8): match the first ``min(m, 2n)`` pending queries to all
  instances with :func:`infsched.kairos.matching.kairos_assign` (scipy's
  ``linear_sum_assignment``), busy instances included with their predicted remaining time;
  dispatch only the pairs whose instance is idle;
- FCFS (Ribbon): the head of one FIFO queue goes to the first idle instance (base type first);
- DRS (DeepRecSys): ``b > θ`` to a base-only FIFO queue, ``b ≤ θ`` to an auxiliary-only one;
- CLKWRK (Clockwork): on arrival, the query joins the FIFO queue of the instance with the least
  predicted completion; here each instance's queue is a ``simpy.Resource(capacity=1)``.

It consumes the very arrays the fast engine (:mod:`infsched.kairos.sim`) uses, the common random
numbers of :func:`~infsched.kairos.sim.make_workload` and the service arrays of
:func:`~infsched.kairos.sim.service_arrays`, so on the same seed both give the same per-query
start and finish times; that is how the engine is checked. There is no early abort: every query
is served. Use it on small cases (hundreds to a few thousand queries).
"""

from __future__ import annotations

import numpy as np
import simpy

from infsched.des import timeout_at
from infsched.errors import one_of, require
from infsched.kairos.batches import LOGNORMAL_MIX, BatchDist
from infsched.kairos.matching import PENALTIES, kairos_assign
from infsched.kairos.model import BASE
from infsched.kairos.sim import (
    POLICIES,
    SimResult,
    Workload,
    _check_rate,
    _instance_types,
    _resolve_qos,
    _resolve_table,
    make_workload,
    service_arrays,
)

__all__ = ["Controller", "simulate_reference", "run_explicit_reference"]


class Instance:
    """One cloud instance: its type, whether it is serving, and the controller's prediction of
    when its current query ends (what KAIROS's ``r_j`` and CLKWRK's ``c_j`` are built from)."""

    def __init__(self, env: simpy.Environment, index: int, kind: int):
        self.index = index
        self.kind = kind
        self.busy = False
        self.predicted_end = -np.inf
        self.queue = simpy.Resource(env, capacity=1)   # CLKWRK's per-instance FIFO queue
        self.waiting = 0                               # CLKWRK: queries queued, not started
        self.waiting_work = 0.0                        # CLKWRK: Σ L̂ of those queries


class Controller:
    """The central controller: pending queries, the instances, and the policy's decision rule."""

    def __init__(self, env, policy, arrivals, predicted, actual, instance_types, qos, *,
                 coef=None, xi=0.98, penalty="paper", sizes=None, theta=None):
        self.env = env
        self.policy = policy
        self.arr = arrivals
        self.pred = predicted
        self.actual = actual
        self.qos = qos
        self.coef = coef
        self.xi = xi
        self.penalty = penalty
        self.instances = [Instance(env, j, int(k)) for j, k in enumerate(instance_types)]
        self.pending: list[int] = []          # KAIROS, FCFS: one FIFO queue
        self.base_queue: list[int] = []       # DRS: b > θ
        self.aux_queue: list[int] = []        # DRS: b ≤ θ
        self.sizes = sizes
        self.theta = theta
        self.has_aux = any(i.kind != BASE for i in self.instances)
        n = len(arrivals)
        self.start = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.where = np.full(n, -1, dtype=np.int64)

    # ---------------------------------------------------------------- events
    def arrive(self, q: int) -> None:
        if self.policy == "clkwrk":
            self.clockwork_route(q)
            return
        if self.policy == "drs":
            big = (not self.has_aux) or self.sizes[q] > self.theta
            (self.base_queue if big else self.aux_queue).append(q)
        else:
            self.pending.append(q)
        self.decide()

    def completed(self, inst: Instance) -> None:
        inst.busy = False
        inst.predicted_end = -np.inf
        if self.policy != "clkwrk":
            self.decide()

    # ---------------------------------------------------------------- serving
    def dispatch(self, q: int, inst: Instance) -> None:
        """Start query ``q`` on idle instance ``inst`` now."""
        now = self.env.now
        inst.busy = True
        inst.predicted_end = now + self.pred[inst.kind, q]
        self.start[q] = now
        self.where[q] = inst.index
        self.env.process(self.serve(q, inst))

    def serve(self, q: int, inst: Instance):
        yield self.env.timeout(self.actual[inst.kind, q])
        self.finish[q] = self.env.now
        self.completed(inst)

    # ---------------------------------------------------------------- policies
    def decide(self) -> None:
        if self.policy == "kairos":
            self.kairos_match()
        elif self.policy == "fcfs":
            self.serve_fifo(self.pending, lambda inst: True)
        else:
            self.serve_fifo(self.base_queue, lambda inst: inst.kind == BASE)
            self.serve_fifo(self.aux_queue, lambda inst: inst.kind != BASE)

    def serve_fifo(self, queue: list[int], eligible) -> None:
        """FCFS / DRS: while the queue has a head and an eligible instance is idle, the head
        goes to the first idle eligible instance (type order: base first)."""
        while queue:
            idle = [i for i in self.instances if not i.busy and eligible(i)]
            if not idle:
                return
            self.dispatch(queue.pop(0), idle[0])

    def kairos_match(self) -> None:
        """Eqs. 4–8 on the first min(m, 2n) pending queries and all n instances."""
        if not self.pending or all(i.busy for i in self.instances):
            return
        now = self.env.now
        window = self.pending[: 2 * len(self.instances)]
        kinds = np.array([i.kind for i in self.instances])
        r = np.array([max(0.0, i.predicted_end - now) if i.busy else 0.0
                      for i in self.instances])
        L = r[None, :] + self.pred[kinds][:, window].T      # L_ij = r_j + L̂(type j, b_i)
        W = now - self.arr[window]                          # W_i, time already waited
        rows, cols = kairos_assign(L, W, self.coef, self.qos, self.xi, self.penalty)
        sent = set()
        for i, j in zip(rows, cols):
            inst = self.instances[j]
            if not inst.busy:                               # matched to a busy one: stays
                self.dispatch(window[i], inst)
                sent.add(window[i])
        self.pending = [q for q in self.pending if q not in sent]

    def clockwork_route(self, q: int) -> None:
        """Minimum predicted completion c_j = max(t, E_j) + Σ queued L̂ + L̂(type j, b)."""
        now = self.env.now
        best, best_c = None, np.inf
        for inst in self.instances:
            c = max(now, inst.predicted_end) + inst.waiting_work + self.pred[inst.kind, q]
            if c < best_c:
                best, best_c = inst, c
        queued = best.busy
        if queued:
            best.waiting += 1
            best.waiting_work += self.pred[best.kind, q]
        else:   # claimed now, so a query arriving at the same instant sees it busy
            best.busy = True
            best.predicted_end = now + self.pred[best.kind, q]
        self.env.process(self.clockwork_job(q, best, queued))

    def clockwork_job(self, q: int, inst: Instance, queued: bool):
        """Wait in ``inst``'s FIFO queue, then serve; the prediction of the queue's end is
        re-synchronised to the actual start."""
        with inst.queue.request() as req:
            yield req
            if queued:
                inst.waiting -= 1
                inst.waiting_work = (inst.waiting_work - self.pred[inst.kind, q]
                                     if inst.waiting > 0 else 0.0)
            now = self.env.now
            inst.busy = True
            inst.predicted_end = now + self.pred[inst.kind, q]   # re-synchronised at start
            self.start[q] = now
            self.where[q] = inst.index
            yield self.env.timeout(self.actual[inst.kind, q])
            self.finish[q] = self.env.now
            inst.busy = False
            inst.predicted_end = -np.inf


def _arrival_process(env, ctrl: Controller, arrivals: np.ndarray):
    for q, a in enumerate(arrivals):
        yield timeout_at(env, float(a))
        ctrl.arrive(q)


def _simulate(policy, arr, pred, actual, typ, qos, **kw) -> SimResult:
    env = simpy.Environment()
    ctrl = Controller(env, policy, arr, pred, actual, typ, qos, **kw)
    env.process(_arrival_process(env, ctrl, arr))
    env.run()
    viol = int(np.sum(~(ctrl.finish - arr <= qos)))
    return SimResult(arr.size, viol, False, qos, arr, ctrl.start, ctrl.finish, ctrl.where)


def simulate_reference(config, model, policy: str = "kairos", rate: float = 1.0, *,
                       workload: Workload | None = None, n_queries: int = 200, seed: int = 0,
                       dist: BatchDist = LOGNORMAL_MIX, arrivals: str = "exponential",
                       qos: float | None = None, service: str = "mean",
                       sigma_rel: float = 0.05, xi: float = 0.98, penalty: str = "paper",
                       theta: float | None = None) -> SimResult:
    """The simpy twin of :func:`infsched.kairos.sim.simulate` (same arguments, no early abort)."""
    one_of("policy", policy, POLICIES)
    one_of("penalty", penalty, PENALTIES)
    rate = _check_rate(rate)
    table = _resolve_table(model)
    q = _resolve_qos(qos, table)
    typ = _instance_types(config)
    wl = workload if workload is not None else make_workload(n_queries, seed, dist, arrivals)
    pred, actual = service_arrays(table, wl, service, sigma_rel)
    if policy == "drs":
        require(theta is not None, "theta", theta, "policy 'drs' needs a batch threshold θ")
    return _simulate(policy, wl.arrival_times(rate), pred, actual, typ, q,
                     coef=table.coefficient()[typ], xi=xi, penalty=penalty,
                     sizes=wl.batches, theta=theta)


def run_explicit_reference(arrivals, service, instance_types, qos: float,
                           policy: str = "kairos", *, predicted=None, coefficients=None,
                           xi: float = 0.98, penalty: str = "paper", sizes=None,
                           theta=None) -> SimResult:
    """The simpy twin of :func:`infsched.kairos.sim.run_explicit` (same arguments)."""
    one_of("policy", policy, POLICIES)
    arr = np.asarray(arrivals, dtype=float)
    actual = np.asarray(service, dtype=float)
    pred = actual if predicted is None else np.asarray(predicted, dtype=float)
    typ = np.asarray(instance_types, dtype=np.int64)
    coef = np.ones(actual.shape[0]) if coefficients is None else np.asarray(coefficients, float)
    return _simulate(policy, arr, pred, actual, typ, float(qos), coef=coef[typ], xi=xi,
                     penalty=penalty, sizes=None if sizes is None else np.asarray(sizes),
                     theta=theta)
