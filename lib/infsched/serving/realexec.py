"""The neutral simulator against real execution (issue 33, item 7).

Vidur (Agrawal et al., MLSys 2024) and AlpaServe (Li et al., OSDI 2023) each check their simulator
against the system it models: the same workload served for real and simulated, the error reported
per configuration. This module does the same for the head-to-head's simulator (:mod:`.engine`,
:mod:`.plugins`) on one machine's CPUs:

* **Workers**: ``K`` processes holding the zoo's models, one torch thread each
  (:class:`infsched.profiling.workers.WorkerPool`, in the layer above this one: it builds
  models); a worker executes ``(model, batch)`` jobs on random inputs and reports back the model
  and batch size it ran. The profile the simulator reads is measured at the start in those same
  processes (:func:`infsched.profiling.workers.measure_profile`).
* **Dispatcher** (:func:`run_real`): the parent replays an arrival stream in real time
  (``time.perf_counter``), keeps the central queue and, whenever a worker is free, asks the
  policy the simulator runs (:class:`Decider`: the engine's own compiled ``must_drop``,
  ``select`` and load monitor ``_level`` of :mod:`.policies` / :mod:`.engine`, or a reader's
  ``select`` of :mod:`.plugins`) which queries to drop and which ``(model, batch)`` to start,
  and sends exactly that job to the worker. Event rules as the engine's: an arrival is taken by
  the lowest-index idle worker; a freed worker decides at once.
* **Accuracy** is the profile's published top-1 accuracy of the model a query ran on (the
  workers' weights are random: only the latency is real).

:func:`compare` simulates the same configuration on the same arrivals with the profile measured
here and returns measured and simulated on-time share and accuracy, and their differences, as
the serving simulators report their error. Only central-queue policies are supported (the
per-worker routings need no new decision code, but are not exercised here).

**Where the time goes** (:meth:`RealRun.timestamps`, :func:`attribution`): every query records
when it arrived (its scheduled time), when the dispatcher saw it, when its batch was decided and
sent, when the worker received the job, began and ended the model call, and when the dispatcher
received the reply, all on one clock (``time.perf_counter``, the system's monotonic clock, which
the worker processes share). :func:`attribution` splits the measured latency into those
segments beside what the simulator charges for each (it charges the queue and ``l(m, b)``,
nothing else) and counts the late queries each segment alone makes late;
:func:`execution_table` sets each batch's execution time against the profile's p95 by batch size
(batching) and by how many workers were busy when it started (contention).

**An error with an interval** (:func:`error_summary`): several seeds per point, and the
simulated-minus-measured on-time error with a t interval over the *informative* runs only (a
run where both sides keep every query on time, or none, says nothing about the error);
:func:`pick_slo` chooses, on arrivals the scored runs do not use, an SLO where the simulated
share on time lies between 50 % and 99 %, near the deadlines where the policies differ.

The pool is any object with ``workers``, ``models`` (zoo names), ``max_batch``, ``conns`` (one
pipe per worker) and ``recv(w)``; a job is ``("run", job, model, batch)`` (``model`` indexes
``models``), its answer ``("done", job, model, batch, exec_ms)``, optionally followed by the
worker's ``t_recv, t_start, t_end`` (``time.perf_counter`` seconds).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from multiprocessing.connection import wait

import numpy as np
import pandas as pd

from ..errors import require
from .config import ServingConfig
from .contenders import contender_config, judge
from .engine import _level
from .plugins import State, get
from .policies import (
    SELECT_BATCH_GREEDY,
    SELECT_FIXED,
    SELECT_SLACK_ACCURATE,
    SELECT_USER,
    must_drop,
    select,
)
from .sim import DEADLINE_TOL_MS, Result, simulate
from .zoo import Zoo

__all__ = ["CONTENDERS", "default_slo", "real_contender", "Decider", "RealRun", "run_real", "compare",
           "pick_slo", "informative", "error_summary", "SEGMENTS", "attribution", "execution_table",
           "clock_check"]

#: the contenders of the benchmark, three kinds of decision: one model fixed for the run
#: (``fixed``: FIFO, the fastest model, taking up to the batch cap of what is queued), a model
#: and batch per decision that drops hopeless queries (``batch-greedy``), one model and cap per
#: load level re-planned from a 500 ms load monitor (``jellyfish+``)
CONTENDERS = ("fixed", "batch-greedy", "jellyfish+")

_SELECTS = (SELECT_FIXED, SELECT_SLACK_ACCURATE, SELECT_BATCH_GREEDY, SELECT_USER)


def default_slo(zoo: Zoo) -> float:
    """The benchmark's SLO: four times the most accurate model's batch-1 latency (ms), so that
    every model meets it at batch 1 with room to queue, and the fast models at larger batches."""
    m = int(np.argmax(zoo.accuracy))
    return float(round(4.0 * zoo.latency_ms[m, 0], 1))


def real_contender(name: str, zoo: Zoo, workers: int, slo_ms: float, rate_qps: float) -> ServingConfig:
    """The configuration of a benchmark contender: ``fixed`` (FIFO on the fastest model, batches
    up to the profile's largest), a built-in or registered central-queue policy's name as the
    head-to-head runs it (:func:`.contenders.contender_config`, re-planning levels of the
    ``default`` scale)."""
    if name == "fixed":
        return ServingConfig(zoo, workers=workers, slo_ms=slo_ms, policy="fcfs",
                             model=zoo.names[zoo.fastest], max_batch=zoo.max_batch)
    cfg = contender_config(name, zoo, workers, slo_ms, rate_qps=rate_qps, scale="default")
    Decider(cfg)  # refuses what the dispatcher cannot run, now
    return cfg


# ------------------------------------------------------------------------------ the policy

class Decider:
    """The simulator's decision code, called from Python when a worker is free: the same
    compiled ``must_drop`` and ``select`` (:mod:`.policies`) and load monitor (:func:`.engine._level`)
    the engine calls, with the same inputs, or a reader's ``select`` (:mod:`.plugins`) with the
    same :data:`.plugins.State`."""

    def __init__(self, cfg: ServingConfig):
        require(isinstance(cfg, ServingConfig), "config", type(cfg).__name__, "must be a ServingConfig")
        code = cfg.spec.select
        require(cfg.queue == "central" and code in _SELECTS, "policy", cfg.policy,
                "real execution runs central-queue policies with select fixed, slack-accurate, "
                "batch-greedy or a reader's (plugins); not preempting ones (FLEX), RAMSIS or per-worker queues")
        zoo = cfg.zoo
        self.cfg, self.code = cfg, int(code)
        self.lat = zoo.latency_ms
        self.by_acc = np.argsort(-zoo.accuracy, kind="stable").astype(np.int64)
        self.fastest = int(zoo.fastest)
        lay = cfg.layout()
        self.lay = lay
        self.fixed = int(lay["worker_model"][0])
        self.cap = int(cfg.max_batch)
        self.plan_loads = lay["plan_loads"]
        self.mlo = 0
        self.user = get(cfg.policy) if self.code == SELECT_USER else None
        if self.user is not None:
            self.params = np.asarray(self.user.params, dtype=np.float64)
        self._warm()

    def _warm(self) -> None:
        """Call the decision code once on a dummy state with the types the dispatcher passes:
        loading (or compiling) it must not happen on the clock of the first query."""
        arr = np.zeros(1)
        if self.user is not None:
            s = State(1.0, 1, 0, self.cfg.workers, 0, 0.0, self.cap, self.cfg.slo_ms)
            self.user.select(s, self.lat, self.by_acc, self.params)
            return
        must_drop(self.code, 1.0, self.lat, self.fastest)
        self.choose(1.0, 1, self.fixed, self.cap, 0)
        if self.plan_loads.size:
            _level(self.plan_loads, arr, 0, 1, 0.0, float(self.cfg.monitor_window_ms))

    def decide(self, now: float, arr: np.ndarray, queue: deque, arrived: int, n_idle: int,
               w: int) -> tuple[list, int, int, float, int]:
        """Drop (pop) the head queries the policy gives up and choose the batch for worker ``w``
        at ``now`` (ms): returns ``(dropped, model, batch, slack_ms, level)``, batch 0 if the
        queue is empty. ``arrived`` is how many arrivals the dispatcher has seen (the monitor's
        window ends there); ``n_idle`` counts ``w``."""
        slo = self.cfg.slo_ms
        dropped = []
        if self.user is not None:
            while queue:
                s = State(slo - (now - arr[queue[0]]), len(queue), n_idle - 1, self.cfg.workers, w,
                          now, self.cap, slo)
                m, b = self.user.select(s, self.lat, self.by_acc, self.params)
                m, b = int(m), int(b)
                if b == 0:
                    dropped.append(queue.popleft())
                    continue
                require(1 <= b <= min(len(queue), self.cap) and 0 <= m < self.lat.shape[0], "policy",
                        self.cfg.policy, "select returned an invalid (model, batch)")
                return dropped, m, b, float(s.slack_ms), 0
            return dropped, -1, 0, float("nan"), 0
        while queue and must_drop(self.code, slo - (now - arr[queue[0]]), self.lat, self.fastest):
            dropped.append(queue.popleft())
        if not queue:
            return dropped, -1, 0, float("nan"), 0
        p, fixed, cap = 0, self.fixed, self.cap
        if self.plan_loads.size:
            p, self.mlo = _level(self.plan_loads, arr, self.mlo, arrived, now,
                                 float(self.cfg.monitor_window_ms))
            p = int(p)
            if self.lay["plan_model"].size:
                fixed, cap = int(self.lay["plan_model"][p]), int(self.lay["plan_cap"][p])
        slack = slo - (now - arr[queue[0]])
        m, b = self.choose(slack, len(queue), fixed, cap, p)
        return dropped, m, b, float(slack), p

    def choose(self, slack: float, qlen: int, fixed: int, cap: int, p: int) -> tuple[int, int]:
        """The engine's ``select`` for a built-in policy (after the drops)."""
        lay = self.lay
        m, b = select(self.code, float(slack), int(qlen), self.lat, self.by_acc, int(fixed), int(cap),
                      self.fastest, lay["grid"], lay["pmodel"], lay["pbatch"], int(lay["fallback"]), int(p))
        return int(m), int(b)


# ------------------------------------------------------------------------------ the dispatcher

@dataclass(frozen=True, eq=False)
class RealRun:
    """One real run: ``result`` (a :class:`.sim.Result` of the measured times, ms from the start
    of the replay; ``finish`` is when the dispatcher received the completion), ``batches`` (one
    row per started batch: the decision's inputs and output, and what the worker ran), ``seen``
    (when the dispatcher saw each arrival), ``cut`` (queries still queued after the last arrival
    once every one of them was past its deadline: misses whatever happens next, not executed),
    ``job`` (each query's batch, a row of ``batches``; -1 if dropped or cut)."""

    result: Result
    batches: pd.DataFrame
    seen: np.ndarray
    cut: np.ndarray
    job: np.ndarray
    wall_s: float

    @property
    def lag_ms(self) -> np.ndarray:
        """How late the dispatcher saw each arrival (ms)."""
        return self.seen - self.result.arrival

    def timestamps(self) -> pd.DataFrame:
        """One row per query, every time in ms on the dispatcher's clock: ``arrival`` (its
        scheduled time), ``seen`` (the dispatcher took it into the queue), ``decided`` (the
        decision that placed it, or dropped or cut it, began), ``sent`` (the decision made, its
        job about to be written to the pipe), ``w_recv``, ``w_start``, ``w_end`` (the worker received the job, began and
        ended the model call; NaN for a pool that does not report them), ``reply`` (the
        dispatcher received the completion); ``job``, ``model``, ``batch``, ``planned`` (the
        profile's ``l(m, b)`` the policy planned with), ``margin`` (the head's slack at the
        decision minus ``planned``: what the batch could lose to overheads and stay on time), ``busy`` (workers busy once it started),
        ``dropped``, ``cut``, ``on_time``."""
        res, b = self.result, self.batches
        j = self.job
        has = j >= 0

        def col(name: str) -> np.ndarray:  # the query's batch's value (batches are rows by job)
            out = np.full(j.size, np.nan)
            if len(b):
                out[has] = b[name].to_numpy(float)[j[has]]
            return out

        served = res.model >= 0
        return pd.DataFrame({
            "arrival": res.arrival, "seen": self.seen, "decided": res.start, "sent": col("sent_ms"),
            "w_recv": col("w_recv_ms"), "w_start": col("w_start_ms"), "w_end": col("w_end_ms"),
            "reply": res.finish, "job": j, "model": res.model.astype(np.int64), "batch": res.bsize,
            "planned": col("planned_ms"), "margin": col("margin_ms"), "busy": col("busy"),
            "dropped": ~served & ~self.cut, "cut": self.cut, "on_time": res.on_time})


def run_real(pool, cfg: ServingConfig, arrivals_ms: np.ndarray, *,
             lead_s: float = 0.2) -> RealRun:
    """Serve ``arrivals_ms`` (sorted, ms from the start) for real on ``pool`` under ``cfg``'s
    policy (module doc). The pool's models must include the zoo's; ``cfg.workers`` must equal the
    pool's size. Returns the per-query record."""
    dec = Decider(cfg)
    zoo = cfg.zoo
    K = cfg.workers
    require(K == pool.workers, "workers", K, f"must equal the pool's size ({pool.workers})")
    missing = [m for m in zoo.names if m not in pool.models]
    require(not missing, "profile", missing, "models the workers do not hold: " + ", ".join(pool.models))
    require(zoo.max_batch <= pool.max_batch, "max_batch", zoo.max_batch,
            f"must be at most the workers' largest batch ({pool.max_batch})")
    wmodel = [pool.models.index(m) for m in zoo.names]  # zoo index -> the workers' index
    arr = np.ascontiguousarray(arrivals_ms, dtype=np.float64)
    require(arr.ndim == 1 and arr.size >= 1 and bool(np.all(np.isfinite(arr)))
            and bool(np.all(np.diff(arr) >= 0)) and arr[0] >= 0, "arrivals_ms", f"<{arr.size} times>",
            "must be finite sorted times >= 0 (ms)")
    n = arr.size
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    model = np.full(n, -1, np.int16)
    bsize = np.zeros(n, np.int32)
    seen = np.full(n, np.nan)
    cut = np.zeros(n, bool)
    jobof = np.full(n, -1, np.int64)
    busy = [False] * K
    members: dict[int, list] = {}
    rows: list[dict] = []
    queue: deque = deque()
    slo = cfg.slo_ms
    conn_of = {id(c): w for w, c in enumerate(pool.conns)}
    t0 = time.perf_counter() + lead_s

    def clock() -> float:
        return (time.perf_counter() - t0) * 1000.0

    state = {"idle": K, "i": 0, "job": 0}

    lat = zoo.latency_ms

    def dispatch(w: int) -> None:
        now = clock()
        dropped, m, b, slack, p = dec.decide(now, arr, queue, state["i"], state["idle"], w)
        for j in dropped:
            start[j] = now
        if b == 0:
            return
        job = state["job"]
        state["job"] += 1
        batch = [queue.popleft() for _ in range(b)]
        sent = clock()  # handed to the pipe (read before: the worker may have it before send returns)
        pool.conns[w].send(("run", job, wmodel[m], b))
        for j in batch:
            start[j] = now
            model[j] = m
            bsize[j] = b
            jobof[j] = job
        members[job] = batch
        busy[w] = True
        state["idle"] -= 1
        planned = float(lat[m, min(b, lat.shape[1]) - 1])
        rows.append({"job": job, "worker": w, "time_ms": now, "slack_ms": slack,
                     "queue_len": b + len(queue), "idle": state["idle"], "level": p, "model": m,
                     "batch": b, "ran_model": -1, "ran_batch": 0, "exec_ms": np.nan,
                     "finish_ms": np.nan, "sent_ms": sent,
                     "planned_ms": planned, "margin_ms": slack - planned, "busy": K - state["idle"],
                     "w_recv_ms": np.nan, "w_start_ms": np.nan, "w_end_ms": np.nan})

    while time.perf_counter() < t0:
        time.sleep(0.001)
    w_start = time.perf_counter()
    # A real-time loop in Python: it waits on the workers' pipes between events, so its speed is
    # the dispatcher's own overhead, which the run measures (``seen``, ``lag_ms``), not a hot loop.
    while True:
        # completions: the freed worker decides at once (the engine's rule)
        for c in wait([pool.conns[w] for w in range(K) if busy[w]], timeout=0):
            w = conn_of[id(c)]
            msg = pool.recv(w)
            now = clock()
            _, job, ran_m, ran_b, exec_ms, *stamps = msg
            for j in members.pop(job):
                finish[j] = now
            r = rows[job]
            r.update(ran_model=zoo.names.index(pool.models[ran_m]), ran_batch=ran_b, exec_ms=exec_ms,
                     finish_ms=now)
            if len(stamps) == 3:  # the worker's clock readings (perf_counter s) on ours
                r.update(w_recv_ms=(stamps[0] - t0) * 1000.0, w_start_ms=(stamps[1] - t0) * 1000.0,
                         w_end_ms=(stamps[2] - t0) * 1000.0)
            busy[w] = False
            state["idle"] += 1
            if queue:
                dispatch(w)
        # arrivals due: each one joins the queue and the lowest-index idle worker decides
        now = clock()
        while state["i"] < n and arr[state["i"]] <= now:
            j = state["i"]
            queue.append(j)
            seen[j] = now
            state["i"] += 1
            if state["idle"] > 0:
                dispatch(busy.index(False))
            now = clock()
        if state["i"] >= n:
            if queue and arr[queue[-1]] + slo < clock():  # all late: misses whatever happens next
                now = clock()
                for j in queue:
                    start[j] = now
                    cut[j] = True
                queue.clear()
            if not queue and state["idle"] == K:
                break
        # sleep until the next arrival or a completion (poll's timeout is in whole ms: spin the last one)
        left = (arr[state["i"]] - clock()) / 1000.0 if state["i"] < n else 0.05
        timeout = left if left > 0.001 else 0.0
        ready = [pool.conns[w] for w in range(K) if busy[w]]
        if ready:
            wait(ready, timeout=timeout)
        elif timeout > 0:
            time.sleep(timeout)
    wall = time.perf_counter() - w_start
    res = Result(cfg, arr, start, finish, model, bsize, len(rows))
    cols = ["job", "worker", "time_ms", "slack_ms", "queue_len", "idle", "level", "model", "batch",
            "ran_model", "ran_batch", "exec_ms", "finish_ms", "sent_ms", "planned_ms",
            "margin_ms", "busy", "w_recv_ms", "w_start_ms", "w_end_ms"]
    return RealRun(res, pd.DataFrame(rows, columns=cols), seen, cut, jobof, wall)


# ------------------------------------------------------------------------------ the comparison

def compare(run: RealRun, *, seed: int = 0, warmup: float = 0.1) -> dict:
    """Measured against simulated on the same arrivals and configuration (the profile measured
    here, deterministic ``l(m, b)`` = p95 as the chapter runs it; and drawn from the measured
    spread, ``service="jitter"``), judged as the chapter judges a run (:func:`.contenders.judge`,
    after a ``warmup`` share). Shares are 0..1; ``error_on_time_points`` is measured − simulated
    in percentage points, ``error_accuracy_points`` likewise for the mean accuracy of on-time
    queries (%)."""
    cfg = run.result.config
    slo = cfg.slo_ms
    real = judge(run.result, slo, warmup)
    sim = judge(simulate(cfg, arrivals=run.result.arrival, seed=seed), slo, warmup)
    jit = judge(simulate(replace(cfg, service="jitter"), arrivals=run.result.arrival, seed=seed), slo, warmup)
    k = int(warmup * run.result.arrival.size)
    lag = run.lag_ms[k:]
    over = (run.result.latency - slo)[k:]  # how late the served-late queries were (ms)
    with np.errstate(invalid="ignore"):
        over = over[np.isfinite(over) & (over > 0)]
    b = run.batches
    return {
        "queries": int(run.result.arrival.size - k),
        "measured_on_time": real["attainment"], "simulated_on_time": sim["attainment"],
        "error_on_time_points": 100.0 * (real["attainment"] - sim["attainment"]),
        "measured_accuracy": real["accuracy_served"], "simulated_accuracy": sim["accuracy_served"],
        "error_accuracy_points": real["accuracy_served"] - sim["accuracy_served"],
        "simulated_jitter_on_time": jit["attainment"],
        "error_jitter_on_time_points": 100.0 * (real["attainment"] - jit["attainment"]),
        "measured_dropped": real["dropped"], "simulated_dropped": sim["dropped"],
        "measured_mean_batch": real["mean_batch"], "simulated_mean_batch": sim["mean_batch"],
        "measured_p99_ms": real["p99_latency_ms"], "simulated_p99_ms": sim["p99_latency_ms"],
        "measured_served_late": real["served_late"], "simulated_served_late": sim["served_late"],
        "late_by_median_ms": float(np.median(over)) if over.size else 0.0,
        "cut": int(run.cut[k:].sum()),
        "lag_p99_ms": float(np.nanpercentile(lag, 99)) if lag.size else float("nan"),
        "exec_over_profile": float(np.nanmedian(
            b["exec_ms"].to_numpy() / cfg.zoo.latency_ms[b["model"].to_numpy(), b["batch"].to_numpy() - 1]))
        if len(b) else float("nan"),
        "wall_s": run.wall_s,
    }


# ------------------------------------------------------------------------------ near the deadlines

def pick_slo(name: str, zoo: Zoo, workers: int, rate_qps: float, arrivals_ms: np.ndarray, *,
             ref_slo_ms: float, target: float = 0.9, band: tuple[float, float] = (0.5, 0.99),
             factors=None, seed: int = 0) -> tuple[float, pd.DataFrame]:
    """The SLO at which contender ``name`` runs near its deadlines: the simulator (the profile's
    p95, as :func:`compare` simulates) serves ``arrivals_ms`` at ``rate_qps`` under each SLO
    ``ref_slo_ms x factors`` (default: 25 steps from 0.2 to 3, geometric; those at or below the
    fastest model's batch-1 latency left out), and the SLO whose simulated share on time lies in
    ``band`` closest to ``target`` is returned, with the curve (``slo_ms``, ``simulated_on_time``,
    ``in_band``, ``chosen``). With none in the band, the one nearest to it. Pass arrivals the
    scored runs do not use, so that the point is not chosen on the runs that score it."""
    lo, hi = (float(x) for x in band)
    require(0.0 <= lo < hi <= 1.0, "band", band, "must be (low, high) shares with 0 <= low < high <= 1")
    require(lo <= target <= hi, "target", target, f"must lie in the band [{lo:g}, {hi:g}]")
    f = np.geomspace(0.2, 3.0, 25) if factors is None else np.asarray(factors, float)
    floor = float(zoo.latency_ms[:, 0].min())
    slos = [float(round(ref_slo_ms * x, 3)) for x in f if ref_slo_ms * x > floor]
    require(len(slos) >= 1, "factors", factors, f"leave no SLO above the fastest batch-1 latency ({floor:g} ms)")
    on = []
    for slo in slos:
        cfg = real_contender(name, zoo, workers, slo, rate_qps)
        on.append(judge(simulate(cfg, arrivals=arrivals_ms, seed=seed), slo)["attainment"])
    on = np.asarray(on)
    inside = (on >= lo) & (on <= hi)
    dist = np.where(inside, np.abs(on - target), 1.0 + np.maximum(lo - on, on - hi))
    k = int(np.argmin(dist))
    curve = pd.DataFrame({"slo_ms": slos, "simulated_on_time": on, "in_band": inside,
                          "chosen": np.arange(len(slos)) == k})
    return slos[k], curve


def informative(measured, simulated) -> np.ndarray:
    """Runs that inform the on-time error: not every query on time on both sides, nor none."""
    m, s = np.asarray(measured, float), np.asarray(simulated, float)
    return ~(((m >= 1.0) & (s >= 1.0)) | ((m <= 0.0) & (s <= 0.0)))


def error_summary(runs: pd.DataFrame, by=("contender",), level: float = 0.95) -> pd.DataFrame:
    """Simulated minus measured share on time (percentage points) over the informative runs of
    ``runs`` (rows of :func:`compare`, one per seed; :func:`informative`), per ``by`` group and
    over all (``by`` columns "all"): runs, informative runs, mean, sample sd and the two-sided
    ``level`` t interval of the mean, ``mean ± t_{(1+level)/2, n-1} s / sqrt(n)`` (the runs are
    independent seeds; NaN below 2 informative runs). Also for the simulation that draws service
    times from the measured spread (``..._spread``)."""
    from scipy import stats

    require(0.0 < level < 1.0, "level", level, "must be a confidence level in (0, 1)")
    by = list(by)
    df = runs.copy()
    df["_info"] = informative(df["measured_on_time"], df["simulated_on_time"])
    df["_err"] = 100.0 * (df["simulated_on_time"] - df["measured_on_time"])
    df["_err_spread"] = 100.0 * (df["simulated_jitter_on_time"] - df["measured_on_time"])

    def one(g: pd.DataFrame) -> dict:
        inf = g[g["_info"]]
        n = len(inf)
        row = {"runs": len(g), "informative": n}
        for col, tag in (("_err", ""), ("_err_spread", "_spread")):
            x = inf[col].to_numpy(float)
            mean = float(x.mean()) if n else float("nan")
            sd = float(x.std(ddof=1)) if n >= 2 else float("nan")
            half = float(stats.t.ppf(0.5 + level / 2.0, n - 1) * sd / np.sqrt(n)) if n >= 2 else float("nan")
            row.update({f"error{tag}_mean": mean, f"error{tag}_sd": sd, f"error{tag}_halfwidth": half,
                        f"error{tag}_low": mean - half, f"error{tag}_high": mean + half})
        return row

    rows = [{**dict(zip(by, key if isinstance(key, tuple) else (key,))), **one(g)}
            for key, g in df.groupby(by, sort=False)] if by else []
    rows.append({**{c: "all" for c in by}, **one(df)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ where the time goes

#: the segments of a served query's measured latency, ``(label, from, to)`` on
#: :meth:`RealRun.timestamps`; the simulator charges the queue (``seen`` -> ``decided``, its
#: wait) and the model call (``l(m, b)``), nothing else
SEGMENTS = (
    ("arrival -> seen by the dispatcher (timer, loop)", "arrival", "seen"),
    ("seen -> its batch decided (queue in the dispatcher)", "seen", "decided"),
    ("decided -> job handed to the pipe (decision code)", "decided", "sent"),
    ("handed to the pipe -> worker received (pipe)", "sent", "w_recv"),
    ("worker received -> model call begins", "w_recv", "w_start"),
    ("model call (execution)", "w_start", "w_end"),
    ("model call above the profile's p95 l(m, b)", "planned", "w_exec"),
    ("model call ends -> reply received (pipe, dispatcher loop)", "w_end", "reply"),
    ("total: arrival -> reply", "arrival", "reply"),
)


def attribution(pairs, slo_ms: float | None = None, warmup: float = 0.1) -> pd.DataFrame:
    """Where the measured latency goes, against the simulator, pooled over ``pairs`` of
    ``(RealRun, simulated Result)`` on the same arrivals (the queries after the first ``warmup``
    share of each run): per :data:`SEGMENTS` row, the measured mean and p99 over served queries
    (ms), the simulated mean of what the simulator charges for it (its queue wait, its
    ``l(m, b)``, its total; 0 for the rest), their difference, and ``late it alone explains``:
    the measured late served queries that the segment alone makes late (latency minus the
    segment within the SLO; a first-order count: it ignores the queueing a slower segment
    causes downstream), with its share of all measured misses. Two last rows count the misses
    (``measured count``, ``simulated count``): queries late or dropped, and dropped by the policy."""
    meas, sims = [], []
    for run, sim in pairs:
        ts = run.timestamps()
        k = int(warmup * len(ts))
        ts = ts.iloc[k:].copy()
        ts["slo"] = run.result.config.slo_ms if slo_ms is None else slo_ms
        meas.append(ts)
        served = sim.served[k:]
        sims.append(pd.DataFrame({"wait": (sim.start - sim.arrival)[k:][served],
                                  "exec": (sim.finish - sim.start)[k:][served],
                                  "total": (sim.finish - sim.arrival)[k:][served]}))
        sims[-1].attrs["missed"] = int((~sim.on_time[k:]).sum())
        sims[-1].attrs["dropped"] = int((~served).sum())
    ts = pd.concat(meas, ignore_index=True)
    sm = pd.concat(sims, ignore_index=True)
    served = ts["reply"].notna().to_numpy()
    s = ts[served]
    lat = (s["reply"] - s["arrival"]).to_numpy()
    late = lat > s["slo"].to_numpy() + DEADLINE_TOL_MS
    missed = int((~ts["on_time"]).sum())
    slo = s["slo"].to_numpy() + DEADLINE_TOL_MS
    charged = {("seen", "decided"): sm["wait"].mean(), ("w_start", "w_end"): sm["exec"].mean(),
               ("arrival", "reply"): sm["total"].mean()}  # what the simulator charges; 0 elsewhere
    rows = []
    for label, a, b in SEGMENTS:
        x = ((s["w_end"] - s["w_start"] - s["planned"]) if b == "w_exec" else (s[b] - s[a])).to_numpy()
        simx = charged.get((a, b), 0.0)
        ok = np.isfinite(x)
        # without this segment the query would have been on time (the total: every late query)
        alone = int((late & ok & (lat - np.where(ok, x, 0.0) <= slo)).sum())
        rows.append({"segment": label,
                     "measured mean (ms)": float(np.mean(x[ok])) if ok.any() else float("nan"),
                     "measured p99 (ms)": float(np.percentile(x[ok], 99)) if ok.any() else float("nan"),
                     "simulated mean (ms)": float(simx),
                     "measured - simulated (ms)": (float(np.mean(x[ok])) - float(simx)) if ok.any() else float("nan"),
                     "late it alone explains": alone,
                     "share of measured misses": alone / missed if missed else float("nan")})
    n_sim_missed = sum(d.attrs["missed"] for d in sims)
    n_sim_dropped = sum(d.attrs["dropped"] for d in sims)
    dropped = int(ts["dropped"].sum() + ts["cut"].sum())
    rows.append({"segment": "queries missed (late or dropped)", "share of measured misses": 1.0 if missed else float("nan"),
                 "measured count": missed, "simulated count": n_sim_missed})
    rows.append({"segment": "of which dropped by the policy (or cut)",
                 "share of measured misses": dropped / missed if missed else float("nan"),
                 "measured count": dropped, "simulated count": n_sim_dropped})
    return pd.DataFrame(rows)


def execution_table(runs) -> pd.DataFrame:
    """Each executed batch's model-call time over the profile's p95 for its model and size
    (``exec / l(m, b)``), pooled over ``runs`` (:class:`RealRun`): by batch size (batching
    overhead) and by the workers busy when it started, itself included (contention): batches,
    median and p95 ratio, and the share of batches slower than the p95 (5 % if the profile held)."""
    b = pd.concat([r.batches for r in runs], ignore_index=True)
    b = b[b["exec_ms"].notna()]
    b = b.assign(ratio=b["exec_ms"] / b["planned_ms"])
    rows = []
    for by in ("batch", "busy"):
        for key, g in b.groupby(by):
            r = g["ratio"].to_numpy(float)
            rows.append({"by": "batch size" if by == "batch" else "busy workers", "value": int(key),
                         "batches": len(g), "median exec / p95": float(np.median(r)),
                         "p95 exec / p95": float(np.percentile(r, 95)),
                         "share above the p95": float((r > 1.0).mean())})
    return pd.DataFrame(rows)


def clock_check(n: int = 200, sleep_s: float = 0.0005) -> dict:
    """The dispatcher's timer as measured here: ``perf_counter``'s stated resolution, the
    smallest step between two readings, and how far ``time.sleep(sleep_s)`` overshoots (median
    and p99, ms): the loop sleeps between events, so its overshoot delays what it sees."""
    import time as _t

    info = _t.get_clock_info("perf_counter")
    steps = []
    for _ in range(n):
        a = _t.perf_counter()
        b = _t.perf_counter()
        while b == a:
            b = _t.perf_counter()
        steps.append(b - a)
    over = []
    for _ in range(n):
        a = _t.perf_counter()
        _t.sleep(sleep_s)
        over.append((_t.perf_counter() - a - sleep_s) * 1000.0)
    return {"clock_resolution_s": float(info.resolution), "clock_step_min_s": float(min(steps)),
            "sleep_overshoot_median_ms": float(np.median(over)),
            "sleep_overshoot_p99_ms": float(np.percentile(over, 99))}
