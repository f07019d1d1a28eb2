"""Speed of the RAMSIS chapter: policy generation against the paper's Table 2, and the numba
serving simulators against the simpy reference.

Policy generation: every row of Table 2 (variable and maximal batching; MD and FLD D = 100, 10;
the 9 Pareto models and the 60-model synthetic set) at K = 60, 2000 QPS, SLO 150 ms, N = 32:
kernel build plus solve to convergence (value iteration for maximal batching, policy iteration for
variable, :func:`infsched.ramsis.mdp.solve`), no cache, each row in a fresh process pinned to one
core (one BLAS and one numba thread). Per row: wall seconds, CPU seconds of the process (the
machine may be shared: CPU time is the steadier number) and peak resident memory of the process
(``ru_maxrss``, interpreter and imports included), beside the paper's seconds (ratio paper/ours; the
paper's "timeout" rows have no ratio). One run.

Goals (issues): every maximal-batching row at least 20x faster than the paper's seconds; the
|M| = 60, D = 100 maximal row (1,355 s in the paper) under one minute; the |M| = 60, FLD D = 100
variable-batching row (a 24 h timeout in the paper) under 60 s and 4 GiB peak (issue 22); MD with
variable batching at |M| = 60 reported as measured.

Simulators: RAMSIS (round robin, per-worker queues) and the central-queue baseline at K = 60,
2000 QPS, image SLO 150; engine on 30 s of arrivals after a warm-up, reference on 3 s.

Prints both tables and writes ``benchmarks/results/ramsis.json``.

    python benchmarks/bench_ramsis.py              # everything
    python benchmarks/bench_ramsis.py --variable   # the variable-batching rows only
    python benchmarks/bench_ramsis.py --kernels    # dense against sparse kernel products
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
    import resource

    from infsched.ramsis import experiments as ex, mdp
    from infsched.ramsis.model import MDPConfig
    from infsched.ramsis.variable import MemoryLimitError

    disc, d, key, batching, paper_s = ex.TABLE2_ROWS[i]
    prof = ex.get_profile(key)
    cfg = MDPConfig(SLO, WORKERS, LOAD, discretisation=disc, d=max(d, 1), batching=batching)
    row = {"row": "MD" if disc == "md" else f"FLD D={d}", "batching": batching,
           "models": prof.n_models, "paper_s": None if paper_s != paper_s else paper_s}
    c0 = time.process_time()
    t0 = time.perf_counter()
    try:
        s = mdp.solve(prof, cfg, metrics=False)
    except MemoryLimitError as e:
        return {**row, "states": None, "iterations": None, "ours_s": None, "cpu_s": None,
                "peak_gib": None, "refused_gib": round(e.need_gib, 1)}
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20      # KiB -> GiB (Linux)
    return {**row, "states": int(s.values.size), "iterations": s.iterations, "ours_s": seconds,
            "cpu_s": time.process_time() - c0, "peak_gib": peak}


def policy_rows(only_variable: bool = False) -> list[dict]:
    from infsched.ramsis import experiments as ex

    rows = []
    for i, r in enumerate(ex.TABLE2_ROWS):
        if only_variable and r[3] != "variable":
            continue
        out = subprocess.run([sys.executable, __file__, "--row", str(i)], capture_output=True,
                             text=True, env={**os.environ, **ONE_CORE}, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"  timed {rows[-1]['row']} {rows[-1]['batching']} |M| = {rows[-1]['models']}",
              flush=True)
    return rows


def goals(rows: list[dict]) -> dict:
    """The issues' goals, checked on this run's rows (None where the row was not run)."""
    def find(label, batching, many):
        return next((r for r in rows if r["row"] == label and r["batching"] == batching
                     and (r["models"] > 9) == many), None)

    out = {}
    v60 = find("FLD D=100", "variable", True)
    if v60 is not None and v60["ours_s"] is not None:
        out["m60_d100_variable_under_60s"] = v60["ours_s"] < 60
        out["m60_d100_variable_under_4gib"] = v60["peak_gib"] < 4
    m60 = find("FLD D=100", "max", True)
    if m60 is not None and m60["ours_s"] is not None:
        out["m60_d100_max_under_60s"] = m60["ours_s"] < 60
    fast = [r["paper_s"] / r["ours_s"] for r in rows
            if r["batching"] == "max" and r["paper_s"] and r["ours_s"]]
    if fast:
        out["max_rows_20x_faster"] = min(fast) >= 20
    return out


def print_policy(policies: list[dict]) -> None:
    print(f"Policy generation, K = {WORKERS}, {LOAD:g} QPS, SLO {SLO:g} ms, one core, one run")
    print(f"{'rows':<10} {'batching':<9} {'|M|':>4} {'states':>7} {'rounds':>7} {'wall (s)':>9} "
          f"{'CPU (s)':>8} {'peak GiB':>9} {'paper (s)':>10} {'paper/ours':>11}")
    for r in policies:
        p = r["paper_s"]
        paper = f"{p:.2f}" if p else "timeout"
        if r["ours_s"] is None:
            print(f"{r['row']:<10} {r['batching']:<9} {r['models']:>4} {'-':>7} {'-':>7} "
                  f"{'refused':>9} {'-':>8} {'-':>9} {paper:>10} {'-':>11}   "
                  f"(needs ~{r['refused_gib']:g} GiB)")
            continue
        speedup = f"{p / r['ours_s']:.0f}x" if p else "-"
        print(f"{r['row']:<10} {r['batching']:<9} {r['models']:>4} {r['states']:>7} "
              f"{r['iterations']:>7} {r['ours_s']:>9.2f} {r['cpu_s']:>8.2f} {r['peak_gib']:>9.2f} "
              f"{paper:>10} {speedup:>11}")


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


#: the kernel-product comparison's pools: the RAMSIS chapter's image pool near its capacity, and
#: the head to head's largest pool (its plans for K = 256 were the costliest in its build)
KERNEL_CASES = (("image", 60, 150.0, 3800.0), ("image", 60, 300.0, 2000.0), ("ramsis-image", 256, 150.0, 9600.0))


def kernel_rows() -> list[dict]:
    """One policy solve (value iteration and the stationary law) per case, with the kernel
    products dense (the matrix as built) and in compressed sparse rows
    (:attr:`~infsched.ramsis.worker.WorkerMDP.kernels_csr`, what the solver uses): CPU seconds
    after the kernel build, whether the policy is the same, and how far the expectations moved.
    One run, one process, each case's two solves back to back."""
    import numpy as np

    from infsched.ramsis import mdp
    from infsched.ramsis.model import MDPConfig
    from infsched.ramsis.model_sets import get_profile
    from infsched.serving.contenders import _profile_obj

    class Dense(mdp.WorkerMDP):
        kernels_csr = property(lambda self: self.kernels)   # the products on the dense matrix

    rows = []
    for key, k, slo, load in KERNEL_CASES:
        prof = _profile_obj(key) if key.startswith("ramsis-") else get_profile(key)
        cfg = MDPConfig(slo, k, load, d=100)
        dense = Dense(prof, cfg)
        c0 = time.process_time()
        d = mdp.solve(prof, dense)
        td = time.process_time() - c0
        density = float(np.count_nonzero(dense.kernels) / dense.kernels.size)
        del dense
        sparse = mdp.WorkerMDP(prof, cfg)
        c0 = time.process_time()
        c = mdp.solve(prof, sparse)                            # the conversion to CSR included
        tc = time.process_time() - c0
        rows.append({"pool": f"{key}, K = {k}, SLO {slo:g} ms, {load:g} QPS", "states": int(d.values.size),
                     "density": density, "dense_cpu_s": td, "csr_cpu_s": tc, "ratio": td / tc,
                     "same_policy": bool(np.array_equal(d.model, c.model) and np.array_equal(d.batch, c.batch)),
                     "accuracy_diff": abs(d.expected_accuracy - c.expected_accuracy),
                     "violation_diff": abs(d.expected_violation - c.expected_violation)})
        print(f"  {rows[-1]['pool']}: dense {td:.1f} CPU s, CSR {tc:.1f} CPU s", flush=True)
    return rows


def main(only_variable: bool = False) -> dict:
    policies = policy_rows(only_variable)
    sims = [] if only_variable else sim_rows()
    result = {"benchmark": "ramsis", "workers": WORKERS, "load_qps": LOAD, "slo_ms": SLO,
              "python": platform.python_version(), "machine": platform.machine(),
              "goal": {"speedup_vs_paper": 20, "m60_d100_seconds": 60,
                       "m60_d100_variable_seconds": 60, "m60_d100_variable_gib": 4},
              "goals_met": goals(policies), "policy_generation": policies, "simulators": sims}
    print_policy(policies)
    print("goals:", ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["goals_met"].items()))
    if sims:
        print(f"\nSimulators, K = {WORKERS}, {LOAD:g} QPS")
        for r in sims:
            print(f"{r['system']:<22} engine {r['engine_queries_per_s']:>12,.0f} q/s   simpy "
                  f"{r['reference_queries_per_s']:>9,.0f} q/s   {r['ratio']:>6.0f}x")
    out = RESULTS if not only_variable else RESULTS.with_name("ramsis_variable.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--row":
        print(json.dumps(_time_row(int(sys.argv[2]))))
    elif sys.argv[1:] == ["--kernels"]:
        kernels = kernel_rows()
        print(f"{'pool':<48} {'density':>8} {'dense CPU s':>12} {'CSR CPU s':>10} {'ratio':>6} {'policy':>7}")
        for r in kernels:
            print(f"{r['pool']:<48} {r['density']:>8.3f} {r['dense_cpu_s']:>12.1f} {r['csr_cpu_s']:>10.1f} "
                  f"{r['ratio']:>6.1f} {'same' if r['same_policy'] else 'DIFFERS':>7}")
        RESULTS.with_name("ramsis_kernels.json").write_text(json.dumps(
            {"benchmark": "ramsis kernel products", "python": platform.python_version(),
             "machine": platform.machine(), "cases": kernels}, indent=2))
    else:
        main(only_variable="--variable" in sys.argv[1:])
