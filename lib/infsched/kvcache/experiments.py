"""One function per figure/table of the KV-cache scheduling paper, each returning a DataFrame.

Every function takes ``scale`` ("smoke", "default" or "paper") and ``seed``; the sizes behind
each scale are in :data:`SCALES`. Hindsight optima (Fig. 2) and simulation runs (Figs. 3, 6–11,
Table 1) go through :func:`infsched.sweep.run_sweep`: cached on disk per point, keyed by their
parameters and a hash of the code they run, so an interrupted run resumes and a changed parameter
recomputes only what it touches.

The figures live by group: :mod:`.fig2` (MC-SF against the hindsight optimum),
:mod:`.fig3_tab1` (the eight algorithms; κ's calibration), :mod:`.fig5_11` (dataset, memory
traces, α/β sweeps) and :mod:`.theorems`; the scales and the paper's constants in :mod:`.scales`.
This module registers them in :data:`EXPERIMENTS` (κ calibrated on Table 1 when not given) and
re-exports them, so ``from infsched.kvcache import experiments as ex`` reaches every one.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np

from infsched.errors import ConfigError, config_error, one_of, require
from infsched.kvcache.fig2 import (
    FIG2_PAPER,
    FIG2_PAPER_TRIALS,
    READINGS,
    claims_fig2,
    claims_fig2_small,
    fig2,
    fig2_by_n,
    fig2_comparison,
    fig2_example,
    fig2_point,
    fig2_readings,
    fig2_setting,
    fig2_small,
    reading_instance,
)
from infsched.kvcache.fig2_tibound import (
    ILS_KICKS,
    TIBOUND_CUTS,
    TIBOUND_POLISH,
    TIBOUND_ROUNDS,
    claims_fig2_bounds,
    fig2_bound_point,
    fig2_bounds,
    fig2_with_tibound,
    small_bounds,
    tibound_trials,
)
from infsched.kvcache.fig3_tab1 import (
    TAB1_QUANTITIES,
    calibrate_kappa,
    claims_fig3,
    claims_tab1,
    fig3,
    fig3_means,
    kappa_sensitivity,
    note_tab1,
    run_algorithms,
    run_point,
    slopes,
    tab1,
)
from infsched.kvcache.fig5_11 import (
    alpha_beta_sweep,
    claims_alpha,
    claims_beta,
    claims_fig5,
    claims_memory,
    fig5,
    memory_trace,
    smallest_terminating_alpha,
    sweep_summary,
)
from infsched.kvcache.scales import (
    ALGORITHMS,
    DATASET_SIZE,
    DEMANDS,
    M_LLAMA,
    PAPER_RANGES,
    PAPER_SIZES,
    SCALES,
    TABLE1_MCSF_S,
    TRACE_N,
    Scale,
    check_parameters,
    get_scale,
    stand_in,
)
from infsched.kvcache.theorems import (
    claims_theorem_41,
    claims_theorem_43,
    theorem_41_table,
    theorem_43_table,
)

__all__ = ["SCALES", "ALGORITHMS", "DEMANDS", "M_LLAMA", "PAPER_RANGES", "READINGS", "fig2",
           "claims_fig2", "fig2_comparison", "fig2_small", "claims_fig2_small", "fig2_by_n", "fig2_readings",
           "reading_instance", "fig2_example", "calibrate_kappa", "kappa_sensitivity", "run_algorithms", "fig3",
           "fig3_means", "slopes", "claims_fig3", "tab1",
           "claims_tab1", "note_tab1", "fig5", "claims_fig5", "memory_trace", "claims_memory", "alpha_beta_sweep",
           "sweep_summary", "claims_alpha", "claims_beta", "smallest_terminating_alpha",
           "theorem_41_table", "claims_theorem_41", "theorem_43_table", "claims_theorem_43",
           "check_parameters", "EXPERIMENTS", "run_experiment",
           # also reached through this module by the chapter, tests and benchmarks
           "Scale", "get_scale", "stand_in", "TABLE1_MCSF_S", "TRACE_N", "PAPER_SIZES", "DATASET_SIZE",
           "FIG2_PAPER", "FIG2_PAPER_TRIALS", "fig2_point", "fig2_setting", "run_point",
           "TAB1_QUANTITIES", "fig2_bounds", "claims_fig2_bounds", "fig2_bound_point",
           "tibound_trials", "TIBOUND_ROUNDS", "TIBOUND_CUTS", "TIBOUND_POLISH", "ILS_KICKS",
           "fig2_with_tibound", "small_bounds"]


def _needs_kappa(fn, name: str | None = None):
    """Figure functions that run the batch simulator take κ; calibrate it when not given.

    The wrapper shows ``fn``'s own signature (``kappa`` optional, ``scale`` and ``seed`` with
    their defaults), so :func:`infsched.sweep.chapter_grid` sees the keywords it really takes and
    names an unknown one; a call with an unknown keyword, or a κ that is not a positive number,
    fails with a ConfigError before κ is calibrated or any point runs."""
    sig = inspect.signature(fn)
    defaults = {"scale": "default", "seed": 0, "kappa": None}
    public = sig.replace(parameters=[
        p.replace(default=defaults[p.name]) if p.name in defaults and p.default is p.empty else p
        for p in sig.parameters.values()])
    kappa_param = public.parameters["kappa"]
    public = public.replace(parameters=[
        kappa_param.replace(default=None, annotation=kappa_param.empty) if p.name == "kappa" else p
        for p in public.parameters.values()])
    label = name or fn.__name__
    takes = [p for p in public.parameters if p not in ("scale", "seed")]

    @functools.wraps(fn)
    def run(*args, **kw):
        for k in kw:
            if k not in public.parameters:
                raise config_error("parameter", k, f"experiment {label} does not take it; it takes "
                                   + ", ".join(takes))
        try:
            bound = public.bind(*args, **kw)
        except TypeError as exc:
            raise ConfigError(f"{label}: {exc}") from None
        bound.apply_defaults()
        a = dict(bound.arguments)
        kappa = a["kappa"]
        require(kappa is None or (isinstance(kappa, (int, float, np.integer, np.floating))
                                  and not isinstance(kappa, (bool, np.bool_))
                                  and np.isfinite(kappa) and kappa > 0),
                "kappa", kappa, "must be None (calibrate on Table 1) or a positive number "
                "(the batch-time scale)")
        if kappa is None:
            a["kappa"] = calibrate_kappa(a["scale"], a["seed"])
        return fn(**a)

    run.__signature__ = public  # what inspect.signature (and the sweep's name check) reads
    if name is not None:
        run.__name__ = name
    return run


#: Every figure/table by name: ``EXPERIMENTS["tab1"](scale, seed, kappa=None, ...)``.
EXPERIMENTS: dict[str, Callable] = {
    "fig2": fig2,
    "fig2-small": fig2_small,
    "fig2-readings": fig2_readings,
    "fig3": _needs_kappa(fig3, "fig3"),
    "tab1": _needs_kappa(tab1, "tab1"),
    "fig5": lambda scale="default", seed=0, **kw: fig5(),
    "fig6": _needs_kappa(lambda scale, seed, kappa: memory_trace("high", seed=seed, kappa=kappa),
                        "fig6"),
    "fig9": _needs_kappa(lambda scale, seed, kappa: memory_trace("low", seed=seed, kappa=kappa),
                        "fig9"),
    "fig7-fig8-fig10-fig11": _needs_kappa(alpha_beta_sweep, "fig7-fig8-fig10-fig11"),
    "thm41": lambda scale="default", seed=0, **kw: theorem_41_table(),
    "thm43": lambda scale="default", seed=0, **kw: theorem_43_table(),
}


def run_experiment(name: str, scale: str = "default", seed: int = 0, **params):
    """Run a registered experiment by name (``ConfigError`` lists the names if unknown)."""
    one_of("experiment", name, tuple(EXPERIMENTS))
    return EXPERIMENTS[name](scale=scale, seed=seed, **params)
