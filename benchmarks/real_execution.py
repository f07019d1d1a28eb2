"""The head-to-head simulator against real execution on this machine (issue 33, item 7).

Profiles the models in ``--workers`` CPU worker processes (one torch thread each, random weights),
then, for every contender x load, replays one seeded arrival stream in real time through a
dispatcher that enforces the contender's own decision code on those workers, simulates the same
contender on the same arrivals with the profile just measured, and reports the error (measured
minus simulated on-time share, in points, and mean accuracy of on-time queries), as Vidur and
AlpaServe report their simulators' (:mod:`infsched.serving.realexec`; the workers:
:mod:`infsched.profiling.workers`).

Writes ``DIR/real_execution.csv`` (one row per contender x load) and ``DIR/profile.csv`` (the
raw profile measured at the start). Needs only numpy, pandas, scipy, numba, torch and torchvision:

    PYTHONPATH=lib python3 benchmarks/real_execution.py --out data/realexec --workers 8 --seconds 20

About 25 s of start-up and profiling, then ``seconds`` (plus a short drain; the first run also
compiles the simulator) per contender x load: 155 s with the defaults on a quiet 16-core machine
(measured once, loads 0.3 and 0.8). Not part of ``make test`` (a benchmark);
``tests/serving/test_realexec.py`` runs a few seconds of it.
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
    ap.add_argument("--out", required=True, metavar="DIR", help="folder for real_execution.csv and profile.csv")
    ap.add_argument("--workers", type=int, default=8, help="worker processes (8)")
    ap.add_argument("--seconds", type=float, default=20.0, help="seconds of arrivals per run (20)")
    ap.add_argument("--loads", type=_floats, default=[0.3, 0.9],
                    help="loads, shares of the capacity, comma-separated (0.3,0.9: light, and the "
                    "chapter's near capacity)")
    ap.add_argument("--contenders", default="fixed,batch-greedy,jellyfish+",
                    help="comma-separated: fixed, or a central-queue policy of the head to head "
                    "(batch-greedy, slack-accurate, jellyfish+, modelswitching, ...); "
                    "default fixed,batch-greedy,jellyfish+")
    ap.add_argument("--models", default=None, help="comma-separated zoo names (default: "
                    "shufflenet_v2_x0_5,shufflenet_v2_x1_0,mobilenet_v3_large)")
    ap.add_argument("--max-batch", type=int, default=8, help="largest batch (8)")
    ap.add_argument("--slo-ms", type=float, default=None,
                    help="SLO in ms (default: 4 x the most accurate model's measured batch-1 latency)")
    ap.add_argument("--workload", default="poisson", help="poisson | mmpp | twitter (poisson)")
    ap.add_argument("--seed", type=int, default=0)
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
    from infsched.serving.streams import WORKLOADS, arrivals
    from infsched.serving.zoo import Zoo

    require(a.seconds > 0, "--seconds", a.seconds, "must be > 0")
    require(len(a.loads) >= 1 and all(x > 0 for x in a.loads), "--loads", a.loads, "must be loads > 0")
    require(a.workload in WORKLOADS, "--workload", a.workload, "must be one of " + ", ".join(WORKLOADS))
    contenders = [c.strip() for c in a.contenders.split(",") if c.strip()]
    models = DEFAULT_MODELS if a.models is None else tuple(m.strip() for m in a.models.split(","))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    rows = []
    with WorkerPool(a.workers, models, max_batch=a.max_batch, threads=1) as pool:
        print(f"{a.workers} workers ready in {time.perf_counter() - t_all:.1f} s (torch {pool.torch_version})",
              file=sys.stderr)
        t = time.perf_counter()
        raw, prof = measure_profile(pool, budget_s=a.profile_budget)
        zoo = Zoo.of(prof)
        raw.to_csv(out / "profile.csv", index=False, float_format="%.6g")
        print(f"profiled {len(raw)} points in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        slo = rx.default_slo(zoo) if a.slo_ms is None else float(a.slo_ms)
        cap = zoo.capacity_qps(a.workers, slo)
        meta = {"slo_ms": slo, "capacity_qps": cap, "workers": a.workers, "seconds": a.seconds,
                "workload": a.workload, "seed": a.seed, "models": " ".join(zoo.names),
                "max_batch": zoo.max_batch, "threads": pool.threads, "machine": platform.node(),
                "cpu": device_name("cpu"), "cpu_count": os.cpu_count(), "torch": pool.torch_version,
                "python": platform.python_version(),
                "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")}
        for li, load in enumerate(a.loads):
            rate = load * cap
            rng = np.random.default_rng([a.seed, li])  # one stream per load, the same for every contender
            arr = arrivals(a.workload, rate, max(int(round(rate * a.seconds)), 1), rng,
                           interval_s=a.seconds / 27.0)
            for name in contenders:
                cfg = rx.real_contender(name, zoo, a.workers, slo, rate)
                t = time.perf_counter()
                run = rx.run_real(pool, cfg, arr)
                row = {"contender": name, "label": "fixed model (FIFO, fastest)" if name == "fixed" else LABELS[name],
                       "load": load, "rate_qps": rate, **rx.compare(run, seed=a.seed), **meta}
                rows.append(row)
                print(f"{name:>13} load {load:g}: on time {row['measured_on_time']:.3f} measured, "
                      f"{row['simulated_on_time']:.3f} simulated ({row['error_on_time_points']:+.1f} points); "
                      f"accuracy {row['measured_accuracy']:.2f} / {row['simulated_accuracy']:.2f}; "
                      f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
                pd.DataFrame(rows).to_csv(out / "real_execution.csv", index=False, float_format="%.6g")
    print(f"total {time.perf_counter() - t_all:.1f} s wall; wrote {out / 'real_execution.csv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
