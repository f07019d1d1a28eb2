"""Speed of the neutral serving simulator (:mod:`infsched.serving`, issue 23) beside its simpy
reference, measured in one run.

The RAMSIS image profile (26 models), SLO 150 ms, Poisson arrivals, K = 8 and K = 64 workers.
Each policy runs at 80% of its own capacity, so every queue is stable and the rate measures a
typical operating point rather than an ever-growing queue: the fixed-model policies at
``0.8 K / l(m, 1)``, the deadline-aware ones at ``0.8`` of spec headtohead §1's capacity.
Rates are simulated queries per second of **CPU time** of this process (``time.process_time``;
the machine is shared), the best of ``REPEATS`` runs of :func:`infsched.serving.simulate`
(drawing the arrivals and service times included; the summary statistics not). The simpy
reference (:mod:`infsched.serving.reference`) runs ``REFERENCE_QUERIES`` queries once per row.
The TAD paper's policies (TAD, TAD-OP, R-JIQ) run with their workers spread evenly over the
image profile's Pareto models (a* = 78) at 80% of their batch-1 capacity; RAMSIS with its MDP
policy (the RAMSIS chapter's solver, D = 20) for that load; FLEX and FLEX-NP on the fastest model
(they have no simpy reference: Shepherd's engine is theirs). Beside the paper engines: TAD, TAD-OP
and R-JIQ on the TAD paper's main system (n = 8, a* = 76, 0.5 λ^max) on this simulator and on
:mod:`infsched.tad.sim`, the same number of jobs; RAMSIS (K = 60, SLO 150 ms, 2000 QPS) on this
simulator and on :mod:`infsched.ramsis.sim`, the same arrivals, with one policy and re-planning
over three load levels (the 500 ms monitor); Jellyfish+ re-planning on the same arrivals beside
the RAMSIS central engine; FLEX and FLEX-NP on Shepherd's scenario (one group of 12 GPUs, RN50 of
Table 4, SLO 250 ms, MAF-synth bursty arrivals at 14k queries/s, the same arrivals) on this
simulator and on :mod:`infsched.shepherd.sim`.
A reader's policy through the plug-in API (:mod:`infsched.serving.plugins`, issue 33): batch-greedy
re-implemented as a user ``select`` function, compiled with numba and as plain Python, beside the
built-in batch-greedy on the same configuration (their outcomes are identical; the tests check).
Goal (issue 23): at least 1 M queries/s on one core for the simple policies. Prints a table and
writes ``benchmarks/results/serving.json``.

    python benchmarks/bench_serving.py
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np

from infsched.profiles import load_profile
from infsched.serving import POLICIES, ServingConfig, Zoo, experiments as ex, simulate
from infsched.serving.policies import FLEX_FAMILY, TAD_FAMILY
from infsched.serving.reference import simulate_reference
from infsched.serving.scenarios import tad_system
from infsched.tad import bound
from infsched.tad.model import MAIN
from infsched.tad.sim import simulate as tad_engine

ENGINE_QUERIES = 2_000_000
REFERENCE_QUERIES = 20_000
REPEATS = 3
SLO_MS = 150.0
WORKERS = (8, 64)
RHO = 0.8
GOAL_QPS = 1_000_000
SIMPLE = ("most-accurate", "fastest", "fcfs")
RESULTS = Path(__file__).resolve().parent / "results" / "serving.json"


TAD_A_STAR = 78.0


def _config(zoo: Zoo, K: int, name: str) -> ServingConfig:
    if name == "ramsis":
        rate = RHO * zoo.capacity_qps(K, SLO_MS)
        return ServingConfig(zoo, workers=K, slo_ms=SLO_MS, policy="ramsis",
                             mdp_policy=ex.ramsis_policy("ramsis-image", K, SLO_MS, rate, 20))
    if name not in TAD_FAMILY:
        return ServingConfig(zoo, workers=K, slo_ms=SLO_MS, policy=name)
    front = load_profile("ramsis-image").pareto_front().models
    wm = tuple(front[i % len(front)] for i in range(K))
    cfg = ServingConfig(zoo, workers=K, slo_ms=SLO_MS, policy="tad-op" if name == "r-jiq" else name,
                        a_star=TAD_A_STAR, worker_models=wm)
    if name != "r-jiq":
        return cfg
    p = ex.rjiq_split(cfg.system_params(), TAD_A_STAR, _rate(cfg), K)
    return ServingConfig(zoo, workers=K, slo_ms=SLO_MS, policy="r-jiq", a_star=TAD_A_STAR,
                         worker_models=wm, class_p=p)


def _rate(cfg: ServingConfig) -> float:
    """Arrival rate (queries/s) at RHO of the policy's own capacity."""
    if cfg.policy in TAD_FAMILY:  # each worker's own model at batch 1
        return RHO * sum(1000.0 / cfg.zoo.latency_ms[cfg.zoo.names.index(m), 0]
                         for m in cfg.worker_models)
    if cfg.spec.select == 0:  # one fixed model at batch 1
        return RHO * cfg.workers * 1000.0 / cfg.zoo.latency_ms[cfg.model_index, 0]
    return RHO * cfg.capacity_qps()


def _best(fn, n: int, repeats: int) -> tuple[float, float]:
    """(queries per CPU second, queries per wall second), best of ``repeats``."""
    cpu = wall = math.inf
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return n / cpu, n / wall


def _user_batch_greedy(s, lat, by_accuracy, params):
    """The built-in batch-greedy as a reader would write it (tests/serving/test_serving_plugins.py)."""
    fast = np.argmin(lat[:, 0])
    if lat[fast, 0] > s.slack_ms:
        return fast, 0
    b = min(s.queue_len, s.max_batch)
    while b > 1 and lat[fast, b - 1] > s.slack_ms:
        b -= 1
    for m in by_accuracy:
        if lat[m, b - 1] <= s.slack_ms:
            return m, b
    return fast, b


def _plugins(zoo: Zoo) -> list[dict]:
    from numba import njit

    from infsched.serving import plugins

    plugins.register(plugins.UserPolicy("bench-bg-nb", njit(_user_batch_greedy)))
    plugins.register(plugins.UserPolicy("bench-bg-py", _user_batch_greedy))
    out = []
    for K in WORKERS:
        built = ServingConfig(zoo, workers=K, slo_ms=SLO_MS, policy="batch-greedy")
        qps = _rate(built)
        row = dict(workers=K, rate_qps=qps)
        for key, name, n, rep in (("built_in", "batch-greedy", ENGINE_QUERIES, REPEATS),
                                  ("user_compiled", "bench-bg-nb", ENGINE_QUERIES, REPEATS),
                                  ("user_python", "bench-bg-py", REFERENCE_QUERIES, 1)):
            cfg = ServingConfig(zoo, workers=K, slo_ms=SLO_MS, policy=name)
            simulate(cfg, 1000, rate_qps=qps, seed=0)
            row[f"{key}_qps_cpu"], _ = _best(lambda: simulate(cfg, n, rate_qps=qps, seed=1), n, rep)
        out.append(row)
    return out


def main() -> dict:
    zoo = Zoo.of("ramsis-image")
    rows = []
    for K in WORKERS:
        for name in POLICIES:
            cfg = _config(zoo, K, name)
            qps = _rate(cfg)
            simulate(cfg, 1000, rate_qps=qps, seed=0)  # compile (or load numba's cache) first
            eng_cpu, eng_wall = _best(lambda: simulate(cfg, ENGINE_QUERIES, rate_qps=qps, seed=1),
                                      ENGINE_QUERIES, REPEATS)
            if name in FLEX_FAMILY:  # no simpy reference (Shepherd's engines are FLEX's check)
                ref_cpu = ref_wall = math.nan
            else:
                ref_cpu, ref_wall = _best(lambda: simulate_reference(cfg, REFERENCE_QUERIES, rate_qps=qps,
                                                                     seed=1), REFERENCE_QUERIES, 1)
            att = simulate(cfg, 200_000, rate_qps=qps, seed=1).summary()["attainment"].mean
            rows.append(dict(workers=K, policy=name, queue=cfg.queue, routing=cfg.routing,
                             max_batch=cfg.max_batch, rate_qps=qps, attainment=att,
                             engine_qps_cpu=eng_cpu, engine_qps_wall=eng_wall,
                             simpy_qps_cpu=None if math.isnan(ref_cpu) else ref_cpu,
                             simpy_qps_wall=None if math.isnan(ref_wall) else ref_wall,
                             ratio_cpu=None if math.isnan(ref_cpu) else eng_cpu / ref_cpu))
    print(f"{'K':>3} {'policy':<15} {'queue':<10} {'routing':<12} {'engine q/s':>11} "
          f"{'simpy q/s':>10} {'x simpy':>8} {'SLO att.':>8}")
    for r in rows:
        routing = r["routing"] if r["queue"] == "per-worker" else "-"  # a central queue routes nothing
        print(f"{r['workers']:>3} {r['policy']:<15} {r['queue']:<10} {routing:<12} "
              f"{r['engine_qps_cpu'] / 1e6:>9.2f} M {(r['simpy_qps_cpu'] or math.nan) / 1e3:>8.1f} k "
              f"{r['ratio_cpu'] or math.nan:>8.0f} {r['attainment']:>8.3f}")
    paper = []
    n_tad = 8
    zoo_tad, workers = tad_system(MAIN, n_tad)
    lam = 0.5 * bound.lambda_max(MAIN, 76.0)
    for pol in ("tad", "tad-op", "r-jiq"):
        for service, short in (("deterministic", "det"), ("exponential", "exp")):
            extra = {"class_p": tuple(bound.rjiq_probs(MAIN, 76.0, lam, n_tad))} if pol == "r-jiq" else {}
            cfg = ServingConfig(zoo_tad, workers=n_tad, slo_ms=1e9, policy=pol, a_star=76.0,
                                worker_models=workers, service=service, **extra)
            simulate(cfg, 1000, rate_qps=n_tad * lam * 1000.0, seed=0)
            tad_engine(MAIN, pol, n=n_tad, lam=lam, a_star=76.0, n_jobs=1000, service=short, seed=0)
            ours, _ = _best(lambda: simulate(cfg, ENGINE_QUERIES, rate_qps=n_tad * lam * 1000.0, seed=1),
                            ENGINE_QUERIES, REPEATS)
            theirs, _ = _best(lambda: tad_engine(MAIN, pol, n=n_tad, lam=lam, a_star=76.0,
                                                 n_jobs=ENGINE_QUERIES, service=short, seed=1),
                              ENGINE_QUERIES, REPEATS)
            paper.append(dict(scenario=f"{pol} on the TAD main system, n = {n_tad}, 0.5 lambda_max, {service}",
                              serving_qps_cpu=ours, paper_engine_qps_cpu=theirs, ratio=ours / theirs,
                              paper_engine="infsched.tad.sim"))
    # RAMSIS on its own scenario: the same arrivals on both engines
    import numpy as np

    from infsched.ramsis.policy import PolicyTable
    from infsched.ramsis.sim import simulate_ramsis
    from infsched.workload import poisson_arrivals

    prof = load_profile("ramsis-image")
    grid, model, batch = ex.ramsis_policy("ramsis-image", 60, SLO_MS, 2000.0, 20)
    cfg = ServingConfig(zoo, workers=60, slo_ms=SLO_MS, policy="ramsis", mdp_policy=(grid, model, batch))
    table = PolicyTable(SLO_MS, 60, grid, [2000.0], model[None], batch[None], 0, np.zeros(1), np.zeros(1))
    arr = poisson_arrivals(2.0, n=ENGINE_QUERIES, rng=np.random.default_rng(1))
    simulate(cfg, arrivals=arr[:1000], seed=0)
    simulate_ramsis(prof, table, arr[:1000], slo_ms=SLO_MS, workers=60, load_qps=2000.0)
    ours, _ = _best(lambda: simulate(cfg, arrivals=arr, seed=1), ENGINE_QUERIES, REPEATS)
    theirs, _ = _best(lambda: simulate_ramsis(prof, table, arr, slo_ms=SLO_MS, workers=60, load_qps=2000.0),
                      ENGINE_QUERIES, REPEATS)
    paper.append(dict(scenario="ramsis, K = 60, SLO 150 ms, 2000 QPS, same arrivals",
                      serving_qps_cpu=ours, paper_engine_qps_cpu=theirs, ratio=ours / theirs,
                      paper_engine="infsched.ramsis.sim"))
    # RAMSIS and Jellyfish+ re-planning over three load levels (the 500 ms monitor), same arrivals
    from infsched.ramsis.baselines import jellyfish_plus
    from infsched.ramsis.sim import simulate_central

    levels = [1000.0, 2000.0, 3000.0]
    sols = [ex.ramsis_policy("ramsis-image", 60, SLO_MS, x, 20) for x in levels]
    cfg = ServingConfig(zoo, workers=60, slo_ms=SLO_MS, policy="ramsis", mdp_policy=sols,
                        plan_loads=tuple(levels))
    table = PolicyTable(SLO_MS, 60, sols[0][0], levels, np.stack([p[1] for p in sols]),
                        np.stack([p[2] for p in sols]), 0, np.zeros(3), np.zeros(3))
    simulate(cfg, arrivals=arr[:1000], seed=0)
    simulate_ramsis(prof, table, arr[:1000], slo_ms=SLO_MS, workers=60)
    ours, _ = _best(lambda: simulate(cfg, arrivals=arr, seed=1), ENGINE_QUERIES, REPEATS)
    theirs, _ = _best(lambda: simulate_ramsis(prof, table, arr, slo_ms=SLO_MS, workers=60),
                      ENGINE_QUERIES, REPEATS)
    paper.append(dict(scenario="ramsis re-planning (3 levels, 500 ms monitor), K = 60, SLO 150 ms, 2000 QPS, same arrivals",
                      serving_qps_cpu=ours, paper_engine_qps_cpu=theirs, ratio=ours / theirs,
                      paper_engine="infsched.ramsis.sim"))
    jtab = jellyfish_plus(prof, levels, 60, SLO_MS)
    cfg = ServingConfig(zoo, workers=60, slo_ms=SLO_MS, policy="fcfs", plan_loads=tuple(levels),
                        plan=tuple((prof.models[m], int(c)) for m, c in zip(jtab.model, jtab.cap)))
    simulate(cfg, arrivals=arr[:1000], seed=0)
    simulate_central(prof, jtab, arr[:1000], slo_ms=SLO_MS, workers=60)
    ours, _ = _best(lambda: simulate(cfg, arrivals=arr, seed=1), ENGINE_QUERIES, REPEATS)
    theirs, _ = _best(lambda: simulate_central(prof, jtab, arr, slo_ms=SLO_MS, workers=60),
                      ENGINE_QUERIES, REPEATS)
    paper.append(dict(scenario="jellyfish+ re-planning (3 levels, 500 ms monitor), K = 60, SLO 150 ms, 2000 QPS, same arrivals",
                      serving_qps_cpu=ours, paper_engine_qps_cpu=theirs, ratio=ours / theirs,
                      paper_engine="infsched.ramsis.sim (central)"))
    # FLEX and FLEX-NP on Shepherd's scenario: the same arrivals on both engines
    from infsched.shepherd import sim as shp
    from infsched.shepherd.model import B_MAX, Requests, model_set
    from infsched.shepherd.traces import maf_arrivals

    ms = model_set("cv16")
    one = ms.subset([ms.names.index("RN50")])
    zrn = Zoo(("RN50",), [76.0], one.latency(0, np.arange(1, B_MAX + 1))[None, :])
    horizon = ENGINE_QUERIES / 14_000.0
    a = maf_arrivals(1000, 14_000.0, horizon, "bursty", 1, seed=1).arrival_ms
    req = Requests.with_slo(a, np.zeros(a.size, np.int64), 250.0)
    for pol in FLEX_FAMILY:
        cfg = ServingConfig(zrn, workers=12, slo_ms=250.0, policy=pol, model="RN50")
        simulate(cfg, arrivals=a[:1000], seed=0)
        shp.simulate(Requests.with_slo(a[:1000], np.zeros(1000, np.int64), 250.0), one, 12, pol)
        ours, _ = _best(lambda: simulate(cfg, arrivals=a, seed=1), a.size, REPEATS)
        theirs, _ = _best(lambda: shp.simulate(req, one, 12, pol), a.size, REPEATS)
        paper.append(dict(scenario=f"{pol}, Shepherd's group (12 GPUs, RN50, SLO 250 ms, MAF-synth bursty 14k/s), "
                                   f"{a.size} queries, same arrivals",
                          serving_qps_cpu=ours, paper_engine_qps_cpu=theirs, ratio=ours / theirs,
                          paper_engine="infsched.shepherd.sim"))
    plugin = _plugins(zoo)
    for r in plugin:
        print(f"plug-in, K = {r['workers']}: built-in batch-greedy {r['built_in_qps_cpu'] / 1e6:.2f} M/s, "
              f"user policy compiled {r['user_compiled_qps_cpu'] / 1e6:.2f} M/s, "
              f"as Python {r['user_python_qps_cpu'] / 1e3:.1f} k/s")
    for r in paper:
        print(f"{r['scenario']}: this simulator {r['serving_qps_cpu'] / 1e6:.2f} M/s, "
              f"{r['paper_engine']} {r['paper_engine_qps_cpu'] / 1e6:.2f} M/s (x {r['ratio']:.2f})")
    simple = [r["engine_qps_cpu"] for r in rows if r["policy"] in SIMPLE]
    print(f"simple policies: slowest {min(simple) / 1e6:.2f} M queries per CPU second "
          f"(goal {GOAL_QPS / 1e6:.0f} M: {'met' if min(simple) >= GOAL_QPS else 'NOT met'})")
    out = dict(benchmark="serving", rows=rows, paper_engines=paper, plugins=plugin, engine_queries=ENGINE_QUERIES,
               reference_queries=REFERENCE_QUERIES, repeats=REPEATS, slo_ms=SLO_MS, rho=RHO,
               goal_qps=GOAL_QPS, machine=platform.machine(), cpus=os.cpu_count(),
               load_average=os.getloadavg(), python=platform.python_version())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
