"""Run-to-run noise of the RAMSIS chapter's simulated numbers (issue 32).

The artifact (App. A.4) prints RAMSIS's mean and largest gain over Jellyfish+ and ModelSwitching
from **one** simulation run: one Poisson arrival stream per load (constant load, 30 s, Fig. 6)
or one playback of the Twitter trace (300 s, K = 60, 70, 80, Fig. 5). Our chapter computes the
same statistics, and its other simulated numbers (the largest gains over every SLO, the
fewer-workers savings, Fig. 11's share of whole-queue batches), from one run of its own.

:func:`fig6_replications`, :func:`fig5_replications` and :func:`fig11_replications` measure that
noise: they rerun the evaluation of the chapter's own figure on ``replications`` further,
independent arrival streams (and latency draws), holding every policy and baseline table fixed
(the artifact ships one set of policies and ModelSwitching tables; only its evaluation run is
random), and apply the chapter's own claim function to each replicated figure, one row per
replication with every numeric quantity. :func:`gain_noise` collects them, with the standard
deviation ``sd`` of one run's number; :func:`measured` applies the book's statistical rule
(:func:`infsched.report.pooled`): ours is the mean over the chapter's run and every replication,
judged, since each number the paper prints here is one run's (the artifact's simulation, the
prototype), with the 95 % prediction interval of one run, ``t sd sqrt(1 + 1/n)``.

These are new computations beside the chapter's (the point functions of
:mod:`~infsched.ramsis.points` are unchanged): the policies and ModelSwitching's tables come from
the same cached sweeps, the arrival streams from seeds that the chapter's run never uses. A
replication whose extra seed coordinate is dropped is the chapter's own run, number for number
(``tests/ramsis/test_audit.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import require
from infsched.ramsis import baselines, points, sim
from infsched.ramsis.claims import claims_fig5, claims_fig6, claims_fig11
from infsched.ramsis.model_sets import get_profile
from infsched.ramsis.points import _sim_row, ms_table, policies, policy_table, servable_loads
from infsched.ramsis.scales import BATCHINGS, METHODS, PLOT_VIOLATION, TASK_WORKERS, get_scale
from infsched.ramsis.trace import twitter_schedule
from infsched.store import results_version
from infsched.sweep import point_seed, run_sweep
from infsched.workload import piecewise_poisson_arrivals, poisson_arrivals

__all__ = ["GAIN_QUANTITIES", "REPLICATIONS", "REPLICA_KEY", "fig5_replica", "fig5_replications",
           "fig6_replica", "fig6_replications", "fig11_replica", "fig11_replications", "gain_noise",
           "measured", "pooled_notes"]

#: the artifact's four printed statistics, as ``data/paper/ramsis.csv`` names them
GAIN_QUANTITIES = ("ramsis_minus_jf_mean", "ramsis_minus_jf_max", "ramsis_minus_ms_mean",
                   "ramsis_minus_ms_max")
#: replications per scale: enough for a standard deviation good to about a quarter of itself
#: (10 runs) where the book is built, a few at ``smoke``
REPLICATIONS = {"smoke": 3, "default": 10, "paper": 10}
#: added to a replication's index in its seed key, so that no replication reuses the arrivals
#: of the chapter's own run (whose keys have no such coordinate)
REPLICA_KEY = 1_000_003


def _check(replications: int) -> None:
    require(isinstance(replications, (int, np.integer)) and not isinstance(replications, bool)
            and replications >= 2, "replications", replications,
            "must be an integer >= 2 (a standard deviation needs two runs)")


def _numbers(claims: dict) -> dict:
    """The numeric quantities of a claim dict (claims that hold or not have no noise to measure)."""
    return {q: float(v) for q, v in claims.items()
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))}


def _constant(profile: str, slo_ms: float, workers: int, loads, *, d: int, duration_s: float,
              seed: int, r: int, methods=METHODS, ms_duration_s: float | None = None,
              batching: str = "max", n_jobs=None, cache=None) -> pd.DataFrame:
    """:func:`~infsched.ramsis.points.constant_load` on replication ``r``'s arrivals: the same
    policies and tables (from the cache), the same rows."""
    prof = get_profile(profile)
    pol = policies(profile, slo_ms, workers, loads, d=d, batching=batching, n_jobs=n_jobs,
                   cache=cache)
    ms = (ms_table(profile, slo_ms, workers, loads, duration_s=ms_duration_s or duration_s,
                   seed=seed, n_jobs=n_jobs, cache=cache) if "ms" in methods else None)
    jf = baselines.jellyfish_plus(prof, list(loads), workers, slo_ms)
    rows = []
    for i, load in enumerate(loads):
        key = (workers, load, slo_ms, REPLICA_KEY + r)
        arrivals = poisson_arrivals(load / 1000.0, horizon=duration_s * 1000.0,
                                    rng=np.random.default_rng(point_seed(seed, *key)))
        point = dict(profile=profile, slo_ms=slo_ms, workers=workers, load_qps=float(load))
        for method in methods:
            lat_rng = np.random.default_rng(point_seed(seed + 1, *key))
            if method == "ramsis":
                if not pol.iloc[i]["feasible"]:
                    rows.append({**point, "method": method, "accuracy": np.nan, "violation": 1.0,
                                 "served": 0, "full_batch": np.nan})
                    continue
                res = sim.simulate_ramsis(prof, policy_table(pol.iloc[[i]]), arrivals,
                                          slo_ms=slo_ms, workers=workers, load_qps=load,
                                          rng=lat_rng)
                rows.append({**_sim_row(method, res, prof, **point),
                             "full_batch": res.full_batch_fraction})
            else:
                res = sim.simulate_central(prof, jf if method == "jf" else ms, arrivals,
                                           slo_ms=slo_ms, workers=workers, load_qps=load,
                                           rng=lat_rng)
                rows.append(_sim_row(method, res, prof, **point))
    df = pd.DataFrame(rows)
    df["plotted"] = df["violation"] < PLOT_VIOLATION
    return df


#: the outer call's processes and cache, read by the replication points it runs in its own
#: process (n_jobs=1): they stay out of the points' keys, so a stored replication is found
#: whatever cache folder computed it
_CTX: dict = {"n_jobs": None, "cache": None}


@contextlib.contextmanager
def _context(n_jobs, cache):
    saved = dict(_CTX)
    _CTX.update(n_jobs=n_jobs, cache=cache)
    try:
        yield
    finally:
        _CTX.update(saved)


def _version() -> str:
    """The replication points' sweep-cache version: this module, the claims and every source a
    policy or a simulation of :mod:`~infsched.ramsis.points` depends on."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(points._code_version().encode())
    for name in ("replicate.py", "claims.py", "trace.py", "scales.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def _sweep(fn, scale: str, seed: int, replications: int, n_jobs, cache, **fixed) -> pd.DataFrame:
    """One replication per sweep point, each a row; run in this process (the points' own sweeps
    use ``n_jobs``), cached, and stored at paper scale (:mod:`infsched.store`)."""
    _check(replications)
    grid = [dict(scale=scale, seed=int(seed), r=r, **fixed) for r in range(int(replications))]
    with _context(n_jobs, cache):
        df = run_sweep(fn, grid, cache_dir=cache, n_jobs=1, version=_version())
    return df.drop(columns=list(grid[0])).reset_index(drop=True)


@results_version(1)
def fig6_replica(scale: str, seed: int, r: int, workers: int, slo_ms: float) -> dict:
    """Replication ``r`` of Fig. 6 (every panel of the scale, as
    :func:`~infsched.ramsis.experiments.fig6`) on its own arrival streams, with the chapter's
    policies and ModelSwitching tables: every numeric quantity of
    :func:`~infsched.ramsis.claims.claims_fig6` (the artifact's four gains among them)."""
    sc = get_scale(scale)
    panels = list(dict.fromkeys([("image", float(slo_ms))] + list(sc.fig6_panels)))
    f6 = pd.concat([
        _constant(task, slo, workers if task == "image" else TASK_WORKERS[task], sc.loads,
                  d=sc.d, duration_s=sc.duration_s, seed=seed, r=r,
                  ms_duration_s=sc.ms_duration_s, n_jobs=_CTX["n_jobs"], cache=_CTX["cache"])
        .assign(task=task)
        for task, slo in panels], ignore_index=True)
    return {"replication": r, **_numbers(claims_fig6(f6, workers=workers, slo_ms=slo_ms))}


def fig6_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                      workers: int = 60, slo_ms: float = 150.0, n_jobs: int | None = None,
                      cache=None) -> pd.DataFrame:
    """Fig. 6 on ``replications`` independent arrival streams per load (:func:`fig6_replica`);
    one row per replication."""
    return _sweep(fig6_replica, scale, seed, replications, n_jobs, cache, workers=int(workers),
                  slo_ms=float(slo_ms))


@results_version(1)
def fig11_replica(scale: str, seed: int, r: int, workers: int, slo_ms: float) -> dict:
    """Replication ``r`` of Fig. 11 (RAMSIS with maximal and variable batching, the model sets
    of the scale): the numeric quantities of :func:`~infsched.ramsis.claims.claims_fig11` (the
    simulated whole-queue shares; the policy-state share has no run-to-run noise)."""
    sc = get_scale(scale)
    f11 = pd.concat([
        _constant(p, slo_ms, workers, sc.loads, d=sc.d, duration_s=sc.duration_s, seed=seed,
                  r=r, methods=("ramsis",), batching=b, n_jobs=_CTX["n_jobs"], cache=_CTX["cache"])
        .assign(batching=b, models=get_profile(p).n_models)
        for p in sc.fig11_profiles for b in BATCHINGS], ignore_index=True)
    c = _numbers(claims_fig11(f11))
    return {"replication": r, **{q: v for q, v in c.items() if np.isfinite(v)}}


def fig11_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                       workers: int = 60, slo_ms: float = 150.0, n_jobs: int | None = None,
                       cache=None) -> pd.DataFrame:
    """Fig. 11 on ``replications`` independent arrival streams (:func:`fig11_replica`); one row
    per replication."""
    return _sweep(fig11_replica, scale, seed, replications, n_jobs, cache, workers=int(workers),
                  slo_ms=float(slo_ms))


def _fig5_tables(scale: str, seed: int, slo_ms: float) -> dict:
    """Every trace panel's policy and baseline tables (from the chapter's cached sweeps)."""
    sc = get_scale(scale)
    panels = list(dict.fromkeys([("image", float(slo_ms))] + list(sc.trace_panels)))
    n_jobs, cache = _CTX["n_jobs"], _CTX["cache"]
    tables = {}
    for task, slo in panels:
        prof = get_profile(task)
        for K in sc.trace_workers:
            loads = servable_loads(prof, K, sc.policy_loads)
            tables[task, slo, K] = {
                "ramsis": policy_table(policies(task, slo, K, loads, d=sc.d, n_jobs=n_jobs,
                                                cache=cache)) if loads else None,
                "jf": baselines.jellyfish_plus(prof, list(sc.policy_loads), K, slo),
                "ms": ms_table(task, slo, K, sc.policy_loads, duration_s=sc.ms_duration_s,
                               seed=seed, n_jobs=n_jobs, cache=cache)}
    return tables


@results_version(1)
def fig5_replica(scale: str, seed: int, r: int, slo_ms: float) -> dict:
    """Replication ``r`` of Fig. 5 (every trace panel and worker count of the scale, the 500 ms
    monitor) on its own playback of the trace, with the chapter's policies and baseline tables:
    every numeric quantity of :func:`~infsched.ramsis.claims.claims_fig5` (the artifact's four
    gains, K = 60, 70, 80, and the fewer-workers savings)."""
    sc = get_scale(scale)
    sched = twitter_schedule(duration_s=sc.trace_duration_s)
    rows = []
    for (task, slo, K), t in _fig5_tables(scale, seed, slo_ms).items():
        prof = get_profile(task)
        key = (K, slo, REPLICA_KEY + r)
        arrivals = piecewise_poisson_arrivals(sched, sc.trace_duration_s * 1000.0,
                                              np.random.default_rng(point_seed(seed, *key)))
        point = dict(profile=task, slo_ms=slo, workers=K, task=task)
        for method in METHODS:
            lat_rng = np.random.default_rng(point_seed(seed + 1, *key))
            if method == "ramsis" and t["ramsis"] is None:
                rows.append({**point, "method": method, "accuracy": np.nan, "violation": 1.0,
                             "served": 0})
                continue
            res = (sim.simulate_ramsis(prof, t["ramsis"], arrivals, slo_ms=slo, workers=K,
                                       rng=lat_rng) if method == "ramsis" else
                   sim.simulate_central(prof, t[method], arrivals, slo_ms=slo, workers=K,
                                        rng=lat_rng))
            rows.append(_sim_row(method, res, prof, **point))
    f5 = pd.DataFrame(rows)
    f5["plotted"] = f5["violation"] < PLOT_VIOLATION
    return {"replication": r, **_numbers(claims_fig5(f5, slo_ms=slo_ms))}


def fig5_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                      slo_ms: float = 150.0, n_jobs: int | None = None,
                      cache=None) -> pd.DataFrame:
    """Fig. 5 on ``replications`` independent playbacks of the trace (:func:`fig5_replica`);
    one row per replication."""
    return _sweep(fig5_replica, scale, seed, replications, n_jobs, cache, slo_ms=float(slo_ms))


def gain_noise(reps: pd.DataFrame) -> pd.DataFrame:
    """Per numeric quantity of the replications (every column but ``replication``): ``sd``, the
    standard deviation of one run's number over the replications (ddof = 1), ``runs``,
    ``ci_ours``, ``1.96 sd`` (the spread of one run, for a reader's glance), ``ci``,
    ``1.96 sqrt(2) sd`` (that of the difference of two runs), and ``values``, the replications'
    numbers, which :func:`measured` pools with the chapter's."""
    cols = [c for c in getattr(reps, "columns", []) if c != "replication"]
    require(isinstance(reps, pd.DataFrame) and len(reps) >= 2 and cols, "reps",
            type(reps).__name__, "must be a frame of at least two replications (one row each) "
            "with at least one quantity")
    sd = reps[cols].std(ddof=1)
    values = pd.Series({c: tuple(float(v) for v in reps[c].dropna()) for c in cols}, dtype=object)
    return pd.DataFrame({"sd": sd, "runs": len(reps), "ci_ours": 1.96 * sd,
                         "ci": 1.96 * math.sqrt(2.0) * sd, "values": values})


def measured(claims: dict, noise: pd.DataFrame, quantities) -> dict:
    """``claims`` with each of ``quantities`` that the replications measured replaced by the
    book's statistical rule (:func:`infsched.report.pooled`): the mean over the chapter's run
    and every replication, with the 95 % prediction interval of one run, since each number the
    paper prints here (the artifact's gains, the prototype's savings and largest gains) is one
    run's. A number that is undefined in the chapter's run (NaN) is left as it is."""
    from infsched.report import ONE_RUN, pooled

    out = dict(claims)
    for q in quantities:
        v = claims.get(q)
        if (q in noise.index and q in _numbers({q: v}) and math.isfinite(float(v))
                and np.isfinite(noise.loc[q, "sd"])):
            out[q] = pooled((float(v),) + tuple(noise.loc[q, "values"]), ONE_RUN)
    return out


def pooled_notes(claims: dict, noise: pd.DataFrame, quantities, what: str = "replications") -> dict:
    """A note per pooled quantity: what was pooled, and the chapter's own run."""
    return {q: (f"ours: the mean of the chapter's run ({float(claims[q]):.3g}) and "
                f"{int(noise.loc[q, 'runs'])} {what}")
            for q in quantities if q in noise.index and q in _numbers({q: claims.get(q)})
            and math.isfinite(float(claims[q])) and np.isfinite(noise.loc[q, "sd"])}
