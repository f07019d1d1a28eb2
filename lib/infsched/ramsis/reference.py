"""simpy reference model of the two RAMSIS serving systems: slow, but it reads like the paper.

The pieces are the paper's Fig. 1: a central queue fed by the arrival process, a load monitor
(§6: arrivals in the last 500 ms), and workers as simpy processes.

* **RAMSIS** (§2.11): the load balancer sends arrival ``i`` to worker ``i mod K``; each worker
  process waits for work in its own FIFO queue and, at every decision, looks up its action in
  the policy for the load in force.
* **Baselines** (§4): one central FIFO queue and a dispatcher process; whenever something
  happens (an arrival, a worker finishing) the dispatcher hands each idle worker, in index order,
  up to ``cap`` queries with the model of the baseline's table.

Same semantics, same random numbers as the numba engines of :mod:`infsched.ramsis.sim` (see its
docstring): decisions happen after every arrival and completion of the same instant (an
:class:`EndOfInstant` event with a priority below simpy's normal events), each batch's sampled
latency uses the pre-drawn uniform of its first query, and every arrival is served and counted.
The tests hold the engines to this model query by query. Use it on small runs only: at K = 60,
2000 QPS it manages about 150 k queries/s for RAMSIS and 55 k/s for the baselines, against
10–75 M/s for the engines.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque

import numpy as np
import simpy

from infsched.des import timeout_at
from infsched.ramsis import sim
from infsched.ramsis.policy import PolicyTable

__all__ = ["EndOfInstant", "LoadMonitor", "simulate_ramsis_reference",
           "simulate_central_reference"]

#: priority of :class:`EndOfInstant`: after simpy's URGENT (0) and NORMAL (1) events
LATE = 2


class EndOfInstant(simpy.Event):
    """An event that fires at the current time, after every other event of this instant."""

    def __init__(self, env: simpy.Environment):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, LATE)


class LoadMonitor:
    """The load estimate of §1 rule 7: central arrivals in ``(now − window, now]`` per second."""

    def __init__(self, window_ms: float):
        self.window_ms = window_ms
        self.times: list[float] = []

    def arrival(self, t: float) -> None:
        self.times.append(t)

    def estimate_qps(self, now: float) -> float:
        recent = len(self.times) - bisect_right(self.times, now - self.window_ms)
        return recent / (self.window_ms / 1000.0)


class _System:
    """What both systems share: profile, SLO, load knowledge, the books kept per query."""

    def __init__(self, env, profile, arrivals, slo, workers, lookup, load_qps, latency, rng,
                 window):
        self.env = env
        self.arrivals = arrivals
        self.slo = slo
        self.K = workers
        (self.acc, self.lat, self.slope, self.sampled, self.spread, self.levels,
         self.u) = sim._profile_arrays(profile, latency, rng, arrivals.size)
        self.lookup = lookup
        self.known = None if load_qps is None else lookup(sim._positive("load_qps", load_qps))
        self.monitor = LoadMonitor(window)
        n = arrivals.size
        self.counts = np.zeros((len(profile.models), 3), np.int64)
        self.stats = np.zeros(4)
        self.rec = (np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64),
                    np.full(n, np.nan), np.full(n, np.nan))
        self.t_last = arrivals[-1] if n else -math.inf

    def policy_in_force(self, now: float) -> int:
        """The known load's policy, or the monitor's pick (lowest grid load ≥ the estimate)."""
        if self.known is not None:
            return self.known
        return self.lookup(self.monitor.estimate_qps(now))

    def latency(self, m: int, b: int, head: int) -> float:
        """How long batch (m, b) runs: p95 ``l(m, b)``, times a spread draw if sampled."""
        lt = sim.batch_latency(self.lat, self.slope, m, b)
        if self.sampled:
            q = self.spread[m, min(b, self.lat.shape[1]) - 1]
            lt = lt * float(np.interp(self.u[head], self.levels, q))
        return lt

    def served(self, batch: list[int], worker: int, m: int, start: float) -> None:
        """Books for a finished batch: each query violates iff it finished after its deadline."""
        now = self.env.now
        self.counts[m, 2] += 1
        self.counts[m, 0] += len(batch)
        for q in batch:
            a = self.arrivals[q]
            self.counts[m, 1] += now <= a + self.slo
            self.stats[0] += now - a
            self.stats[1] += start - a
            for arr, value in zip(self.rec, (worker, m, batch[0], start, now)):
                arr[q] = value
        if start > self.t_last:
            self.stats[2] += len(batch)


# ============================================================================ RAMSIS

class RamsisWorker:
    """One worker: a FIFO queue and a process that runs one batch at a time (§2.11)."""

    def __init__(self, system: RamsisSystem, k: int):
        self.system, self.k = system, k
        self.queue: deque[int] = deque()
        self.waiting: simpy.Event | None = None
        system.env.process(self.run())

    def enqueue(self, q: int) -> None:
        self.queue.append(q)
        if self.waiting is not None and not self.waiting.triggered:
            self.waiting.succeed()                     # an arrival to an idle worker

    def decide(self, now: float) -> tuple[int, int]:
        """The action at a decision epoch: ``(model, batch)`` from the MDP policy."""
        s, pol = self.system, self.system.policy
        n = len(self.queue)
        if n > pol.n_max:                              # beyond the MDP: all n, fastest model
            return pol.fallback, n
        slack = s.slo - (now - s.arrivals[self.queue[0]])
        j = pol.slack_index(slack)
        p = s.policy_in_force(now)
        return int(pol.model[p, n, j]), int(pol.batch[p, n, j])

    def run(self):
        env, s = self.system.env, self.system
        while True:
            if not self.queue:
                self.waiting = env.event()
                yield self.waiting
                self.waiting = None
            yield EndOfInstant(env)                    # every arrival of this instant is in
            start = env.now
            m, b = self.decide(start)
            s.stats[3] += b == len(self.queue)
            batch = [self.queue.popleft() for _ in range(b)]
            yield env.timeout(s.latency(m, b, batch[0]))
            s.served(batch, self.k, m, start)


class RamsisSystem(_System):
    """Round-robin load balancer in front of ``K`` RAMSIS workers."""

    def __init__(self, env, profile, policy: PolicyTable, arrivals, **kw):
        super().__init__(env, profile, arrivals, lookup=policy.lookup, **kw)
        self.policy = policy
        self.workers = [RamsisWorker(self, k) for k in range(self.K)]
        env.process(self.source())

    def source(self):
        rr = 0                                          # the round-robin pointer persists
        for q, t in enumerate(self.arrivals.tolist()):
            yield timeout_at(self.env, t)
            self.monitor.arrival(t)
            self.workers[rr].enqueue(q)
            rr = (rr + 1) % self.K


# ============================================================================ baselines

class CentralWorker:
    """A baseline worker: idle until the dispatcher hands it a batch."""

    def __init__(self, system: CentralSystem, k: int):
        self.system, self.k = system, k
        self.idle = True
        self.assigned = system.env.event()
        system.env.process(self.run())

    def start(self, m: int, batch: list[int]) -> None:
        self.idle = False
        self.assigned.succeed((m, batch, self.system.env.now))

    def run(self):
        env, s = self.system.env, self.system
        while True:
            m, batch, start = yield self.assigned
            self.assigned = env.event()
            yield env.timeout(s.latency(m, len(batch), batch[0]))
            s.served(batch, self.k, m, start)
            self.idle = True
            s.wake_dispatcher()


class CentralSystem(_System):
    """A central FIFO queue whose idle workers eagerly take up to ``cap`` queries (§4)."""

    def __init__(self, env, profile, table, arrivals, **kw):
        super().__init__(env, profile, arrivals, lookup=table.lookup, **kw)
        self.table = table
        self.queue: deque[int] = deque()
        self.workers = [CentralWorker(self, k) for k in range(self.K)]
        self.wake = env.event()
        env.process(self.dispatcher())
        env.process(self.source())

    def wake_dispatcher(self) -> None:
        if not self.wake.triggered:
            self.wake.succeed()

    def source(self):
        for q, t in enumerate(self.arrivals.tolist()):
            yield timeout_at(self.env, t)
            self.monitor.arrival(t)
            self.queue.append(q)
            self.wake_dispatcher()

    def dispatcher(self):
        env = self.env
        while True:
            yield self.wake
            yield EndOfInstant(env)                    # all arrivals/completions of now are in
            p = self.policy_in_force(env.now)
            m, cap = int(self.table.model[p]), int(self.table.cap[p])
            for w in self.workers:                     # idle workers in index order
                if not self.queue:
                    break
                if w.idle:
                    b = min(len(self.queue), cap)
                    self.stats[3] += b == len(self.queue)
                    w.start(m, [self.queue.popleft() for _ in range(b)])
            self.wake = env.event()


# ============================================================================ entry points

def _run(kind: str, profile, policy, arrivals_ms, slo_ms, workers, load_qps, latency, rng,
         monitor_window_ms) -> sim.SimResult:
    arr = sim._check_arrivals(arrivals_ms)
    slo = sim._positive("slo_ms", slo_ms)
    K = sim._check_workers(workers)
    window = sim._positive("monitor_window_ms", monitor_window_ms)
    if kind == "ramsis":
        sim.check_policy(profile, policy, slo, K)
        cls = RamsisSystem
    else:
        sim._check_table(profile, policy)
        cls = CentralSystem
    env = simpy.Environment()
    system = cls(env, profile, policy, arr, slo=slo, workers=K, load_qps=load_qps,
                 latency=latency, rng=rng, window=window)
    env.run()
    return sim._result(kind if kind == "ramsis" else "central", profile, system.acc, slo, K, arr,
                       system.counts, system.stats, True, system.rec)


def simulate_ramsis_reference(profile, policy: PolicyTable, arrivals_ms, *, slo_ms: float,
                              workers: int, load_qps: float | None = None, latency: str = "p95",
                              rng: np.random.Generator | None = None,
                              monitor_window_ms: float = sim.MONITOR_WINDOW_MS) -> sim.SimResult:
    """The simpy model of RAMSIS; arguments and result as
    :func:`infsched.ramsis.sim.simulate_ramsis` with ``record=True``."""
    return _run("ramsis", profile, policy, arrivals_ms, slo_ms, workers, load_qps, latency, rng,
                monitor_window_ms)


def simulate_central_reference(profile, table, arrivals_ms, *, slo_ms: float, workers: int,
                               load_qps: float | None = None, latency: str = "p95",
                               rng: np.random.Generator | None = None,
                               monitor_window_ms: float = sim.MONITOR_WINDOW_MS) -> sim.SimResult:
    """The simpy model of the central-queue baselines; arguments and result as
    :func:`infsched.ramsis.sim.simulate_central` with ``record=True``."""
    return _run("central", profile, table, arrivals_ms, slo_ms, workers, load_qps, latency, rng,
                monitor_window_ms)
