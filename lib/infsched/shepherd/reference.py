"""simpy reference model of Shepherd's online schedulers: FLEX (Algorithms 1 and 2, §5.2),
SHEPHERD-NP (§7.2) and the Clockwork-like baseline (spec §2.4). Slow, but it reads like the
paper: per-model queues are Python lists kept sorted by deadline, BATCHGEN scans every start
position of the candidate set, every GPU batch is a simpy process that a preemption abandons.

It follows the exact semantics of the fast engine (:mod:`infsched.shepherd.sim`, see its module
doc) and consumes the same inputs — the latency table :func:`~infsched.shepherd.sim.
latency_table`, the uniform preemption delays of :func:`~infsched.shepherd.sim.delay_uniforms` —
so both give the same completion time for every request; that is how the engine is checked.

Event order, made explicit for simpy: a batch's completion is an event queued at its exact end
time (:class:`_ExactEnvironment`) when the batch is decided, so equal-time completions fire in
batch order; the front end yields a zero delay after waking so that completions at the same
instant come first; all requests released at one instant are delivered together, as one
arrival event. Use on small cases.
"""

from __future__ import annotations

import bisect
from heapq import heappush

import numpy as np
import simpy
from simpy.core import NORMAL

from infsched.shepherd.model import ModelSet, Requests
from infsched.shepherd.sim import (
    LAMBDA,
    SimResult,
    _check,
    delay_uniforms,
    latency_table,
)

__all__ = ["simulate_reference"]


class _ExactEnvironment(simpy.Environment):
    """A simpy environment that can fire at an exact float time.

    ``env.timeout(t - env.now)`` fires at ``now + (t − now)``, which rounding can put an ulp
    away from ``t`` (for some ``now`` no delay reaches ``t`` at all: the sum rounds ties-to-even
    past it), and one ulp changes which event comes first. :meth:`at` queues the event at ``t``
    itself, with simpy's usual (time, priority, insertion) order. It relies on simpy 4.1's
    event queue layout, ``(time, priority, id, event)``.
    """

    def at(self, t: float) -> simpy.Event:
        if t < self.now:
            raise ValueError(f"cannot schedule at {t} before now = {self.now}")
        ev = simpy.Event(self)
        ev._ok = True
        ev._value = None
        heappush(self._queue, (t, NORMAL, next(self._eid), ev))
        return ev


class _Gpu:
    """One GPU: the batch it runs (B_c(n)) — request ids sorted by deadline — and its timing."""

    def __init__(self, index: int):
        self.index = index
        self.bid = -1            # id of the running batch, -1 when idle
        self.batch: list[int] = []
        self.model = -1
        self.start = 0.0
        self.delay = 0.0         # the preemption delay δ of the running batch

    @property
    def idle(self) -> bool:
        return self.bid < 0


class _Scheduler:
    """The group scheduler: Algorithm 1's two events over per-model deadline queues."""

    def __init__(self, requests: Requests, models: ModelSet, n_gpus: int, policy: str,
                 lam: float, b_max: int, literal: bool, L: np.ndarray, delay: str,
                 u: np.ndarray, c_ms: float, cw_pow2: bool):
        t0 = min(0.0, float(requests.arrival.min(initial=0.0)))
        self.env = _ExactEnvironment(initial_time=t0)
        self.a = requests.arrival.tolist()
        self.d = requests.deadline.tolist()
        self.m = requests.model.tolist()
        self.M = models.n
        self.L = L.tolist()
        self.E = models.exit_points.astype(float).tolist()
        self.policy, self.lam, self.b_max, self.literal = policy, lam, b_max, literal
        self.delay, self.u, self.c_ms, self.cw_pow2 = delay, u.tolist(), c_ms, cw_pow2
        self.Q: list[list[tuple[float, int]]] = [[] for _ in range(self.M)]
        self.gpus = [_Gpu(n) for n in range(n_gpus)]
        self.completion = [float("nan")] * requests.n
        self.batch_of = [-1] * requests.n
        self.released = [False] * requests.n
        self.rec: list[list] = []   # per batch: gpu, model, size, start, end, preempted

    # ------------------------------------------------------------------ front end
    def frontend(self):
        """Arrivals, through the controller's FIFO server when ``c_ms > 0`` (spec §2.4)."""
        n = len(self.a)
        i = 0
        while i < n:
            if self.c_ms > 0:
                if self.env.now < self.a[i]:
                    yield self.env.at(self.a[i])
                r = i
                i += 1
                if self.env.now + self.c_ms + self.L[self.m[r]][1] > self.d[r]:
                    continue                     # unmeetable at the head: zero cost
                yield self.env.at(self.env.now + self.c_ms)
                batch = [r]
            else:
                yield self.env.at(self.a[i])
                batch = []
                while i < n and self.a[i] == self.env.now:
                    batch.append(i)
                    i += 1
            yield self.env.timeout(0)            # completions at this instant go first
            for r in batch:
                self.released[r] = True
            self.on_arrival(batch)

    # ------------------------------------------------------------------ queues
    def enqueue(self, r: int) -> None:
        bisect.insort(self.Q[self.m[r]], (self.d[r], r))

    def drop_hopeless(self, m: int, t: float) -> None:
        """Algorithm 2 line 4: requests that cannot meet their deadline even alone leave Q_m."""
        self.Q[m] = [(d, r) for d, r in self.Q[m] if d >= t + self.L[m][1]]

    def fits(self, m: int, k: int, ts: float, d: float) -> bool:
        return ts + self.L[m][k] <= d

    def hcap(self, m: int, ts: float, d: float, kmax: int) -> int:
        """The largest k ≤ kmax whose batch started at ts meets deadline d."""
        k = 0
        while k < kmax and self.fits(m, k + 1, ts, d):
            k += 1
        return k

    # ------------------------------------------------------------------ Algorithm 2
    def batchgen(self, gpu: _Gpu, t: float, ts: float) -> tuple[int, list[tuple[float, int]]]:
        """BATCHGEN(n): the largest feasible batch over all model queues at start time ts, the
        running batch of GPU n being a candidate again for its own model (lines 6–7)."""
        best_m, best, best_dens = -1, [], 0.0
        for m in range(self.M):
            self.drop_hopeless(m, t)                                    # line 4
            S = list(self.Q[m])                                         # line 5
            if not gpu.idle and gpu.model == m:                         # lines 6-7
                S = sorted(S + [(self.d[r], r) for r in gpu.batch])
            B = self.literal_batch(m, S, ts) if self.literal else self.largest_batch(m, S, ts)
            if not B:
                continue
            dens = len(B) / self.L[m][len(B)]
            if len(B) > len(best) or (len(B) == len(best) and dens > best_dens):
                best_m, best, best_dens = m, B, dens                    # line 14
        return best_m, best

    def largest_batch(self, m: int, S: list, ts: float) -> list:
        """Spec §2.2 (c): max over i of min(s − i, B_max, h(i)); ties to the smallest i."""
        best_i, best_size = 0, 0
        for i, (d, _) in enumerate(S):
            size = self.hcap(m, ts, d, min(len(S) - i, self.b_max))
            if size > best_size:
                best_i, best_size = i, size
        return S[best_i:best_i + best_size]

    def literal_batch(self, m: int, S: list, ts: float) -> list:
        """Alg. 2 lines 9–13 read literally: add r (ascending deadline) while every member still
        meets its deadline with the grown batch; stop at the first that does not (requests that
        cannot make it even alone at ts are skipped first)."""
        B: list = []
        for d, r in S:
            if not B and not self.fits(m, 1, ts, d):
                continue
            if len(B) < self.b_max and self.fits(m, len(B) + 1, ts, min(d, B[0][0] if B else d)):
                B.append((d, r))
            else:
                break
        return B

    # ------------------------------------------------------------------ execution
    def execute(self, gpu: _Gpu, m: int, B: list, t: float, ts: float) -> None:
        """Run batch B of model m on gpu from ts; dequeue its requests (Alg. 1 lines 6, 14, 18).
        If gpu was busy, its batch is preempted at ts and the rest re-enqueued (line 19)."""
        members = {r for _, r in B}
        self.Q[m] = [(d, r) for d, r in self.Q[m] if r not in members]
        if not gpu.idle:                                            # preemption
            self.rec[gpu.bid][4] = ts
            self.rec[gpu.bid][5] = True
            mc = gpu.model
            for r in gpu.batch:
                if r not in members and self.d[r] >= t + self.L[mc][1]:
                    self.enqueue(r)
        bid = len(self.rec)
        lat = self.L[m][len(B)]
        if self.delay == "mean":
            delta = lat / (2.0 * self.E[m])
        elif self.delay == "uniform":
            delta = self.u[bid % len(self.u)] * lat / self.E[m]
        else:
            delta = 0.0
        gpu.bid, gpu.batch, gpu.model, gpu.start, gpu.delay = bid, [r for _, r in B], m, ts, delta
        self.rec.append([gpu.index, m, len(B), ts, ts + lat, False])
        self.env.process(self.run_batch(gpu, bid, ts + lat))

    def run_batch(self, gpu: _Gpu, bid: int, end: float):
        """A batch on a GPU: completes at ``end`` unless it was preempted meanwhile."""
        yield self.env.at(end)
        if gpu.bid == bid:
            self.on_completion(gpu)

    # ------------------------------------------------------------------ Algorithm 1 events
    def on_completion(self, gpu: _Gpu) -> None:
        """Lines 4–8: the batch's requests complete; the GPU starts BATCHGEN's batch."""
        t = self.env.now
        for r in gpu.batch:
            self.completion[r] = t
            self.batch_of[r] = gpu.bid
        gpu.bid, gpu.batch = -1, []
        if self.policy == "clockwork":
            self.clockwork_dispatch(gpu, t)
            return
        m, B = self.batchgen(gpu, t, t)
        if B:
            self.execute(gpu, m, B, t, t)

    def on_arrival(self, batch: list[int]) -> None:
        """Line 10: enqueue; then lines 11–19 (FLEX), idle GPUs only (NP, Clockwork)."""
        t = self.env.now
        for r in batch:
            self.enqueue(r)
        if self.policy == "clockwork":
            for gpu in self.gpus:
                if gpu.idle and not self.clockwork_dispatch(gpu, t):
                    break
            return
        if self.policy == "flex-np":
            for gpu in self.gpus:
                if gpu.idle:
                    m, B = self.batchgen(gpu, t, t)
                    if not B:
                        break
                    self.execute(gpu, m, B, t, t)
            return
        for _ in range(len(self.gpus) + 1):     # "go to line 11", at most G re-runs
            order = [g for g in self.gpus if g.idle] + sorted(
                (g for g in self.gpus if not g.idle), key=lambda g: (len(g.batch), g.index))
            preempted = False
            for gpu in order:
                if gpu.idle:
                    m, B = self.batchgen(gpu, t, t)
                    if B:
                        self.execute(gpu, m, B, t, t)
                    continue
                ts = gpu.start if t < gpu.start else t + gpu.delay
                m, B = self.batchgen(gpu, t, ts)
                if B and len(B) >= self.lam * len(gpu.batch):          # preemption rule
                    self.execute(gpu, m, B, t, ts)
                    preempted = True
                    break
            if not preempted:
                break

    # ------------------------------------------------------------------ Clockwork
    def clockwork_dispatch(self, gpu: _Gpu, t: float) -> bool:
        """Spec §2.4: earliest deadline first, the largest batch that meets d_{r*}."""
        for m in range(self.M):
            self.drop_hopeless(m, t)
        heads = [(self.Q[m][0], m) for m in range(self.M) if self.Q[m]]
        if not heads:
            return False
        (d_star, _), m = min(heads)
        kmax = min(self.b_max, len(self.Q[m]))
        if self.cw_pow2:
            b = 1
            while 2 * b <= kmax and self.fits(m, 2 * b, t, d_star):
                b *= 2
        else:
            b = self.hcap(m, t, d_star, kmax)
        self.execute(gpu, m, self.Q[m][:b], t, t)
        return True


def simulate_reference(requests: Requests, models: ModelSet, n_gpus: int, policy: str = "flex",
                       *, lam: float = LAMBDA, b_max: int = 128, batchgen: str = "largest",
                       eps_exec: float = 0.0, preempt_delay: str = "none",
                       controller_us: float = 0.0, seed: int = 0,
                       cw_pow2: bool = False) -> SimResult:
    """The simpy counterpart of :func:`infsched.shepherd.sim.simulate` (same arguments, same
    result type, same answers)."""
    _check(requests, models, n_gpus, policy, lam, b_max, batchgen, eps_exec, preempt_delay,
           controller_us, seed, cw_pow2)
    L = latency_table(models, float(eps_exec), int(b_max))
    u = delay_uniforms(requests.n, int(seed), preempt_delay)
    s = _Scheduler(requests, models, int(n_gpus), policy, float(lam), int(b_max),
                   batchgen == "literal", L, preempt_delay, u, float(controller_us) / 1000.0,
                   bool(cw_pow2))
    s.env.process(s.frontend())
    s.env.run()
    rec = np.array(s.rec, dtype=object).reshape(-1, 6)
    return SimResult(policy, int(n_gpus), float(lam), requests.arrival, requests.deadline,
                     requests.model, np.array(s.completion, dtype=float),
                     np.array(s.batch_of, dtype=np.int64), rec[:, 0].astype(np.int64),
                     rec[:, 1].astype(np.int64), rec[:, 2].astype(np.int64),
                     rec[:, 3].astype(float), rec[:, 4].astype(float), rec[:, 5].astype(bool),
                     np.array(s.released, dtype=bool))
