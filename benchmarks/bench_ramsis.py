"""Speed of the RAMSIS chapter: policy generation against the paper's Table 2, and the numba
serving simulators against the simpy reference.

Policy generation: every row of Table 2 (variable and maximal batching; MD and FLD D = 100, 10;
the 9 Pareto models and the 60-model synthetic set) at K = 60, 2000 QPS, SLO 150 ms, N = 32:
kernel build plus solve to convergence (value iteration for maximal batching, policy iteration for
variable), no cache, each row in a fresh process pinned to one BLAS thread (one core). A
variable-batching MDP over the 8 GiB memory limit is refused and printed as such. Goals (issue):
every maximal-batching row at least 20x faster than the paper's seconds, and the |M| = 60, D = 100
row (1,355 s in the paper) under one minute.

Simulators: RAMSIS (round robin, per-worker queues) and the central-queue baseline at K = 60,
2000 QPS, image SLO 150; engine on 30 s of arrivals after a warm-up, reference on 3 s.

Prints both tables and writes ``benchmarks/results/ramsis.json``.

    python benchmarks/bench_ramsis.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "ramsis.json"
WORKERS, LOAD, SLO = 60, 2000.0, 150.0
ONE_CORE = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "NUMBA_NUM_THREADS": "1"}


def _time_row(i: int) -> dict:
    from infsched.ramsis import experiments as ex, mdp
    from infsched.ramsis.model import MDPConfig
    from infsched.ramsis.variable import MemoryLimitError

    disc, d, key, batching, paper_s = ex.TABLE2_ROWS[i]
    prof = ex.get_profile(key)
    cfg = MDPConfig(SLO, WORKERS, LOAD, discretisation=disc, d=max(d, 1), batching=batching)
    row = {"row": "MD" if disc == "md" else f"FLD D={d}", "batching": batching,
           "models": prof.n_models, "paper_s": None if paper_s != paper_s else paper_s}
    t0 = time.perf_counter()
    try:
        s = mdp.solve(prof, cfg, metrics=False)
    except MemoryLimitError as e:
        return {**row, "states": None, "iterations": None, "ours_s": None,
                "refused_gib": round(e.need_gib, 1)}
    seconds = time.perf_counter() - t0
    return {**row, "states": int(s.values.size), "iterations": s.iterations, "ours_s": seconds}


def policy_rows() -> list[dict]:
    from infsched.ramsis import experiments as ex

    rows = []
    for i in range(len(ex.TABLE2_ROWS)):
        out = subprocess.run([sys.executable, __file__, "--row", str(i)], capture_output=True,
                             text=True, env={**os.environ, **ONE_CORE}, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


def sim_rows() -> list[dict]:
    import numpy as np

    from infsched.ramsis import baselines, experiments as ex, reference, sim
    from infsched.workload import poisson_arrivals

    prof = ex.get_profile("image")
    table = ex.policy_table(ex.policies("image", SLO, WORKERS, [LOAD], d=20, n_jobs=1))
    jf = baselines.jellyfish_plus(prof, [LOAD], WORKERS, SLO)
    long = poisson_arrivals(LOAD / 1000, horizon=30_000.0, rng=np.random.default_rng(1))
    short = long[long < 3_000.0]
    runs = {
        "ramsis": (lambda a: sim.simulate_ramsis(prof, table, a, slo_ms=SLO, workers=WORKERS, load_qps=LOAD),
                   lambda a: reference.simulate_ramsis_reference(prof, table, a, slo_ms=SLO,
                                                                 workers=WORKERS, load_qps=LOAD)),
        "central (Jellyfish+)": (
            lambda a: sim.simulate_central(prof, jf, a, slo_ms=SLO, workers=WORKERS, load_qps=LOAD),
            lambda a: reference.simulate_central_reference(prof, jf, a, slo_ms=SLO, workers=WORKERS,
                                                           load_qps=LOAD)),
    }
    rows = []
    for name, (fast, ref) in runs.items():
        fast(short)                                   # compile / load the numba cache
        t0 = time.perf_counter(); fast(long); t_fast = time.perf_counter() - t0
        t0 = time.perf_counter(); ref(short); t_ref = time.perf_counter() - t0
        e, r = long.size / t_fast, short.size / t_ref
        rows.append({"system": name, "engine_queries_per_s": e, "reference_queries_per_s": r,
                     "ratio": e / r})
    return rows


def main() -> dict:
    policies = policy_rows()
    sims = sim_rows()
    result = {"benchmark": "ramsis", "workers": WORKERS, "load_qps": LOAD, "slo_ms": SLO,
              "python": platform.python_version(), "machine": platform.machine(),
              "goal": {"speedup_vs_paper": 20, "m60_d100_seconds": 60},
              "policy_generation": policies, "simulators": sims}
    print(f"Policy generation, K = {WORKERS}, {LOAD:g} QPS, SLO {SLO:g} ms, one core")
    print(f"{'rows':<10} {'batching':<9} {'|M|':>4} {'states':>7} {'rounds':>7} {'ours (s)':>9} "
          f"{'paper (s)':>10} {'speed-up':>9}")
    for r in policies:
        p = r["paper_s"]
        paper = f"{p:.2f}" if p else "timeout"
        if r["ours_s"] is None:
            print(f"{r['row']:<10} {r['batching']:<9} {r['models']:>4} {'-':>7} {'-':>7} "
                  f"{'refused':>9} {paper:>10} {'-':>9}   (needs ~{r['refused_gib']:g} GiB)")
            continue
        speedup = f"{p / r['ours_s']:.0f}x" if p else "-"
        print(f"{r['row']:<10} {r['batching']:<9} {r['models']:>4} {r['states']:>7} "
              f"{r['iterations']:>7} {r['ours_s']:>9.2f} {paper:>10} {speedup:>9}")
    print(f"\nSimulators, K = {WORKERS}, {LOAD:g} QPS")
    for r in sims:
        print(f"{r['system']:<22} engine {r['engine_queries_per_s']:>12,.0f} q/s   simpy "
              f"{r['reference_queries_per_s']:>9,.0f} q/s   {r['ratio']:>6.0f}x")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--row":
        print(json.dumps(_time_row(int(sys.argv[2]))))
    else:
        main()
