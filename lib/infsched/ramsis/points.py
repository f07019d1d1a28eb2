"""The RAMSIS chapter's sweep points and the runs built on them: policies (one worker MDP per
load, :func:`solve_point`), ModelSwitching's search (:func:`ms_point`), and the simulations of
every method at constant load (:func:`constant_load`) and on the Twitter trace
(:func:`trace_run`). Points go through :func:`infsched.sweep.run_sweep`, cached on disk under a
hash of the code and data they depend on (:func:`_code_version`).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import InfeasibleError, one_of
from infsched.profiles import Profile
from infsched.ramsis import baselines, mdp, objective as per_query, sim
from infsched.ramsis.model import MDPConfig, capacity_qps
from infsched.ramsis.model_sets import get_profile, profile_key
from infsched.ramsis.policy import PolicyTable
from infsched.ramsis.scales import METHODS, OBJECTIVES, PLOT_VIOLATION
from infsched.ramsis.trace import twitter_schedule
from infsched.report import find_data_dir
from infsched.store import results_version
from infsched.sweep import default_processes, point_seed, run_sweep
from infsched.workload import piecewise_poisson_arrivals, poisson_arrivals


def _code_version(*fns: Callable) -> str:
    """Hash of the code and data a cached point depends on: the MDP, kernel, model, profile and
    simulator sources, the model sets behind the profile keys, this module (the point functions
    and their helpers), the profile tables, and the point functions themselves."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for fn in fns:
        digest.update(inspect.getsource(fn).encode())
    for name in ("model.py", "kernel.py", "worker.py", "mdp.py", "variable.py", "headlaw.py",
                 "objective.py", "policy.py", "sim.py", "baselines.py", "model_sets.py",
                 "points.py"):
        digest.update((here / name).read_bytes())
    for name in ("profiles/profile.py", "profiles/tables.py", "des.py"):
        digest.update((here.parent / name).read_bytes())
    for path in sorted((find_data_dir() / "profiles").glob("ramsis_*.csv")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _sweep_version(fn: Callable, key: str) -> str:
    """:func:`_code_version` of ``fn``, plus, for a key bound to a measured profile, the code
    that turns a raw profile into a model set (the key's path already names the file's content)
    and :func:`solve_point`, which :func:`solve_point_measured` follows."""
    if "@" not in key:
        return _code_version(fn)
    version = _code_version(fn, solve_point, solve_policy)
    here = Path(__file__).resolve().parents[1] / "profiles"
    digest = hashlib.sha256(version.encode())
    for name in ("fit.py", "raw.py", "registry.py"):
        digest.update((here / name).read_bytes())
    return "measured-" + digest.hexdigest()[:16]


# --------------------------------------------------------------------------- policies

@results_version(1, volatile=("seconds",))
def solve_point(profile: str, slo_ms: float, workers: int, load_qps: float, d: int,
                discretisation: str = "fld", n_max: int = 32, objective: str = "decision",
                batching: str = "max") -> dict:
    """One RAMSIS policy (one worker MDP) with its expectation; NaN where the pool cannot serve
    the load at all. ``objective``: the paper's reward per ``"decision"``, or accuracy per
    ``"query"`` (our extension, :mod:`infsched.ramsis.objective`). ``batching``: ``"max"`` or
    ``"variable"`` (§4.3.2, :mod:`infsched.ramsis.variable`)."""
    prof = get_profile(profile)
    one_of("objective", objective, OBJECTIVES)
    cfg = MDPConfig(slo_ms, workers, load_qps, discretisation=discretisation, d=d, n_max=n_max,
                    batching=batching)
    try:
        s = (mdp.solve(prof, cfg) if objective == "decision"
             else per_query.solve_per_query(prof, cfg)[0])
    except InfeasibleError:
        return {"feasible": False, "model": None, "batch": None, "grid": None,
                "expected_accuracy": np.nan, "expected_violation": np.nan,
                "expected_full_batch": np.nan, "seconds": 0.0, "iterations": 0}
    return {"feasible": True, "model": s.model, "batch": s.batch, "grid": s.grid,
            "expected_accuracy": s.expected_accuracy, "expected_violation": s.expected_violation,
            "expected_full_batch": s.full_batch_fraction, "seconds": s.seconds,
            "iterations": s.iterations}


#: a :func:`solve_point` row for a point without a policy
_NO_POLICY = {"feasible": False, "model": None, "batch": None, "grid": None,
              "expected_accuracy": np.nan, "expected_violation": np.nan,
              "expected_full_batch": np.nan, "seconds": 0.0, "iterations": 0}
#: sweeps of the artifact's fixed-horizon value iteration: the fallback of :func:`solve_policy`
ARTIFACT_SWEEPS = 100


def solve_policy(prof: Profile, cfg: MDPConfig, objective: str = "decision",
                 horizon: int | None = None) -> mdp.Solution:
    """:func:`infsched.ramsis.mdp.solve` (``objective="decision"``) or the per-query solver
    (``"query"``), to convergence or for ``horizon`` sweeps."""
    kw = {} if horizon is None else {"horizon": horizon}
    return (mdp.solve(prof, cfg, **kw) if objective == "decision"
            else per_query.solve_per_query(prof, cfg, **kw)[0])


@results_version(1, volatile=("seconds",))
def solve_point_measured(profile: str, slo_ms: float, workers: int, load_qps: float, d: int,
                         discretisation: str = "fld", n_max: int = 32, objective: str = "decision",
                         batching: str = "max") -> dict:
    """:func:`solve_point` for a key bound to a measured profile, in its own cache folder.

    Relative value iteration can fail to converge on a measured profile's chains (it cycles; it
    never does on the published profiles): there the policy is the artifact's own, from
    :data:`ARTIFACT_SWEEPS` undiscounted sweeps, and the row says ``converged = False``."""
    prof = get_profile(profile)
    one_of("objective", objective, OBJECTIVES)
    cfg = MDPConfig(slo_ms, workers, load_qps, discretisation=discretisation, d=d, n_max=n_max,
                    batching=batching)
    converged = True
    try:
        try:
            s = solve_policy(prof, cfg, objective)
        except mdp.ConvergenceError:
            converged = False
            s = solve_policy(prof, cfg, objective, horizon=ARTIFACT_SWEEPS)
    except (InfeasibleError, mdp.ConvergenceError):
        return {**_NO_POLICY, "converged": converged}
    return {"feasible": True, "model": s.model, "batch": s.batch, "grid": s.grid,
            "expected_accuracy": s.expected_accuracy, "expected_violation": s.expected_violation,
            "expected_full_batch": s.full_batch_fraction, "seconds": s.seconds,
            "iterations": s.iterations, "converged": converged}


def servable_loads(prof: Profile, workers: int, loads) -> list:
    """The loads of ``loads`` below the pool's capacity: the ones RAMSIS solves a policy for."""
    cap = capacity_qps(prof, workers)
    return [x for x in loads if x < cap]


def _solve_cost(point: dict) -> float:
    """A policy solve's relative cost, for :func:`~infsched.sweep.run_sweep`'s longest-first
    order: value iteration converges more slowly as a worker's load nears its capacity, so the
    heaviest load per worker first."""
    return float(point["load_qps"]) / float(point["workers"])


def _solve_points(profile: str, slo_ms: float, workers: int, loads, *, d: int,
                  discretisation: str = "fld", objective: str = "decision",
                  batching: str = "max") -> tuple[str, list[dict]]:
    key = profile_key(profile)
    return key, [dict(profile=key, slo_ms=float(slo_ms), workers=int(workers), load_qps=float(x),
                      d=int(d), discretisation=discretisation, objective=objective,
                      batching=batching) for x in loads]


def _unservable(key: str, slo_ms: float) -> bool:
    """A measured profile can be too slow for a panel's SLO: no query can meet it, so no policy
    at any load, reported as not solved (on the published profiles a ConfigError)."""
    return "@" in key and float(slo_ms) < get_profile(key).latency(0, 1)


def prefetch_policies(panels, *, d: int, n_jobs: int | None = None, cache=None) -> None:
    """Solve the policies of several panels, ``(profile, slo_ms, workers, loads)`` each, as one
    sweep, so that the processes share one queue of points instead of a few points per panel
    (where one long solve leaves the other process idle); each panel's own :func:`policies` then
    loads them from the cache. The numbers are the same; without a cache it does nothing."""
    if cache is False:
        return
    groups: dict[tuple, list[dict]] = {}
    for profile, slo_ms, workers, loads in panels:
        key, points = _solve_points(profile, slo_ms, workers, loads, d=d)
        if not points or _unservable(key, slo_ms):
            continue
        fn = solve_point if "@" not in key else solve_point_measured
        groups.setdefault((fn, _sweep_version(fn, key)), []).extend(points)
    for (fn, version), points in groups.items():
        run_sweep(fn, points, cache_dir=cache, n_jobs=default_processes(n_jobs), version=version,
                  cost=_solve_cost)


def policies(profile: str, slo_ms: float, workers: int, loads, *, d: int,
             discretisation: str = "fld", objective: str = "decision", batching: str = "max",
             n_jobs: int | None = None, cache=None, progress: bool = False) -> pd.DataFrame:
    """Solve (or load from the cache) the policies for every load: one row per load."""
    key, points = _solve_points(profile, slo_ms, workers, loads, d=d, discretisation=discretisation,
                                objective=objective, batching=batching)
    if points and _unservable(key, slo_ms):
        return pd.DataFrame([{**p, **_NO_POLICY} for p in points])
    fn = solve_point if "@" not in key else solve_point_measured
    return run_sweep(fn, points, cache_dir=cache, n_jobs=default_processes(n_jobs),
                     progress=progress, version=_sweep_version(fn, key), cost=_solve_cost)


def policy_table(rows: pd.DataFrame) -> PolicyTable | None:
    """The feasible policies of :func:`policies` as one table (None if no load is feasible)."""
    ok = rows[rows["feasible"]].sort_values("load_qps")
    if ok.empty:
        return None
    first = ok.iloc[0]
    return PolicyTable(
        slo_ms=float(first["slo_ms"]), workers=int(first["workers"]), grid_ms=first["grid"],
        loads_qps=ok["load_qps"].to_numpy(float), model=np.stack(ok["model"].to_list()),
        batch=np.stack(ok["batch"].to_list()), fallback=0,
        expected_accuracy=ok["expected_accuracy"].to_numpy(float),
        expected_violation=ok["expected_violation"].to_numpy(float))


# --------------------------------------------------------------------------- baselines

@results_version(1)
def ms_point(profile: str, slo_ms: float, workers: int, load_qps: float, duration_s: float,
             seed: int) -> dict:
    """ModelSwitching's choice at one load (spec §4.2): every model simulated at that load."""
    prof = get_profile(profile)
    table = baselines.model_switching(prof, [load_qps], workers, slo_ms, duration_s=duration_s,
                                      seed=point_seed(seed, workers, load_qps, slo_ms))
    return {"model": int(table.model[0]), "cap": int(table.cap[0])}


def ms_table(profile: str, slo_ms: float, workers: int, loads, *, duration_s: float, seed: int,
             n_jobs: int | None = None, cache=None) -> baselines.BaselineTable:
    """ModelSwitching's per-load model table, searched once per (profile, SLO, K, load) and cached."""
    key = profile_key(profile)
    points = [dict(profile=key, slo_ms=float(slo_ms), workers=int(workers), load_qps=float(x),
                   duration_s=float(duration_s), seed=int(seed)) for x in loads]
    df = run_sweep(ms_point, points, cache_dir=cache, n_jobs=default_processes(n_jobs),
                   version=_sweep_version(ms_point, key))
    return baselines.BaselineTable("ModelSwitching", df["load_qps"].to_numpy(float),
                                   df["model"].to_numpy(int), df["cap"].to_numpy(int))


# --------------------------------------------------------------------------- simulation

def _sim_row(method: str, res, prof: Profile, **point) -> dict:
    return {**point, "method": method, "accuracy": res.accuracy, "violation": res.violation_rate,
            "served": res.served, "mean_batch": res.mean_batch}


def constant_load(profile: str, slo_ms: float, workers: int, loads, *, d: int, duration_s: float,
                  seed: int, methods=METHODS, latency: str = "p95", ms_duration_s: float | None = None,
                  discretisation: str = "fld", objective: str = "decision", batching: str = "max",
                  n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Accuracy and violation rate of each method at constant Poisson loads with perfect load
    knowledge (§7.2): one row per (load, method), with RAMSIS's expectation beside it, and
    (RAMSIS rows) the share of batches that took the whole queue, simulated (``full_batch``) and
    expected (``expected_full_batch``)."""
    prof = get_profile(profile)
    pol = policies(profile, slo_ms, workers, loads, d=d, discretisation=discretisation,
                   objective=objective, batching=batching, n_jobs=n_jobs, cache=cache)
    ms = (ms_table(profile, slo_ms, workers, loads, duration_s=ms_duration_s or duration_s,
                   seed=seed, n_jobs=n_jobs, cache=cache) if "ms" in methods else None)
    jf = baselines.jellyfish_plus(prof, list(loads), workers, slo_ms)
    rows = []
    for i, load in enumerate(loads):
        rng = np.random.default_rng(point_seed(seed, workers, load, slo_ms))
        arrivals = poisson_arrivals(load / 1000.0, horizon=duration_s * 1000.0, rng=rng)
        point = dict(profile=profile, slo_ms=slo_ms, workers=workers, load_qps=float(load))
        for method in methods:
            lat_rng = np.random.default_rng(point_seed(seed + 1, workers, load, slo_ms))
            if method == "ramsis":
                row = pol.iloc[i]
                if not row["feasible"]:
                    rows.append({**point, "method": method, "accuracy": np.nan, "violation": 1.0,
                                 "served": 0, "expected_accuracy": np.nan,
                                 "expected_violation": np.nan, "full_batch": np.nan,
                                 "expected_full_batch": np.nan})
                    continue
                table = policy_table(pol.iloc[[i]])
                res = sim.simulate_ramsis(prof, table, arrivals, slo_ms=slo_ms, workers=workers,
                                          load_qps=load, latency=latency, rng=lat_rng)
                rows.append({**_sim_row(method, res, prof, **point),
                             "expected_accuracy": row["expected_accuracy"],
                             "expected_violation": row["expected_violation"],
                             "full_batch": res.full_batch_fraction,
                             "expected_full_batch": row["expected_full_batch"]})
            else:
                table = jf if method == "jf" else ms
                res = sim.simulate_central(prof, table, arrivals, slo_ms=slo_ms, workers=workers,
                                           load_qps=load, latency=latency, rng=lat_rng)
                rows.append(_sim_row(method, res, prof, **point))
    df = pd.DataFrame(rows)
    df["plotted"] = df["violation"] < PLOT_VIOLATION
    return df


def trace_run(profile: str, slo_ms: float, workers: int, *, d: int, duration_s: float, seed: int,
              policy_loads, ms_duration_s: float, methods=METHODS, latency: str = "p95",
              n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Each method on the Twitter trace (§7.1) with the 500 ms load monitor: one row per method.

    RAMSIS uses the policies of ``policy_loads`` that the pool can serve; the baselines use
    their tables on the same grid. Arrivals are the same for every method."""
    prof = get_profile(profile)
    rng = np.random.default_rng(point_seed(seed, workers, slo_ms))
    sched = twitter_schedule(duration_s=duration_s)
    arrivals = piecewise_poisson_arrivals(sched, duration_s * 1000.0, rng)
    point = dict(profile=profile, slo_ms=slo_ms, workers=workers)
    rows = []
    for method in methods:
        lat_rng = np.random.default_rng(point_seed(seed + 1, workers, slo_ms))
        if method == "ramsis":
            loads = servable_loads(prof, workers, policy_loads)
            table = policy_table(policies(profile, slo_ms, workers, loads, d=d, n_jobs=n_jobs,
                                          cache=cache)) if loads else None
            if table is None:
                rows.append({**point, "method": method, "accuracy": np.nan, "violation": 1.0,
                             "served": 0})
                continue
            res = sim.simulate_ramsis(prof, table, arrivals, slo_ms=slo_ms, workers=workers,
                                      latency=latency, rng=lat_rng)
        else:
            table = (baselines.jellyfish_plus(prof, list(policy_loads), workers, slo_ms)
                     if method == "jf" else
                     ms_table(profile, slo_ms, workers, policy_loads, duration_s=ms_duration_s,
                              seed=seed, n_jobs=n_jobs, cache=cache))
            res = sim.simulate_central(prof, table, arrivals, slo_ms=slo_ms, workers=workers,
                                       latency=latency, rng=lat_rng)
        rows.append(_sim_row(method, res, prof, **point))
    df = pd.DataFrame(rows)
    df["plotted"] = df["violation"] < PLOT_VIOLATION
    df["queries"] = len(arrivals)
    return df
