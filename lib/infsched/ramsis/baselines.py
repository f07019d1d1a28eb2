"""The load-granular baselines of the RAMSIS paper: Jellyfish+ and ModelSwitching (spec §4).

Both choose one model (and a batch cap) per load level and run it on a central FIFO queue whose
idle workers eagerly take up to ``cap`` queries (:func:`infsched.ramsis.sim.simulate_central`).
They differ in how the model is chosen:

* **Jellyfish+** (§4.1, the artifact's ``JellyfishInstPi`` in "aggressive" mode): the most
  accurate model that, at some batch size ``b``, sustains ``1.05 ×`` the per-worker load
  (``b / l(m, b) ≥ 1.05 λ / K``) with ``l(m, b) ≤ SLO / 2``; its cap is the largest such ``b``.
  If no model qualifies: the fastest model with cap ``N = 32``. Clipper's adaptive (AIMD) batching
  of the paper is replaced by this fixed cap, as in the artifact.
* **ModelSwitching** (§4.2, the artifact's ``MS_gen.py``): simulate the central system at the
  constant load with each model fixed, and pick the most accurate model whose violation rate is
  below 1 % (the paper's "p99 response latency < SLO"); the fastest if none qualifies. Every model
  uses the JF+ cap of the model JF+ picks at that load (32 when JF+ falls back): the artifact's
  rule, odd but harmless. All models at one load see the same arrivals (common random numbers).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.errors import config_error, one_of, require
from infsched.ramsis import sim
from infsched.ramsis.policy import BaselineTable
from infsched.workload import poisson_arrivals

__all__ = ["BaselineTable", "jellyfish_plus", "model_switching", "model_switching_search",
           "JF_THROUGHPUT_FACTOR", "FALLBACK_CAP", "MS_THRESHOLD"]

#: JF+ sizes for 5 % more than the per-worker load (artifact)
JF_THROUGHPUT_FACTOR = 1.05
#: batch cap when no model qualifies: N = 32 (spec §1)
FALLBACK_CAP = 32
#: ModelSwitching's violation threshold (artifact MS_gen.py: < 1 %)
MS_THRESHOLD = 0.01


def _loads(loads_qps) -> np.ndarray:
    try:
        loads = np.asarray(loads_qps, dtype=float).ravel()
    except (TypeError, ValueError):
        raise config_error("loads_qps", loads_qps, "must be a sequence of loads in QPS") from None
    require(loads.size >= 1 and bool(np.all(np.isfinite(loads)) and np.all(loads > 0))
            and bool(np.all(np.diff(loads) > 0)), "loads_qps", loads_qps,
            "must be non-empty, positive and strictly increasing")
    return loads


def _int_at_least(name: str, value, low: int) -> int:
    require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= low,
            name, value, f"must be an integer >= {low}")
    return int(value)


def jellyfish_plus(profile, loads_qps, workers: int, slo_ms: float, *,
                   factor: float = JF_THROUGHPUT_FACTOR,
                   max_batch: int = FALLBACK_CAP) -> BaselineTable:
    """Jellyfish+'s table (spec §4.1), deterministic.

    At load ``λ`` (QPS) with ``K`` workers, model ``m`` qualifies at batch ``b ≤ max_batch`` iff
    ``1000 · b / l(m, b) ≥ factor · λ / K`` and ``l(m, b) ≤ SLO / 2``; the table runs the most
    accurate qualifying model with cap ``max{b : qualifies}``, or the fastest model with cap
    ``max_batch`` when none qualifies.
    """
    loads = _loads(loads_qps)
    K = _int_at_least("workers", workers, 1)
    slo = sim._positive("slo_ms", slo_ms)
    factor = sim._positive("factor", factor)
    B = _int_at_least("max_batch", max_batch, 1)
    lat = np.asarray(profile.latency_table(B), dtype=float)          # (M, B)
    acc = np.asarray(profile.accuracy, dtype=float)
    b = np.arange(1, B + 1)
    throughput = 1000.0 * b / lat                                     # QPS of one worker
    fastest = int(np.argmin(lat[:, 0]))
    models, caps = [], []
    for load in loads:
        ok = (throughput >= factor * (load / K)) & (lat <= slo / 2.0)
        bmax = np.where(ok, b, 0).max(axis=1)                         # 0: never qualifies
        if not np.any(bmax > 0):
            models.append(fastest)
            caps.append(B)
            continue
        m = int(np.argmax(np.where(bmax > 0, acc, -np.inf)))          # ties: first (faster)
        models.append(m)
        caps.append(int(bmax[m]))
    return BaselineTable("Jellyfish+", loads, np.array(models), np.array(caps))


def model_switching_search(profile, loads_qps, workers: int, slo_ms: float, *, duration_s: float,
                           seed, threshold: float = MS_THRESHOLD, latency: str = "p95",
                           full: bool = True) -> pd.DataFrame:
    """ModelSwitching's search (spec §4.2): one row per (load, model) simulated.

    At each load, Poisson arrivals for ``duration_s`` seconds (the same for every model), the
    central system with that model fixed, the JF+ cap, and the load known. Columns: ``load_qps``,
    ``model``, ``model_name``, ``model_accuracy``, ``cap``, ``violation``, ``accuracy`` (per
    satisfied query), ``served``, ``chosen``. With ``full=False`` the models are tried from the
    most accurate down and the search stops at the first that qualifies (the choice is the same;
    skipped models get no row).

    Randomness: ``SeedSequence(seed)`` spawns one child per load, which spawns the arrival and
    latency streams; every model at a load reuses both.
    """
    loads = _loads(loads_qps)
    K = _int_at_least("workers", workers, 1)
    slo = sim._positive("slo_ms", slo_ms)
    dur = sim._positive("duration_s", duration_s)
    one_of("latency", latency, sim.LATENCY_MODES)
    try:
        thr = float(threshold)
    except (TypeError, ValueError):
        raise config_error("threshold", threshold, "must be a number in (0, 1]") from None
    require(0 < thr <= 1, "threshold", threshold, "must be a violation rate in (0, 1]")
    try:
        children = np.random.SeedSequence(seed).spawn(loads.size)
    except TypeError:
        raise config_error("seed", seed, "must be an int or a numpy SeedSequence entropy") from None
    jf = jellyfish_plus(profile, loads, K, slo)
    acc = np.asarray(profile.accuracy, dtype=float)
    order = np.argsort(-acc, kind="stable")                  # most accurate first
    fastest = int(np.argmin(np.asarray(profile.latency_ms, float)[:, 0]))
    rows = []
    for p, load in enumerate(loads):
        ss_arr, ss_lat = children[p].spawn(2)
        arrivals = poisson_arrivals(load / 1000.0, horizon=dur * 1000.0,
                                    rng=np.random.default_rng(ss_arr))
        cap = int(jf.cap[p])
        chosen = None
        point = []
        for m in order:
            table = BaselineTable("static", [load], [int(m)], [cap])
            res = sim.simulate_central(profile, table, arrivals, slo_ms=slo, workers=K,
                                       load_qps=load, latency=latency,
                                       rng=np.random.default_rng(ss_lat))
            point.append({"load_qps": float(load), "model": int(m),
                          "model_name": profile.models[m], "model_accuracy": float(acc[m]),
                          "cap": cap, "violation": res.violation_rate, "accuracy": res.accuracy,
                          "served": res.served})
            if chosen is None and res.violation_rate < thr:
                chosen = int(m)
                if not full:
                    break
        if chosen is None:
            chosen = fastest
        for row in point:
            row["chosen"] = row["model"] == chosen
        rows.extend(point)
    return pd.DataFrame(rows)


def model_switching(profile, loads_qps, workers: int, slo_ms: float, *, duration_s: float, seed,
                    threshold: float = MS_THRESHOLD, latency: str = "p95") -> BaselineTable:
    """ModelSwitching's table (spec §4.2): at each load the most accurate model whose simulated
    violation rate is below ``threshold`` (the fastest if none), with the JF+ cap at that load.
    See :func:`model_switching_search` for the runs behind it."""
    df = model_switching_search(profile, loads_qps, workers, slo_ms, duration_s=duration_s,
                                seed=seed, threshold=threshold, latency=latency, full=False)
    pick = df[df["chosen"]].sort_values("load_qps")
    return BaselineTable("ModelSwitching", pick["load_qps"].to_numpy(float),
                         pick["model"].to_numpy(np.int64), pick["cap"].to_numpy(np.int64))
