"""The head-to-head chapter's experiments: every contender on one simulator, one zoo, one
stream (spec headtohead §1–3, issue 23).

A *contender* is a paper's policy (or a simple baseline) turned into a
:class:`~infsched.serving.ServingConfig` by :func:`contender_config`, given the system (zoo,
``K`` workers, the SLO it plans for) and its own knob. A *workload* is an arrival process scaled
to a mean rate (:func:`arrivals`). Every contender at one (workload, load, SLO, seed) sees the
same arrival times (common random numbers), and is judged on the same SLO
(:func:`judge`), whatever SLO it planned for.

Each (workload, load, SLO, seed) is one point of :func:`infsched.sweep.run_sweep` (cached on
disk, resumable, on local processes or a Dask cluster); :func:`load_sweep` and
:func:`frontier` return one row per (point, contender[, knob]); :func:`with_ci` turns the seeds
into means with Student-t intervals. The decision: :func:`decision_runs` (every knob value,
selection and scoring seeds), :func:`recommend` (the most accurate contender whose lower
confidence bound on time meets a target, ties by paired differences, "none qualifies" apart from
"no policy can"), :func:`recommendation_matrix` (that decision as a tidy frame) and
:func:`fewest_workers` (what a target costs). Every one of these, and :func:`sensitivity_runs`,
takes a reader's policy (:mod:`.plugins`) in ``contenders``, by its registered name or as the
:class:`~.plugins.UserPolicy`: run it in a sweep of its own and concatenate the runs with the
built-ins', so that editing it recomputes it alone. (:func:`decision_table`, ranking every
contender at its default knob by overlapping intervals, is the older, coarser table.)

This module holds the sweep points and the registered sweeps (the zoo loader and what the
points share are in :mod:`.system`); the rest by
group: :mod:`.scales`, :mod:`.streams` (the workloads), :mod:`.contenders` (each paper's policy
as a ServingConfig, and :func:`judge`), :mod:`.tables` (the chapter's tables and the papers'
claims), :mod:`.validation` (closed forms; FLEX against Shepherd's engine) and
:mod:`.sensitivity` (burstiness and overheads, issue 33), all re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import one_of, require
from ..profiles import PROFILE_NAMES
from ..store import results_version
from ..sweep import default_processes, point_seed, run_sweep
from .config import ServingConfig
from .contenders import (
    CONTENDERS,
    LABELS,
    MEAN_PLANNED,
    MONITORED,
    REPLANNING,
    TAD_CONTENDERS,
    check_plans,
    contender_config,
    jellyfish_choice,
    judge,
    model_switching_choice,
    plan_versions,
    prefetch_ramsis_plans,
    ramsis_loads,
    ramsis_plans,
    ramsis_policy,
    rjiq_split,
    tad_split,
)
from .plugins import UserPolicy, register
from .scales import SCALES, Scale, get_scale
from .sim import simulate
from .streams import WORKLOADS, arrivals
from .system import (  # noqa: F401
    _code_version,
    _entries,
    _load_zoo,
    _loads,
    _name,
    _profile_version,
    _system,
    load_zoo,
)
from .tables import (
    QUALIFY_RULES,
    REPLANNING_PAIRS,
    accuracy_target_table,
    assumptions_table,
    batch_cliff,
    cell_capacity,
    claims,
    decision_table,
    knob_table,
    lower_bound,
    matrix_view,
    recommend,
    recommendation_matrix,
    replanning_table,
    served_capacity,
    with_ci,
)
from .validation import closed_forms, flex_agreement, ramsis_overload_agreement, tail_checks
from .zoo import Zoo

__all__ = ["UserPolicy", "SCALES", "Scale", "get_scale", "CONTENDERS", "WORKLOADS", "LABELS", "load_zoo",
           "arrivals", "tad_split", "jellyfish_choice", "contender_config", "judge",
           "rjiq_split", "TAD_CONTENDERS", "ramsis_policy", "ramsis_loads", "model_switching_choice", "run_point", "load_sweep", "frontier", "regimes", "with_ci", "decision_table",
           "decision_runs", "recommend", "recommendation_matrix", "matrix_view", "cell_capacity",
           "lower_bound", "QUALIFY_RULES", "tail_checks", "ramsis_overload_agreement", "fewest_workers",
           "accuracy_target_table", "assumptions_table", "served_capacity", "closed_forms", "flex_agreement",
           "replanning_table", "REPLANNING_PAIRS", "REPLANNING", "MEAN_PLANNED", "MONITORED", "batch_cliff",
           "sensitivity_runs", "sensitivity_table",
           "knob_table", "claims", "EXPERIMENTS"]

# ------------------------------------------------------------------------------ the system

# ------------------------------------------------------------------------------ sweep points

@results_version(1)
def run_point(workload: str, load: float, slo_ms: float, seed: int, n: int, workers: int,
              profile: str, runs: tuple, service: str = "deterministic",
              interval_s: float = 10.0, scale: str = "default", plans: tuple = ()) -> pd.DataFrame:
    """One sweep point: the same arrivals (``workload`` at ``load`` × capacity) served by each
    ``(contender, slo_factor, a_star)`` of ``runs``, each judged on ``slo_ms``. ``plans``: the
    plan versions of the contenders of ``runs`` (:func:`.contenders.plan_versions`; checked)."""
    check_plans([r[0] for r in runs], plans)
    zoo = load_zoo(profile)
    rate = load * zoo.capacity_qps(workers, slo_ms)
    arr = arrivals(workload, rate, n, np.random.default_rng(seed), interval_s=interval_s)
    rows = []
    for name, factor, a_star in runs:
        if isinstance(name, UserPolicy):  # a reader's policy travels with the point: register it here
            name = register(name).name
        cfg = contender_config(name, zoo, workers, slo_ms * factor, rate_qps=rate, a_star=a_star,
                               service=service, profile=profile, scale=scale)
        res = simulate(cfg, arrivals=arr, seed=seed)
        rho_tad, step = np.nan, np.nan
        if name in TAD_CONTENDERS:  # the load relative to the TAD paper's λ^max of the layout
            from ..tad import bound

            sp = cfg.system_params()
            rho_tad = rate / 1000.0 / workers / bound.lambda_max(sp, a_star)
            step = min(sp.a) - a_star
        rows.append({"contender": name, "slo_factor": factor,
                     "a_star": a_star if name in TAD_CONTENDERS else np.nan,
                     "rate_qps": rate, "rho_tad": rho_tad, "tad_step": step, **judge(res, slo_ms)})
    return pd.DataFrame(rows)


def _sweep(points: list[dict], workers: int | None, cache, scale: str, on_error: str = "raise") -> pd.DataFrame:
    if workers is None and scale == "smoke":
        workers = 1  # a few hundred ms of work: starting processes would cost more
    version = _code_version() + "".join(sorted({_profile_version(p["profile"]) for p in points}))
    for p in points:  # a point carries plan versions only if it runs a contender that has one
        pv = plan_versions(r[0] for r in p["runs"])
        if pv:
            p["plans"] = pv
    n_jobs = default_processes(workers, name="workers")
    prepare = None if cache is False else (lambda todo: _prefetch_plans(todo, n_jobs))
    df = run_sweep(run_point, points, cache_dir=cache, version=version, n_jobs=n_jobs,
                   on_error=on_error, prepare=prepare)
    return df.drop(columns="plans", errors="ignore")


def _prefetch_plans(points: list[dict], n_jobs: int) -> None:
    """Solve every RAMSIS plan the sweep points ``points`` will need once, on ``n_jobs``
    processes (:func:`.contenders.prefetch_ramsis_plans`); each process used to solve on its
    own every plan its points met, on the K = 256 pool some 200 CPU s a plan grid."""
    plans = []
    for p in points:
        names = {r[0] for r in p["runs"] if r[0] in ("ramsis", "ramsis@mean")}
        if not names or p["profile"] not in PROFILE_NAMES:
            continue
        zoo = load_zoo(p["profile"])
        rate = p["load"] * zoo.capacity_qps(p["workers"], p["slo_ms"])
        for name, factor, _ in p["runs"]:
            if name in names:
                plans += ramsis_plans(name, zoo, p["workers"], p["slo_ms"] * factor, rate, p["profile"],
                                      p.get("scale", "default"))
    prefetch_ramsis_plans(plans, n_jobs)


def load_sweep(scale: str = "default", seed: int = 0, *, workloads: Sequence[str] = WORKLOADS,
               slo_ms: float = 150.0, K: int = 60, profile: str = "ramsis-image",
               a_star: float = 76.0, contenders: Sequence[str] = CONTENDERS, loads=None,
               service: str = "deterministic", workers: int | None = None, cache=None,
               interval_s: float | None = None) -> pd.DataFrame:
    """Every contender at its default knob (plans for the SLO it is judged on; TAD at
    ``a_star``) over the scale's loads, per workload and seed: one row per run. ``service``:
    ``"deterministic"`` (``l(m, b)``, the profile's p95) or ``"jitter"`` (each batch drawn from
    the profile's measured spread; the contenders still plan with ``l(m, b)``). ``interval_s``:
    how long each ten-second interval of the Twitter trace lasts (None: the scale's; 10: real
    time)."""
    s = get_scale(scale)
    _system(profile, K, slo_ms)
    for w in workloads:
        one_of("workload", w, WORKLOADS)
    one_of("service", service, ("deterministic", "jitter"))
    if service == "jitter":  # fail before any point runs
        ServingConfig(load_zoo(profile), workers=int(K), slo_ms=slo_ms, service=service)
    runs = tuple((c, 1.0, float(a_star)) for c in _entries(contenders))
    loads = _loads(loads, s.loads)
    if interval_s is None:
        interval_s = s.twitter_interval_s
    require(isinstance(interval_s, (int, float)) and np.isfinite(interval_s) and interval_s > 0,
            "interval_s", interval_s, "must be a number of seconds > 0")
    points = [dict(workload=w, load=float(r), slo_ms=float(slo_ms), n=s.n, workers=int(K),
                   profile=str(profile), runs=runs, interval_s=float(interval_s), scale=scale,
                   seed=point_seed(seed, WORKLOADS.index(w), r, slo_ms, k),
                   **({} if service == "deterministic" else {"service": service}))
              for w in workloads for r in loads for k in range(s.seeds)]
    return _sweep(points, workers, cache, scale)


def frontier(scale: str = "default", seed: int = 0, *, workloads: Sequence[str] = ("poisson", "mmpp"),
             slo_ms: float = 150.0, K: int = 60, profile: str = "ramsis-image",
             contenders: Sequence[str] = CONTENDERS, loads=None, workers: int | None = None,
             cache=None) -> pd.DataFrame:
    """Each contender's frontier (spec headtohead §3, fairness): its own knob swept, the SLO it
    plans for as a multiple of the judged one (``slo_factors``), or TAD's target
    (``a_stars``, planned on the judged SLO), at the scale's frontier loads."""
    s = get_scale(scale)
    _system(profile, K, slo_ms)
    zoo = load_zoo(profile)
    top = float(zoo.accuracy[zoo.most_accurate_within(slo_ms, 1)])
    runs = []
    for c in _entries(contenders):
        if c in TAD_CONTENDERS:
            runs += [(c, 1.0, a) for a in s.a_stars if a <= top]
        elif c == "fastest":
            runs.append((c, 1.0, np.nan))
        else:
            # a planned SLO below every model's batch-1 latency is no plan at all
            runs += [(c, f, np.nan) for f in s.slo_factors
                     if f * slo_ms >= zoo.latency_ms[zoo.fastest, 0]]
    loads = _loads(loads, s.frontier_loads)
    points = [dict(workload=w, load=float(r), slo_ms=float(slo_ms), n=s.n, workers=int(K),
                   profile=str(profile), runs=tuple(runs), interval_s=s.twitter_interval_s, scale=scale,
                   seed=point_seed(seed, 10 + WORKLOADS.index(w), r, slo_ms, k))
              for w in workloads for r in loads for k in range(s.seeds)]
    return _sweep(points, workers, cache, scale)


def _knob_runs(entries, zoo: Zoo, slo_ms: float, factors, a_stars) -> list:
    """Every contender at each of its knob values: TAD's target (up to the most accurate model
    that meets the judged SLO at batch 1), or the SLO the others plan for (``factors`` x the
    judged one, at least the fastest model's batch-1 latency); "fastest" has no knob."""
    top = float(zoo.accuracy[zoo.most_accurate_within(slo_ms, 1)])
    runs = []
    for c in entries:
        if c in TAD_CONTENDERS:
            runs += [(c, 1.0, float(a)) for a in a_stars if a <= top]
        elif c == "fastest":
            runs.append((c, 1.0, np.nan))
        else:
            runs += [(c, float(f), np.nan) for f in factors if f * slo_ms >= zoo.latency_ms[zoo.fastest, 0]]
    return runs


def decision_runs(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0, K: int = 60,
                  profile: str = "ramsis-image", contenders: Sequence = CONTENDERS, workloads=None,
                  loads=None, workers: int | None = None, cache=None) -> pd.DataFrame:
    """The decision table's runs (issue 33): per workload, load (light to overload) and judged
    SLO (the scale's ``decision_slos`` x ``slo_ms``), every contender at each of its knob values
    (:func:`_knob_runs`), on the scale's ``decision_seeds = (select, score)`` seeds: a column
    ``split`` says whether a seed chooses the knob (``"select"``) or scores it (``"score"``).
    The Twitter trace enters only at the judged SLOs of the scale's ``decision_twitter_slos``
    (its replay, not ``decision_n``, sets its length).
    Within one (workload, load, SLO, seed) every contender serves the same arrivals, so their
    differences can be paired. ``contenders`` may hold a reader's policy (module doc): its runs
    concatenated with the built-ins' go to :func:`recommend` like any other contender's."""
    s = get_scale(scale)
    _system(profile, K, slo_ms)
    zoo = load_zoo(profile)
    workloads = s.decision_workloads if workloads is None else tuple(workloads)
    for w in workloads:
        one_of("workload", w, WORKLOADS)
    entries = _entries(contenders)
    n_sel, n_score = s.decision_seeds
    points, split = [], {}
    for f in s.decision_slos:
        slo = float(slo_ms * f)
        ServingConfig(zoo, workers=int(K), slo_ms=slo)
        runs = tuple(_knob_runs(entries, zoo, slo, s.decision_factors, s.decision_a_stars))
        for w in workloads:
            if w == "twitter" and not any(np.isclose(f, x) for x in s.decision_twitter_slos):
                continue
            for r in _loads(loads, s.decision_loads):
                for k in range(n_sel + n_score):
                    ps = point_seed(seed, 20 + WORKLOADS.index(w), r, slo, k)
                    split[(w, float(r), slo, ps)] = "select" if k < n_sel else "score"
                    points.append(dict(workload=w, load=float(r), slo_ms=slo, n=s.decision_n,
                                       workers=int(K), profile=str(profile), runs=runs,
                                       interval_s=s.twitter_interval_s, scale=scale, seed=ps))
    df = _sweep(points, workers, cache, scale)
    df["split"] = [split[(w, float(r), float(x), int(sd))] for w, r, x, sd in
                   zip(df["workload"], df["load"], df["slo_ms"], df["seed"])]
    return df


def fewest_workers(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0,
                   accuracy: float = 74.0, attainment: float = 0.99, rate_qps: float | None = None,
                   profile: str = "ramsis-image", contenders: Sequence = CONTENDERS,
                   workloads: Sequence[str] = ("poisson",), K_max: int = 128,
                   workers: int | None = None, cache=None, rule: str = "lower-bound",
                   level: float = 0.95) -> pd.DataFrame:
    """What a target costs (issue 33, item 3): the fewest workers ``K`` with which each contender
    serves the stream of ``rate_qps`` (default: 0.9 x the capacity of 60 workers) with at least
    ``attainment`` of queries on time (drops count as late) and on-time queries averaging at
    least ``accuracy`` %, over the scale's seeds by ``rule`` (:func:`.tables.lower_bound`: by
    default the one-sided ``level`` lower confidence bound of the mean, as the decision table
    qualifies), at its natural knob (it plans for the judged SLO; TAD's a* is the accuracy
    target). ``contenders`` may hold a reader's policy (a registered name or a
    :class:`~.plugins.UserPolicy`). Bisection over ``K`` in ``[1, K_max]``, every contender and
    workload at once: each round is one sweep (cached, parallel). Assumes that meeting the target
    is monotone in ``K``; NaN where even ``K_max`` does not meet it. ``seeds missing``: the seeds
    at the returned ``K`` that miss either target."""
    s = get_scale(scale)
    _system(profile, 1, slo_ms)
    zoo = load_zoo(profile)
    for w in workloads:
        one_of("workload", w, WORKLOADS)
    require(isinstance(K_max, (int, np.integer)) and K_max >= 1, "K_max", K_max, "must be an integer >= 1")
    rate = 0.9 * zoo.capacity_qps(60, slo_ms) if rate_qps is None else float(rate_qps)
    require(np.isfinite(rate) and rate > 0, "rate_qps", rate_qps, "must be > 0 (queries/s)")
    entries = _entries(contenders)
    top = float(zoo.accuracy[zoo.most_accurate_within(slo_ms, 1)])
    require(accuracy <= top, "accuracy", accuracy, f"exceeds the most accurate model within the SLO ({top:g})")
    keys = [(c, w) for c in entries for w in workloads]
    lo = {k: 0 for k in keys}        # known infeasible (0: none tried)
    hi = {k: int(K_max) + 1 for k in keys}  # known feasible (K_max + 1: none found)
    tried: dict = {}

    one_of("rule", rule, QUALIFY_RULES)

    def ok(df):
        return bool(lower_bound(df["attainment"], rule, level) >= attainment
                    and lower_bound(df["accuracy_served"], rule, level) >= accuracy - 5e-4)

    probe = {k: int(K_max) for k in keys}  # first: is K_max enough at all?
    while probe:
        points, owner = [], []
        for (c, w), K in probe.items():
            run = ((c, 1.0, float(accuracy) if c in TAD_CONTENDERS else np.nan),)
            for k in range(s.seeds):
                points.append(dict(workload=w, load=float(rate / zoo.capacity_qps(K, slo_ms)), slo_ms=float(slo_ms),
                                   n=s.decision_n, workers=int(K), profile=str(profile), runs=run,
                                   interval_s=s.twitter_interval_s, scale=scale,
                                   seed=point_seed(seed, 40 + WORKLOADS.index(w), k)))
                owner.append(((c, w), K))
        # a layout that cannot hold the target on so few workers (TAD) raises: infeasible
        df = _sweep(points, workers, cache, scale, on_error="record")
        for col in ("attainment", "accuracy_served"):
            if col not in df.columns:
                df[col] = np.nan
        if "error" in df.columns:
            df.loc[df["error"].notna(), ["attainment", "accuracy_served"]] = 0.0
        df["_owner"] = owner
        for (key, K), g in df.groupby("_owner", sort=False):
            tried[(key, K)] = g
            if ok(g):
                hi[key] = min(hi[key], K)
            else:
                lo[key] = max(lo[key], K)
        probe = {}
        for key in keys:
            if hi[key] > K_max or hi[key] - lo[key] <= 1:
                continue
            probe[key] = (lo[key] + hi[key]) // 2
    rows = []
    for (c, w) in keys:
        name = _name(c)
        K = hi[(c, w)]
        g = tried.get(((c, w), K)) if K <= K_max else None
        rows.append({"workload": w, "contender": name, "rate_qps": rate, "slo_ms": float(slo_ms),
                     "accuracy target": float(accuracy), "fewest workers": K if K <= K_max else np.nan,
                     "on time": float(g["attainment"].mean()) if g is not None else np.nan,
                     "accuracy (%)": float(g["accuracy_served"].mean()) if g is not None else np.nan,
                     "seeds missing": (f"{int(((g['attainment'] < attainment) | ~(g['accuracy_served'] >= accuracy - 5e-4)).sum())}"
                                       f" of {len(g)}") if g is not None else "—"})
    return pd.DataFrame(rows)


def regimes(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0, K: int = 60,
            profile: str = "ramsis-image", a_star: float = 76.0,
            contenders: Sequence[str] = CONTENDERS, workers: int | None = None,
            cache=None) -> pd.DataFrame:
    """The decision table's runs: light and heavy load × Poisson and MMPP × a tight and a loose
    SLO (``regime_slo_factors`` × ``slo_ms``), every contender at its default knob."""
    s = get_scale(scale)
    frames = []
    for f in s.regime_slo_factors:
        df = load_sweep(scale, seed, workloads=("poisson", "mmpp"), slo_ms=slo_ms * f, K=K,
                        profile=profile, a_star=a_star, contenders=contenders,
                        loads=s.regime_loads, workers=workers, cache=cache)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


from .sensitivity import sensitivity_runs, sensitivity_table  # noqa: E402 (it reads this module's helpers)

EXPERIMENTS: dict[str, Callable[..., object]] = {
    "decision_runs": decision_runs,
    "sensitivity_runs": sensitivity_runs,
    "load_sweep": load_sweep,
    "frontier": frontier,
    "regimes": regimes,
}
