"""Where the KV-cache bracket's width lies at sizes of 12 to 30 requests: on seeded instances of
both arrival models, the local search's schedule, the iterated local search's (the schedule the
book's paper-size brackets use), the time-indexed bound
(:func:`infsched.kvcache.tibound.ti_bound`) and branch and bound on the strengthened program
(:func:`infsched.kvcache.timip.ti_optimum`, a node limit, one thread, the iterated search's
schedule as its first incumbent). A certified trial splits its width exactly (schedule over the
optimum, the optimum over the bound); an uncertified one still narrows it from both sides (a
better schedule, a higher bound).

Arrival Model 1 draws ``n`` requests at time 0; Model 2 has no ``n`` parameter, so its horizon is
set to ``T = n`` rounds at rate 1 (about ``n`` requests; the row records the ``n`` drawn).

    PYTHONPATH=lib .venv/bin/python benchmarks/kvcache_certify.py --models 1,2 \\
        --sizes 12,15,20,25,30 --trials 2 --nodes 1000 --out benchmarks/results/kvcache_certify.csv

Limits are counts (rounds, kicks, nodes), so the numbers do not depend on the machine; the CPU
seconds beside them do.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.kvcache import instances
from infsched.kvcache.improve import improve_schedule, iterated_search
from infsched.kvcache.model import check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.kvcache.timip import ti_optimum


def instance(model: int, n: int, trial: int):
    rng = np.random.default_rng(1000 * n + trial + (0 if model == 1 else 500))
    if model == 1:
        return instances.arrival_model_1(rng, n_range=(n, n))
    return instances.arrival_model_2(rng, T_range=(n, n), rate_range=(1.0, 1.0))


def one(model: int, n: int, trial: int, nodes: int, rounds: int, kicks: int) -> dict:
    inst = instance(model, n, trial)
    start = mc_sf(inst)
    local = check_schedule(inst, improve_schedule(inst, start)[0]).tel
    c0 = time.process_time()
    starts, _ = iterated_search(inst, start, kicks=kicks, seed=[model, n, trial])
    ils = check_schedule(inst, starts).tel
    r = ti_optimum(inst, starts, rounds=rounds, node_limit=nodes)
    return {"model": model, "n": inst.n, "node_limit": nodes, "size": n, "trial": trial, "M": inst.M,
            "local_search": local, "ils": ils, "best": r.objective, "ti_bound": r.ti_bound,
            "bound": r.bound, "certified": r.certified, "nodes": r.nodes, "columns": r.columns,
            "ils_over_best": ils / r.objective, "best_over_ti_bound": r.objective / r.ti_bound,
            "best_over_bound": r.objective / r.bound, "cpu_seconds": time.process_time() - c0}


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="1,2", help="arrival models, comma-separated")
    ap.add_argument("--sizes", default="12,15,20,25,30", help="numbers of requests, comma-separated")
    ap.add_argument("--trials", type=int, default=2, help="seeded instances per size")
    ap.add_argument("--first-trial", type=int, default=0,
                    help="the first instance's index (to re-run one with more nodes)")
    ap.add_argument("--nodes", type=int, default=1000, help="branch-and-bound nodes per instance")
    ap.add_argument("--rounds", type=int, default=200, help="rounds of the time-indexed bound")
    ap.add_argument("--kicks", type=int, default=100, help="kicks of the iterated local search")
    ap.add_argument("--out", default=None, help="CSV to write")
    ap.add_argument("--append", action="store_true", help="add the rows to --out's")
    args = ap.parse_args(argv)
    rows = []
    old = (pd.read_csv(args.out) if args.append and args.out and Path(args.out).exists()
           else pd.DataFrame())
    for m in (int(x) for x in args.models.split(",")):
        for n in (int(x) for x in args.sizes.split(",")):
            for t in range(args.first_trial, args.first_trial + args.trials):
                rows.append(one(m, n, t, args.nodes, args.rounds, args.kicks))
                print(pd.DataFrame(rows[-1:]).round(4).to_string(index=False, header=len(rows) == 1),
                      flush=True)
                if args.out:
                    pd.concat([old, pd.DataFrame(rows)]).to_csv(args.out, index=False)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()
