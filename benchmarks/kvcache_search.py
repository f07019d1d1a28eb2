"""The schedules of KV-cache Fig. 2's bracket: on paper-size trials of both arrival models, the
serial scheme's placement with the jump over starts that cannot fit
(:func:`infsched.kvcache.improve._fit`) against a round-by-round scan (the same schedules, checked
here), and the iterated local search's total latency and CPU seconds as the kicks grow, against
one descent of the local search.

    PYTHONPATH=lib .venv/bin/python benchmarks/kvcache_search.py \\
        --out benchmarks/results/kvcache_search.csv

A study (not in ``make bench``): CPU seconds on this machine, one process; run it on a quiet one.
The kicks are a count, so the schedules do not depend on the machine.
"""

from __future__ import annotations

import argparse
import time

import numba as nb
import numpy as np
import pandas as pd

TRIALS = ((1, 3), (1, 10), (1, 28), (2, 19), (2, 150), (2, 62))
KICKS = (0, 25, 50, 100, 200)


@nb.njit(cache=True)
def _scan_place(order, a, s, o, M, mem, starts):
    """The placement tried one start after another (the jump's reference)."""
    mem[:] = 0
    total = 0
    for k in range(order.size):
        i = order[k]
        p = a[i]
        while True:
            fits = True
            for j in range(1, o[i] + 1):
                if mem[p + j] + s[i] + j > M:
                    fits = False
                    break
            if fits:
                break
            p += 1
        for j in range(1, o[i] + 1):
            mem[p + j] += s[i] + j
        starts[i] = p
        total += p + o[i] - a[i]
    return total


def _placement_ratio(inst, orders: int = 300) -> float:
    """CPU time of the scan over the jump, on the same random orders (their schedules equal)."""
    from infsched.kvcache.improve import _arrays, _place

    a, s, o, mem = _arrays(inst)
    rng = np.random.default_rng(0)
    perms = [rng.permutation(inst.n).astype(np.int64) for _ in range(orders)]
    f1, f2 = np.empty(inst.n, np.int64), np.empty(inst.n, np.int64)
    times = []
    for fn, out in ((_scan_place, f1), (_place, f2)):
        fn(perms[0], a, s, o, int(inst.M), mem, out)          # compile outside the clock
        c0 = time.process_time()
        for p in perms:
            fn(p, a, s, o, int(inst.M), mem, out)
        times.append(time.process_time() - c0)
    for p in perms[:20]:
        _scan_place(p, a, s, o, int(inst.M), mem, f1)
        _place(p, a, s, o, int(inst.M), mem, f2)
        assert np.array_equal(f1, f2)
    return times[0] / times[1]


def main(argv=None) -> pd.DataFrame:
    from infsched.kvcache.fig2 import _fig2_instance
    from infsched.kvcache.improve import iterated_search
    from infsched.kvcache.model import check_schedule
    from infsched.kvcache.policies import mc_sf
    from infsched.kvcache.scales import get_scale

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="CSV to write")
    args = ap.parse_args(argv)
    lo, hi = get_scale("paper").fig2_sizes
    warm = _fig2_instance(1, 0, 0, lo, hi)
    iterated_search(warm, mc_sf(warm), kicks=1)                # compile outside the clock
    rows = []
    for m, t in TRIALS:
        inst = _fig2_instance(m, t, 0, lo, hi)
        ratio = _placement_ratio(inst)
        base = None
        for k in KICKS:
            c0 = time.process_time()
            found, evals = iterated_search(inst, mc_sf(inst), kicks=k, seed=[0, m, t])
            cpu = time.process_time() - c0
            tel = check_schedule(inst, found).tel
            base = tel if base is None else base
            rows.append({"model": m, "trial": t, "n": inst.n, "kicks": k, "tel": tel,
                         "gain_pct": 100 * (base / tel - 1), "schedules": evals,
                         "cpu_seconds": cpu, "scan_over_jump": ratio})
    df = pd.DataFrame(rows)
    print(df.round(3).to_string(index=False))
    if args.out:
        df.to_csv(args.out, index=False)
    return df


if __name__ == "__main__":
    main()
