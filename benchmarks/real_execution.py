"""The head-to-head simulator against real execution on this machine.

Profiles the models in ``--workers`` CPU worker processes (one torch thread each, random weights),
then replays seeded arrival streams in real time through a dispatcher that enforces each
contender's own decision code on those workers, simulates the same contender on the same
arrivals with the profile just measured, and reports the error as Vidur and AlpaServe report
their simulators' (:mod:`infsched.serving.realexec`; the workers: :mod:`infsched.profiling.workers`).

The informative check (the defaults): ``--seeds 5`` runs per (contender, load), each contender at
an SLO near its deadlines: before any scored run, the simulator's on-time curve over SLOs is
computed on arrivals no scored run uses, and the SLO whose simulated share on time is nearest
``--target-on-time`` (0.9) within 50 % to 99 % is taken (``--slo-ms`` fixes one SLO instead).
The error, simulated minus measured share on time, is reported with a t interval over the
informative runs only (a run where both sides keep every query on time, or none, says nothing).
Every query records its timestamps (arrival, seen by the dispatcher, batch decided, handed to the
pipe, received, begun and ended by the worker, reply received), and the latency is attributed to
those segments, beside what the simulator charges for each.

Writes to ``DIR``: ``real_execution.csv`` (one row per contender x load x seed),
``real_execution_summary.csv`` (the error with its interval per contender and load, per
contender, and over all), ``real_execution_attribution.csv`` (where the latency goes, per
contender and load, pooled over seeds), ``real_execution_batches.csv`` (execution over the
profile's p95 by batch size and by busy workers, per contender), ``real_execution_slo.csv``
(the simulated on-time curves the SLOs were picked from), ``profile.csv`` (the raw profile
measured at the start) and, with ``--timestamps``, ``real_execution_queries.csv.gz`` (every
query's timestamps). The one command, on a quiet machine with at least ``workers + 1`` cores:

    PYTHONPATH=lib python3 benchmarks/real_execution.py --out data/realexec

and on a GPU (the workers share it; larger models, so that a call is not mostly launch overhead):

    PYTHONPATH=lib python3 benchmarks/real_execution.py --out data/realexec/gpu --device cuda \
        --workers 4 --models resnet50,efficientnet_b0,mobilenet_v3_large --max-batch 16

About 25 s of start-up and profiling, then ``seconds`` plus a short drain per contender x load x
seed: with the defaults (8 workers, 3 contenders, 2 loads, 5 seeds, 10 s) about 6 minutes.
Results are written after every run, so an interrupted run keeps what it finished. Not part of
``make test`` (a benchmark); ``tests/serving/test_realexec.py`` runs a few seconds of it on real
workers, ``tests/serving/test_realexec_timing.py`` the instrumentation and the interval on fake ones.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from pathlib import Path


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, metavar="DIR", help="folder for the CSV files")
    ap.add_argument("--workers", type=int, default=8, help="worker processes (8)")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of arrivals per run (10)")
    ap.add_argument("--seeds", type=int, default=5, help="scored runs per contender x load, each on its "
                    "own arrivals (5: the t interval needs several informative runs)")
    ap.add_argument("--loads", type=_floats, default=[0.5, 0.9],
                    help="loads, shares of the capacity at the reference SLO, comma-separated (0.5,0.9)")
    ap.add_argument("--contenders", default="fixed,batch-greedy,jellyfish+",
                    help="comma-separated: fixed, or a central-queue policy of the head to head "
                    "(batch-greedy, slack-accurate, jellyfish+, modelswitching, ...); "
                    "default fixed,batch-greedy,jellyfish+")
    ap.add_argument("--models", default=None, help="comma-separated zoo names (default: "
                    "shufflenet_v2_x0_5,shufflenet_v2_x1_0,mobilenet_v3_large)")
    ap.add_argument("--max-batch", type=int, default=8, help="largest batch (8)")
    ap.add_argument("--slo-ms", type=float, default=None,
                    help="one SLO in ms for every run (default: picked per contender x load near "
                    "its deadlines, see --target-on-time)")
    ap.add_argument("--target-on-time", type=float, default=0.9,
                    help="the simulated share on time the picked SLO aims at, within --band (0.9)")
    ap.add_argument("--band", type=_floats, default=[0.5, 0.99],
                    help="the simulated on-time shares a picked SLO must lie in (0.5,0.99)")
    ap.add_argument("--workload", default="poisson", help="poisson | mmpp | twitter (poisson)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timestamps", action="store_true",
                    help="also write every query's timestamps (real_execution_queries.csv.gz)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda: the workers' models on the one GPU "
                    "(processes sharing it; the profile is measured there too) (cpu)")
    ap.add_argument("--profile-budget", type=float, default=1.0, metavar="S",
                    help="seconds of timed calls per (model, batch) point, at most (1)")
    a = ap.parse_args(argv)

    import numpy as np
    import pandas as pd

    from infsched.errors import require
    from infsched.profiling.timing import device_name
    from infsched.profiling.workers import DEFAULT_MODELS, WorkerPool, measure_profile
    from infsched.serving import realexec as rx
    from infsched.serving.labels import LABELS
    from infsched.serving.sim import simulate
    from infsched.serving.streams import WORKLOADS, arrivals
    from infsched.serving.zoo import Zoo

    require(a.seconds > 0, "--seconds", a.seconds, "must be > 0")
    require(a.seeds >= 1, "--seeds", a.seeds, "must be >= 1")
    require(len(a.loads) >= 1 and all(x > 0 for x in a.loads), "--loads", a.loads, "must be loads > 0")
    require(len(a.band) == 2, "--band", a.band, "must be two shares, low,high")
    require(a.workload in WORKLOADS, "--workload", a.workload, "must be one of " + ", ".join(WORKLOADS))
    contenders = [c.strip() for c in a.contenders.split(",") if c.strip()]
    models = DEFAULT_MODELS if a.models is None else tuple(m.strip() for m in a.models.split(","))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    rows, curves, stamps = [], [], []
    pairs: dict = {}
    with WorkerPool(a.workers, models, max_batch=a.max_batch, threads=1, device=a.device) as pool:
        print(f"{a.workers} workers ready in {time.perf_counter() - t_all:.1f} s (torch {pool.torch_version})",
              file=sys.stderr)
        t = time.perf_counter()
        raw, prof = measure_profile(pool, budget_s=a.profile_budget)
        zoo = Zoo.of(prof)
        raw.to_csv(out / "profile.csv", index=False, float_format="%.6g")
        print(f"profiled {len(raw)} points in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        ref = rx.default_slo(zoo) if a.slo_ms is None else float(a.slo_ms)
        cap = zoo.capacity_qps(a.workers, ref)
        meta = {"ref_slo_ms": ref, "capacity_qps": cap, "workers": a.workers, "seconds": a.seconds,
                "workload": a.workload, "models": " ".join(zoo.names), "max_batch": zoo.max_batch,
                "threads": pool.threads, "machine": platform.node(), "cpu": device_name("cpu"),
                "device": device_name(a.device),
                "cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "",
                "torch": pool.torch_version, "python": platform.python_version(),
                "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), **rx.clock_check()}

        def stream(li: int, k: int, load: float):
            rate = load * cap  # one stream per (load, seed), the same for every contender
            rng = np.random.default_rng([a.seed, li, k])
            return rate, arrivals(a.workload, rate, max(int(round(rate * a.seconds)), 1), rng,
                                  interval_s=a.seconds / 27.0)

        slo = {}
        for li, load in enumerate(a.loads):
            rate, sel = stream(li, a.seeds + 1000, load)  # arrivals no scored run uses
            for name in contenders:
                if a.slo_ms is not None:
                    slo[name, load] = ref
                    continue
                slo[name, load], curve = rx.pick_slo(name, zoo, a.workers, rate, sel, ref_slo_ms=ref,
                                                     target=a.target_on_time, band=tuple(a.band), seed=a.seed)
                curves.append(curve.assign(contender=name, load=load))
                ch = curve[curve["chosen"]].iloc[0]
                print(f"{name:>13} load {load:g}: SLO {ch['slo_ms']:g} ms (simulated on time "
                      f"{ch['simulated_on_time']:.3f}{'' if ch['in_band'] else ', outside the band'})",
                      file=sys.stderr)
            if curves:
                pd.concat(curves, ignore_index=True).to_csv(out / "real_execution_slo.csv", index=False,
                                                            float_format="%.6g")
        for k in range(a.seeds):
            for li, load in enumerate(a.loads):
                rate, arr = stream(li, k, load)
                for name in contenders:
                    cfg = rx.real_contender(name, zoo, a.workers, slo[name, load], rate)
                    t = time.perf_counter()
                    run = rx.run_real(pool, cfg, arr)
                    sim = simulate(cfg, arrivals=arr, seed=a.seed + k)
                    pairs.setdefault((name, load), []).append((run, sim))
                    row = {"contender": name,
                           "label": "fixed model (FIFO, fastest)" if name == "fixed" else LABELS[name],
                           "load": load, "seed": k, "slo_ms": slo[name, load], "rate_qps": rate,
                           **rx.compare(run, seed=a.seed + k), **meta}
                    row["informative"] = bool(rx.informative(row["measured_on_time"], row["simulated_on_time"]))
                    rows.append(row)
                    if a.timestamps:
                        stamps.append(run.timestamps().assign(contender=name, load=load, seed=k))
                    print(f"seed {k} {name:>13} load {load:g}: on time {row['measured_on_time']:.3f} measured, "
                          f"{row['simulated_on_time']:.3f} simulated ({-row['error_on_time_points']:+.1f} points "
                          f"simulated - measured); {time.perf_counter() - t:.1f} s", file=sys.stderr)
                    pd.DataFrame(rows).to_csv(out / "real_execution.csv", index=False, float_format="%.6g")
            _tables(rx, pd.DataFrame(rows), pairs, out)  # after each seed: an interrupted run keeps them
    if stamps:
        pd.concat(stamps, ignore_index=True).to_csv(out / "real_execution_queries.csv.gz", index=False,
                                                    float_format="%.4f")
    df = pd.DataFrame(rows)
    summ, attr, bat = _tables(rx, df, pairs, out)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print("\nsimulated - measured share on time (points), over informative runs:\n"
              + summ.round(2).to_string(index=False), file=sys.stderr)
        for (name, load), g in attr.groupby(["contender", "load"], sort=False):
            print(f"\nwhere the latency goes: {name}, load {load:g}\n"
                  + g.drop(columns=["contender", "load"]).round(3).to_string(index=False), file=sys.stderr)
        print("\nexecution over the profile's p95:\n" + bat.round(3).to_string(index=False), file=sys.stderr)
    print(f"total {time.perf_counter() - t_all:.1f} s wall; wrote {out}", file=sys.stderr)
    return 0


def _tables(rx, df, pairs, out: Path):
    """Write (and return) the error summary, the attribution and the execution tables."""
    import pandas as pd

    summ = pd.concat([rx.error_summary(df, by=("contender", "load")),
                      rx.error_summary(df, by=("contender",)).assign(load="all")], ignore_index=True)
    summ = summ.drop_duplicates(subset=["contender", "load"]).reset_index(drop=True)
    attr = pd.concat([rx.attribution(p).assign(contender=name, load=load)
                      for (name, load), p in pairs.items()], ignore_index=True)
    attr = attr[["contender", "load"] + [c for c in attr.columns if c not in ("contender", "load")]]
    bat = pd.concat([rx.execution_table([r for r, _ in p]).assign(contender=name)
                     for name in dict.fromkeys(n for n, _ in pairs)
                     for p in [[x for (n, _), v in pairs.items() if n == name for x in v]]], ignore_index=True)
    summ.to_csv(out / "real_execution_summary.csv", index=False, float_format="%.6g")
    attr.to_csv(out / "real_execution_attribution.csv", index=False, float_format="%.6g")
    bat.to_csv(out / "real_execution_batches.csv", index=False, float_format="%.6g")
    return summ, attr, bat


if __name__ == "__main__":
    sys.exit(main())
