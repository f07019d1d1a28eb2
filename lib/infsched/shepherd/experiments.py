"""One function per figure/table of Shepherd (NSDI'23), each returning a DataFrame, with a
``claims_*`` function beside it giving the numbers set beside the paper's.

Every workload is the seeded MAF-synth stand-in for the Azure Functions trace
(:mod:`infsched.shepherd.traces`); every serving result is a simulation of "emulated workers"
whose batches take Table 4's ``α b + β`` ms, which is how the paper produced its large-scale
results too. Simulated points go through :func:`infsched.sweep.run_sweep`: cached on disk per
point and keyed by a hash of the code they run, so an interrupted run resumes.

The batch latencies can instead come from the reader's hardware: :func:`use_profile` with the
path of a raw profile CSV (``infsched profile``) fits ``α, β`` per model and every experiment that
runs Table 4's models uses them. The fitted profile is a plain value, :class:`ProfileSource`, that
each simulated point carries as its ``profile`` parameter: worker processes rebuild the same
models from it without reading the file, and its repr (the file's content hash and the fits) is
part of the point's cache key.

Re-exported here, from the modules they live in: the scales (:mod:`~infsched.shepherd.scales`),
the profile (:mod:`~infsched.shepherd.profile`) and the three systems at one load point, the
sweep point of Figs. 7-9 (:mod:`~infsched.shepherd.systems`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from infsched.errors import check_keywords, one_of, require
from infsched.shepherd import herd, sim, theory, traces
from infsched.shepherd.model import B_MAX, DEFAULT_SLO_MS, TABLE4, ModelSet, Requests
from infsched.shepherd.profile import (
    PUBLISHED,
    ProfileSource,
    _profile,
    active_profile,
    load_profile,
    profile_models,
    profile_table,
    use_profile,
)
from infsched.shepherd.scales import SCALE_NAMES, SCALES, Scale, get_scale, stand_in
from infsched.shepherd.systems import (
    SYSTEMS,
    _sim_version,
    _systems_sweep,
    check_slo_ms,
    check_trace_memory,
    knapsack_bound,
    run_system,
    shepherd_group,
)
from infsched.sweep import default_processes, run_sweep

__all__ = ["PUBLISHED", "PROFILE_DEPENDENT", "ProfileSource", "load_profile", "use_profile",
           "active_profile", "profile_models", "profile_table", "CONTROLLER_US", "EXPERIMENTS",
           "PER_WORKER_RATE", "check_parameters", "claims_fig10", "claims_fig11a", "claims_fig11b",
           "claims_fig2", "claims_fig3", "claims_fig4", "claims_fig5", "claims_fig7",
           "claims_fig8", "claims_fig9", "claims_flex_vs_opt", "claims_table4", "claims_table5",
           "claims_theory", "fig10", "fig11a", "fig2", "fig3", "fig4", "fig5", "fig7", "fig9",
           "flex_vs_opt", "lambda_sweep", "preemption_model", "run_experiment", "table4", "table5",
           "theory_curve", "throughput_table", "SCALES", "SCALE_NAMES", "Scale", "get_scale",
           "stand_in", "SYSTEMS", "check_trace_memory", "knapsack_bound", "run_system",
           "shepherd_group"]


# ------------------------------------------------------------------ the latency profile

#: the chapter's items whose numbers come from the profile's latencies (the others, the toys,
#: the theory, the trace statistics and the planner's timing, do not depend on it)
PROFILE_DEPENDENT = ("table4", "fig7", "fig8", "fig9", "fig10", "fig11a", "fig11b")


def _finite(x, reason: str):
    """``x`` as a float, or :class:`~infsched.report.NotReproducible` (``reason``) where it is
    not finite (a ratio to a goodput of zero: a profile under which a system serves nothing)."""
    from infsched.report import NotReproducible

    with np.errstate(divide="ignore", invalid="ignore"):
        v = float(x)
    return v if math.isfinite(v) else NotReproducible(reason)


def _ratio(num, den, reason: str):
    """``num / den`` as a float, or NotReproducible (``reason``) where ``den`` is zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _finite(num / den, reason)


def check_parameters(workers: int, slo_ms: float, model_set_name: str = "cv16",
                     lam: float = 3.03, *, profile=None) -> None:
    """Fail early, naming the parameter, on a bad chapter parameter (the SLO against the
    models of ``profile``, None: the active one)."""
    require(isinstance(workers, (int, np.integer)) and not isinstance(workers, (bool, np.bool_))
            and workers >= 1, "workers", workers, "must be an integer >= 1 (GPUs)")
    profile_models(model_set_name, profile).check_slo(slo_ms)
    require(isinstance(lam, (int, float, np.integer, np.floating)) and not isinstance(lam, (bool, np.bool_))
            and np.isfinite(lam) and lam > 1, "lam", lam, "must be a finite number > 1 (FLEX "
            "preempts when the new batch is at least λ times the running one)")


# ------------------------------------------------------------------ Table 4 and the theory

def table4() -> pd.DataFrame:
    """Table 4 as data, with batch-1 and batch-128 latency and, at the default 250 ms SLO, the
    largest feasible batch and the throughput at it (the spec's derived numbers)."""
    rows = []
    for name, (short, a, b, e) in TABLE4.items():
        bmax = int(min(B_MAX, np.floor((DEFAULT_SLO_MS - b) / a)))
        rows.append({"model": name, "short": short, "alpha (ms)": a, "beta (ms)": b,
                     "exit points": e, "l(1) (ms)": a + b, "l(128) (ms)": 128 * a + b,
                     "b_max at 250 ms": bmax,
                     "throughput at b_max (req/s)": 1000 * bmax / (a * bmax + b)})
    return pd.DataFrame(rows)


def claims_table4(profile=None) -> dict:
    """Table 4's latencies of ResNet18 and ResNeSt269; under a measured ``profile`` (None: the
    active one) the fitted ones (``ℓ(128)`` extrapolated past the largest batch profiled)."""
    p = _profile(profile)
    if p.published:
        t = table4().set_index("short")
        return {"rn18_b1_ms": float(t.loc["RN18", "l(1) (ms)"]),
                "rn18_b128_ms": float(t.loc["RN18", "l(128) (ms)"]),
                "rs269_b1_ms": float(t.loc["RS269", "l(1) (ms)"])}
    from infsched.report import NotReproducible

    ms = profile_models("all17", p)
    out = {}
    for q, short, b in (("rn18_b1_ms", "RN18", 1), ("rn18_b128_ms", "RN18", 128),
                        ("rs269_b1_ms", "RS269", 1)):
        out[q] = (float(ms.latency(ms.names.index(short), b)) if short in ms.names
                  else NotReproducible(f"{short} is not in the measured profile"))
    return out


def theory_curve(lams=None) -> pd.DataFrame:
    """The competitive ratios against λ: one GPU one model (Eqs. 25–26) and many GPUs and
    models with K = 1 (Eq. 47), closed form and the raw max-min program."""
    lams = np.linspace(1.3, 8.0, 135) if lams is None else np.asarray(lams, float)
    return pd.DataFrame({"lambda": lams, "sgsm": [theory.c_sgsm(x) for x in lams],
                         "mgmm": [theory.c_mgmm(x) for x in lams]})


def claims_theory() -> dict:
    ls, cs = theory.best_lambda("sgsm", method="numeric")
    lm, cm = theory.best_lambda("mgmm", method="numeric")
    return {"c_sgsm": cs, "lambda_sgsm": ls, "c_mgmm": cm, "lambda_mgmm": lm}


# ------------------------------------------------------------------ Figs. 2 and 5

def fig2(scale: str = "default", seed: int = 0) -> pd.DataFrame:
    """Fig. 2: mean per-stream CV of window counts against the window, for 1k synthetic Poisson
    streams (rates ~ Exp, mean 10/min) and MAF-synth; sub-minute windows from the within-minute
    arrival placement."""
    sc = get_scale(scale)
    rows = []
    for name, counts in (
            ("synthetic", traces.synthetic_poisson_counts(sc.cv_streams, sc.cv_minutes, seed=seed)),
            ("MAF-synth", traces.maf_counts(None, sc.cv_streams, sc.cv_minutes, seed=seed))):
        windows = [w for w in traces.FIG2_WINDOWS_MIN if sc.cv_minutes // w >= 2]
        cv = traces.cv_by_window(counts, windows)
        cv["workload"] = name
        rows.append(cv)
        if name == "MAF-synth":
            # sparse streams (a few arrivals a week) would dominate a sub-minute mean CV and hide
            # the within-minute burstiness, so these points keep streams of >= 1 req/s
            for variant in ("stable", "bursty"):
                sub = traces.subminute_cv(counts, variant=variant, min_mean_per_min=60.0,
                                          seed=seed)
                sub["workload"] = f"MAF-synth-{variant}"
                rows.append(sub)
    return pd.concat(rows, ignore_index=True)


def fig5(scale: str = "default", seed: int = 0) -> pd.DataFrame:
    """Fig. 5: mean CV of the aggregate of random groups of g streams, for g = 1, 10, 100, 1000,
    against the window (MAF-synth, ``group_streams`` streams so g = 1000 has several groups)."""
    sc = get_scale(scale)
    counts = traces.maf_counts(None, sc.group_streams, min(sc.cv_minutes, 1440), seed=seed)
    windows = [w for w in (1, 5, 10, 30, 60) if counts.shape[1] // w >= 2]
    return traces.group_cv(counts, (1, 10, 100, 1000), windows, seed=seed)


def _decreasing(values, tol: float = 0.0) -> bool:
    v = np.asarray(values, dtype=float)
    return bool(np.all(v[1:] <= v[:-1] * (1 + tol)))


def claims_fig2(f2: pd.DataFrame) -> dict:
    ok = True
    for _, g in f2[f2["window_min"].notna()].groupby("workload"):
        ok &= _decreasing(g.sort_values("window_min")["mean_cv"])
    for _, g in f2[f2["window_s"].notna()].groupby("workload"):
        ok &= _decreasing(g.sort_values("window_s")["mean_cv"])
    return {"cv_grows_as_window_shrinks": bool(ok)}


def claims_fig5(f5: pd.DataFrame) -> dict:
    ok = all(_decreasing(g.sort_values("group_size")["mean_cv"])
             for _, g in f5.groupby("window_min"))
    return {"group_cv_falls_with_size": bool(ok)}


# ------------------------------------------------------------------ Table 5: planning latency

def table5(scale: str = "default", seed: int = 0, time_limit: float | None = None,
           node_limit: int | None = 20_000) -> pd.DataFrame:
    """Table 5: HERD-L over K model-streams aggregated from 1000·K streams, K GPUs in 10 groups
    (the paper's sizes), HiGHS with a 1 % gap and a node limit (not a wall-clock one: the plan
    and its status do not depend on the machine's load), the MILP always run; LPT beside it. Solver seconds only: the paper's network and loading columns need its cluster."""
    sc = get_scale(scale)
    rows = [herd.table5_point(K, seed=seed, time_limit=time_limit, node_limit=node_limit)
            for K in sc.table5_K]
    return pd.DataFrame(rows)


def claims_table5(t5: pd.DataFrame) -> dict:
    from infsched.report import NotReproducible

    # A solve time is a wall-clock measurement of an unnamed solver on an unnamed machine: it
    # is shown, not judged (a verdict must not change with how busy the build machine is).
    by_k = t5.set_index("models")["solver_s"]
    why = "wall-clock time of the paper's unnamed solver on an unnamed machine; ours: {:.2f} s"
    return {"solver_s_200": NotReproducible(why.format(float(by_k.loc[200]))),
            "solver_s_1000": NotReproducible(why.format(float(by_k.loc[1000]))),
            "planning_fits_period": bool((t5["solver_s"] < 60).all())}


# ------------------------------------------------------------------ Figs. 3 and 4: the toys

def fig3() -> pd.DataFrame:
    """Fig. 3: one stream whose requests take 10 ms with a 10 ms SLO (no batching possible):
    3 requests at 0, 1 at 40, 6 at 80 ms, on one GPU and on six."""
    models = ModelSet(("toy",), np.array([10.0]), np.array([0.0]), np.array([1]))
    req = Requests.with_slo([0, 0, 0, 40, 80, 80, 80, 80, 80, 80], np.zeros(10, int), 10.0)
    rows = []
    for g in (1, 6):
        r = sim.simulate(req, models, g, "flex")
        rows.append({"gpus": g, "met": int(r.ok.sum()), "missed": int(req.n - r.ok.sum()),
                     "utilization_pct": 100 * float(r.busy_ms.sum()) / (g * 100.0)})
    return pd.DataFrame(rows)


def claims_fig3(f3: pd.DataFrame) -> dict:
    r = f3.set_index("gpus")
    return {"misses_1gpu": float(r.loc[1, "missed"]), "util_6gpu_pct": float(r.loc[6, "utilization_pct"]),
            "all_met_6gpu": bool(r.loc[6, "missed"] == 0)}


def fig4(omegas=(1, 10, 100, 1000)) -> pd.DataFrame:
    """Fig. 4 as Theorem A.1's instance: one request at 0 with deadline 1 ms, then ω requests at
    ε with deadline 1 + ε, a model taking 1 ms at any batch size; requests served by the
    offline optimum (ω), FLEX, SHEPHERD-NP and Clockwork."""
    eps = 0.01
    rows = []
    for w in omegas:
        models = ModelSet(("unit",), np.array([0.0]), np.array([1.0]), np.array([1]))
        req = Requests(np.r_[0.0, np.full(w, eps)], np.zeros(w + 1, int),
                       np.r_[1.0, np.full(w, 1.0 + eps)])
        row = {"omega": w, "optimum": w}
        for p in ("flex", "flex-np", "clockwork"):
            row[p] = int(sim.simulate(req, models, 1, p, b_max=max(w, 1)).ok.sum())
        rows.append(row)
    return pd.DataFrame(rows)


def claims_fig4(f4: pd.DataFrame) -> dict:
    return {"np_unbounded": bool((f4["flex-np"] == 1).all() and (f4["clockwork"] == 1).all()),
            "flex_optimal": bool((f4["flex"] == f4["optimum"]).all())}


# ------------------------------------------------------------------ Fig. 11a: FLEX's benefit

_FIG11A_COLUMNS = ["slo_ms", "system", "goodput", "preemptions", "wasted_pct"]


def _fig11a_missing(profile=None) -> list[str]:
    """Fig. 11a's models (ResNet18, ResNeSt269) that ``profile`` did not measure."""
    names = profile_models("cv16", profile).names
    return [n for n in ("RN18", "RS269") if n not in names]


def _fig11a_workload(seconds: float, slo_ms: float,
                     profile=None) -> tuple[Requests, ModelSet, float]:
    """Fig. 11a's two streams on one GPU: ResNet18 in bursts of 1024 every 120 ms from 5 ms,
    ResNeSt269 one request every ms; the horizon in ms."""
    ms = profile_models("cv16", profile)
    names = list(ms.names)
    models = ms.subset([names.index("RN18"), names.index("RS269")])
    horizon = seconds * 1000.0
    a = np.repeat(np.arange(5.0, horizon, 120.0), 1024)
    b = np.arange(0.0, horizon, 1.0)
    mdl = np.r_[np.zeros(a.size, int), np.ones(b.size, int)]
    return Requests.with_slo(np.r_[a, b], mdl, slo_ms), models, horizon


def fig11a(scale: str = "default", slos=(250.0, 90.0), *, profile=None) -> pd.DataFrame:
    """Fig. 11a: one GPU, stream A (ResNet18) in bursts of 1024 every 120 ms from 5 ms, stream
    B (ResNeSt269) one request every ms; goodput of Clockwork, SHEPHERD-NP and SHEPHERD. Empty
    when ``profile`` (None: the active one) lacks either model."""
    sc = get_scale(scale)
    missing = _fig11a_missing(profile)
    if missing:
        out = pd.DataFrame(columns=_FIG11A_COLUMNS)
        out.attrs["missing"] = missing
        return out
    rows = []
    for slo in slos:
        req, ms, horizon = _fig11a_workload(sc.fig11a_s, slo, profile)
        for p, name in (("clockwork", "Clockwork"), ("flex-np", "SHEPHERD-NP"), ("flex", "SHEPHERD")):
            r = sim.simulate(req, ms, 1, p)
            rows.append({"slo_ms": slo, "system": name, "goodput": r.goodput(0.0, horizon),
                         "preemptions": r.preemptions,
                         "wasted_pct": 100 * float(r.wasted_ms.sum()) / horizon})
    return pd.DataFrame(rows)


def lambda_sweep(scale: str = "default", lams=(1.5, 2.0, 2.38, 3.03, 5.0, 10.0),
                 slo_ms: float = 90.0, *, profile=None) -> pd.DataFrame:
    """FLEX's preemption threshold λ on Fig. 11a's workload (an ablation the paper does not
    show): goodput, preemptions and the share of GPU time wasted on preempted batches. Empty
    when ``profile`` (None: the active one) lacks Fig. 11a's models."""
    sc = get_scale(scale)
    if _fig11a_missing(profile):
        return pd.DataFrame(columns=["lambda", "goodput", "preemptions", "wasted_pct"])
    req, ms, horizon = _fig11a_workload(sc.fig11a_s, slo_ms, profile)
    rows = []
    for lam in lams:
        r = sim.simulate(req, ms, 1, "flex", lam=lam)
        rows.append({"lambda": lam, "goodput": r.goodput(0.0, horizon),
                     "preemptions": r.preemptions,
                     "wasted_pct": 100 * float(r.wasted_ms.sum()) / horizon})
    return pd.DataFrame(rows)


def claims_fig11a(f11: pd.DataFrame) -> dict:
    quantities = ("sh_over_cw_250", "np_over_cw_250", "sh_over_np_90", "sh_over_cw_90")
    if f11.empty:
        from infsched.report import NotReproducible

        lacks = " and ".join(f11.attrs.get("missing", ["ResNet18 or ResNeSt269"]))
        why = NotReproducible(f"the profile lacks {lacks}, of Fig. 11a's two models")
        return {q: why for q in quantities}
    g = f11.pivot(index="slo_ms", columns="system", values="goodput")
    zero = "the baseline serves nothing at this SLO under this profile"
    return {"sh_over_cw_250": _ratio(g.loc[250, "SHEPHERD"], g.loc[250, "Clockwork"], zero),
            "np_over_cw_250": _ratio(g.loc[250, "SHEPHERD-NP"], g.loc[250, "Clockwork"], zero),
            "sh_over_np_90": _ratio(g.loc[90, "SHEPHERD"], g.loc[90, "SHEPHERD-NP"], zero),
            "sh_over_cw_90": _ratio(g.loc[90, "SHEPHERD"], g.loc[90, "Clockwork"], zero)}


# ------------------------------------------------------------------ Figs. 7-9: load and SLO

def fig7(scale: str = "default", seed: int = 0, *, workers: int = 12, slo_ms: float = 250.0,
         lam: float = 3.03, model_set_name: str = "cv16", n_jobs: int | None = None,
         profile=None) -> pd.DataFrame:
    """Fig. 7 (and Fig. 8's latencies): goodput and utilisation of SHEPHERD, Clockwork and Nexus
    against the offered load (the paper's grid for 12 GPUs, scaled by ``workers``/12), on
    MAF-stable and MAF-bursty."""
    sc = get_scale(scale)
    return _systems_sweep(sc, [(r * workers / 12, slo_ms) for r in sc.rates], "rate", seed,
                          workers, lam, model_set_name, n_jobs, profile)


def claims_fig7(f7: pd.DataFrame) -> dict:
    top = f7["rate"].max()
    at = f7[f7["rate"] == top].set_index(["variant", "system"])["goodput"]
    util = f7.set_index(["variant", "system", "rate"])["utilization"]
    sh = f7[f7["system"] == "SHEPHERD"]
    cw = f7[f7["system"] == "Clockwork"].set_index(["variant", "rate"])["goodput"]
    rates = sorted(f7["rate"].unique())
    r12 = min(rates, key=lambda r: abs(r - 12e3 * top / 144e3))
    high_util = bool((sh[sh["rate"] >= r12]["utilization"] >= 0.90).all())
    low = f7["rate"].min()
    # Sec. 7.1: at ~3k req/s "both SHEPHERD and Clockwork achieve high system utilization (over
    # 95%)"; Nexus's "remains under 89% (55%) across different arrival rates" (stable, bursty)
    util_low = bool(all(util[(v, s, low)] > 0.95 for v in ("stable", "bursty")
                        for s in ("SHEPHERD", "Clockwork")))
    nexus = f7[f7["system"] == "Nexus"]
    nexus_under = bool(all((nexus[nexus["variant"] == v]["utilization"] < cap).all()
                           for v, cap in (("stable", 0.89), ("bursty", 0.55))))
    nexus_below = all(util[(v, "Nexus", top)] < util[(v, "SHEPHERD", top)]
                      for v in ("stable", "bursty"))
    zero = "the baseline serves nothing at the highest load under this profile"
    return {"sh_over_cw_stable": _ratio(at[("stable", "SHEPHERD")], at[("stable", "Clockwork")], zero),
            "sh_over_cw_bursty": _ratio(at[("bursty", "SHEPHERD")], at[("bursty", "Clockwork")], zero),
            "sh_over_nexus_stable": _ratio(at[("stable", "SHEPHERD")], at[("stable", "Nexus")], zero),
            "sh_over_nexus_bursty": _ratio(at[("bursty", "SHEPHERD")], at[("bursty", "Nexus")], zero),
            "high_util_low_load": util_low,
            "sh_util_high_load": high_util,
            "cw_saturates": bool(all(cw[(v, top)] <= 1.3 * cw[(v, r12)] for v in ("stable", "bursty"))),
            "nexus_util_under_89_55": nexus_under,
            "nexus_util_below_sh": bool(nexus_below),
            "sh_util_over_nexus_bursty": _ratio(util[("bursty", "SHEPHERD", top)],
                                                util[("bursty", "Nexus", top)],
                                                "Nexus's GPUs are idle at the highest load under "
                                                "this profile"),
            "below_knapsack_bound": bool((sh["goodput"] <= sh["bound"] * 1.0001).all())}


def claims_fig8(f7: pd.DataFrame) -> dict:
    top = f7[(f7["rate"] == f7["rate"].max()) & (f7["variant"] == "stable")].set_index("system")
    return {"cw_latency_nearer_slo": bool(top.loc["Clockwork", "near_slo"]
                                          >= top.loc["SHEPHERD", "near_slo"])}


def fig9(scale: str = "default", seed: int = 0, *, workers: int = 12, rate: float = 3e3,
         lam: float = 3.03, model_set_name: str = "cv16", n_jobs: int | None = None,
         profile=None) -> pd.DataFrame:
    """Fig. 9: goodput against the SLO at ~3k req/s (12 GPUs), both workloads."""
    sc = get_scale(scale)
    return _systems_sweep(sc, [(rate * workers / 12, slo) for slo in sc.slos], "slo_ms", seed,
                          workers, lam, model_set_name, n_jobs, profile)


#: the tightest SLO of Fig. 9 the paper plots (ms): "We omit SLOs <= 10ms"; its sweep runs 50-500
PAPER_FIG9_MIN_SLO = 50.0


def claims_fig9(f9: pd.DataFrame) -> dict:
    """Fig. 9's numbers over the paper's SLO range (50-500 ms, it omits 10 ms and below): the
    largest multiple over Nexus at the tightest SLO and over Clockwork at any SLO, and whether
    every system's goodput falls as the SLO tightens; plus the multiple over Nexus at the
    sweep's own tightest SLO (10 ms at the ``paper`` scale), an extra row outside the paper's
    range."""
    g_all = f9.pivot_table(index=["variant", "slo_ms"], columns="system", values="goodput")
    g = g_all[g_all.index.get_level_values("slo_ms") >= PAPER_FIG9_MIN_SLO]
    require(len(g) > 0, "f9", sorted(set(f9["slo_ms"])),
            f"must hold an SLO of at least {PAPER_FIG9_MIN_SLO:g} ms (the paper's range)")
    tight = g.xs(g.index.get_level_values("slo_ms").min(), level="slo_ms")
    tightest = g_all.xs(g_all.index.get_level_values("slo_ms").min(), level="slo_ms")
    in_range = f9[f9["slo_ms"] >= PAPER_FIG9_MIN_SLO]
    falls = all(_decreasing(in_range[(in_range.system == s) & (in_range.variant == v)].sort_values(
        "slo_ms", ascending=False)["goodput"], tol=0.03)
        for s in SYSTEMS for v in ("stable", "bursty"))
    unbounded = "Nexus serves nothing at the tightest SLO under this profile: the ratio is unbounded"
    return {"sh_over_nexus_max": _finite((tight["SHEPHERD"] / tight["Nexus"]).max(), unbounded),
            "sh_over_nexus_tightest_swept": _finite(
                (tightest["SHEPHERD"] / tightest["Nexus"]).max(), unbounded),
            "sh_over_cw_max": _finite((g["SHEPHERD"] / g["Clockwork"]).max(),
                                      "Clockwork serves nothing at some SLO under this profile"),
            "all_fall_as_slo_tightens": bool(falls)}


# ------------------------------------------------------------------ Figs. 10 and 11b: scale

#: per-request cost of a scheduler instance (µs): 50k req/s, the saturation the paper reports
#: for Clockwork's controller. Calibrated on that number, not measured.
CONTROLLER_US = 20.0
#: offered load per worker in Figs. 10-11b (req/s): 2.5 × 50k / 400, inferred from the paper
PER_WORKER_RATE = 312.0


def fig10(scale: str = "default", seed: int = 0, *, slo_ms: float = 250.0, lam: float = 3.03,
          n_jobs: int | None = None, profile=None) -> pd.DataFrame:
    """Figs. 10 and 11b: goodput against the cluster size at a constant load per worker, one
    model instance per worker, every scheduler instance with the same per-request cost
    (:data:`CONTROLLER_US`): SHEPHERD (groups of 12, one FLEX each), Clockwork (one global
    scheduler), Nexus (no central scheduler), and SHEPHERD with groups of 1 and of all N."""
    sc = get_scale(scale)
    check_slo_ms(slo_ms)
    prof = _profile(profile)
    grid, labels = [], []
    for n in sc.workers:
        for v in ("stable", "bursty"):
            for system, g_bar, label in (("SHEPHERD", 12, "SHEPHERD"), ("Clockwork", 12, "Clockwork"),
                                         ("Nexus", 12, "Nexus"), ("SHEPHERD", 1, "SHEPHERD G=1"),
                                         ("SHEPHERD", n, "SHEPHERD G=inf")):
                if label == "SHEPHERD G=inf" and n <= 12:
                    continue  # one group of n <= 12 GPUs is the G = 12 case
                labels.append(label)
                grid.append(dict(system=system, variant=v, rate=PER_WORKER_RATE * n, workers=n,
                                 slo_ms=slo_ms, seed=seed, warmup_s=sc.scal_warmup_s,
                                 measure_s=sc.scal_measure_s, streams=max(sc.streams, 10 * n),
                                 lam=lam, controller_us=0.0 if system == "Nexus" else CONTROLLER_US,
                                 g_bar=g_bar, instances=True, profile=prof))
    version = _sim_version()
    jobs = default_processes(n_jobs)
    others = [i for i, p in enumerate(grid) if p["system"] != "SHEPHERD"]
    rows = run_sweep(run_system, [grid[i] for i in others], n_jobs=jobs, version=version)
    out = pd.DataFrame(index=range(len(grid)), columns=["goodput", "utilization"], dtype=float)
    out.loc[others, ["goodput", "utilization"]] = rows[["goodput", "utilization"]].to_numpy()
    shep = [i for i, p in enumerate(grid) if p["system"] == "SHEPHERD"]
    gpoints, owner = [], []
    for i in shep:
        p = {k: v for k, v in grid[i].items() if k not in ("system", "workers")}
        n_groups = -(-grid[i]["workers"] // grid[i]["g_bar"])
        for j in range(n_groups):
            gpoints.append(dict(p, workers=grid[i]["workers"], group=j))
            owner.append(i)
    g = run_sweep(shepherd_group, gpoints, n_jobs=jobs, version=version)
    g["owner"] = owner
    agg = g.groupby("owner")[["goodput", "busy"]].sum()
    for i in shep:
        out.loc[i, "goodput"] = agg.loc[i, "goodput"]
        out.loc[i, "utilization"] = agg.loc[i, "busy"] / grid[i]["workers"]
    for key in ("system", "variant", "workers", "g_bar"):
        out[key] = [p[key] for p in grid]
    out["label"] = labels
    return out


def claims_fig10(f10: pd.DataFrame) -> dict:
    g = f10.pivot_table(index=["variant", "workers"], columns="label", values="goodput")
    big = g.index.get_level_values("workers").max()
    top = g.xs(big, level="workers")
    sat = f10[(f10["label"] == "Clockwork") & (f10["workers"] >= 200)]["goodput"]
    sh = f10[f10["label"] == "SHEPHERD"]
    per = (sh["goodput"] / sh["workers"]).groupby(sh["variant"])
    from infsched.report import NotReproducible
    return {"cw_saturation_rps": float(sat.mean()) if len(sat) else NotReproducible(
                "this scale stops below N = 200"),
            "sh_over_cw_400": _finite((top["SHEPHERD"] / top["Clockwork"]).mean(),
                                      "Clockwork serves nothing under this profile"),
            "sh_over_nexus_400": _finite((top["SHEPHERD"] / top["Nexus"]).mean(),
                                         "Nexus serves nothing under this profile"),
            "sh_linear": bool((per.max() <= 1.1 * per.min()).all())}


def claims_fig11b(f10: pd.DataFrame) -> dict:
    g = f10.pivot_table(index=["variant", "workers"], columns="label", values="goodput")
    top = g.xs(g.index.get_level_values("workers").max(), level="workers")
    return {"g12_over_ginf": _finite((top["SHEPHERD"] / top["SHEPHERD G=inf"]).mean(),
                                     "one global group serves nothing under this profile"),
            "g12_over_g1": _finite((top["SHEPHERD"] / top["SHEPHERD G=1"]).mean(),
                                   "one-GPU groups serve nothing under this profile")}


# ------------------------------------------------------------------ Fig. 12: overheads

def preemption_model(eps_exec: float = 0.02) -> pd.DataFrame:
    """The overhead model the simulator can apply in place of Fig. 12's measurements (which need
    a GPU): a preemption waits for the next of ``E`` evenly spaced exit points, on average
    ``ℓ/(2E)``, and exit points slow execution by ``eps_exec`` (our assumptions)."""
    rows = []
    for short, _a, _b, e in TABLE4.values():
        rows.append({"model": short, "exit points": e, "mean preemption delay (% of batch)":
                     100 / (2 * e), "extra execution (%)": 100 * eps_exec})
    return pd.DataFrame(rows)


# an unknown keyword is a ConfigError naming it and the keywords taken (not Python's TypeError)
fig2, fig5, fig7, fig9, fig10, table5 = (check_keywords(f, f"experiment {f.__name__} of shepherd")
                                         for f in (fig2, fig5, fig7, fig9, fig10, table5))

#: Every figure/table by name: ``EXPERIMENTS["fig7"](scale, seed)`` returns its DataFrame.
EXPERIMENTS: dict[str, Callable] = {
    "table4": lambda scale="default", seed=0: table4(),
    "theory": lambda scale="default", seed=0: theory_curve(),
    "fig2": fig2,
    "fig3": lambda scale="default", seed=0: fig3(),
    "fig4": lambda scale="default", seed=0: fig4(),
    "fig5": fig5,
    "fig7": fig7,
    "fig9": fig9,
    "fig10": fig10,
    "fig11a": lambda scale="default", seed=0: fig11a(scale),
    "table5": table5,
    "fig12": lambda scale="default", seed=0: preemption_model(),
    "lambda_sweep": lambda scale="default", seed=0: lambda_sweep(scale),
    "flex_vs_opt": lambda scale="default", seed=0: flex_vs_opt(10 if scale == "smoke" else 30, seed),
}


def run_experiment(name: str, scale: str = "default", seed: int = 0, **params):
    """Run one experiment of :data:`EXPERIMENTS` by name."""
    one_of("experiment", name, tuple(EXPERIMENTS))
    return EXPERIMENTS[name](scale=scale, seed=seed, **params)


# ------------------------------------------------------------------ FLEX against the optimum

def _tiny_instance(rng: np.random.Generator) -> tuple[Requests, ModelSet, int]:
    """A random instance the offline ZILP solves in seconds: two models with integer α, β,
    up to 20 requests arriving in bursts within 40 ms, integer SLOs, one or two GPUs."""
    alpha = rng.integers(1, 4, 2).astype(float)
    beta = rng.integers(1, 8, 2).astype(float)
    models = ModelSet(("m0", "m1"), alpha, beta, np.array([1, 1]))
    n = int(rng.integers(8, 21))
    arrival = np.sort(rng.integers(0, 40, n)).astype(float)
    model = rng.integers(0, 2, n)
    slo = rng.integers(8, 40, 2).astype(float)[model]
    return Requests(arrival, model, arrival + slo), models, int(rng.integers(1, 3))


def flex_vs_opt(instances: int = 30, seed: int = 0, b_max: int = 8) -> pd.DataFrame:
    """Requests served by the offline optimum (the ZILP of Eq. 3) and by FLEX, SHEPHERD-NP and
    Clockwork on random tiny instances, with the instance's affinity K (Eq. 4) and Thm 5.2's
    floor OPT / (12.62 K)."""
    from infsched.shepherd import zilp
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(instances):
        req, models, g = _tiny_instance(rng)
        opt = zilp.zilp_optimum(req, models, n_gpus=g, b_max=b_max).value
        row = {"instance": i, "requests": req.n, "gpus": g, "optimum": opt,
               "K": theory.affinity_K(models)}
        for p in ("flex", "flex-np", "clockwork"):
            row[p] = int(sim.simulate(req, models, g, p, b_max=b_max).ok.sum())
        rows.append(row)
    df = pd.DataFrame(rows)
    df["floor"] = df["optimum"] / (theory.PAPER_RATIOS["mgmm"][1] * df["K"])
    return df


def claims_flex_vs_opt(d: pd.DataFrame) -> dict:
    return {"flex_within_guarantee": bool((d["flex"] >= d["floor"]).all()
                                          and (d["flex"] <= d["optimum"]).all())}


# ------------------------------------------------------------------ T_k: one GPU's goodput

def throughput_table(slo_ms: float = DEFAULT_SLO_MS, model_set_name: str = "cv16",
                     seconds: float = 2.0, load: float = 2.0, seed: int = 0, *,
                     profile=None) -> pd.DataFrame:
    """Per model, one GPU's goodput ``T_k`` three ways: HERD's analytic value (Nexus's rule, two
    batch latencies within the SLO, :func:`infsched.shepherd.herd.stream_throughput`), FLEX
    measured on one GPU under a saturating Poisson stream (``load`` times the ceiling), and the
    ceiling (the largest batch within the SLO, back to back). ``profile``: None for the active
    one; a model it leaves unservable gets zeros."""
    ms = profile_models(model_set_name, profile)
    analytic = herd.stream_throughput(ms, slo_ms)
    b = ms.max_batch(slo_ms)
    ceiling = np.where(b > 0, 1000.0 * b / ms.latency(np.arange(ms.n), np.maximum(b, 1)), 0)
    rng = np.random.default_rng(seed)
    warm = 500.0
    rows = []
    for k in range(ms.n):
        if ceiling[k] <= 0:
            rows.append({"model": ms.names[k], "analytic": 0.0, "flex": 0.0, "ceiling": 0.0})
            continue
        rate = load * ceiling[k]
        n = rng.poisson(rate * (seconds + warm / 1000 + slo_ms / 1000))
        arr = np.sort(rng.uniform(0, 1000 * seconds + warm + slo_ms, n))
        single = ms.subset([k])
        r = sim.simulate(Requests.with_slo(arr, np.zeros(n, int), slo_ms), single, 1, "flex")
        rows.append({"model": ms.names[k], "analytic": float(analytic[k]),
                     "flex": r.goodput(warm, warm + 1000 * seconds), "ceiling": float(ceiling[k])})
    df = pd.DataFrame(rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        df["flex / analytic"] = df["flex"] / df["analytic"]
    return df
