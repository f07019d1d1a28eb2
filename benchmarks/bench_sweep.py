"""Speed of sweeps on two local processes: each chapter's largest sweep, serially and on 2.

Grids are taken from the chapters' own experiment functions (the points and the ``cost``
estimate they hand to ``run_sweep``, so the benchmark runs exactly what the chapter runs): TAD
Figs. 7, 4 and 6, RAMSIS Fig. 5 (policy solves), the KAIROS exhaustive table of RM2, the
KV-cache Fig. 2 trials and Shepherd Fig. 7. The goal is for paper-scale runs, so by default every
grid runs at "paper" scale except four that run at "default" (:data:`GRIDS`: TAD Figs. 7 and 4,
Fig. 7 alone about 2,300 CPU s at "paper"; RAMSIS Fig. 5's thousand policy solves; KV-cache Fig.
2, hours); ``--scale default`` runs them
all at "default", where sweeps of a few CPU seconds show what a worker's start-up costs. Per
grid, cache disabled:

1. every point alone, serially, in this process: its **CPU time** (``time.process_time``) and
   wall time, after one warm-up point (numba's cached machine code, imports);
2. the whole grid on ``PROCESSES`` local processes (joblib/loky, longest first when the chapter
   gives a ``cost``): its wall time.

Three efficiencies are printed. **Schedule efficiency** Σ t / (P × makespan) is computed from the
measured CPU time of every point, dispatched in the chapter's order on P workers: what the
order allows on an idle machine, whatever the load now (no start-up, no contention). The same
number is given for the order by measured time (LPT: the best a good ``cost`` can do) and for
the grid order (no ``cost``). **CPU efficiency** reads every fresh worker's process CPU clock
at each point: Σ serial point CPU / (P × the busiest worker's CPU from its start to its last
point): the parallel run as it happened (start-up, unpickling, per-point overhead and imbalance
included), but not the machine's other users. **Wall efficiency** Σ wall of the points / (P × wall of the
parallel run) is what this machine gave now: on a shared machine (other users' work on the same
cores) it is noisy and low, and the load average is printed beside it. Goal (issue 24):
≥ 85 % on every chapter's largest sweep.

``--dask`` also runs each grid on a two-worker ``dask.distributed.LocalCluster`` made by
:func:`infsched.sweep.local_cluster`. Prints a table and writes ``benchmarks/results/sweep.json``.

    python benchmarks/bench_sweep.py [--scale smoke|default|paper] [--only NAME] [--dask]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import infsched.kairos.experiments as kairos
import infsched.kvcache.experiments as kvcache
import infsched.ramsis.experiments as ramsis
import infsched.shepherd.experiments as shepherd
import infsched.tad.experiments as tad
from infsched.sweep import _one_blas_thread, local_cluster, run_sweep

RESULTS = Path(__file__).resolve().parent / "results" / "sweep.json"
#: name -> (call(scale), the scale used at "paper"). At "paper" four grids run at "default":
#: TAD Figs. 7 and 4 (Fig. 7 alone is about 2,300 CPU s there, 144 points of 15-16 CPU s each),
#: RAMSIS Fig. 5 (its policy solves for every panel, about 1,000 of them with FLD D = 100 at
#: "paper") and KV-cache Fig. 2 (hours of CP-SAT solves of about 50 CPU s each); with that much
#: work per process, start-up is a negligible share (see the README)
GRIDS = {
    "TAD Fig. 7": (lambda scale: tad.fig7(scale), "default"),
    "TAD Fig. 4": (lambda scale: tad.fig4(scale), "default"),
    "TAD Fig. 6": (lambda scale: tad.fig6(scale), "paper"),
    "RAMSIS Fig. 5": (lambda scale: ramsis.fig5(scale), "default"),
    "KAIROS table": (lambda scale: kairos.compute_table(
        "rm2", n_queries=kairos.get_scale(scale).n_queries, cache=False), "paper"),
    "KV-cache Fig. 2": (lambda scale: kvcache.fig2(scale), "default"),
    "Shepherd Fig. 7": (lambda scale: shepherd.fig7(scale), "paper"),
}
PROCESSES = 2
DASK_WORKERS = 2
GOAL_EFFICIENCY = 0.85


class _Captured(Exception):
    pass


def chapter_grid(call, scale: str | None = None):
    """The point function and grid that the chapter hands to ``run_sweep`` (its first call),
    and the ``cost`` estimate it passes (None if it gives none). ``call`` is a function of the
    scale. Every ``infsched`` module that imported ``run_sweep`` has it replaced while ``call``
    runs, so the grid is found wherever the chapter's code calls it from."""
    seen: dict = {}

    def capture(fn, grid, **kwargs):
        seen.update(fn=fn, grid=[dict(p) for p in grid], cost=kwargs.get("cost"))
        raise _Captured

    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("infsched.") and getattr(m, "run_sweep", None) is run_sweep]
    for m in modules:
        m.run_sweep = capture
    try:
        call(scale)
    except _Captured:
        pass
    finally:
        for m in modules:
            m.run_sweep = run_sweep
    if "fn" not in seen:
        raise RuntimeError("the call made no sweep (a cached table?)")
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


def _timed_point(fn):
    """``fn`` wrapped to report, per point, the worker's pid and its process CPU clock before and
    after the point (pickled by value, so the workers need not import this file)."""
    def timed(**point):
        import os as _os
        import time as _time
        c0 = _time.process_time()
        out = fn(**point)
        c1 = _time.process_time()
        return {"pid": _os.getpid(), "cpu_before": c0, "cpu_after": c1, "cpu": c1 - c0,
                "rows": out}
    return timed


def measure(name: str, fn, grid, cost, cluster=None) -> dict:
    """Per-point CPU and wall times (serially), then the grid on PROCESSES fresh local processes
    (their CPU clocks read at every point)."""
    from joblib.externals.loky import get_reusable_executor

    fn(**grid[0])                                               # warm-up: imports, numba cache
    cpu, wall = [], []
    for p in grid:
        # one BLAS thread, as run_sweep runs every point (a multithreaded BLAS here would spend
        # more CPU than a worker does and read as an efficiency above 100 %)
        with _one_blas_thread():
            c0, w0 = time.process_time(), time.perf_counter()
            fn(**p)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
    get_reusable_executor().shutdown(wait=True)                 # fresh workers: start-up counts
    load0 = os.getloadavg()[0]
    df, par = _timed(lambda: run_sweep(_timed_point(fn), grid, cache_dir=False,
                                       n_jobs=PROCESSES, cost=cost))
    workers = df.groupby("pid").agg(first=("cpu_before", "min"), last=("cpu_after", "max"),
                                    points=("cpu", "sum"))
    # each worker's CPU from its start (imports, unpickling, numba's cache) to its last point
    worker_cpu = workers["last"].to_numpy()
    n = len(grid)
    chapter = (sorted(range(n), key=lambda i: -cost(grid[i])) if cost else range(n))
    row = {"grid": name, "points": n, "cost_given": cost is not None,
           "points_cpu_s": sum(cpu), "points_wall_s": sum(wall), "longest_point_cpu_s": max(cpu),
           "parallel_wall_s": par, "workers": int(len(workers)),
           "worker_cpu_s": worker_cpu.tolist(),
           "worker_startup_cpu_s": workers["first"].tolist(),
           "worker_points_cpu_s": workers["points"].tolist(),
           "cpu_efficiency": sum(cpu) / (PROCESSES * worker_cpu.max()),
           "cpu_efficiency_warm": sum(cpu) / (PROCESSES * (workers["last"] - workers["first"]).max()),
           "wall_efficiency": sum(wall) / (PROCESSES * par),
           "schedule_efficiency": list_schedule_efficiency(cpu, chapter, PROCESSES),
           "schedule_efficiency_lpt": list_schedule_efficiency(
               cpu, sorted(range(n), key=lambda i: -cpu[i]), PROCESSES),
           "schedule_efficiency_grid_order": list_schedule_efficiency(cpu, range(n), PROCESSES),
           "load_avg_1min": (load0 + os.getloadavg()[0]) / 2, "point_cpu_s": cpu}
    if cluster is not None:
        run_sweep(fn, grid[:2], cache_dir=False, dask=cluster.scheduler_address)
        _, d = _timed(lambda: run_sweep(fn, grid, cache_dir=False, cost=cost,
                                        dask=cluster.scheduler_address))
        row.update(dask_wall_s=d, dask_wall_efficiency=sum(wall) / (DASK_WORKERS * d))
    return row


def main(scale: str = "paper", only: str | None = None, dask: bool = False) -> dict:
    cluster = local_cluster(DASK_WORKERS) if dask else None
    rows = []
    try:
        for name, (call, at_paper) in GRIDS.items():
            if only and only.lower() not in name.lower():
                continue
            used = at_paper if scale == "paper" else scale
            fn, grid, cost = chapter_grid(call, used)
            r = measure(name, fn, grid, cost, cluster)
            r["scale"] = used
            rows.append(r)
            print(f"  {name}: {r['points']} points, {r['points_cpu_s']:.1f} CPU s; schedule "
                  f"{r['schedule_efficiency']:.0%}, CPU {r['cpu_efficiency']:.0%}, wall "
                  f"{r['wall_efficiency']:.0%}", flush=True)
    finally:
        if cluster is not None:
            cluster.close()
    result = {"benchmark": "sweep", "scale": scale, "processes": PROCESSES,
              "cores": os.cpu_count(), "python": platform.python_version(),
              "machine": platform.machine(), "goal": {"efficiency": GOAL_EFFICIENCY},
              "rows": rows}
    print_table(result)
    if only and RESULTS.exists():          # a partial run updates its rows in the last results
        old = json.loads(RESULTS.read_text())
        if old.get("benchmark") == "sweep" and "rows" in old:
            done = {(r["grid"], r.get("scale")) for r in rows}
            result["rows"] = [r for r in old["rows"]
                              if (r["grid"], r.get("scale")) not in done] + rows
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return result


def print_table(result: dict) -> None:
    P = result["processes"]
    print(f"{P} processes on {result['cores']} cores")
    print(f"{'grid':<17} {'scale':<8} {'points':>6} {'CPU s':>7} {'longest':>7} {'sched.':>6} "
          f"{'LPT':>5} {'no cost':>7} {'start-up':>8} {'CPU eff.':>8} {'warm':>5} {'wall eff.':>9} "
          f"{'load':>5}")
    for r in result["rows"]:
        st = max(r.get("worker_startup_cpu_s") or [float("nan")])
        print(f"{r['grid']:<17} {r.get('scale', ''):<8} {r['points']:>6} {r['points_cpu_s']:>7.1f} "
              f"{r['longest_point_cpu_s']:>7.1f} {r['schedule_efficiency']:>6.0%} "
              f"{r['schedule_efficiency_lpt']:>5.0%} {r['schedule_efficiency_grid_order']:>7.0%} "
              f"{st:>8.1f} {r.get('cpu_efficiency', float('nan')):>8.0%} "
              f"{r.get('cpu_efficiency_warm', float('nan')):>5.0%} "
              f"{r['wall_efficiency']:>9.0%} {r['load_avg_1min']:>5.1f}")
    print("sched.: Σ CPU / (P × makespan) of the measured per-point CPU times in the chapter's "
          "order (longest first by its cost, else grid order), i.e. what the order allows; LPT: "
          "ordered by measured time; no cost: grid order. CPU eff.: Σ serial CPU of the points / "
          "(P × the busiest fresh worker's CPU from its start to its last point): the parallel "
          "run as it happened, start-up (seconds of CPU per worker shown) and per-point overhead "
          "included, the machine's other users excluded; warm: the same from each worker's first "
          "point on (workers already started, as for a chapter's later sweeps). wall eff.: Σ serial "
          "point wall / "
          "(P × parallel wall), on this machine now; with other users' work on the cores (load: "
          "1-minute load average) it measures their share, not the sweep")
    print(f"goal: ≥ {GOAL_EFFICIENCY:.0%} on every chapter's largest sweep")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="paper", choices=("smoke", "default", "paper"),
                    help="paper (the default): each grid at the scale of the goal, see GRIDS")
    ap.add_argument("--only", default=None, help="run the grids whose name contains this")
    ap.add_argument("--dask", action="store_true", help="also run on a 2-worker LocalCluster")
    a = ap.parse_args()
    main(a.scale, a.only, a.dask)
