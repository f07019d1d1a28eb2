"""Where the KV-cache bracket's width lies between n = 12 and the paper's sizes: on seeded Arrival
Model 1 instances, the local search's schedule, the time-indexed bound
(:func:`infsched.kvcache.tibound.ti_bound`) and branch and bound on the strengthened program
(:func:`infsched.kvcache.timip.ti_optimum`, a node limit, one thread). A certified trial splits
its width exactly (local search over the optimum, the optimum over the bound); an uncertified one
still narrows it from both sides (a better schedule, a higher bound).

    PYTHONPATH=lib .venv/bin/python benchmarks/kvcache_certify.py --sizes 12,16,20 --trials 2 \\
        --nodes 3000 --out benchmarks/results/kvcache_certify.csv

Limits are counts (rounds, nodes), so the numbers do not depend on the machine; the CPU seconds
beside them do.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from infsched.kvcache import instances
from infsched.kvcache.improve import improve_schedule
from infsched.kvcache.model import check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.kvcache.timip import ti_optimum


def one(n: int, trial: int, nodes: int, rounds: int) -> dict:
    rng = np.random.default_rng(1000 * n + trial)
    inst = instances.arrival_model_1(rng, n_range=(n, n))
    starts, _ = improve_schedule(inst, mc_sf(inst))
    local = check_schedule(inst, starts).tel
    c0 = time.process_time()
    r = ti_optimum(inst, starts, rounds=rounds, node_limit=nodes)
    return {"n": n, "trial": trial, "M": inst.M, "local_search": local, "best": r.objective,
            "ti_bound": r.ti_bound, "bound": r.bound, "certified": r.certified, "nodes": r.nodes,
            "columns": r.columns, "local_over_best": local / r.objective,
            "best_over_ti_bound": r.objective / r.ti_bound, "best_over_bound": r.objective / r.bound,
            "cpu_seconds": time.process_time() - c0}


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="12,16,20", help="numbers of requests, comma-separated")
    ap.add_argument("--trials", type=int, default=2, help="seeded instances per size")
    ap.add_argument("--nodes", type=int, default=3000, help="branch-and-bound nodes per instance")
    ap.add_argument("--rounds", type=int, default=150, help="rounds of the time-indexed bound")
    ap.add_argument("--out", default=None, help="CSV to write")
    args = ap.parse_args(argv)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        for t in range(args.trials):
            rows.append(one(n, t, args.nodes, args.rounds))
            print(pd.DataFrame(rows[-1:]).round(4).to_string(index=False, header=len(rows) == 1),
                  flush=True)
    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, index=False)
    return df


if __name__ == "__main__":
    main()
