"""A simpy model of the neutral serving system, written for reading, not speed (spec headtohead §1).

It is the check on :mod:`.engine`: the same system, written independently of the compiled loop
(Python lists as queues, simpy processes for arrivals and batches), consuming the same draws
(:func:`.sim.draws`). On inputs without simultaneous events the two give the same per-query
outcomes; the tests hold them to that.

The system: queries arrive; with a central queue a query joins it and the lowest-index idle
worker, if any, starts work; with per-worker queues the routing rule picks a worker and the
query joins its queue. A worker that is free looks at its queue: the policy drops head queries
it knows will miss (deadline-aware policies only), then picks a model ``m`` and a batch of the
``b`` oldest queries, and the worker is busy for ``l(m, b)`` times the batch's service draw.
"""

from __future__ import annotations

import numpy as np
import simpy

from ..des import timeout_at
from ..profiles import QUANTILE_LEVELS
from .config import ServingConfig
from .sim import Result, draws

__all__ = ["simulate_reference"]


class _System:
    def __init__(self, cfg: ServingConfig, arr, svc, u):
        self.cfg, self.zoo = cfg, cfg.zoo
        self.arr, self.svc, self.u = arr, svc, u
        self.env = simpy.Environment()
        K = cfg.workers
        self.busy = [False] * K
        self.load = [0] * K  # queued + in service, per worker
        self.queues: list[list[int]] = [[] for _ in range(K)]
        self.central: list[int] = []
        self.n_batches = 0
        lay = cfg.layout()
        self.worker_model = [int(m) for m in lay["worker_model"]]
        # TAD: server classes fastest first, their workers, a_k - a* in exact units, and Δ
        self.classes = [[int(w) for w in lay["cls_members"][lay["cls_start"][k]:lay["cls_start"][k + 1]]]
                        for k in range(lay["cls_start"].size - 1)]
        self.d = [int(x) for x in lay["d"]]
        self.tuples = lay["tup"].tolist()   # TAD-OP: [proper, lo, hi, pick, pos.., neg..]
        self.cum_p = lay["cum_p"].tolist()  # R-JIQ: one cumulative split per load level
        self.prev = [-1] * K  # each worker's previous model (the switch cost)
        self.scale = float(lay["scale"])
        self.delta = self.min_delta = 0
        n = arr.size
        self.start = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.model = np.full(n, -1, dtype=np.int16)
        self.bsize = np.zeros(n, dtype=np.int32)

    # ---- routing on arrival
    def route_tad(self, i: int) -> int:
        """TAD (TAD paper, Section 4): the fastest allowed class with an idle server, else a
        uniformly random allowed class and server; allowed = keeps Δ + a_k − a* >= 0."""
        allowed = [k for k in range(len(self.classes)) if self.delta + self.d[k] >= 0]
        idle = [k for k in allowed if any(not self.busy[w] for w in self.classes[k])]
        if idle:
            k = idle[0]
            w = next(w for w in self.classes[k] if not self.busy[w])
        else:
            x = self.u[i] * len(allowed)
            j = min(int(x), len(allowed) - 1)
            k = allowed[j]
            members = self.classes[k]
            w = members[min(int((x - j) * len(members)), len(members) - 1)]
        self.delta += self.d[k]
        self.min_delta = min(self.min_delta, self.delta)
        return w

    def idle_in(self, k: int) -> list[int]:
        return [w for w in self.classes[k] if not self.busy[w]]

    def in_class(self, k: int, rest: float) -> int:
        """An idle worker of class k (the lowest index), else the floor(rest size)-th."""
        idle = self.idle_in(k)
        if idle:
            return idle[0]
        members = self.classes[k]
        return members[min(int(rest * len(members)), len(members) - 1)]

    def route_tadop(self, i: int) -> tuple[int, int]:
        """TAD-OP (TAD paper, Algorithm 2): the first routable tuple of S*_opt."""
        C = len(self.classes)
        for row in self.tuples:
            proper, lo, hi, pick = row[:4]
            pos, neg = row[4:4 + C], row[4 + C:]
            if proper:
                k = lo if self.delta > 0 else hi
                ok = bool(self.idle_in(lo)) and bool(self.idle_in(hi))
            else:
                k = pick
                ok = all((not pos[c] or self.idle_in(c)) and
                         (not neg[c] or len(self.idle_in(c)) < len(self.classes[c])) for c in range(C))
            if ok:
                return self.in_class(k, 0.0), k
        for k in reversed(range(C)):
            if self.idle_in(k):
                return self.in_class(k, 0.0), k
        x = self.u[i] * C
        k = min(int(x), C - 1)
        return self.in_class(k, x - k), k

    def route_rjiq(self, i: int) -> tuple[int, int]:
        """R-JIQ (TAD paper eq. 4): a class drawn from p, then JIQ inside it; with load levels,
        p of the level the monitor reads now (this arrival counted)."""
        u = self.u[i]
        cum_p = self.cum_p[self.level()]
        k = next((c for c, cp in enumerate(cum_p) if u < cp), len(cum_p) - 1)
        lo = cum_p[k - 1] if k > 0 else 0.0
        hi = cum_p[k]
        rest = (u - lo) / (hi - lo) if hi > lo else 0.0
        return self.in_class(k, min(max(rest, 0.0), 1.0)), k

    def route(self, i: int) -> int:
        K, rule = self.cfg.workers, self.cfg.routing
        if rule == "tad":
            return self.route_tad(i)
        if rule in ("tad-op", "r-jiq"):
            w, k = self.route_tadop(i) if rule == "tad-op" else self.route_rjiq(i)
            self.delta += self.d[k]
            self.min_delta = min(self.min_delta, self.delta)
            return w
        if rule == "round-robin":
            return i % K
        if rule == "least-loaded":
            return min(range(K), key=lambda w: (self.load[w], w))
        idle = [w for w in range(K) if not self.busy[w]]
        if rule == "jiq" and idle:
            return idle[int(self.u[i] * len(idle))]
        return min(int(self.u[i] * K), K - 1)

    # ---- the policy at a free worker
    def slack(self, j: int) -> float:
        return self.cfg.slo_ms - (self.env.now - self.arr[j])  # as the RAMSIS engine rounds it

    def gives_up(self, j: int) -> bool:
        if self.cfg.spec.name in ("slack-accurate", "batch-greedy"):
            return self.zoo.latency_ms[:, 0].min() > self.slack(j)
        return False

    def choose(self, queue: list[int], w: int) -> tuple[int, int]:
        cfg, lat, acc = self.cfg, self.zoo.latency_ms, self.zoo.accuracy
        top = min(len(queue), cfg.max_batch)
        level = self.level()
        if cfg.plan is not None:  # re-planning fcfs: the level's model and cap
            m, c = cfg.plan[level]
            return self.zoo.names.index(m), min(len(queue), c)
        if cfg.spec.name in ("most-accurate", "fastest", "fcfs", "tad", "tad-op", "r-jiq"):
            return self.worker_model[w], top
        s = self.slack(queue[0])
        if cfg.spec.name == "ramsis":  # the MDP policy's action in state (n, slack cell)
            grid, pmodel, pbatch = cfg.mdp_policy
            pmodel, pbatch = pmodel[level], pbatch[level]
            n = len(queue)
            if n > pmodel.shape[0] - 1:  # past N: the fallback on the whole queue
                return self.zoo.fastest, n
            j = max(int(np.searchsorted(grid, s, side="right")) - 1, 0)
            return int(pmodel[n, j]), min(int(pbatch[n, j]), cfg.max_batch)
        fast = self.zoo.fastest
        b = 1
        if cfg.spec.name == "batch-greedy":
            b = max([1] + [c for c in range(1, top + 1) if lat[fast, c - 1] <= s])
        fits = [m for m in range(self.zoo.n_models) if lat[m, b - 1] <= s]
        if not fits:
            return fast, b
        best = max(acc[m] for m in fits)
        # the most accurate; among equals, the one listed first by accuracy (stable order)
        return min(m for m in fits if acc[m] == best), b

    def level(self) -> int:
        """The load level in force (re-planning policies): the arrivals of the last
        ``monitor_window_ms`` per second, rounded up to the next planned level."""
        cfg = self.cfg
        if cfg.plan_loads is None:
            return 0
        now, win = self.env.now, cfg.monitor_window_ms
        est = int(np.sum((self.arr > now - win) & (self.arr <= now))) / (win / 1000.0)
        return min(int(np.searchsorted(cfg.plan_loads, est, side="left")), len(cfg.plan_loads) - 1)

    def work(self, w: int) -> None:
        """Worker ``w`` is free now: drop, pick, and start a batch if its queue has queries."""
        queue = self.central if self.cfg.queue == "central" else self.queues[w]
        while queue and self.gives_up(queue[0]):
            j = queue.pop(0)
            self.start[j] = self.env.now
            if self.cfg.queue != "central":
                self.load[w] -= 1
        if not queue:
            return
        m, b = self.choose(queue, w)
        batch, queue[:] = queue[:b], queue[b:]
        k = self.n_batches
        self.n_batches += 1
        self.busy[w] = True
        self.env.process(self.serve(w, m, batch, k))

    def multiplier(self, k: int, m: int, b: int) -> float:
        if self.cfg.service == "exponential":
            return float(self.svc[k])
        if self.cfg.service == "jitter":
            return float(np.interp(self.svc[k], QUANTILE_LEVELS, self.zoo.spread[m, min(b, self.zoo.max_batch) - 1]))
        return 1.0

    def serve(self, w: int, m: int, batch: list[int], k: int):
        """The batch starts ``dispatch_ms`` after the decision (the worker held meanwhile) and
        takes ``switch_ms`` longer if its model is not the one the worker ran last."""
        cfg = self.cfg
        begin = self.env.now + cfg.dispatch_ms
        switch = cfg.switch_ms if self.prev[w] not in (-1, m) else 0.0
        self.prev[w] = m
        end = begin + self.zoo.batch_latency(m, len(batch)) * self.multiplier(k, m, len(batch)) + switch
        for j in batch:
            self.start[j], self.finish[j], self.model[j], self.bsize[j] = begin, end, m, len(batch)
        yield timeout_at(self.env, end)
        self.busy[w] = False
        if self.cfg.queue != "central":
            self.load[w] -= len(batch)
        self.work(w)

    def arrivals(self):
        for i, t in enumerate(self.arr):
            yield timeout_at(self.env, float(t))
            if self.cfg.queue == "central":
                self.central.append(i)
                idle = [w for w in range(self.cfg.workers) if not self.busy[w]]
                if idle:
                    self.work(idle[0])
            else:
                w = self.route(i)
                self.queues[w].append(i)
                self.load[w] += 1
                if not self.busy[w]:
                    self.work(w)


def simulate_reference(config: ServingConfig, n: int = 1000, *, rate_qps: float | None = None,
                       load: float | None = None, seed: int = 0,
                       arrivals: np.ndarray | None = None) -> Result:
    """The simpy model on the same draws as :func:`.sim.simulate` with the same arguments.
    FLEX and FLEX-NP run in their own plain-Python loop (:mod:`.reference_flex`); their check on
    Shepherd's scenarios is Shepherd's own engines (:mod:`infsched.shepherd`)."""
    from ..errors import require
    from .policies import FLEX_FAMILY, SELECT_USER

    require(config.spec.select != SELECT_USER, "policy", config.policy,
            "is a reader's policy: its loop is checked against the built-in policies it can "
            "re-implement (tests/serving/test_serving_plugins.py), not against this reference")
    if arrivals is None and load is not None:
        rate_qps = load * config.capacity_qps()
    arr, svc, u = draws(config, n, seed, rate_qps=rate_qps, arrivals=arrivals)
    if config.policy in FLEX_FAMILY:
        from .reference_flex import simulate_flex_reference

        return simulate_flex_reference(config, arr, svc)
    sys_ = _System(config, arr, svc, u)
    sys_.env.process(sys_.arrivals())
    sys_.env.run()
    return Result(config, arr, sys_.start, sys_.finish, sys_.model, sys_.bsize, sys_.n_batches,
                  sys_.delta / sys_.scale, sys_.min_delta / sys_.scale)
