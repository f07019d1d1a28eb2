"""The head-to-head chapter's contenders: each paper's policy (or a simple baseline) turned into a
:class:`~infsched.serving.ServingConfig` for a system (zoo, ``K`` workers, the SLO it plans
for) and its own knob (spec headtohead §3), and :func:`judge`, the metrics every run is judged
on (spec headtohead §2).

The planning each paper does lives in its own package (the TAD LP, R-JIQ's split, RAMSIS's MDP,
Jellyfish+ and ModelSwitching, Shepherd's planner); this module only calls it on a Zoo.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import one_of, require
from ..profiles import PROFILE_NAMES, pareto_mask
from ..workload import poisson_arrivals
from .config import ServingConfig
from .labels import CONTENDERS, LABELS, MEAN_PLANNED, MONITORED
from .scales import get_scale
from .sim import DEADLINE_TOL_MS, simulate
from .zoo import Zoo

__all__ = ["LABELS", "CONTENDERS", "TAD_CONTENDERS", "REPLANNING", "MEAN_PLANNED", "MONITORED", "tad_split",
           "rjiq_split", "jellyfish_choice", "ramsis_policy", "ramsis_loads", "model_switching_choice",
           "contender_config", "judge", "PLAN_VERSIONS", "plan_versions"]

#: the λ-planned contenders that re-plan per load level (a 500 ms load monitor, as in RAMSIS)
REPLANNING = ("ramsis", "jellyfish+", "modelswitching")
#: the contenders from the TAD paper: server classes from :func:`tad_split`, knob a*
TAD_CONTENDERS = ("tad", "tad-batch", "tad-op", "r-jiq", "r-jiq@monitor")
#: each contender's plan version, bumped (in the same commit) by a change to how the contender
#: plans that changes its numbers. A sweep point that runs a contender listed here carries its
#: ``(name, version)`` in ``plans`` (:func:`plan_versions`), so such a change re-keys, in the
#: results store, only the points that run that contender, and a point asking for another
#: version is refused rather than recomputed to other numbers. Unlisted contenders are at 1.
#: ramsis 2: its load levels are the RAMSIS chapter's policy grid (:func:`ramsis_loads`), not
#: the head to head's ``plan_levels``.
PLAN_VERSIONS: dict[str, int] = {"ramsis": 2}


def plan_versions(names) -> tuple[tuple[str, int], ...]:
    """The ``(name, version)`` pairs of :data:`PLAN_VERSIONS` among the contender ``names`` (a
    reader's policy, not a string, has none), sorted: the ``plans`` a sweep point carries."""
    return tuple(sorted({(n, PLAN_VERSIONS[n]) for n in names if isinstance(n, str) and n in PLAN_VERSIONS}))


def check_plans(names, plans) -> None:
    """Refuse a sweep point whose ``plans`` are not the current :func:`plan_versions` of the
    contenders it runs (a point stored under an earlier plan version, or built by hand)."""
    want = plan_versions(names)
    got = tuple(tuple(x) for x in plans)
    require(got == want, "plans", plans,
            f"must be {want}, the plan versions of the contenders the point runs "
            "(contenders.plan_versions): a point stored with other plans was computed by other "
            "planning code, so the store must be rebuilt (infsched results build)")


def tad_split(zoo: Zoo, workers: int, a_star: float, slo_ms: float) -> tuple[str, ...]:
    """TAD's server layout on ``K`` workers (spec headtohead §3): the server types are the
    Pareto-front models that meet the SLO at batch 1; the TAD LP (least mean service time with
    mean accuracy ``>= a*``, :func:`infsched.optim.solve_lp`) picks the routing split ``p``, and
    the workers are split in proportion to the work ``p_k l(k, 1)`` each type receives (so every
    type runs at the same utilisation), by largest remainder, each used type at least one
    worker. The split does not depend on λ: the total work constraint only says whether λ fits."""
    from ..errors import InfeasibleError
    from ..optim import solve_lp

    l1 = zoo.latency_ms[:, 0]
    cand = np.flatnonzero(pareto_mask(l1, zoo.accuracy) & (l1 <= slo_ms))
    acc, lat = zoo.accuracy[cand], l1[cand]
    if a_star > acc.max():
        raise InfeasibleError(f"a* = {a_star:g} exceeds the most accurate model that meets the "
                              f"SLO ({slo_ms:g} ms) at batch 1, {acc.max():g}")
    sol = solve_lp(lat, A_ub=-acc[None, :], b_ub=[-a_star], A_eq=np.ones((1, cand.size)), b_eq=[1.0],
                   bounds=(0, None))
    p = np.clip(np.asarray(sol.x, float), 0, None)
    p[p < 1e-9] = 0.0
    work = p * lat / float(p @ lat)
    used = np.flatnonzero(work > 0)
    counts = np.zeros(cand.size, np.int64)
    counts[used] = 1 if workers >= used.size else 0
    rest = workers - counts.sum()
    target = work * workers - counts
    base = np.floor(np.clip(target, 0, None)).astype(np.int64)
    base = np.minimum(base, rest)
    counts += base
    rest = workers - counts.sum()
    frac = np.where(work > 0, target - base, -np.inf)
    for i in np.argsort(-frac, kind="stable")[:rest]:
        counts[i] += 1
    return tuple(zoo.names[cand[i]] for i in range(cand.size) for _ in range(int(counts[i])))


def rjiq_split(params, a_star: float, rate_qps: float, workers: int) -> tuple[float, ...]:
    """R-JIQ's class probabilities p_RJIQ(λ) (TAD paper eq. 4) for the mean rate ``rate_qps``
    on ``workers`` servers of the classes ``params`` (rates per ms). Past λ^max, where the
    formula is undefined (no routing meets a* and the capacities), R-JIQ runs tuned to λ^max."""
    from ..tad import bound

    lam = rate_qps / 1000.0 / workers  # per server per ms, the units of params.mu
    lam = min(lam, bound.lambda_max(params, a_star))
    return tuple(float(x) for x in bound.rjiq_probs(params, a_star, lam, workers))


class _ProfileView:
    """What :func:`infsched.ramsis.baselines.jellyfish_plus` reads of a profile, from a Zoo."""

    def __init__(self, zoo: Zoo):
        self.models, self.accuracy, self._lat = zoo.names, zoo.accuracy, zoo.latency_ms

    def latency_table(self, b_max: int) -> np.ndarray:
        return self._lat[:, :b_max].copy()


def jellyfish_choice(zoo: Zoo, workers: int, slo_ms: float, rate_qps: float) -> tuple[str, int]:
    """Jellyfish+'s (model, batch cap) at the mean load (RAMSIS spec §4.1), via the RAMSIS
    chapter's own :func:`infsched.ramsis.baselines.jellyfish_plus`."""
    from ..ramsis.baselines import jellyfish_plus

    tab = jellyfish_plus(_ProfileView(zoo), [rate_qps], workers, slo_ms, max_batch=zoo.max_batch)
    return zoo.names[int(tab.model[0])], int(tab.cap[0])


def ramsis_loads(profile: str, workers: int, scale: str = "default",
                 zoo: Zoo | None = None) -> tuple[float, ...]:
    """The load levels (queries/s) RAMSIS plans for on ``workers`` workers of ``profile``: the
    RAMSIS chapter's policy grid at the same ``scale`` (:class:`infsched.ramsis.scales.Scale`'s
    ``policy_loads``, read from there), which the chapter solves for its image pool of
    :data:`~infsched.ramsis.scales.TASK_WORKERS` workers, as shares of that pool's capacity
    (:func:`infsched.ramsis.model.capacity_qps`, the fastest model at its best batch up to N),
    times this pool's capacity; of these, the ones below the capacity
    (:func:`infsched.ramsis.points.servable_loads`, the chapter's rule). On the chapter's own
    pool (``ramsis-image``, 60 workers) they are the chapter's loads, query rate for query rate
    (the ratio is exactly 1); elsewhere the grid is as dense against the pool's capacity."""
    from ..ramsis.model import capacity_qps
    from ..ramsis.points import servable_loads
    from ..ramsis.scales import TASK_WORKERS, get_scale as ramsis_scale

    prof = _profile_obj(profile, None if profile in PROFILE_NAMES else zoo)
    ratio = capacity_qps(prof, int(workers)) / capacity_qps(_profile_obj("ramsis-image"), TASK_WORKERS["image"])
    levels = [round(float(x) * ratio, 6) for x in ramsis_scale(scale).policy_loads]
    return tuple(servable_loads(prof, int(workers), levels))


def ramsis_policy(profile: str, workers: int, slo_ms: float, rate_qps: float, d: int,
                  zoo: Zoo | None = None):
    """RAMSIS's worker policy (the RAMSIS chapter's solver, :func:`infsched.ramsis.mdp.solve`:
    FLD grid of ``d`` steps, N = 32, maximal batching) for the rate ``rate_qps``; above the
    pool's capacity, where no policy exists, the policy for just below it. ``profile`` is a
    published profile's name, or any other profile with its ``zoo``
    (:func:`~infsched.serving.experiments.load_zoo`). Cached per process, and read from the
    cache folder where a head-to-head sweep solved it beforehand (:func:`prefetch_ramsis_plans`)."""
    return _ramsis_solution(*_plan_args(profile, workers, slo_ms, rate_qps, d, zoo))


def _plan_args(profile: str, workers: int, slo_ms: float, rate_qps: float, d: int,
               zoo: Zoo | None) -> tuple:
    """The arguments of :func:`_ramsis_solution` for :func:`ramsis_policy`'s: the rate capped
    just below the pool's capacity and rounded, the zoo kept only for an unpublished profile."""
    from ..ramsis.model import capacity_qps

    zoo = None if profile in PROFILE_NAMES else zoo
    plan = min(float(rate_qps), 0.999 * capacity_qps(_profile_obj(profile, zoo), workers))
    return str(profile), int(workers), float(slo_ms), round(plan, 6), int(d), zoo


@lru_cache(maxsize=512)
def _ramsis_solution(profile: str, workers: int, slo_ms: float, rate: float, d: int,
                     zoo: Zoo | None = None):
    """The plan from the cache folder where :func:`prefetch_ramsis_plans` left it, else solved
    here (:func:`_solve_plan`)."""
    path = _plan_path(profile, workers, slo_ms, rate, d)
    if path is not None:
        from ..cache import _load

        got = _load(path)
        if got is not None:
            return got["grid"], got["model"], got["batch"]
    return _solve_plan(profile, workers, slo_ms, rate, d, zoo)


def _solve_plan(profile: str, workers: int, slo_ms: float, rate: float, d: int,
                zoo: Zoo | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relative value iteration to convergence; where it does not converge (on some measured
    profiles a flat stretch of ``l(m, b)`` makes the chain periodic, and the span of the update
    oscillates), the authors' artifact's rule: 100 undiscounted sweeps."""
    from ..ramsis import mdp
    from ..ramsis.model import MDPConfig

    cfg = MDPConfig(slo_ms, workers, rate, d=d)
    try:
        sol = mdp.solve(_profile_obj(profile, zoo), cfg, metrics=False)
    except mdp.ConvergenceError:
        sol = mdp.solve(_profile_obj(profile, zoo), cfg, horizon=100, metrics=False)
    return (sol.grid, sol.model, sol.batch)


@lru_cache(maxsize=1)
def _solver_version() -> str:
    """The hash of the RAMSIS solver's sources and profile tables (the RAMSIS chapter's own
    cache version): a kept plan is read only by the code that computed it."""
    from ..ramsis.points import _code_version

    return _code_version()


def _plan_path(profile: str, workers: int, slo_ms: float, rate: float, d: int):
    """Where :func:`prefetch_ramsis_plans` keeps one plan in the cache folder
    (:func:`~infsched.cache.default_cache_dir`); None for an unpublished profile, whose zoo
    the key could not name."""
    if profile not in PROFILE_NAMES:
        return None
    from ..cache import _safe_dirname, default_cache_dir, point_key

    point = dict(profile=profile, workers=workers, slo_ms=slo_ms, rate=rate, d=d)
    folder = default_cache_dir() / _safe_dirname(f"{_solve_plan.__module__}.{_solve_plan.__qualname__}")
    return folder / f"{point_key(_solve_plan, point, _solver_version())}.pkl"


def _keep_plan(args: tuple) -> None:
    from ..cache import _save

    grid, model, batch = _solve_plan(*args)
    _save(_plan_path(*args[:5]), {"grid": grid, "model": model, "batch": batch})


def ramsis_plans(name: str, zoo: Zoo, workers: int, slo_ms: float, rate_qps: float, profile: str,
                 scale: str = "default") -> list[tuple]:
    """The plans contender ``name`` (``"ramsis"`` or ``"ramsis@mean"``) solves when it plans for
    ``slo_ms`` on ``workers`` workers of ``profile`` (:func:`contender_config`), as
    :func:`_plan_args` tuples: one per load of :func:`ramsis_loads`, or the one for ``rate_qps``,
    on the RAMSIS chapter's slack grid ``D`` at ``scale``."""
    from ..ramsis.scales import get_scale as ramsis_scale

    d = ramsis_scale(scale).d  # the RAMSIS chapter's slack grid at this scale
    rates = [rate_qps] if name == "ramsis@mean" else ramsis_loads(profile, workers, scale, zoo)
    return [_plan_args(profile, workers, slo_ms, x, d, zoo) for x in rates]


def prefetch_ramsis_plans(plans, n_jobs: int = 1) -> None:
    """Solve the RAMSIS plans ``plans`` (:func:`_plan_args` tuples, published profiles only)
    once each, on ``n_jobs`` processes, heaviest pool first, and keep them in the cache folder:
    a sweep's worker processes then read them there instead of each solving every plan its
    points need. Plans already kept are skipped. The plans are the same to the bit."""
    todo = sorted({a for a in plans if (path := _plan_path(*a[:5])) is not None and not path.exists()},
                  key=lambda a: (-a[1], -a[3]))
    if n_jobs == 1 or len(todo) <= 1:
        for a in todo:
            _keep_plan(a)
        return
    from joblib import Parallel, delayed

    Parallel(n_jobs=n_jobs, batch_size=1)(delayed(_keep_plan)(a) for a in todo)


@lru_cache(maxsize=8)
def _profile_obj(profile: str, zoo: Zoo | None = None):
    """The :class:`~infsched.profiles.Profile` RAMSIS's solver reads: the published one, or one
    built from ``zoo`` (a Zoo hashes by identity, and a changed profile file loads a new one)."""
    from ..profiles import Profile, load_profile

    if profile in PROFILE_NAMES:
        return load_profile(profile)
    require(zoo is not None, "profile", profile,
            "is not a published profile name: RAMSIS's policy needs its Zoo (load_zoo(profile))")
    return Profile(name=str(profile), models=zoo.names, accuracy=zoo.accuracy,
                   latency_ms=zoo.latency_ms, spread=zoo.spread)


@lru_cache(maxsize=256)
def model_switching_choice(zoo: Zoo, workers: int, slo_ms: float, rate_qps: float, n: int,
                           seed: int = 0) -> tuple[str, int]:
    """ModelSwitching (RAMSIS spec §4.2) searched on this simulator: with Poisson arrivals at the
    mean rate, the central queue with each model fixed (most accurate first) and the Jellyfish+
    cap; the first model with fewer than 1 % of queries late, else the fastest. Cached per
    process (a Zoo hashes by identity, and :func:`load_zoo` returns one per profile)."""
    from ..ramsis.baselines import MS_THRESHOLD

    _, cap = jellyfish_choice(zoo, workers, slo_ms, rate_qps)
    arr = poisson_arrivals(rate_qps / 1000.0, n=n, rng=np.random.default_rng(seed))
    for m in np.argsort(-zoo.accuracy, kind="stable"):
        cfg = ServingConfig(zoo, workers=workers, slo_ms=slo_ms, policy="fcfs", model=zoo.names[m],
                            max_batch=cap)
        late = 1.0 - simulate(cfg, arrivals=arr, seed=seed).on_time.mean()
        if late < MS_THRESHOLD:
            return zoo.names[m], cap
    return zoo.names[zoo.fastest], cap


def contender_config(name: str, zoo: Zoo, workers: int, slo_ms: float, *, rate_qps: float,
                     a_star: float = 76.0, service: str = "deterministic", profile: str | None = None,
                     scale: str = "default", overheads: dict | None = None) -> ServingConfig:
    """The configuration contender ``name`` runs with when it plans for ``slo_ms`` (and, for
    TAD, targets ``a_star``); ``rate_qps`` is the mean load, read only by the contenders planned
    for it (R-JIQ, FLEX's model, the ``@mean`` variants). RAMSIS, Jellyfish+ and ModelSwitching
    re-plan as the RAMSIS paper runs them: one plan per load level of the scale's
    ``plan_levels`` (shares of the capacity at ``slo_ms``), the one in force picked by the rate
    over the last 500 ms; ``r-jiq@monitor`` and ``flex@monitor`` do the same with R-JIQ's split
    and FLEX's model (issue 33). RAMSIS plans instead for the RAMSIS chapter's load grid
    (:func:`ramsis_loads`) with the chapter's slack grid ``D`` at the same scale; it needs the
    ``profile`` name (its solver reads the profile). ``scale`` sets the levels, RAMSIS's grids
    and ModelSwitching's search length.
    ``overheads``: :class:`ServingConfig`'s ``switch_ms``, ``dispatch_ms`` and ``preempt_ms``
    (the last one FLEX's only; the others ignore it) for the run; the plans ignore them all."""
    one_of("contender", name, tuple(LABELS))
    common = dict(workers=workers, slo_ms=slo_ms, service=service)
    for k, v in (overheads or {}).items():
        one_of("overheads", k, ("switch_ms", "dispatch_ms", "preempt_ms"))
        if k != "preempt_ms" or name in ("flex", "flex@monitor"):
            common[k] = v
    from .plugins import registered

    if name in registered():  # a reader's policy (infsched.serving.plugins): plans for slo_ms
        return ServingConfig(zoo, policy=name, **common)
    sc = get_scale(scale)
    if name in ("flex", "flex-np"):  # on the model Shepherd's planner provisions for the mean rate
        from .flex import planner_model

        m = planner_model(zoo, workers, slo_ms, rate_qps)
        return ServingConfig(zoo, policy=name, model=zoo.names[m], **common)
    levels = tuple(x * zoo.capacity_qps(workers, slo_ms) for x in sc.plan_levels)
    if name == "flex@monitor":  # the planner's model for each level, read when a batch forms
        from .flex import planner_model

        plan = tuple((zoo.names[planner_model(zoo, workers, slo_ms, x)], zoo.max_batch) for x in levels)
        return ServingConfig(zoo, policy="flex", plan_loads=levels, plan=plan, **common)
    if name in ("ramsis", "ramsis@mean"):
        require(profile is not None, "profile", profile, "RAMSIS needs the profile's name")
        pols = [_ramsis_solution(*a) for a in ramsis_plans(name, zoo, workers, slo_ms, rate_qps, profile, scale)]
        if name == "ramsis@mean":
            return ServingConfig(zoo, policy="ramsis", mdp_policy=pols[0], **common)
        return ServingConfig(zoo, policy="ramsis", mdp_policy=pols,
                             plan_loads=ramsis_loads(profile, workers, scale, zoo), **common)
    if name == "modelswitching":
        plan = tuple(model_switching_choice(zoo, workers, slo_ms, x, sc.ms_queries) for x in levels)
        return ServingConfig(zoo, policy="fcfs", plan_loads=levels, plan=plan, **common)
    if name == "jellyfish+":
        plan = tuple(jellyfish_choice(zoo, workers, slo_ms, x) for x in levels)
        return ServingConfig(zoo, policy="fcfs", plan_loads=levels, plan=plan, **common)
    if name in ("most-accurate", "fastest", "slack-accurate", "batch-greedy"):
        return ServingConfig(zoo, policy=name, **common)
    if name in ("tad-op", "r-jiq", "r-jiq@monitor"):
        wm = tad_split(zoo, workers, a_star, slo_ms)
        cfg = ServingConfig(zoo, policy="tad-op", a_star=a_star, worker_models=wm, **common)
        if name == "tad-op":
            return cfg
        if name == "r-jiq@monitor":  # p_RJIQ of each level, read at each routing decision
            sp = cfg.system_params()
            return ServingConfig(zoo, policy="r-jiq", a_star=a_star, worker_models=wm, plan_loads=levels,
                                 class_p=tuple(rjiq_split(sp, a_star, x, workers) for x in levels), **common)
        return ServingConfig(zoo, policy="r-jiq", a_star=a_star, worker_models=wm,
                             class_p=rjiq_split(cfg.system_params(), a_star, rate_qps, workers), **common)
    if name in ("tad", "tad-batch"):
        wm = tad_split(zoo, workers, a_star, slo_ms)
        cap = 1
        if name == "tad-batch":  # the largest batch every TAD server type serves within the SLO
            idx = [zoo.names.index(m) for m in set(wm)]
            fits = np.all(zoo.latency_ms[idx] <= slo_ms, axis=0)
            cap = int(np.flatnonzero(fits).max() + 1) if fits.any() else 1
        return ServingConfig(zoo, policy="tad", a_star=a_star, worker_models=wm, max_batch=cap,
                             **common)
    if name == "modelswitching@mean":  # its search once, at the mean rate
        model, cap = model_switching_choice(zoo, workers, slo_ms, rate_qps, sc.ms_queries)
        return ServingConfig(zoo, policy="fcfs", model=model, max_batch=cap, **common)
    model, cap = jellyfish_choice(zoo, workers, slo_ms, rate_qps)  # jellyfish+@mean
    return ServingConfig(zoo, policy="fcfs", model=model, max_batch=cap, **common)


def judge(res, slo_ms: float, warmup: float = 0.1) -> dict[str, float]:
    """Spec headtohead §2's metrics of one run, judged on ``slo_ms`` (which may differ from the
    SLO the contender planned for), over the queries after the first ``warmup`` share."""
    k = int(warmup * res.arrival.size)
    served = res.served[k:]
    lat = res.latency[k:]
    with np.errstate(invalid="ignore"):
        ok = served & (lat <= slo_ms + DEADLINE_TOL_MS)
    acc = res.config.zoo.accuracy[np.maximum(res.model[k:], 0)]
    span_s = (res.arrival[-1] - res.arrival[k]) / 1000.0
    ls = lat[served]
    return {
        "attainment": float(ok.mean()),
        "accuracy_served": float(acc[ok].mean()) if ok.any() else float("nan"),
        "accuracy_per_arrival": float(np.where(ok, acc, 0.0).mean()),
        "accuracy_routed": float(acc[served].mean()) if served.any() else float("nan"),
        "goodput_qps": float(ok.sum() / span_s) if span_s > 0 else float("nan"),
        "mean_latency_ms": float(ls.mean()) if ls.size else float("nan"),
        "p99_latency_ms": float(np.percentile(ls, 99)) if ls.size else float("nan"),
        "dropped": float(1.0 - served.mean()),
        "served_late": float((served & ~ok).sum() / max(int(served.sum()), 1)),
        "mean_batch": float(res.bsize[k:][served].mean()) if ls.size else float("nan"),
        "min_delta": float(res.min_delta),  # TAD family: least running accuracy surplus (0 otherwise)
        "final_delta": float(res.final_delta),  # ... and at the end of the run
        "preemptions_per_query": res.preemptions / res.arrival.size,  # FLEX (0 otherwise)
    }
