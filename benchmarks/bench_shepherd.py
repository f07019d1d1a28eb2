"""Speed of the Shepherd chapter, each goal a ratio measured in this run.

1. Simulated requests per second of FLEX, SHEPHERD-NP and Clockwork at one group (12 GPUs, the
   16 vision models, 144,000 req/s offered, 250 ms SLO, MAF-synth stable, 5 simulated seconds,
   one core), against the simpy reference model on a slice small enough for it. Goal (issue 6):
   at least 1 million simulated requests/s for FLEX, so one simulated minute at 144k req/s takes
   under 10 s.
2. The Nexus-like runtime on the same workload.
3. HERD-L for 200 model-streams and 10 groups (spec A20: within 20 s on 2 cores), beside LPT.

Prints a table and writes ``benchmarks/results/shepherd.json``.

    python benchmarks/bench_shepherd.py
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from infsched.shepherd import herd, nexus, reference, sim, traces
from infsched.shepherd.model import Requests, model_set

RESULTS = Path(__file__).resolve().parent / "results" / "shepherd.json"
RATE, SECONDS, GPUS, SLO = 144_000.0, 5.0, 12, 250.0
GOAL_RPS = 1e6


def _timed(fn, repeats: int = 1):
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def engines() -> list[dict]:
    models = model_set("cv16")
    req = traces.maf_requests(4600, RATE, SECONDS, "stable", models, SLO, seed=0)
    small = Requests(req.arrival[:1500], req.model[:1500], req.deadline[:1500])
    rows = []
    for policy in sim.POLICIES:
        sim.simulate(small, models, GPUS, policy)                                # compile
        _, sec = _timed(lambda: sim.simulate(req, models, GPUS, policy), 3)
        fast_small, fs = _timed(lambda: sim.simulate(small, models, GPUS, policy), 3)
        ref, rs = _timed(lambda: reference.simulate_reference(small, models, GPUS, policy))
        assert np.array_equal(fast_small.completion, ref.completion, equal_nan=True)
        rows.append({"policy": policy, "requests": req.n, "seconds": sec,
                     "requests_per_s": req.n / sec, "goal_ratio": req.n / sec / GOAL_RPS,
                     "reference_requests": small.n, "reference_per_s": small.n / rs,
                     "fast_over_reference": (small.n / fs) / (small.n / rs)})
    plan = nexus.plan_for_peak(req, models, GPUS, SLO)
    nexus.simulate(small, models, GPUS, plan)
    _, sec = _timed(lambda: nexus.simulate(req, models, GPUS, plan), 3)
    rows.append({"policy": "nexus", "requests": req.n, "seconds": sec,
                 "requests_per_s": req.n / sec, "goal_ratio": req.n / sec / GOAL_RPS})
    return rows


def planner() -> dict:
    r = herd.table5_point(200, seed=0, time_limit=20.0)
    return {"K": 200, "solver_s": r["solver_s"], "lpt_s": r["lpt_s"], "gap": r["gap"],
            "status": r["status"], "goal_over_ours": 20.0 / max(r["solver_s"], 1e-9)}


def main() -> dict:
    rows, plan = engines(), planner()
    result = {"benchmark": "shepherd", "python": platform.python_version(),
              "machine": platform.machine(), "engines": rows, "herd_l": plan}
    print(f"One group: {GPUS} GPUs, 16 models, {RATE:,.0f} req/s offered, {SECONDS:g} s, one core")
    for r in rows:
        extra = (f"; simpy reference {r['reference_per_s']:,.0f} req/s on {r['reference_requests']} "
                 f"requests, fast/reference {r['fast_over_reference']:,.0f}x"
                 if "reference_per_s" in r else "")
        print(f"  {r['policy']:>9}: {r['requests_per_s'] / 1e6:.2f} M simulated req/s "
              f"({r['goal_ratio']:.1f}x the 1 M goal){extra}")
    print(f"\nHERD-L, K = 200 model-streams, 10 groups: {plan['solver_s']:.2f} s "
          f"({plan['status']}, gap {plan['gap']:.2%}; LPT {plan['lpt_s'] * 1e3:.1f} ms); "
          f"goal 20 s: {plan['goal_over_ours']:.0f}x inside it")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
