"""Fig. 2's bracket on the hindsight optimum with the strengthened time-indexed bound
(:mod:`~infsched.kvcache.tibound`): per trial of :func:`~infsched.kvcache.fig2.fig2`, the best
schedule over the best lower bound, with and without it. Its own module because it joins
:mod:`~infsched.kvcache.fig2` (the trials) and :mod:`~infsched.kvcache.relax` (whose bracket study
reads :mod:`~infsched.kvcache.fig2` too).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.kvcache.fig2 import _fig2_instance
from infsched.kvcache.model import check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.kvcache.scales import _code_version, get_scale
from infsched.store import results_version
from infsched.sweep import default_processes, point_seed, run_sweep

__all__ = ["TIBOUND_ROUNDS", "TIBOUND_CUTS", "TIBOUND_POLISH", "ILS_KICKS", "tibound_trials",
           "fig2_bound_point", "fig2_bounds", "claims_fig2_bounds", "fig2_with_tibound",
           "small_bounds"]


#: rounds of column and row generation per trial, each adding up to :data:`TIBOUND_CUTS` clique
#: rows, then up to :data:`TIBOUND_POLISH` column-only rounds (counts, so the bound does not depend
#: on the machine; :func:`~infsched.kvcache.tibound.ti_bound`'s ``polish``). On the 50 paper-size
#: trials per arrival model of :func:`tibound_trials`, one process per core: a median 13.5 CPU s
#: (Model 1, n = 40-60; at most 23 s) and 15.3 s (Model 2, n up to 93; at most 34 s) for median
#: brackets of 1.136 and 1.150, where 200 rounds of 30 rows and no polish took 20.0 and 22.1 s for
#: 1.144 and 1.159 (``benchmarks/README.md`` compares the settings)
TIBOUND_ROUNDS = 100
#: clique rows added per round at most
TIBOUND_CUTS = 100
#: column-only rounds after the last round at most
TIBOUND_POLISH = 30


def tibound_trials(scale: str = "default", seed: int = 0) -> list[tuple[int, int]]:
    """The ``(model, trial)`` pairs that get the strengthened bound: per arrival model, the
    scale's ``fig2_tibound_trials`` of :func:`~infsched.kvcache.fig2.fig2`'s trials (all of them
    when it has fewer) drawn without replacement from a generator seeded by ``seed`` and the
    model, fixed before any bound is computed. A subset, because the bound and the iterated
    search take some 25 CPU s a paper-size trial: all 400 trials would cost about 9,800 CPU s,
    over three times the chapter's whole build (0.8 CPU-h)."""
    sc = get_scale(scale)
    k = min(sc.fig2_tibound_trials, sc.fig2_trials)
    out = []
    for m in (1, 2):
        rng = np.random.default_rng(point_seed(seed, 100 + m))
        out += [(m, int(t)) for t in sorted(rng.choice(sc.fig2_trials, size=k, replace=False))]
    return out


#: kicks of the iterated local search per trial (:func:`~infsched.kvcache.improve.iterated_search`,
#: a count): on six paper-size trials 100 kicks lowered the local search's total latency by
#: 1.1-1.7 % at 4-12 CPU s, 25 kicks by 0.9-1.7 % at 1-3 s (``benchmarks/kvcache_search.py``)
ILS_KICKS = 100


@results_version(4, volatile=("cpu_seconds", "ils_cpu_seconds"))
def fig2_bound_point(model: int, trial: int, seed: int, lo: int, hi: int, rounds: int,
                     max_cuts: int = TIBOUND_CUTS, polish: int = TIBOUND_POLISH) -> dict:
    """The strengthened time-indexed bound on one trial of :func:`fig2` (the same instance),
    after ``rounds`` rounds of up to ``max_cuts`` rows and ``polish`` column-only rounds, beside
    the transformed-area bound (``relax.dff_bound``) and a better schedule: the iterated local
    search (:data:`ILS_KICKS` kicks, seeded by the trial) from MC-SF's schedule, whose first
    descent is :func:`fig2`'s local search, so ``ils`` is never above ``upper`` (that search's
    total latency). The bound starts from the better
    schedule (its columns seed the master, its waiting time sets the window).
    ``cpu_seconds`` is the bound's, ``ils_cpu_seconds`` the iterated search's."""
    import time

    from infsched.kvcache.improve import improve_schedule, iterated_search
    from infsched.kvcache.relax import dff_bound
    from infsched.kvcache.tibound import ti_bound

    inst = _fig2_instance(model, trial, seed, lo, hi)
    start = mc_sf(inst)
    upper, _ = improve_schedule(inst, start)
    c0 = time.process_time()
    better, _ = iterated_search(inst, start, kicks=ILS_KICKS, seed=[seed, model, trial])
    ils_cpu = time.process_time() - c0
    c0 = time.process_time()
    r = ti_bound(inst, better, rounds=rounds, max_cuts=max_cuts, polish=polish)
    cpu = time.process_time() - c0
    return {"n": inst.n, "upper": check_schedule(inst, upper).tel,
            "ils": check_schedule(inst, better).tel, "dff_bound": dff_bound(inst),
            "ti_bound": r.bound, "ti_rounds": r.rounds, "ti_converged": r.converged,
            "ti_polished": r.polished,
            "cpu_seconds": cpu, "ils_cpu_seconds": ils_cpu}


def _tibound_version() -> str:
    import hashlib
    from pathlib import Path

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(_code_version(fig2_bound_point).encode())
    for name in ("tibound.py", "relax.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def fig2_bounds(f2: pd.DataFrame, scale: str = "default", seed: int = 0, *,
                n_jobs: int | None = None, cache=None, progress: bool = False) -> pd.DataFrame:
    """The strengthened bound on :func:`tibound_trials` of ``f2`` (rows of :func:`fig2` with
    this scale and seed), each beside the trial's best schedule: ``lower_ti`` is the best of the
    trial's bounds (``lower_bound``, ``dff_bound``, ``ti_bound``), ``bracket_old`` and
    ``bracket_ti`` are best schedule over best lower bound without and with it (``best_ils``:
    the better of the trial's best schedule and the iterated local search's), and
    ``certified_ti`` whether ``best_ils`` meets ``lower_ti`` (latencies are integers, so a bound
    within 1 of it proves it optimal)."""
    sc = get_scale(scale)
    lo, hi = sc.fig2_sizes
    pts = [dict(model=m, trial=t, seed=int(seed), lo=lo, hi=hi, rounds=TIBOUND_ROUNDS,
                max_cuts=TIBOUND_CUTS, polish=TIBOUND_POLISH)
           for m, t in tibound_trials(scale, seed)]
    b = run_sweep(fig2_bound_point, pts, cache_dir=cache, n_jobs=default_processes(n_jobs),
                  progress=progress, version=_tibound_version())
    d = f2.merge(b[["model", "trial", "dff_bound", "ti_bound", "ti_rounds", "ti_converged", "ils",
                    "cpu_seconds", "ils_cpu_seconds"]].rename(columns={"cpu_seconds": "ti_cpu_seconds"}),
                 on=["model", "trial"], how="inner")
    old = np.maximum(d["lower_bound"], d["dff_bound"])
    d["lower_ti"] = np.maximum(old, d["ti_bound"])
    d["bracket_old"] = d["best"] / old
    d["best_ils"] = np.minimum(d["best"], d["ils"])
    d["bracket_ti"] = d["best_ils"] / d["lower_ti"]
    d["certified_ti"] = np.ceil(d["lower_ti"] - 1e-6) >= d["best_ils"]
    return d


def claims_fig2_bounds(fb: pd.DataFrame) -> pd.DataFrame:
    """Per arrival model, over :func:`fig2_bounds`' trials: their number, the median bracket
    (best schedule over best lower bound) without and with the strengthened bound and the
    iterated search's schedules, by how much those improve the best schedule (median, %), the
    bound's median and largest CPU seconds and the search's median, the trials the bound
    converged on and the trials certified optimal."""
    rows = []
    for m, d in fb.groupby("model"):
        rows.append({"model": int(m), "trials": len(d),
                     "median bracket, earlier bounds": float(d["bracket_old"].median()),
                     "median bracket, with the time-indexed bound": float(d["bracket_ti"].median()),
                     "largest bracket": float(d["bracket_ti"].max()),
                     "median schedule gain, %": float(100 * (d["best"] / d["best_ils"] - 1).median()),
                     "median CPU s, bound": float(d["ti_cpu_seconds"].median()),
                     "median CPU s, schedule search": float(d["ils_cpu_seconds"].median()),
                     "largest CPU s, bound": float(d["ti_cpu_seconds"].max()),
                     "converged": int(d["ti_converged"].sum()),
                     "certified optimal": int(d["certified_ti"].sum())})
    return pd.DataFrame(rows)


def fig2_with_tibound(f2: pd.DataFrame, fb: pd.DataFrame) -> pd.DataFrame:
    """``f2`` (rows of :func:`~infsched.kvcache.fig2.fig2`) with each trial's lower bound raised
    to the best one known and its best schedule lowered to the best one found:
    :func:`fig2_bounds`' ``lower_ti`` and ``best_ils`` on its trials, the row's own elsewhere
    (``tibound``: which trials got them); ``ratio_lo``, ``nonoptimal``, ``ratio_hi``,
    ``certified`` and ``mcsf_optimal`` follow them (latencies are integers, so a bound within 1 of
    the best schedule proves it optimal). Every bound is valid on its own trial, so the upper brackets stay upper bounds on
    each trial's true ratio."""
    out = f2.copy()
    merged = out.merge(fb[["model", "trial", "lower_ti", "best_ils"]], on=["model", "trial"],
                       how="left")
    lower = np.fmax(out["lower_bound"].to_numpy(float), merged["lower_ti"].to_numpy(float))
    out["tibound"] = np.isfinite(merged["lower_ti"].to_numpy(float))
    out["lower_bound"] = lower
    out["best"] = np.fmin(out["best"].to_numpy(float), merged["best_ils"].to_numpy(float))
    out["ratio_lo"] = out["tel_mcsf"] / out["best"]
    out["nonoptimal"] = out["best"] < out["tel_mcsf"]
    out["ratio_hi"] = out["tel_mcsf"] / lower
    out["certified"] = np.ceil(lower - 1e-6) >= out["best"]
    out["mcsf_optimal"] = out["certified"] & (out["best"] == out["tel_mcsf"])
    return out


def small_bounds(f2s: pd.DataFrame, *, n_jobs: int | None = None, cache=None,
                 progress: bool = False) -> pd.DataFrame:
    """The time-indexed bound (:data:`TIBOUND_ROUNDS` rounds) on every trial of the certified
    study (rows of :func:`~infsched.kvcache.fig2.fig2_small` whose optimum is proven), beside
    the optimum and the local search's schedule: ``opt_over_bound`` is how far the bound is
    below the optimum, ``local_over_opt`` how far the local search (the schedule the paper-size
    brackets rest on) is above it, ``ils_over_opt`` the iterated search. Together they say, where
    the truth is known, how a bracket's
    width splits between bound and schedule."""
    d = f2s[f2s["certified"]]
    pts = [dict(model=int(r["model"]), trial=int(r["trial"]), seed=int(r["seed"]), lo=int(r["lo"]),
                hi=int(r["hi"]), rounds=TIBOUND_ROUNDS, max_cuts=TIBOUND_CUTS,
                polish=TIBOUND_POLISH) for _, r in d.iterrows()]
    cols = ["model", "trial", "n", "best", "local_search"]
    if not pts:
        return pd.DataFrame(columns=[*cols, "ti_bound", "ti_converged", "ils", "opt_over_bound",
                                     "local_over_opt", "ils_over_opt"])
    b = run_sweep(fig2_bound_point, pts, cache_dir=cache, n_jobs=default_processes(n_jobs),
                  progress=progress, version=_tibound_version())
    out = d[cols].merge(b[["model", "trial", "ti_bound", "ti_converged", "ils"]],
                        on=["model", "trial"])
    out["opt_over_bound"] = out["best"] / out["ti_bound"]
    out["local_over_opt"] = out["local_search"] / out["best"]
    out["ils_over_opt"] = out["ils"] / out["best"]
    return out
