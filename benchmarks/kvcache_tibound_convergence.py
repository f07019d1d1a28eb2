"""How far the time-indexed bound on KV-cache Fig. 2's trials is from its own limit: on paper-size
trials of both arrival models, :func:`infsched.kvcache.tibound.ti_bound` run well past the book's
200 rounds from the book's schedule (the iterated local search's, ``--kicks`` kicks, as
:func:`~infsched.kvcache.fig2_tibound.fig2_bound_point` runs it), the bracket (that schedule over
the bound) read at fixed CPU seconds, beside the restricted master LP's last value and whether
the generation converged (then the bound is the LP optimum with every column and every row of
the three families: what this relaxation can give at any budget). ``bracket_end_local`` is the
local search's schedule over the final bound.

    PYTHONPATH=lib .venv/bin/python benchmarks/kvcache_tibound_convergence.py \\
        --trials 1:3,1:10,1:28,2:19,2:150,2:62 --cpu 240 \\
        --out benchmarks/results/kvcache_tibound_convergence.csv

A study of speed, so it stops by CPU seconds (``ti_bound``'s ``cpu_limit``): its numbers depend
on the machine and its load, and nothing in the book or the tests reads them. One process per
trial; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd

CHECKPOINTS = (10, 20, 30, 60, 120, 240, 480)


def one(model: int, trial: int, cpu: float, kicks: int) -> dict:
    from infsched.kvcache.fig2 import _fig2_instance
    from infsched.kvcache.improve import improve_schedule, iterated_search
    from infsched.kvcache.model import check_schedule
    from infsched.kvcache.policies import mc_sf
    from infsched.kvcache.scales import get_scale
    from infsched.kvcache.tibound import ti_bound

    inst = _fig2_instance(model, trial, 0, *get_scale("paper").fig2_sizes)
    local = check_schedule(inst, improve_schedule(inst, mc_sf(inst))[0]).tel
    c0 = time.process_time()
    starts, _ = iterated_search(inst, mc_sf(inst), kicks=kicks, seed=[0, model, trial])
    search_s = time.process_time() - c0
    upper = check_schedule(inst, starts).tel
    c0 = time.process_time()
    r = ti_bound(inst, starts, rounds=10**6, cpu_limit=cpu)
    row = {"model": model, "trial": trial, "n": inst.n, "local_search": local,
           "iterated_search": upper, "search_cpu_seconds": search_s}
    for c in CHECKPOINTS:
        if c <= cpu:
            done = [b for b, t in zip(r.history, r.cpu) if t <= c]
            row[f"bracket_{c}s"] = upper / done[-1] if done else float("nan")
    row.update({"rounds": r.rounds, "converged": r.converged, "bound": r.bound,
                "bracket_end": upper / r.bound, "bracket_end_local": local / r.bound,
                "master_lp_bracket": upper / r.lp_value,
                "columns": r.columns, "cuts": r.cuts, "cpu_seconds": time.process_time() - c0})
    return row


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", default="1:3,1:10,1:28,2:19,2:150,2:62",
                    help="model:trial pairs of Fig. 2's paper-size trials, comma-separated")
    ap.add_argument("--cpu", type=float, default=240.0, help="CPU seconds per trial")
    ap.add_argument("--kicks", type=int, default=None,
                    help="kicks of the iterated local search (default: the book's ILS_KICKS)")
    ap.add_argument("--jobs", type=int, default=2, help="processes")
    ap.add_argument("--out", default=None, help="CSV to write")
    args = ap.parse_args(argv)
    from infsched.kvcache.fig2_tibound import ILS_KICKS

    kicks = ILS_KICKS if args.kicks is None else args.kicks
    pairs = [tuple(int(v) for v in p.split(":")) for p in args.trials.split(",")]
    with ProcessPoolExecutor(args.jobs) as ex:
        rows = list(ex.map(one, *zip(*pairs), [args.cpu] * len(pairs), [kicks] * len(pairs)))
    df = pd.DataFrame(rows)
    print(df.round(4).to_string(index=False))
    if args.out:
        df.to_csv(args.out, index=False)
    return df


if __name__ == "__main__":
    main()
