"""Run the neutral serving simulator and summarise a run (spec headtohead §1–2).

:func:`simulate` draws the arrivals and every random number a run needs from numpy Generators
spawned from one ``SeedSequence(seed)`` (arrivals, routing, service: one child each, so a
policy that routes without randomness leaves the service draws unchanged), calls the compiled
engine, and returns a :class:`Result` holding per-query outcomes. :meth:`Result.summary` gives
the spec's metrics with batch-means confidence intervals (:func:`infsched.metrics.batch_means_ci`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import require
from ..metrics import CI, batch_means_ci
from ..profiles import QUANTILE_LEVELS
from ..workload import poisson_arrivals
from . import engine
from .config import ServingConfig
from .policies import (
    FLEX_FAMILY,
    QUEUES,
    ROUTINGS,
    SELECT_USER,
    SERVICE_DETERMINISTIC,
    SERVICES,
)

__all__ = ["Result", "simulate", "draws"]

#: A served query meets its deadline if its latency is at most SLO + this (ms): the engine
#: tests ``l <= deadline - now`` and ``now + l`` may round one ulp above the deadline.
DEADLINE_TOL_MS = 1e-9


@dataclass(frozen=True, eq=False)
class Result:
    """Per-query outcome of one run (times in ms). ``model`` is -1 for a dropped query.
    ``final_delta`` and ``min_delta`` are TAD's accuracy surplus Δ = Σ (a_i − a*) over the
    routed queries, at the end and its minimum after any arrival, in accuracy points."""

    config: ServingConfig
    arrival: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    model: np.ndarray
    bsize: np.ndarray
    n_batches: int
    final_delta: float = 0.0
    min_delta: float = 0.0
    worker_stats: np.ndarray | None = None

    @property
    def preemptions(self) -> int:
        """Batches preempted (FLEX; 0 for every other policy)."""
        return 0 if self.worker_stats is None else int(self.worker_stats[:, 2].sum())

    def preemption_chain(self) -> tuple[np.ndarray, np.ndarray]:
        """Per worker: the queries of its completed batches and of its preempted batches
        (Shepherd spec claim 6: preempted <= completed / (λ - 1) per worker)."""
        ws = self.worker_stats if self.worker_stats is not None else np.zeros((self.config.workers, 3))
        return ws[:, 0].copy(), ws[:, 1].copy()

    @property
    def served(self) -> np.ndarray:
        return self.model >= 0

    @property
    def latency(self) -> np.ndarray:
        """Arrival to completion, NaN for dropped queries."""
        return self.finish - self.arrival

    @property
    def on_time(self) -> np.ndarray:
        """Served within the deadline (a dropped query is not)."""
        with np.errstate(invalid="ignore"):
            return self.served & (self.latency <= self.config.slo_ms + DEADLINE_TOL_MS)

    def summary(self, warmup: float = 0.1, n_batches: int = 20) -> dict[str, object]:
        """Spec headtohead §2's metrics over the queries after the first ``warmup`` share.

        ``attainment`` (share on time) and ``accuracy_per_arrival`` (on-time queries' accuracy,
        0 for a violation) come with batch-means CIs over consecutive queries; the rest are
        point values: ``accuracy_served`` (mean accuracy of on-time queries), ``goodput_qps``,
        ``mean_latency_ms`` and ``p99_latency_ms`` of served queries, ``dropped`` share.
        """
        require(0 <= warmup < 1, "warmup", warmup, "must be in [0, 1)")
        k = int(warmup * self.arrival.size)
        ok = self.on_time[k:]
        acc = np.where(ok, self.config.zoo.accuracy[np.maximum(self.model[k:], 0)], 0.0)
        lat = self.latency[k:][self.served[k:]]
        span_s = (self.arrival[-1] - self.arrival[k]) / 1000.0
        return {
            "n": int(ok.size),
            "attainment": batch_means_ci(ok.astype(float), n_batches),
            "accuracy_per_arrival": batch_means_ci(acc, n_batches),
            "accuracy_served": float(acc[ok].mean()) if ok.any() else float("nan"),
            "goodput_qps": float(ok.sum() / span_s) if span_s > 0 else float("nan"),
            "mean_latency_ms": float(lat.mean()) if lat.size else float("nan"),
            "p99_latency_ms": float(np.percentile(lat, 99)) if lat.size else float("nan"),
            "dropped": float(1.0 - self.served[k:].mean()),
            "mean_batch": float(self.bsize[k:][self.served[k:]].mean()) if lat.size else float("nan"),
        }

    def wait_ci(self, warmup: float = 0.1, n_batches: int = 20) -> CI:
        """Batch-means CI of the mean wait (arrival to start) of served queries after warm-up."""
        k = int(warmup * self.arrival.size)
        s = self.served[k:]
        return batch_means_ci((self.start - self.arrival)[k:][s], n_batches)


def draws(config: ServingConfig, n: int, seed: int, *, rate_qps: float | None = None,
          arrivals: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(arrivals_ms, service_draws, routing_uniforms)`` of a run; the engine and the simpy
    reference both consume exactly these."""
    arr_rng, route_rng, svc_rng = (np.random.default_rng(s)
                                   for s in np.random.SeedSequence(seed).spawn(3))
    if arrivals is None:
        require(rate_qps is not None, "rate_qps", rate_qps, "give rate_qps (or arrivals)")
        arr = poisson_arrivals(rate_qps / 1000.0, n=n, rng=arr_rng)  # ms
    else:
        arr = np.asarray(arrivals, dtype=float).ravel()
        require(arr.size >= 1 and bool(np.all(np.isfinite(arr))) and bool(np.all(np.diff(arr) >= 0)),
                "arrivals", f"<{arr.size} times>", "must be finite, sorted times in ms")
    svc_code = SERVICES[config.service]
    if svc_code == SERVICE_DETERMINISTIC:
        svc = np.empty(0)
    elif config.service == "exponential":
        svc = svc_rng.standard_exponential(arr.size)  # one per batch (cycled if a policy preempts)
    else:
        svc = svc_rng.random(arr.size)
    # (TAD's routing is per-worker and spends its uniform only when no allowed class is idle)
    needs_u = config.queue == "per-worker" and config.routing not in ("least-loaded", "round-robin")
    u = route_rng.random(arr.size) if needs_u else np.empty(0)
    return arr, svc, u


def simulate(config: ServingConfig, n: int = 100_000, *, rate_qps: float | None = None,
             load: float | None = None, seed: int = 0,
             arrivals: np.ndarray | None = None) -> Result:
    """Simulate ``n`` Poisson queries at ``rate_qps`` (or at ``load`` times the spec's capacity,
    :meth:`ServingConfig.capacity_qps`), or the given ``arrivals`` (ms, sorted) instead."""
    require(isinstance(n, (int, np.integer)) and n >= 1, "n", n, "must be an integer >= 1")
    if arrivals is None:
        require((rate_qps is None) != (load is None), "rate_qps/load", (rate_qps, load),
                "give exactly one of rate_qps (queries/s) or load (share of capacity)")
        if load is not None:
            require(np.isfinite(load) and load > 0, "load", load, "must be > 0")
            rate_qps = load * config.capacity_qps()
        require(np.isfinite(rate_qps) and rate_qps > 0, "rate_qps", rate_qps, "must be > 0")
    arr, svc, u = draws(config, n, seed, rate_qps=rate_qps, arrivals=arrivals)
    zoo = config.zoo
    m = arr.size
    start = np.empty(m)
    finish = np.empty(m)
    model = np.empty(m, np.int16)
    bsize = np.zeros(m, np.int32)  # (RAMSIS's fallback serves a whole queue, past B)
    spread = zoo.spread if zoo.spread is not None else np.ones((1, 1, len(QUANTILE_LEVELS)))
    by_acc = np.argsort(-zoo.accuracy, kind="stable").astype(np.int64)
    lay = config.layout()
    wstat = np.zeros((config.workers, 3), np.int64)
    if config.spec.select == SELECT_USER:  # a reader's policy: its select in the plug-in loop
        from .plugins import get, run_user

        nb = run_user(get(config.policy), arr, config.slo_ms, zoo.latency_ms, by_acc, config.workers,
                      config.queue == "central", ROUTINGS[config.routing], config.max_batch, u,
                      SERVICES[config.service], svc, spread, np.asarray(QUANTILE_LEVELS), start,
                      finish, model, bsize)
        delta = min_delta = 0
    elif config.policy in FLEX_FAMILY:  # FLEX's own event loop (it preempts)
        cap = max([config.max_batch] + [c for _, c in (config.plan or ())])  # sizes the batch arrays
        nb, delta, min_delta = engine.run_flex(
            arr, config.slo_ms, zoo.latency_ms, config.workers, config.model_index, cap,
            SERVICES[config.service], svc, spread, np.asarray(QUANTILE_LEVELS), config.spec.preempt,
            float(config.lam), start, finish, model, bsize, wstat,
            lay["plan_loads"] if lay["plan_loads"].size else None, lay["plan_model"], lay["plan_cap"],
            float(config.monitor_window_ms), config.switch_ms, config.dispatch_ms, config.preempt_ms), 0, 0
    else:
        nb, delta, min_delta = engine.run(
            arr, config.slo_ms, zoo.latency_ms, by_acc, zoo.fastest, config.workers,
            QUEUES[config.queue], ROUTINGS[config.routing], config.spec.select, lay["worker_model"],
            config.max_batch, SERVICES[config.service], svc, spread, np.asarray(QUANTILE_LEVELS), u,
            lay["worker_class"], lay["cls_start"], lay["cls_members"], lay["d"], lay["tup"], lay["cum_p"],
            lay["grid"], lay["pmodel"], lay["pbatch"], int(lay["fallback"]), start, finish, model, bsize,
            lay["plan_loads"] if lay["plan_loads"].size else None, lay["plan_model"], lay["plan_cap"],
            float(config.monitor_window_ms), zoo.slope, config.switch_ms, config.dispatch_ms)
    scale = float(lay["scale"])
    return Result(config, arr, start, finish, model, bsize, int(nb), int(delta) / scale,
                  int(min_delta) / scale, wstat)
