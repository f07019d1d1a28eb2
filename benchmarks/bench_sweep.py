"""Speed of sweeps that scale out: one grid run serially, on all local cores, on a Dask cluster.

Grids taken from the chapters' own experiment functions (the points and the ``cost`` estimate
they hand to ``run_sweep``, so the benchmark runs exactly what the chapter runs): TAD Fig. 6
(n = 64, three policies × four a* × the scale's loads), TAD Figs. 4 and 7 at "default" scale
(the chapter's largest sweeps) and Shepherd Fig. 7 (three systems × two workloads × seven
offered loads × the scale's seeds). Each point is first timed alone (CPU time), which gives the
efficiency its dispatch order allows whatever the machine's load; then each grid runs, cache
disabled,

1. serially (``n_jobs=1``),
2. on every local core (``n_jobs=os.cpu_count()``, joblib/loky),
3. on a two-worker ``dask.distributed.LocalCluster`` (one thread each), made by
   :func:`infsched.sweep.local_cluster` (without Dask's ``MALLOC_TRIM_THRESHOLD_``, which costs
   these simulators about a quarter of their speed, in the workers and, leaked through the
   environment, in every process started after the cluster),

after a warm-up on each backend (worker start-up, numba's cached machine code), and the three
tables must be identical. Goal (issue 8): within 15 % of a perfect speed-up on the local cores,
i.e. serial / parallel ≥ 0.85 × cores. Prints a table and writes ``benchmarks/results/sweep.json``.

    python benchmarks/bench_sweep.py [--scale smoke|default|paper]     (default: paper)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import pandas as pd

import infsched.shepherd.experiments as shepherd
import infsched.tad.experiments as tad
from infsched.sweep import local_cluster, run_sweep

RESULTS = Path(__file__).resolve().parent / "results" / "sweep.json"
#: name -> (module, figure, scale): None runs the benchmark's scale; TAD's largest sweeps
#: (Fig. 7: 144 points of n × 10^5 jobs at n = 4096; Fig. 4: point costs spread over 25×) run
#: at "default" scale, since at "paper" scale Fig. 7 alone takes an hour on 2 cores
GRIDS = {"TAD Fig. 6": (tad, "fig6", None), "TAD Fig. 4": (tad, "fig4", "default"),
         "TAD Fig. 7": (tad, "fig7", "default"), "Shepherd Fig. 7": (shepherd, "fig7", None)}
DASK_WORKERS = 2
GOAL_EFFICIENCY = 0.85


class _Captured(Exception):
    pass


def chapter_grid(module, figure: str, scale: str):
    """The point function and grid that ``module.<figure>(scale)`` hands to ``run_sweep``, and
    the ``cost`` estimate it passes (None if it gives none)."""
    seen: dict = {}

    def capture(fn, grid, **kwargs):
        seen.update(fn=fn, grid=[dict(p) for p in grid], cost=kwargs.get("cost"))
        raise _Captured

    original = module.run_sweep
    module.run_sweep = capture
    try:
        getattr(module, figure)(scale)
    except _Captured:
        pass
    finally:
        module.run_sweep = original
    return seen["fn"], seen["grid"], seen["cost"]


def list_schedule_efficiency(times, order, workers: int) -> float:
    """Σ times / (workers × makespan) when the points start in ``order``, each on the first free
    worker: the speed-up the dispatch order allows on an idle machine (no start-up, no load)."""
    free = [0.0] * workers
    for i in order:
        k = free.index(min(free))
        free[k] += times[i]
    return sum(times) / (workers * max(free))


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(scale: str = "paper") -> dict:
    cores = os.cpu_count() or 1
    grids = {name: chapter_grid(module, fig, sc or scale)
             for name, (module, fig, sc) in GRIDS.items()}
    cluster, t_start = _timed(lambda: local_cluster(DASK_WORKERS))
    rows = []
    try:
        backends = {"serial": dict(n_jobs=1, dask=False),
                    f"{cores} local processes": dict(n_jobs=cores, dask=False),
                    f"{DASK_WORKERS}-worker LocalCluster": dict(dask=cluster.scheduler_address)}
        for name, (fn, grid, cost) in grids.items():
            times, tables = {}, {}
            # per-point times, serially: how balanced the dispatch order is, whatever the load
            fn(**grid[0])
            point_s = []
            for p in grid:
                t0 = time.process_time()
                fn(**p)
                point_s.append(time.process_time() - t0)
            order = sorted(range(len(grid)), key=lambda i: -cost(grid[i])) if cost else range(len(grid))
            for backend, kw in backends.items():
                run_sweep(fn, grid[:2], cache_dir=False, **kw)  # warm-up
                tables[backend], times[backend] = _timed(lambda: run_sweep(
                    fn, grid, cache_dir=False, cost=cost, **kw))
                print(f"  {name}: {backend}: {times[backend]:.1f} s", flush=True)
            ref = tables["serial"]
            for t in tables.values():
                pd.testing.assert_frame_equal(ref, t)
            serial, local, dask = times.values()
            rows.append({"grid": name, "points": len(grid), "serial_s": serial,
                         "local_s": local, "local_speedup": serial / local,
                         "local_efficiency": serial / local / cores,
                         "dask_s": dask, "dask_speedup": serial / dask,
                         "dask_efficiency": serial / dask / DASK_WORKERS, "identical": True,
                         "points_cpu_s": sum(point_s), "longest_point_cpu_s": max(point_s),
                         "schedule_efficiency": list_schedule_efficiency(point_s, order, cores),
                         "longest_first": cost is not None,
                         "load_avg_1min": os.getloadavg()[0]})
    finally:
        cluster.close()
    result = {"benchmark": "sweep", "scale": scale, "cores": cores, "dask_workers": DASK_WORKERS,
              "cluster_start_s": t_start, "python": platform.python_version(),
              "machine": platform.machine(), "goal": {"local_efficiency": GOAL_EFFICIENCY},
              "rows": rows}

    print(f"scale {scale!r}, {cores} cores; LocalCluster start-up {t_start:.1f} s (not counted)")
    print(f"{'grid':<16} {'points':>6} {'serial s':>9} {'local s':>8} {'speed-up':>9} {'eff.':>6} "
          f"{'dask s':>7} {'speed-up':>9} {'eff.':>6} {'sched.':>7} {'load':>5}")
    for r in rows:
        print(f"{r['grid']:<16} {r['points']:>6} {r['serial_s']:>9.1f} {r['local_s']:>8.1f} "
              f"{r['local_speedup']:>9.2f} {r['local_efficiency']:>6.0%} {r['dask_s']:>7.1f} "
              f"{r['dask_speedup']:>9.2f} {r['dask_efficiency']:>6.0%} "
              f"{r['schedule_efficiency']:>7.0%} {r['load_avg_1min']:>5.1f}")
    print("sched.: the efficiency the dispatch order allows, from each point's CPU time (no load, "
          "no start-up); load: 1-minute load average at the end (the other users' work shares "
          "the cores, and wall-clock efficiencies are only meaningful on an idle machine)")
    print(f"goal: local efficiency ≥ {GOAL_EFFICIENCY:.0%} (within 15 % of a perfect speed-up)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="paper", choices=("smoke", "default", "paper"))
    main(ap.parse_args().scale)
