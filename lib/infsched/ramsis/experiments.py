"""One function per figure/table of the RAMSIS paper, each returning a pandas DataFrame.

Every function takes ``scale`` ("smoke", "default" or "paper") and ``seed``; the sizes behind
each scale are in :data:`SCALES`. The expensive pieces, RAMSIS policies (one MDP per load) and
ModelSwitching's search (one simulation per model and load), go through
:func:`infsched.sweep.run_sweep`: they run on ``workers`` processes, are cached on disk keyed by
their parameters and a hash of the code and data they depend on, and are shared across figures
(Figs. 5, 6, 7, 10, 11 and 12 reuse the K = 60, SLO 150 image policies). An interrupted run resumes
without recomputing finished policies.

The chapter's other pieces, re-exported here (the book and the sweeps read them from this
module): :mod:`~infsched.ramsis.scales` (scales and constants), :mod:`~infsched.ramsis.model_sets`
(the ``profile`` keys, the published or a measured profile, chosen through
:mod:`infsched.profiles.registry`), :mod:`~infsched.ramsis.points` (the sweep points: policies,
ModelSwitching's search, the simulations), :mod:`~infsched.ramsis.table2` (Table 2's timing) and
:mod:`~infsched.ramsis.claims` (each figure's ``claims_*`` and ``notes_*``: the quantities listed
for that item in ``data/paper/ramsis.csv``, which :func:`infsched.report.compare` sets beside
the paper's).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from infsched.errors import check_keywords, config_error, require
from infsched.profiles import Profile
from infsched.ramsis.claims import (
    claims_fig3,
    claims_fig5,
    claims_fig6,
    claims_fig7,
    claims_fig8,
    claims_fig9,
    claims_fig10,
    claims_fig11,
    claims_fig12,
    claims_tab3,
    claims_tab4,
    fewer_workers,
    fig11_sets,
    full_batch_share,
    gains,
    middle_slo,
    notes_fig5,
    notes_fig6,
    notes_fig7,
    notes_fig8,
    notes_fig10,
    notes_fig11,
    notes_fig12,
    notes_tab3,
    notes_tab4,
    paper_table3,
    wide,
    worst_gain,
)
from infsched.ramsis.model import capacity_qps

# private names the tests read
from infsched.ramsis.model_sets import (
    PROFILE_KEYS,
    _model_set,  # noqa: F401
    check_workers,
    get_profile,
    profile_key,
    profile_source,
    use_profile,
)
from infsched.ramsis.points import (
    ARTIFACT_SWEEPS,
    _sweep_version,  # noqa: F401
    constant_load,
    ms_point,
    ms_table,
    policies,
    policy_table,
    prefetch_policies,
    servable_loads,
    solve_point,
    solve_point_measured,
    solve_policy,
    trace_run,
)
from infsched.ramsis.scales import (
    BATCHINGS,
    FIG12_MODELS,
    METHOD_LABELS,
    METHODS,
    OBJECTIVES,
    PLOT_VIOLATION,
    SCALE_NAMES,
    SCALES,
    TASK_SLOS,
    TASK_WORKERS,
    Scale,
    get_scale,
    stand_in,
)
from infsched.ramsis.table2 import (
    TABLE2_CELLS,
    TABLE2_ROWS,
    TABLE2_SCALE_ROWS,
    claims_tab2,
    notes_tab2,
    tab2,
    tab2_point,
)
from infsched.sweep import point_seed

__all__ = ["EXPERIMENTS", "fig10", "fig11", "fig12", "fig3", "fig5", "fig6", "fig7", "fig8",
           "fig9", "objective_ablation", "run_experiment", "BATCHINGS", "FIG12_MODELS", "METHODS",
           "METHOD_LABELS", "OBJECTIVES", "PLOT_VIOLATION", "SCALES", "SCALE_NAMES", "Scale",
           "TASK_SLOS", "TASK_WORKERS", "check_workers", "get_scale", "stand_in", "PROFILE_KEYS",
           "get_profile", "profile_key", "profile_source", "use_profile", "ARTIFACT_SWEEPS",
           "constant_load", "ms_point", "ms_table", "policies", "policy_table", "solve_point",
           "solve_point_measured", "solve_policy", "trace_run", "TABLE2_CELLS", "TABLE2_ROWS",
           "TABLE2_SCALE_ROWS", "claims_tab2", "notes_tab2", "tab2", "tab2_point", "claims_fig10",
           "claims_fig11", "claims_fig12", "claims_fig3", "claims_fig5", "claims_fig6",
           "claims_fig7", "claims_fig8", "claims_fig9", "claims_tab3", "claims_tab4",
           "fewer_workers", "fig11_sets", "full_batch_share", "gains", "middle_slo", "notes_fig10",
           "notes_fig11", "notes_fig12", "notes_fig5", "notes_fig6", "notes_fig7", "notes_fig8",
           "notes_tab3", "notes_tab4", "paper_table3", "wide", "worst_gain"]


# --------------------------------------------------------------------------- figures

def _checked(seed, slo_ms, workers=60) -> None:
    """The keywords the simulated figures share, checked under their names before any policy is
    solved (a string SLO used to fail as ``could not convert string to float``)."""
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool), "seed", seed,
            "must be a non-negative integer (not a float such as 1.0, nor True/False)")
    point_seed(seed)  # a non-negative integer, not truncated
    require(isinstance(slo_ms, (int, float, np.integer, np.floating))
            and not isinstance(slo_ms, (bool, np.bool_)) and np.isfinite(slo_ms) and slo_ms > 0,
            "slo_ms", slo_ms, "must be a finite number of ms > 0 (the latency SLO)")
    require(isinstance(workers, (int, np.integer)) and not isinstance(workers, (bool, np.bool_))
            and workers >= 1, "workers", workers, "must be an integer >= 1 (K, the workers)")


def _profile_frame(prof: Profile, front: Profile | None = None) -> pd.DataFrame:
    on_front = set(front.models) if front is not None else set()
    return pd.DataFrame({
        "model": list(prof.models), "accuracy": prof.accuracy,
        "p95_b1_ms": prof.latency_ms[:, 0], "pareto": [m in on_front for m in prof.models]})


def fig3() -> pd.DataFrame:
    """Fig. 3: the 26 image models' batch-1 p95 latency and accuracy, Pareto front flagged."""
    full = get_profile("image-all")
    return _profile_frame(full, full.pareto_front())


def fig9() -> pd.DataFrame:
    """Fig. 9: the 5 BERT models' batch-1 p95 latency and GLUE-MNLI accuracy."""
    text = get_profile("text")
    return _profile_frame(text, text.pareto_front())


def fig6(scale: str = "default", seed: int = 0, *, workers: int = 60, slo_ms: float = 150.0,
         n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 6 (and Table 4): constant load, every (task, SLO) panel of the scale plus the main
    one (image, ``slo_ms``); image with ``workers`` workers (the paper's 60), text with 20."""
    sc = get_scale(scale)
    _checked(seed, slo_ms, workers)
    panels = list(dict.fromkeys([("image", float(slo_ms))] + list(sc.fig6_panels)))
    return pd.concat([
        constant_load(task, slo, workers if task == "image" else TASK_WORKERS[task], sc.loads,
                      d=sc.d, duration_s=sc.duration_s, seed=seed, ms_duration_s=sc.ms_duration_s,
                      n_jobs=n_jobs, cache=cache).assign(task=task)
        for task, slo in panels], ignore_index=True)


def fig7(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0,
         n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 7: RAMSIS's expectation beside its simulation with p95 latencies and with latencies
    drawn from the profiled distribution (our stand-in for the paper's implementation);
    image, SLO 150, K of the scale (40, 60, 80), loads up to what the pool can serve."""
    sc = get_scale(scale)
    _checked(seed, slo_ms)
    out = []
    for K in sc.fig7_workers:
        prof = get_profile("image")
        loads = [x for x in sc.loads if x < capacity_qps(prof, K)]
        if not loads:                 # a slow measured profile: K cannot serve any load of the sweep
            continue
        for latency in ("p95", "sampled"):
            out.append(constant_load("image", slo_ms, K, loads, d=sc.d, duration_s=sc.duration_s,
                                     seed=seed, methods=("ramsis",), latency=latency,
                                     n_jobs=n_jobs, cache=cache).assign(latency=latency))
    df = pd.concat(out, ignore_index=True)
    peak = {K: capacity_qps(get_profile("image"), K, slo_ms) for K in sc.fig7_workers}
    df["peak_qps"] = df["workers"].map(peak)
    return df


def fig5(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0,
         n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 5 (and Table 3): the Twitter trace, accuracy against the number of workers; the
    image panel at ``slo_ms`` plus the scale's other panels."""
    sc = get_scale(scale)
    _checked(seed, slo_ms)
    panels = list(dict.fromkeys([("image", float(slo_ms))] + list(sc.trace_panels)))
    # every panel's policy solves as one sweep first (the runs below load them from the cache)
    prefetch_policies([(task, slo, K, servable_loads(get_profile(task), K, sc.policy_loads))
                       for task, slo in panels for K in sc.trace_workers],
                      d=sc.d, n_jobs=n_jobs, cache=cache)
    out = []
    for task, slo in panels:
        for K in sc.trace_workers:
            out.append(trace_run(task, slo, K, d=sc.d, duration_s=sc.trace_duration_s, seed=seed,
                                 policy_loads=sc.policy_loads, ms_duration_s=sc.ms_duration_s,
                                 n_jobs=n_jobs, cache=cache).assign(task=task))
    return pd.concat(out, ignore_index=True)


def fig8(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0,
         n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 8: RAMSIS and ModelSwitching with the 9 Pareto models and the 60-model synthetic
    set; image, SLO 150, K = 100."""
    sc = get_scale(scale)
    _checked(seed, slo_ms)
    return pd.concat([
        constant_load(p, slo_ms, 100, sc.fig8_loads, d=sc.d, duration_s=sc.duration_s, seed=seed,
                      methods=("ramsis", "ms"), ms_duration_s=sc.ms_duration_s, n_jobs=n_jobs,
                      cache=cache).assign(models=get_profile(p).n_models)
        for p in ("image", "image-60")], ignore_index=True)


def fig10(scale: str = "default", seed: int = 0, *, workers: int = 60, slo_ms: float = 150.0,
          n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 10: RAMSIS with FLD D of the scale and with MD; image, SLO 150, K = 60."""
    sc = get_scale(scale)
    _checked(seed, slo_ms, workers)
    runs = [(f"FLD D={d}", "fld", d) for d in sc.fig10_ds] + [("MD", "md", sc.d)]
    return pd.concat([
        constant_load("image", slo_ms, workers, sc.fig10_loads, d=d, duration_s=sc.duration_s,
                      seed=seed, methods=("ramsis",), discretisation=disc, n_jobs=n_jobs, cache=cache)
        .assign(discretisation=name) for name, disc, d in runs], ignore_index=True)


def fig11(scale: str = "default", seed: int = 0, *, workers: int = 60, slo_ms: float = 150.0,
          n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 11: RAMSIS with maximal and with variable batching (§4.3.2); image, SLO 150, K = 60,
    the constant loads of Fig. 6 (the paper states no configuration). The paper's figure has the
    9 Pareto models (its 60-model variable-batching policies timed out, Table 2); we add the
    60-model set (``models`` column) at the scales listed in ``Scale.fig11_profiles``."""
    sc = get_scale(scale)
    _checked(seed, slo_ms, workers)
    return pd.concat([
        constant_load(p, slo_ms, workers, sc.loads, d=sc.d, duration_s=sc.duration_s,
                      seed=seed, methods=("ramsis",), batching=b, n_jobs=n_jobs, cache=cache)
        .assign(batching=b, models=get_profile(p).n_models)
        for p in sc.fig11_profiles for b in BATCHINGS], ignore_index=True)


def fig12(scale: str = "default", seed: int = 0, *, workers: int = 60, slo_ms: float = 150.0,
          n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 12: RAMSIS and Jellyfish+ with only 3 models (and with the 9); image, SLO 150, K = 60."""
    sc = get_scale(scale)
    _checked(seed, slo_ms, workers)
    return pd.concat([
        constant_load(p, slo_ms, workers, sc.loads, d=sc.d, duration_s=sc.duration_s, seed=seed,
                      methods=("ramsis", "jf"), n_jobs=n_jobs, cache=cache)
        .assign(models=get_profile(p).n_models) for p in ("image-3", "image")], ignore_index=True)


def objective_ablation(scale: str = "default", seed: int = 0, *, workers: int = 60,
                       slo_ms: float = 150.0, n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Our extension: RAMSIS with the paper's per-decision reward and with accuracy per query
    (Dinkelbach), beside both baselines, on the constant-load panels of Fig. 6 (text, where the
    per-decision policy trails, and the main image panel). One row per (panel, load, method)."""
    sc = get_scale(scale)
    _checked(seed, slo_ms, workers)
    panels = [("image", float(slo_ms))] + [p for p in sc.fig6_panels if p[0] == "text"]
    out = []
    for task, slo in panels:
        K = workers if task == "image" else TASK_WORKERS[task]
        base = constant_load(task, slo, K, sc.loads, d=sc.d, duration_s=sc.duration_s, seed=seed,
                             ms_duration_s=sc.ms_duration_s, n_jobs=n_jobs, cache=cache)
        q = constant_load(task, slo, K, sc.loads, d=sc.d, duration_s=sc.duration_s, seed=seed,
                          methods=("ramsis",), objective="query", n_jobs=n_jobs, cache=cache)
        q["method"] = "ramsis-query"
        out += [base.assign(task=task), q.assign(task=task)]
    return pd.concat(out, ignore_index=True)


# an unknown keyword is a ConfigError naming it and the keywords taken (not Python's TypeError)
fig5, fig6, fig7, fig8, fig10, fig11, fig12, objective_ablation = (
    check_keywords(f, f"experiment {f.__name__} of ramsis")
    for f in (fig5, fig6, fig7, fig8, fig10, fig11, fig12, objective_ablation))

EXPERIMENTS: dict[str, Callable] = {
    "fig3": lambda scale="default", seed=0, **kw: fig3(),
    "fig5": fig5, "fig6": fig6, "fig7": fig7, "fig8": fig8,
    "fig9": lambda scale="default", seed=0, **kw: fig9(),
    "fig10": fig10, "fig11": fig11, "fig12": fig12, "objective": objective_ablation,
    "tab2": lambda scale="default", seed=0, **kw: tab2(scale, **kw),
}


def run_experiment(name: str, scale: str = "default", seed: int = 0, **params):
    """Run a registered experiment by name (``ConfigError`` lists the names if unknown)."""
    if name not in EXPERIMENTS:
        raise config_error("experiment", name, "must be one of " + ", ".join(EXPERIMENTS))
    return EXPERIMENTS[name](scale=scale, seed=seed, **params)
