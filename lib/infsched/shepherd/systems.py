"""SHEPHERD, Clockwork and Nexus at one load point (Shepherd §6.2, Figs. 7-9): the workload of
a point, the knapsack upper bound on goodput, HERD's groups, and :func:`run_system`, the sweep
point every load and SLO figure is built from (``_systems_sweep``).
"""

from __future__ import annotations

import hashlib
import inspect

import numpy as np
import pandas as pd

from infsched.errors import require
from infsched.shepherd import herd, nexus, sim, traces
from infsched.shepherd.model import ModelSet, Requests
from infsched.shepherd.profile import PUBLISHED, _profile, profile_models
from infsched.shepherd.scales import Scale
from infsched.store import results_version
from infsched.sweep import default_processes, run_sweep


def _code_version(*objs) -> str:
    src = "".join(inspect.getsource(o) for o in objs)
    return hashlib.sha256(src.encode()).hexdigest()[:12]


SYSTEMS = ("SHEPHERD", "Clockwork", "Nexus")


def knapsack_bound(model_rates, models: ModelSet, slo_ms: float, n_gpus: float) -> float:
    """An upper bound on any scheduler's goodput: each model served at most at its arrival rate
    and at most at its best throughput ``T_k`` (its largest batch within the SLO, back to
    back), GPUs shared fractionally; filled greedily by ``T_k`` (fractional knapsack)."""
    b = models.max_batch(slo_ms)
    with np.errstate(divide="ignore", invalid="ignore"):
        T = np.where(b > 0, 1000.0 * b / models.latency(np.arange(models.n), np.maximum(b, 1)), 0)
    cap, total = float(n_gpus), 0.0
    for k in np.argsort(-T, kind="stable"):
        if T[k] <= 0 or cap <= 0:
            continue
        x = min(float(model_rates[k]), cap * T[k])
        total += x
        cap -= x / T[k]
    return total


def _shepherd_groups(model_rates, models: ModelSet, workers: int, slo_ms: float,
                     g_bar: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """HERD-L's groups for the cluster: (group of each model, GPUs of each group). [ours] When
    Nexus's rule (two batch latencies within the SLO) leaves every model unservable, as a
    measured profile's slow models can at a tight SLO, the needs are sized on the ceiling (the
    largest batch within the SLO, back to back) instead; with no servable model at all, every
    model goes to the first group."""
    if workers <= g_bar:
        return np.zeros(models.n, dtype=np.int64), np.array([workers])
    T = herd.stream_throughput(models, slo_ms)
    need = np.where(T > 0, np.asarray(model_rates) / np.where(T > 0, T, 1), 0.0)
    if not need.sum() > 0:
        b = models.max_batch(slo_ms)
        T = np.where(b > 0, 1000.0 * b / models.latency(np.arange(models.n), np.maximum(b, 1)), 0)
        need = np.where(T > 0, np.asarray(model_rates) / np.where(T > 0, T, 1), 0.0)
        if not need.sum() > 0:
            sizes = [g_bar] * (workers // g_bar) + ([workers % g_bar] if workers % g_bar else [])
            return np.zeros(models.n, dtype=np.int64), np.array(sizes, dtype=np.int64)
    plan = herd.herd_l(need, workers, g_bar)
    return np.asarray(plan.assign, dtype=np.int64), np.asarray(plan.sizes, dtype=np.int64)


def _point_workload(variant: str, rate: float, workers: int, slo_ms: float, seed: int,
                    warmup_s: float, measure_s: float, streams: int, model_set_name: str,
                    instances: bool, profile=PUBLISHED):
    """The models, MAF-synth slice, requests and measured window ``[t0, t1)`` (ms) of one point.
    Arrivals go on for one SLO past the window: a window that ends with the arrivals would be
    followed by a drain in which the GPUs serve only its requests, inflating goodput."""
    ms = profile_models(model_set_name, profile)
    if instances:
        ms = ms.replicate(workers)
    horizon = warmup_s + measure_s + slo_ms / 1000.0
    sl = traces.maf_arrivals(streams, rate, horizon, variant, ms, seed=seed)
    return ms, sl, sl.requests(slo_ms), 1000.0 * warmup_s, 1000.0 * (warmup_s + measure_s)


@results_version(1)
def run_system(system: str, variant: str, rate: float, workers: int, slo_ms: float, seed: int,
               warmup_s: float, measure_s: float, streams: int, lam: float = 3.03,
               model_set_name: str = "cv16", controller_us: float = 0.0,
               g_bar: int = 12, instances: bool = False, profile=PUBLISHED) -> dict:
    """One point of Figs. 7-10: ``system`` serving MAF-synth (``variant``) at ``rate`` req/s on
    ``workers`` GPUs; goodput and utilisation over the measured window, after the warm-up.
    SHEPHERD is HERD-L's groups of at most ``g_bar`` GPUs, each run by FLEX. ``instances``: one
    model instance per GPU (instance k has profile k mod 16; the paper's "#models = #workers"),
    so that a model-stream, which HERD places in one group, never needs more than a group.
    ``profile``: a :class:`ProfileSource` (or ``"published"``), carried by the point so that a
    worker process runs the caller's models and the cache keeps profiles apart."""
    models, sl, req, t0, t1 = _point_workload(variant, rate, workers, slo_ms, seed, warmup_s,
                                              measure_s, streams, model_set_name, instances,
                                              profile)
    lat = np.empty(0)
    if system == "Nexus":
        r = nexus.simulate(req, models, workers, nexus.plan_for_peak(req, models, workers, slo_ms))
        good, util, useful = r.goodput(t0, t1), r.utilization(t0, t1), r.utilization(t0, t1)
        lat = r.latency(t0, t1)
    elif system == "Clockwork":
        r = sim.simulate(req, models, workers, "clockwork", controller_us=controller_us)
        good, util, useful = r.goodput(t0, t1), r.utilization(t0, t1), r.utilization(t0, t1, True)
        w = (r.arrival >= t0) & (r.arrival < t1) & r.served
        lat = r.completion[w] - r.arrival[w]
    else:
        group, sizes = _shepherd_groups(sl.rates.model_rate, models, workers, slo_ms, g_bar)
        good = util = useful = 0.0
        lats = []
        for j, size in enumerate(sizes):
            mask = group[req.model] == j
            if not mask.any():
                continue
            sub = Requests(req.arrival[mask], req.model[mask], req.deadline[mask])
            r = sim.simulate(sub, models, int(size), "flex", lam=lam, controller_us=controller_us)
            good += r.goodput(t0, t1)
            util += r.utilization(t0, t1) * size / workers
            useful += r.utilization(t0, t1, True) * size / workers
            w = (r.arrival >= t0) & (r.arrival < t1) & r.served
            lats.append(r.completion[w] - r.arrival[w])
        lat = np.concatenate(lats) if lats else lat
    # requests arriving in the window may finish up to one SLO after it: the GPUs' time for
    # them is workers × (window + SLO)
    stretch = (t1 - t0 + slo_ms) / (t1 - t0)
    bound = knapsack_bound(np.bincount(req.model[(req.arrival >= t0) & (req.arrival < t1)],
                                       minlength=models.n) / measure_s, models, slo_ms,
                           workers * stretch)
    q = np.quantile(lat, np.linspace(0, 1, 21)) if lat.size else np.full(21, np.nan)
    return {"goodput": good, "utilization": util, "useful_utilization": useful,
            "offered": float(((req.arrival >= t0) & (req.arrival < t1)).sum()) / measure_s,
            "bound": bound, "near_slo": float((lat >= 0.8 * slo_ms).mean()) if lat.size else np.nan,
            **{f"lat_q{5 * i}": float(v) for i, v in enumerate(q)}}


@results_version(1)
def shepherd_group(variant: str, rate: float, workers: int, slo_ms: float, seed: int,
                   warmup_s: float, measure_s: float, streams: int, group: int,
                   lam: float = 3.03, model_set_name: str = "cv16", controller_us: float = 0.0,
                   g_bar: int = 12, instances: bool = False, profile=PUBLISHED) -> dict:
    """Group ``group`` of SHEPHERD's plan for one point of :func:`run_system`: the same workload
    and HERD-L plan, only this group's requests, served by one FLEX. Groups are independent by
    construction, so a large cluster's groups run as separate sweep points, in parallel."""
    models, sl, req, t0, t1 = _point_workload(variant, rate, workers, slo_ms, seed, warmup_s,
                                              measure_s, streams, model_set_name, instances,
                                              profile)
    assign, sizes = _shepherd_groups(sl.rates.model_rate, models, workers, slo_ms, g_bar)
    mask = assign[req.model] == group
    size = int(sizes[group])
    if not mask.any():
        return {"goodput": 0.0, "busy": 0.0, "useful": 0.0, "size": size}
    sub = Requests(req.arrival[mask], req.model[mask], req.deadline[mask])
    r = sim.simulate(sub, models, size, "flex", lam=lam, controller_us=controller_us)
    return {"goodput": r.goodput(t0, t1), "busy": r.utilization(t0, t1) * size,
            "useful": r.utilization(t0, t1, True) * size, "size": size}


def _sim_version() -> str:
    """The cache key of a simulated point: the point functions and every module they run."""
    return _code_version(run_system, shepherd_group, _point_workload, knapsack_bound,
                         _shepherd_groups, profile_models, sim, nexus, traces, herd)


def check_trace_memory(workers: int, rate: float, seconds: float, name: str = "workers") -> None:
    """Refuse (a ConfigError naming ``name``) a point whose request trace cannot fit: ``rate``
    requests/s for ``seconds``, each with its arrival, model, deadline and completion (8 bytes
    each; the engine's other arrays come on top, so this is a lower bound)."""
    from infsched.limits import check_memory

    n = float(rate) * float(seconds)
    check_memory(name, workers, 32.0 * n, f"a trace of {n:.3g} requests ({float(rate):.4g} requests/s "
                 f"for {float(seconds):g} s)")


def check_slo_ms(slo_ms) -> float:
    """An SLO in ms: a finite number > 0, not a string (``'250'`` used to fail in a worker)."""
    require(isinstance(slo_ms, (int, float, np.integer, np.floating))
            and not isinstance(slo_ms, (bool, np.bool_)) and np.isfinite(slo_ms) and slo_ms > 0,
            "slo_ms", slo_ms, "must be a finite number of ms > 0 (the latency SLO)")
    return float(slo_ms)


def _systems_sweep(sc: Scale, points: list[tuple[float, float]], by: str, seed: int,
                   workers: int, lam: float, model_set_name: str,
                   n_jobs: int | None, profile=None) -> pd.DataFrame:
    """SHEPHERD, Clockwork and Nexus at each (rate, SLO) point on both workloads, averaged over
    the scale's seeds and grouped by ``by`` (``"rate"`` or ``"slo_ms"``)."""
    # the caller's names, before any point is built (workers = 0 used to fail as total_rate)
    require(isinstance(workers, (int, np.integer)) and not isinstance(workers, bool) and workers >= 1,
            "workers", workers, "must be an integer >= 1 (GPUs)")
    for _, slo in points:
        check_slo_ms(slo)
    check_trace_memory(workers, max(r for r, _ in points), sc.warmup_s + sc.measure_s)
    require(isinstance(lam, (int, float, np.integer, np.floating)) and not isinstance(lam, bool)
            and np.isfinite(lam) and lam > 1, "lam", lam, "must be a finite number > 1 (FLEX's "
            "preemption threshold)")
    prof = _profile(profile)
    profile_models(model_set_name, prof)  # fail here, not in a worker, on a set the profile lacks
    grid = [dict(system=s, variant=v, rate=r, workers=workers, slo_ms=slo, seed=seed + k,
                 warmup_s=sc.warmup_s, measure_s=sc.measure_s, streams=sc.streams, lam=lam,
                 model_set_name=model_set_name, profile=prof)
            for s in SYSTEMS for v in ("stable", "bursty") for r, slo in points
            for k in range(sc.seeds)]
    out = run_sweep(run_system, grid, n_jobs=default_processes(n_jobs), version=_sim_version())
    return out.groupby(["system", "variant", by], as_index=False).mean(numeric_only=True)
