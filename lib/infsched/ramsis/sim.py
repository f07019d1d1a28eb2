"""Fast simulators of the two serving systems of the RAMSIS paper, compiled with numba.

* :func:`simulate_ramsis` (spec §2.11, §3): central arrivals are sent round-robin to ``K``
  workers (arrival ``i`` to worker ``i mod K``); each worker serves its own FIFO queue one batch at
  a time, non-preemptively, and looks its action up in a
  :class:`~infsched.ramsis.policy.PolicyTable` at every decision.
* :func:`simulate_central` (spec §4): the load-granular baselines (Jellyfish+, ModelSwitching).
  One central FIFO queue; at every instant the idle workers, in index order, each take
  ``min(queue length, cap)`` queries from its head and run the model of the per-load table
  (:class:`~infsched.ramsis.policy.BaselineTable`).

Semantics shared by both engines and by the simpy reference (:mod:`infsched.ramsis.reference`):

* Time in ms, loads in QPS. A query arriving at ``t`` has deadline ``t + SLO`` and *violates*
  iff its completion time is later than that (spec §1 rule 4, §3). No query is dropped.
* **Decisions happen at instants.** At an instant ``t`` every arrival with time ``≤ t`` is
  already queued and every batch that completes at ``≤ t`` has freed its worker; then decisions
  are taken (RAMSIS: the idle worker; baselines: idle workers in index order). With continuous
  arrival times ties have probability zero; the rule only fixes what happens if they occur.
* **RAMSIS decision** (§2.11): ``n`` = queue length, slack = ``SLO − (t − arrival of the head)``.
  ``n > N``: the fallback model on all ``n`` queries. Otherwise
  ``j = policy.slack_index(slack)`` and the action is ``(model[p, n, j], batch[p, n, j])``; the
  first ``batch`` queries are served.
* **Policy in force** ``p``: with ``load_qps`` given, the policy of that constant load (the
  "perfect monitor" of §7.2). Otherwise the load monitor of §1 rule 7: the estimate is the number
  of central arrivals in ``(t − 500 ms, t]`` divided by 0.5 s, and ``p`` the lowest grid load
  ``≥`` the estimate, or the highest grid load above the grid.
* **Latency** ``l(m, b)`` is the profile's p95 table, extrapolated linearly beyond its largest
  batch ``B``: ``l(m, B) + (b − B)·slope(m)`` with ``slope(m)`` the secant through batch 1 and
  batch ``B`` (:meth:`infsched.profiles.Profile.extrapolation_slope`, rule ``"secant"``). This is
  our rule, not the artifact's: the artifact fits a least-squares line through every profiled
  batch size and uses its values (``profile_utils.py``); ``Profile.latency_table(b_max,
  extrapolation="lstsq")`` gives that rule for comparison. Only the fallback batches above
  ``N = B`` use it. With ``latency="sampled"``
  each batch takes ``l(m, b)`` times a factor drawn by inverse CDF from the profile's quantile
  spread (piecewise linear through ``QUANTILE_LEVELS``; batches beyond ``B`` use the spread at
  ``B``). One uniform per query is pre-drawn in arrival order from the ``rng`` passed in, and a
  batch uses the uniform of its first query: so the draws do not depend on the order in which
  the engine visits workers, and the reference consumes the very same numbers.
* **End of run: every arrival is served and counted.** The run continues after the last arrival
  until every queue is empty, so the metrics cover all arrivals (no survivor bias under
  overload). The artifact instead drops the queries still queued when arrivals stop (§3); how
  many those are is reported as ``pending_at_end`` (queries dispatched after the last arrival).

Metrics are over served queries: the violation rate, the accuracy per satisfied query (mean
accuracy of the queries that met their deadline, §1 rule 5), per-model query, satisfied and
batch counts, the mean batch size, how many batches took the whole queue (``full_batches``, Fig. 11),
and mean wait and response times. With ``record=True`` the
per-query worker, model, batch (index of the batch's first query), dispatch and completion times
come back too; the tests compare them with the reference query by query.

RAMSIS workers never interact (§3, "equivalence trick"), so its engine simulates worker by
worker: worker ``k`` sees central arrivals ``k, k + K, …``; the load monitor still counts the
central stream (two galloping pointers into it per worker). The baselines run one event loop
with a min-heap of busy workers and a min-heap of idle worker indices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from infsched.des import heap_pop, heap_push
from infsched.errors import ConfigError, as_float, config_error, one_of, require
from infsched.ramsis.policy import BaselineTable, PolicyTable

__all__ = [
    "LATENCY_MODES",
    "MONITOR_WINDOW_MS",
    "SimResult",
    "simulate_ramsis",
    "simulate_central",
    "batch_latency",
    "spread_factor",
    "check_policy",
]

LATENCY_MODES = ("p95", "sampled")
#: the load monitor's window (spec §1 rule 7)
MONITOR_WINDOW_MS = 500.0
#: quantile levels of ``Profile.spread`` (kept here too so the engine does not need the profile
#: module at import time; checked against the profile's own constant when it has one)
QUANTILE_LEVELS = (0.0, 0.5, 0.95, 0.99, 1.0)


# ============================================================================ shared arithmetic
# Plain Python functions, compiled below for the engines; the simpy reference calls the Python
# versions, so both sides do the same floating-point operations.

def batch_latency(lat: np.ndarray, slope: np.ndarray, m: int, b: int) -> float:
    """``l(m, b)`` in ms: the p95 table for ``b ≤ B``, linear extrapolation beyond (spec §3)."""
    B = lat.shape[1]
    if b <= B:
        return lat[m, b - 1]
    return lat[m, B - 1] + (b - B) * slope[m]


def spread_factor(u: float, q: np.ndarray, levels: np.ndarray) -> float:
    """Inverse CDF at ``u`` of the piecewise-linear distribution with quantiles ``q`` at
    ``levels`` (``levels[0] = 0``, ``levels[-1] = 1``); the same arithmetic as ``np.interp``."""
    L = levels.shape[0]
    j = 0
    while j < L - 2 and u >= levels[j + 1]:
        j += 1
    slope = (q[j + 1] - q[j]) / (levels[j + 1] - levels[j])
    return slope * (u - levels[j]) + q[j]


_batch_latency = njit(cache=True)(batch_latency)
_spread_factor = njit(cache=True)(spread_factor)


@njit(cache=True)
def _advance(arr, start, x):
    """First index ``i ≥ start`` with ``arr[i] > x`` (``arr`` sorted, ``arr[start-1] ≤ x``),
    by galloping then bisection: O(log gap)."""
    n = arr.shape[0]
    if start >= n or arr[start] > x:
        return start
    lo = start                          # arr[lo] <= x
    step = 1
    hi = start + 1
    while hi < n and arr[hi] <= x:
        lo = hi
        step *= 2
        hi = lo + step
    if hi > n:
        hi = n
    while hi - lo > 1:                   # arr[lo] <= x < arr[hi] (or hi == n)
        mid = (lo + hi) >> 1
        if arr[mid] <= x:
            lo = mid
        else:
            hi = mid
    return hi


@njit(cache=True)
def _lookup(loads, est):
    """Lowest grid load ≥ ``est``, else the highest (``PolicyTable.lookup``)."""
    p = np.searchsorted(loads, est)          # side="left"
    P = loads.shape[0]
    return p if p < P else P - 1


@njit(cache=True)
def _serve(arr, q0, stride, b, m, now, comp, slo, t_last, counts, stats,
           record, r_worker, w, r_model, r_head, r_dispatch, r_completion):
    """Book-keeping of one batch: queries ``q0, q0 + stride, …`` (``b`` of them)."""
    counts[m, 2] += 1
    counts[m, 0] += b
    sat = 0
    for i in range(b):
        q = q0 + i * stride
        a = arr[q]
        if comp <= a + slo:
            sat += 1
        stats[0] += comp - a
        stats[1] += now - a
        if record:
            r_worker[q] = w
            r_model[q] = m
            r_head[q] = q0
            r_dispatch[q] = now
            r_completion[q] = comp
    counts[m, 1] += sat
    if now > t_last:
        stats[2] += b


@njit(cache=True)
def _ramsis_kernel(arr, K, slo, lat, slope, sampled, spread, levels, u,
                   grid, loads, pmodel, pbatch, fallback, const_p, window,
                   counts, stats, record, r_worker, r_model, r_head, r_dispatch, r_completion):
    """RAMSIS, worker by worker (spec §2.11). ``const_p < 0`` selects the load monitor."""
    n = arr.shape[0]
    if n == 0:
        return
    N = pmodel.shape[1] - 1
    B = lat.shape[1]
    t_last = arr[n - 1]
    per_s = window / 1000.0
    for k in range(min(K, n)):
        nk = (n - k + K - 1) // K           # worker k's arrivals: k, k + K, ... < n
        head = 0
        tail = 0
        t_free = -np.inf
        hi = 0
        lo = 0
        while head < nk:
            q0 = k + head * K
            a_head = arr[q0]
            now = t_free if t_free > a_head else a_head
            while tail < nk and arr[k + tail * K] <= now:
                tail += 1
            nq = tail - head
            if const_p >= 0:
                p = const_p
            else:
                hi = _advance(arr, hi, now)
                lo = _advance(arr, lo, now - window)
                p = _lookup(loads, (hi - lo) / per_s)
            if nq > N:
                m = fallback
                b = nq
            else:
                slack = slo - (now - a_head)
                j = np.searchsorted(grid, slack, side="right") - 1
                if j < 0:
                    j = 0
                m = pmodel[p, nq, j]
                b = pbatch[p, nq, j]
            if b == nq:
                stats[3] += 1
            lt = _batch_latency(lat, slope, m, b)
            if sampled:
                bb = b if b < B else B
                lt = lt * _spread_factor(u[q0], spread[m, bb - 1], levels)
            comp = now + lt
            _serve(arr, q0, K, b, m, now, comp, slo, t_last, counts, stats,
                   record, r_worker, k, r_model, r_head, r_dispatch, r_completion)
            head += b
            t_free = comp


@njit(cache=True)
def _central_kernel(arr, K, slo, lat, slope, sampled, spread, levels, u,
                    loads, tmodel, tcap, const_p, window,
                    counts, stats, record, r_worker, r_model, r_head, r_dispatch, r_completion):
    """The central-queue baselines (spec §4). ``const_p < 0`` selects the load monitor."""
    n = arr.shape[0]
    if n == 0:
        return
    B = lat.shape[1]
    t_last = arr[n - 1]
    per_s = window / 1000.0
    # idle workers: a min-heap on the worker index (keys = values); busy: min-heap on completion
    it = np.arange(K).astype(np.float64)
    iw = np.arange(K)
    ni = K
    bt = np.empty(K)
    bw = np.empty(K, np.int64)
    nb = 0
    head = 0
    tail = 0
    lo = 0
    while head < n:
        if head == tail:
            now = arr[tail]                    # queue empty: the next instant is an arrival
        else:
            now = bt[0]                        # queue waiting, all busy: the next completion
        while tail < n and arr[tail] <= now:
            tail += 1
        while nb > 0 and bt[0] <= now:
            w = bw[0]
            nb = heap_pop(bt, bw, nb)
            ni = heap_push(it, iw, ni, float(w), w)
        if ni == 0:
            continue
        if const_p >= 0:
            p = const_p
        else:
            lo = _advance(arr, lo, now - window)
            p = _lookup(loads, (tail - lo) / per_s)
        m = tmodel[p]
        cap = tcap[p]
        while head < tail and ni > 0:
            w = iw[0]
            ni = heap_pop(it, iw, ni)
            b = tail - head
            if b > cap:
                b = cap
            else:
                stats[3] += 1
            lt = _batch_latency(lat, slope, m, b)
            if sampled:
                bb = b if b < B else B
                lt = lt * _spread_factor(u[head], spread[m, bb - 1], levels)
            comp = now + lt
            _serve(arr, head, 1, b, m, now, comp, slo, t_last, counts, stats,
                   record, r_worker, w, r_model, r_head, r_dispatch, r_completion)
            head += b
            nb = heap_push(bt, bw, nb, comp, w)


# ============================================================================ results

@dataclass(frozen=True, eq=False)
class SimResult:
    """Metrics of one run (every arrival served, see the module docstring).

    ``queries``, ``satisfied`` and ``batches`` are per-model counts ``(M,)``; ``pending_at_end``
    counts queries dispatched after the last arrival (the ones the artifact would not count);
    ``full_batches`` the batches that took every query queued at their decision.
    The per-query arrays (``record=True`` only, else ``None``) are indexed by arrival:
    ``worker``, ``model``, ``batch_head`` (index of the first query of the batch),
    ``dispatch`` and ``completion`` (ms).
    """

    system: str
    models: tuple[str, ...]
    model_accuracy: np.ndarray
    slo_ms: float
    workers: int
    served: int
    violations: int
    queries: np.ndarray
    satisfied: np.ndarray
    batches: np.ndarray
    pending_at_end: int
    full_batches: int
    mean_response_ms: float
    mean_wait_ms: float
    arrivals: np.ndarray | None = None
    worker: np.ndarray | None = None
    model: np.ndarray | None = None
    batch_head: np.ndarray | None = None
    dispatch: np.ndarray | None = None
    completion: np.ndarray | None = None

    @property
    def violation_rate(self) -> float:
        """Served queries that missed their deadline / served queries (§1 rule 5)."""
        return self.violations / self.served if self.served else float("nan")

    @property
    def accuracy(self) -> float:
        """Accuracy per satisfied query, % (§1 rule 5); NaN if no query met its deadline."""
        s = int(self.satisfied.sum())
        return float(self.satisfied @ self.model_accuracy / s) if s else float("nan")

    @property
    def mean_accuracy(self) -> float:
        """Mean accuracy over every served query, late ones included (%)."""
        if not self.served:
            return float("nan")
        return float(self.queries @ self.model_accuracy / self.served)

    @property
    def query_fraction(self) -> np.ndarray:
        """Fraction of served queries run by each model."""
        return self.queries / max(self.served, 1)

    @property
    def batch_fraction(self) -> np.ndarray:
        """Fraction of batches run by each model."""
        return self.batches / max(int(self.batches.sum()), 1)

    @property
    def full_batch_fraction(self) -> float:
        """Fraction of batches that took the whole queue they were cut from (``b = n``; for the
        central baselines, a batch below the cap). Fig. 11's statistic."""
        nb = int(self.batches.sum())
        return self.full_batches / nb if nb else float("nan")

    @property
    def mean_batch(self) -> float:
        """Mean batch size (queries per batch)."""
        nb = int(self.batches.sum())
        return self.served / nb if nb else float("nan")

    def _need_record(self) -> None:
        if self.completion is None:
            raise ConfigError("this result has no per-query arrays: simulate with record=True")

    @property
    def response_ms(self) -> np.ndarray:
        """Per-query response time, completion − arrival (``record=True``)."""
        self._need_record()
        return self.completion - self.arrivals

    @property
    def violated(self) -> np.ndarray:
        """Per-query violation flags (``record=True``)."""
        self._need_record()
        return self.completion > self.arrivals + self.slo_ms

    def summary(self) -> dict[str, Any]:
        """The scalar metrics as a dict (one DataFrame row)."""
        return {"served": self.served, "violation_rate": self.violation_rate,
                "accuracy": self.accuracy, "mean_batch": self.mean_batch,
                "mean_response_ms": self.mean_response_ms, "mean_wait_ms": self.mean_wait_ms,
                "pending_at_end": self.pending_at_end}


# ============================================================================ validation

def _check_arrivals(arrivals_ms) -> np.ndarray:
    try:
        arr = np.ascontiguousarray(arrivals_ms, dtype=np.float64)
    except (TypeError, ValueError):
        raise config_error("arrivals_ms", type(arrivals_ms).__name__,
                           "must be a 1-D array of arrival times in ms") from None
    require(arr.ndim == 1, "arrivals_ms", f"array of shape {arr.shape}",
            "must be a 1-D array of arrival times in ms")
    require(bool(np.all(np.isfinite(arr))), "arrivals_ms", "non-finite values",
            "must be finite")
    bad = np.flatnonzero(np.diff(arr) < 0)
    if bad.size:
        i = int(bad[0])
        raise config_error("arrivals_ms", f"unsorted (arrivals_ms[{i + 1}] = {arr[i + 1]:g} < "
                           f"arrivals_ms[{i}] = {arr[i]:g})",
                           "must be sorted in non-decreasing order")
    return arr


def _positive(name: str, value: Any) -> float:
    try:
        v = as_float(value)
    except (TypeError, ValueError):
        raise config_error(name, value, "must be a number") from None
    require(math.isfinite(v) and v > 0, name, value, "must be a finite number > 0")
    return v


def _check_workers(workers: Any) -> int:
    require(isinstance(workers, (int, np.integer)) and not isinstance(workers, bool)
            and workers >= 1, "workers", workers, "must be an integer >= 1")
    return int(workers)


def _profile_arrays(profile, latency: str, rng, n: int):
    """(accuracy, lat, slope, sampled, spread, levels, u) for the kernels."""
    one_of("latency", latency, LATENCY_MODES)
    for attr in ("models", "accuracy", "latency_ms"):
        require(hasattr(profile, attr), "profile", type(profile).__name__,
                f"must be a Profile (with .{attr})")
    # fresh writable copies: one compiled signature whatever flags the profile's arrays carry
    lat = np.array(profile.latency_ms, dtype=np.float64, order="C", copy=True)
    M = len(profile.models)
    require(lat.ndim == 2 and lat.shape[0] == M and lat.shape[1] >= 1, "profile.latency_ms",
            lat.shape, f"must have shape (models={M}, B)")
    require(bool(np.all(np.isfinite(lat)) and np.all(lat > 0)), "profile.latency_ms",
            "non-positive or non-finite entries", "latencies must be finite and > 0")
    slope = np.array(profile.extrapolation_slope(), dtype=np.float64, copy=True).reshape(M)
    require(bool(np.all(np.isfinite(slope)) and np.all(slope >= 0)),
            "profile.extrapolation_slope()", slope, "must be finite and >= 0")
    acc = np.asarray(profile.accuracy, dtype=np.float64).reshape(M)
    levels = np.asarray(QUANTILE_LEVELS, dtype=np.float64)
    if latency == "sampled":
        spread = getattr(profile, "spread", None)
        name = getattr(profile, "name", "this profile")
        require(spread is not None, "latency", latency,
                f"'sampled' needs a profile with a latency spread; {name} has none: "
                "use latency='p95'")
        spread = np.array(spread, dtype=np.float64, order="C", copy=True)
        require(spread.shape == lat.shape + (levels.size,), "profile.spread", spread.shape,
                f"must have shape {lat.shape + (levels.size,)}")
        require(bool(np.all(spread > 0) and np.all(np.diff(spread, axis=-1) >= 0)),
                "profile.spread", "non-increasing or non-positive quantiles",
                "must hold positive, non-decreasing quantiles")
        require(isinstance(rng, np.random.Generator), "rng", rng,
                "latency='sampled' needs a numpy.random.Generator")
        u = rng.random(n)
        sampled = True
    else:
        spread = np.ones((1, 1, levels.size))
        u = np.empty(0)
        sampled = False
    return acc, lat, slope, sampled, spread, levels, u


def _record_arrays(record: bool, n: int):
    if record:
        return (np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64),
                np.full(n, np.nan), np.full(n, np.nan))
    z = np.empty(0, np.int64)
    return z, z, z, np.empty(0), np.empty(0)


def _monitor_window(window: Any) -> float:
    return _positive("monitor_window_ms", window)


def _constant_policy(load_qps, lookup) -> int:
    if load_qps is None:
        return -1
    return int(lookup(_positive("load_qps", load_qps)))


def _result(system, profile, acc, slo, K, arr, counts, stats, record, rec) -> SimResult:
    served = int(counts[:, 0].sum())
    extra = {}
    if record:
        w, m, h, d, c = rec
        extra = dict(arrivals=arr.copy(), worker=w, model=m, batch_head=h, dispatch=d,
                     completion=c)
    return SimResult(
        system=system, models=tuple(profile.models), model_accuracy=acc, slo_ms=slo, workers=K,
        served=served, violations=served - int(counts[:, 1].sum()),
        queries=counts[:, 0].copy(), satisfied=counts[:, 1].copy(), batches=counts[:, 2].copy(),
        pending_at_end=int(stats[2]), full_batches=int(stats[3]),
        mean_response_ms=stats[0] / served if served else float("nan"),
        mean_wait_ms=stats[1] / served if served else float("nan"), **extra)


def check_policy(profile, policy: PolicyTable, slo_ms: float, workers: int) -> None:
    """Raise a ConfigError if ``policy`` does not fit the run (SLO, K, models, batch sizes)."""
    require(isinstance(policy, PolicyTable), "policy", type(policy).__name__,
            "must be an infsched.ramsis.policy.PolicyTable")
    require(bool(np.isclose(policy.slo_ms, slo_ms, rtol=0, atol=1e-9)), "slo_ms", slo_ms,
            f"must equal the SLO the policy was solved for ({policy.slo_ms:g} ms)")
    require(policy.workers == workers, "workers", workers,
            f"must equal the number of workers the policy was solved for ({policy.workers})")
    M = len(profile.models)
    require(0 <= policy.fallback < M, "policy.fallback", policy.fallback,
            f"must be a model index in [0, {M - 1}]")
    mod = policy.model[:, 1:, :]
    bat = policy.batch[:, 1:, :]
    n = np.arange(1, policy.n_max + 1)[None, :, None]
    require(bool(np.all((mod >= 0) & (mod < M))), "policy.model",
            f"indices in [{mod.min()}, {mod.max()}]",
            f"must index the profile's {M} models for every n >= 1")
    require(bool(np.all((bat >= 1) & (bat <= n))), "policy.batch",
            f"values in [{bat.min()}, {bat.max()}]", "must satisfy 1 <= batch[p, n, j] <= n")


# ============================================================================ public API

def simulate_ramsis(profile, policy: PolicyTable, arrivals_ms, *, slo_ms: float, workers: int,
                    load_qps: float | None = None, latency: str = "p95",
                    rng: np.random.Generator | None = None, record: bool = False,
                    monitor_window_ms: float = MONITOR_WINDOW_MS) -> SimResult:
    """Simulate RAMSIS (spec §2.11, §3): round-robin dispatch, per-worker FIFO queues, per-batch
    policy lookup.

    ``arrivals_ms``: sorted central arrival times (ms). ``load_qps``: a known constant load (the
    policy for it is used throughout, §7.2); ``None`` runs the 500 ms load monitor (§1 rule 7).
    ``latency``: ``"p95"`` (deterministic) or ``"sampled"`` (needs ``rng`` and a profile spread).
    ``record=True`` keeps the per-query arrays. Every arrival is served and counted.
    """
    arr = _check_arrivals(arrivals_ms)
    slo = _positive("slo_ms", slo_ms)
    K = _check_workers(workers)
    check_policy(profile, policy, slo, K)
    window = _monitor_window(monitor_window_ms)
    const_p = _constant_policy(load_qps, policy.lookup)
    acc, lat, slope, sampled, spread, levels, u = _profile_arrays(profile, latency, rng, arr.size)
    counts = np.zeros((len(profile.models), 3), np.int64)
    stats = np.zeros(4)
    rec = _record_arrays(bool(record), arr.size)
    _ramsis_kernel(arr, K, slo, lat, slope, sampled, spread, levels, u,
                   policy.grid_ms, policy.loads_qps, policy.model, policy.batch,
                   int(policy.fallback), const_p, window, counts, stats, bool(record), *rec)
    return _result("ramsis", profile, acc, slo, K, arr, counts, stats, bool(record), rec)


def _check_table(profile, table) -> None:
    require(isinstance(table, BaselineTable), "table", type(table).__name__,
            "must be an infsched.ramsis.baselines.BaselineTable")
    M = len(profile.models)
    require(bool(np.all((table.model >= 0) & (table.model < M))), "table.model",
            table.model.tolist(), f"must index the profile's {M} models")


def simulate_central(profile, table: BaselineTable, arrivals_ms, *, slo_ms: float,
                     workers: int, load_qps: float | None = None, latency: str = "p95",
                     rng: np.random.Generator | None = None, record: bool = False,
                     monitor_window_ms: float = MONITOR_WINDOW_MS) -> SimResult:
    """Simulate a load-granular baseline (spec §4): one central FIFO queue, ``workers`` workers.

    At every instant the idle workers, in index order, each take ``min(queue, cap)`` queries and
    run the table's model for the load in force (``load_qps`` if given, else the 500 ms monitor).
    Other arguments as in :func:`simulate_ramsis`.
    """
    arr = _check_arrivals(arrivals_ms)
    slo = _positive("slo_ms", slo_ms)
    K = _check_workers(workers)
    _check_table(profile, table)
    window = _monitor_window(monitor_window_ms)
    const_p = _constant_policy(load_qps, table.lookup)
    acc, lat, slope, sampled, spread, levels, u = _profile_arrays(profile, latency, rng, arr.size)
    counts = np.zeros((len(profile.models), 3), np.int64)
    stats = np.zeros(4)
    rec = _record_arrays(bool(record), arr.size)
    _central_kernel(arr, K, slo, lat, slope, sampled, spread, levels, u,
                    table.loads_qps, table.model, table.cap, const_p, window,
                    counts, stats, bool(record), *rec)
    return _result("central", profile, acc, slo, K, arr, counts, stats, bool(record), rec)
