"""Speed of the TAD chapter's simulators: numba engine vs simpy reference.

TAD-OP on the main configuration at ρ = 0.8, a* = 76, for n = 64 and n = 4096. The engine is
timed after a warm-up call (numba compilation), on ``ENGINE_JOBS`` jobs; the simpy reference on
``REFERENCE_JOBS`` jobs. Goal (spec §6, project brief): ≥ 2 million jobs/s on one core at
n = 4096 and ≥ 100× the reference. Prints a table and writes ``benchmarks/results/tad.json``.

    python benchmarks/bench_tad.py
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from infsched.tad.model import MAIN
from infsched.tad.reference import simulate_reference
from infsched.tad import bound
from infsched.tad.sim import simulate

ENGINE_JOBS = 4_000_000
REFERENCE_JOBS = 20_000
SIZES = (64, 4096)
RHO, A_STAR, POLICY = 0.8, 76.0, "tad-op"
RESULTS = Path(__file__).resolve().parent / "results" / "tad.json"


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> dict:
    lam = RHO * bound.lambda_max(MAIN, A_STAR)
    simulate(MAIN, POLICY, 64, lam=lam, a_star=A_STAR, n_jobs=10_000)   # compile / load cache
    rows = []
    for n in SIZES:
        fast, t_fast = _timed(lambda: simulate(MAIN, POLICY, n, lam=lam, a_star=A_STAR,
                                               n_jobs=ENGINE_JOBS, seed=1))
        ref, t_ref = _timed(lambda: simulate_reference(MAIN, POLICY, n, lam=lam, a_star=A_STAR,
                                                       n_jobs=REFERENCE_JOBS, seed=1))
        eng_rate, ref_rate = ENGINE_JOBS / t_fast, REFERENCE_JOBS / t_ref
        rows.append({"n": n, "engine_jobs": ENGINE_JOBS, "engine_s": t_fast,
                     "engine_jobs_per_s": eng_rate, "reference_jobs": REFERENCE_JOBS,
                     "reference_s": t_ref, "reference_jobs_per_s": ref_rate,
                     "ratio": eng_rate / ref_rate, "engine_mean_response": fast.mean_response,
                     "reference_mean_response": ref.mean_response})
    result = {"benchmark": "tad", "policy": POLICY, "rho": RHO, "a_star": A_STAR,
              "python": platform.python_version(), "machine": platform.machine(),
              "goal": {"engine_jobs_per_s_n4096": 2e6, "ratio": 100}, "rows": rows}

    print(f"TAD-OP, ρ = {RHO}, a* = {A_STAR:g} (main configuration)")
    print(f"{'n':>6} {'engine jobs/s':>15} {'reference jobs/s':>17} {'ratio':>8}")
    for r in rows:
        print(f"{r['n']:>6} {r['engine_jobs_per_s']:>15,.0f} {r['reference_jobs_per_s']:>17,.0f} "
              f"{r['ratio']:>8.0f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return result


if __name__ == "__main__":
    main()
