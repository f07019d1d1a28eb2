"""Run-to-run noise of the artifact's printed gains (Figs. 5 and 6, issue 32).

The artifact (App. A.4) prints RAMSIS's mean and largest gain over Jellyfish+ and ModelSwitching
from **one** simulation run: one Poisson arrival stream per load (constant load, 30 s, Fig. 6)
or one playback of the Twitter trace (300 s, K = 60, 70, 80, Fig. 5). Our chapter computes the
same four statistics from one run of its own. Each of the two numbers carries the sampling noise
of its run, so their difference has a standard deviation of about ``sqrt(2)`` times one run's.

:func:`fig6_replications` and :func:`fig5_replications` measure that noise: they rerun the
evaluation of the chapter's own run on ``replications`` further, independent arrival streams,
holding every policy and baseline table fixed (the artifact ships one set of policies and
ModelSwitching tables; only its evaluation run is random), and return the four statistics per
replication. :func:`gain_noise` turns them into the standard deviation of one run and the 95 %
half-width of the comparison ours − artifact, ``1.96 * sqrt(2) * sd``, which the chapter passes
to :func:`infsched.report.compare` as the ``ci`` of these rows.

These are new computations beside the chapter's (the point functions of
:mod:`~infsched.ramsis.points` are unchanged): the policies and ModelSwitching's tables come from
the same cached sweeps, the arrival streams from seeds that the chapter's run never uses.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from infsched.errors import require
from infsched.sweep import point_seed
from infsched.workload import piecewise_poisson_arrivals, poisson_arrivals
from infsched.ramsis import baselines, sim
from infsched.ramsis.claims import gains
from infsched.ramsis.model_sets import get_profile
from infsched.ramsis.points import ms_table, policies, policy_table, servable_loads
from infsched.ramsis.scales import get_scale
from infsched.ramsis.trace import twitter_schedule

__all__ = ["GAIN_QUANTITIES", "REPLICATIONS", "fig6_replications", "fig5_replications",
           "gain_noise", "REPLICA_KEY"]

#: the artifact's four printed statistics, as ``data/paper/ramsis.csv`` names them
GAIN_QUANTITIES = ("ramsis_minus_jf_mean", "ramsis_minus_jf_max", "ramsis_minus_ms_mean",
                   "ramsis_minus_ms_max")
#: replications per scale: enough for a standard deviation good to about a quarter of itself
#: (10 runs) where the book is built, a few at ``smoke``
REPLICATIONS = {"smoke": 3, "default": 10, "paper": 10}
#: added to a replication's index in its seed key, so that no replication reuses the arrivals
#: of the chapter's own run (whose keys have no such coordinate)
REPLICA_KEY = 1_000_003


def _stats(g: pd.DataFrame) -> dict:
    return {"ramsis_minus_jf_mean": float(g["jf"].mean()), "ramsis_minus_jf_max": float(g["jf"].max()),
            "ramsis_minus_ms_mean": float(g["ms"].mean()), "ramsis_minus_ms_max": float(g["ms"].max())}


def _check(replications: int) -> None:
    require(isinstance(replications, (int, np.integer)) and not isinstance(replications, bool)
            and replications >= 2, "replications", replications,
            "must be an integer >= 2 (a standard deviation needs two runs)")


def fig6_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                      workers: int = 60, slo_ms: float = 150.0, n_jobs: int | None = None,
                      cache=None) -> pd.DataFrame:
    """Fig. 6's four gains (image, ``workers``, ``slo_ms``, every load of the scale, averaged
    as the artifact's ``plot.py`` does) on ``replications`` independent arrival streams per
    load; the policies and ModelSwitching's table are the chapter's (same seed, same cache).
    One row per replication."""
    _check(replications)
    sc = get_scale(scale)
    prof = get_profile("image")
    loads = list(sc.loads)
    pol = policies("image", slo_ms, workers, loads, d=sc.d, n_jobs=n_jobs, cache=cache)
    tables = {"jf": baselines.jellyfish_plus(prof, loads, workers, slo_ms),
              "ms": ms_table("image", slo_ms, workers, loads, duration_s=sc.ms_duration_s,
                             seed=seed, n_jobs=n_jobs, cache=cache)}
    out = []
    for r in range(int(replications)):
        acc: dict[str, dict[float, float]] = {"ramsis": {}, "jf": {}, "ms": {}}
        for i, load in enumerate(loads):
            key = (workers, load, slo_ms, REPLICA_KEY + r)
            arrivals = poisson_arrivals(load / 1000.0, horizon=sc.duration_s * 1000.0,
                                        rng=np.random.default_rng(point_seed(seed, *key)))
            if pol.iloc[i]["feasible"]:
                res = sim.simulate_ramsis(prof, policy_table(pol.iloc[[i]]), arrivals,
                                          slo_ms=slo_ms, workers=workers, load_qps=load,
                                          rng=np.random.default_rng(point_seed(seed + 1, *key)))
                acc["ramsis"][load] = res.accuracy
            else:
                acc["ramsis"][load] = np.nan
            for b, table in tables.items():
                res = sim.simulate_central(prof, table, arrivals, slo_ms=slo_ms, workers=workers,
                                           load_qps=load,
                                           rng=np.random.default_rng(point_seed(seed + 1, *key)))
                acc[b][load] = res.accuracy
        wide = pd.DataFrame(acc)
        g = pd.DataFrame({b: wide["ramsis"] - wide[b] for b in ("jf", "ms")})
        out.append({"replication": r, **_stats(g)})
    return pd.DataFrame(out)


def fig5_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                      slo_ms: float = 150.0, n_jobs: int | None = None,
                      cache=None) -> pd.DataFrame:
    """Fig. 5's four gains (image, ``slo_ms``, K = 60, 70, 80 as in the artifact, the trace of
    the scale with its 500 ms monitor) on ``replications`` independent playbacks of the trace;
    policies and baseline tables are the chapter's. One row per replication."""
    _check(replications)
    sc = get_scale(scale)
    prof = get_profile("image")
    ks = [k for k in (60, 70, 80) if k in sc.trace_workers] or list(sc.trace_workers)
    tables = {}
    for K in ks:
        loads = servable_loads(prof, K, sc.policy_loads)
        tables[K] = {
            "ramsis": policy_table(policies("image", slo_ms, K, loads, d=sc.d, n_jobs=n_jobs,
                                            cache=cache)) if loads else None,
            "jf": baselines.jellyfish_plus(prof, list(sc.policy_loads), K, slo_ms),
            "ms": ms_table("image", slo_ms, K, sc.policy_loads, duration_s=sc.ms_duration_s,
                           seed=seed, n_jobs=n_jobs, cache=cache)}
    sched = twitter_schedule(duration_s=sc.trace_duration_s)
    out = []
    for r in range(int(replications)):
        acc: dict[str, dict[int, float]] = {"ramsis": {}, "jf": {}, "ms": {}}
        for K in ks:
            key = (K, slo_ms, REPLICA_KEY + r)
            arrivals = piecewise_poisson_arrivals(sched, sc.trace_duration_s * 1000.0,
                                                  np.random.default_rng(point_seed(seed, *key)))
            t = tables[K]
            if t["ramsis"] is None:
                acc["ramsis"][K] = np.nan
            else:
                acc["ramsis"][K] = sim.simulate_ramsis(
                    prof, t["ramsis"], arrivals, slo_ms=slo_ms, workers=K,
                    rng=np.random.default_rng(point_seed(seed + 1, *key))).accuracy
            for b in ("jf", "ms"):
                acc[b][K] = sim.simulate_central(
                    prof, t[b], arrivals, slo_ms=slo_ms, workers=K,
                    rng=np.random.default_rng(point_seed(seed + 1, *key))).accuracy
        wide = pd.DataFrame(acc)
        g = pd.DataFrame({b: wide["ramsis"] - wide[b] for b in ("jf", "ms")})
        out.append({"replication": r, **_stats(g)})
    return pd.DataFrame(out)


def gain_noise(reps: pd.DataFrame) -> pd.DataFrame:
    """Per quantity of :data:`GAIN_QUANTITIES`: ``sd``, the standard deviation of one run's
    statistic over the replications (ddof = 1), ``runs``, and ``ci``, the 95 % half-width of the
    difference between two independent runs (ours and the artifact's), ``1.96 * sqrt(2) * sd``."""
    require(isinstance(reps, pd.DataFrame) and len(reps) >= 2
            and all(q in reps for q in GAIN_QUANTITIES), "reps", type(reps).__name__,
            "must be a frame of at least two replications with the four gain columns")
    sd = reps[list(GAIN_QUANTITIES)].std(ddof=1)
    return pd.DataFrame({"sd": sd, "runs": len(reps), "ci": 1.96 * math.sqrt(2.0) * sd})
