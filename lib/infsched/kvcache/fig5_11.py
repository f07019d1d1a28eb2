"""Figs. 5–11 of the KV-cache paper: the substitute dataset (Fig. 5), MC-SF's memory over time
(Figs. 6, 9), and the α/β sweeps of the protection and clearing heuristics (Figs. 7, 8, 10, 11,
and Sec. 5.2's smallest terminating α).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.errors import one_of
from infsched.kvcache import workload
from infsched.kvcache.fig3_tab1 import _seeds, run_algorithms
from infsched.kvcache.scales import DEMANDS, M_LLAMA, PAPER_RANGES, TRACE_N, get_scale
from infsched.kvcache.sim import SimConfig, simulate
from infsched.kvcache.timing import BatchTimeModel
from infsched.report import Measured
from infsched.sweep import point_seed

__all__ = ["fig5", "claims_fig5", "memory_trace", "claims_memory", "alpha_beta_sweep",
           "sweep_summary", "claims_alpha", "claims_beta", "smallest_terminating_alpha"]


def fig5() -> pd.DataFrame:
    """Fig. 5: the substitute sample's prompt and output lengths (words)."""
    prompt, output = workload.substitute_dataset()
    return pd.DataFrame({"prompt": prompt, "output": output})


def claims_fig5(f5: pd.DataFrame) -> dict:
    """The four statistics the paper gives of its sample, computed on ours; a mean carries the
    95 % half-width of a sample mean (our sample is one random draw of 10,000 from the fit)."""
    def mean(col: str) -> Measured:
        x = f5[col].to_numpy(dtype=float)
        return Measured(float(x.mean()), 1.96 * float(x.std(ddof=1)) / np.sqrt(len(x)))

    return {"prompt_mean": mean("prompt"), "prompt_median": float(f5["prompt"].median()),
            "output_mean": mean("output"), "output_median": float(f5["output"].median())}


def memory_trace(demand: str, n: int = TRACE_N, seed: int = 0, *, kappa: float) -> pd.DataFrame:
    """Figs. 6 and 9: MC-SF's KV memory after each batch, against the clock, with the number of
    requests left waiting."""
    rate = DEMANDS[one_of("demand", demand, tuple(DEMANDS))]
    a, s, o = workload.poisson_requests(n, rate, np.random.default_rng(point_seed(seed, n, rate)))
    res = simulate(a, s, o, M_LLAMA, SimConfig("mc-sf"), BatchTimeModel(kappa=kappa))
    return pd.DataFrame({"time_s": res.clock, "memory": res.memory, "queued": res.queued})


def claims_memory(trace: pd.DataFrame, M: int = M_LLAMA) -> dict:
    """Figs. 6/9: memory never above ``M``, and the memory in use (fraction of ``M``, averaged
    over the rounds in which some request was left waiting, i.e. while memory is what limits)."""
    busy = trace[trace["queued"] > 0]
    return {"never_above_M": bool(trace["memory"].max() <= M),
            "use_while_queued": float(busy["memory"].mean() / M) if len(busy) else float("nan")}


def alpha_beta_sweep(scale: str = "default", seed: int = 0, *, kappa: float, n: int | None = None,
                     n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Figs. 7/10 (α at β = 0.1 and 0.2) and 8/11 (β at α = 0.1 and 0.2), both demands, with
    ``n`` requests per run (the scale's, 1000 at `default`, when omitted)."""
    sc = get_scale(scale)
    n = sc.sweep_n if n is None else n
    configs = ([SimConfig("alpha-beta", alpha=a, beta=b) for b in (0.1, 0.2) for a in sc.alphas]
               + [SimConfig("alpha-beta", alpha=a, beta=b) for a in (0.1, 0.2) for b in sc.betas])
    configs = list(dict.fromkeys(configs))
    df = run_algorithms(configs, [n], DEMANDS.values(), _seeds(seed, sc.sweep_runs),
                        kappa, n_jobs=n_jobs, cache=cache)
    df["demand"] = df["rate"].map({v: k for k, v in DEMANDS.items()})
    return df


def sweep_summary(ab: pd.DataFrame) -> pd.DataFrame:
    """Mean latency per (demand, α, β) over runs; ``stopped`` counts runs that hit the eviction
    limit (an endless clearing cycle), whose mean is then NaN: a configuration is only as good as
    its worst run."""
    g = ab.groupby(["demand", "alpha", "beta"], sort=False)
    out = g.agg(mean_latency=("mean_latency", "mean"), evictions=("evictions", "mean"),
                stalls=("stalls", "mean"), runs=("seed", "size"),
                stopped=("terminated", lambda x: int((~x.astype(bool)).sum()))).reset_index()
    out.loc[out["stopped"] > 0, "mean_latency"] = np.nan
    return out


def _latency(summary: pd.DataFrame, demand: str, **fixed) -> pd.Series:
    d = summary[summary["demand"] == demand]
    for k, v in fixed.items():
        d = d[np.isclose(d[k], v)]
    free = "beta" if "alpha" in fixed else "alpha"
    return d.set_index(free)["mean_latency"].fillna(np.inf).sort_index()


def claims_alpha(summary: pd.DataFrame, demand: str) -> dict:
    """Figs. 7 (high) and 10 (low), at β = 0.1 and 0.2: the best α lies in the paper's range, and
    every α < 0.1 is worse than the best α ≥ 0.1 ("α < 0.1 degrades significantly")."""
    lo, hi = PAPER_RANGES["alpha"][demand]
    out = {}
    for b in (0.1, 0.2):
        lat = _latency(summary, demand, beta=b)
        best = float(lat.idxmin())
        out[f"best_alpha_in_range_beta{b:g}"] = bool(lo - 1e-9 <= best <= hi + 1e-9)
        small, rest = lat[lat.index < 0.1 - 1e-9], lat[lat.index >= 0.1 - 1e-9]
        out[f"small_alpha_worse_beta{b:g}"] = bool(len(small) and small.min() > rest.min())
    return out


def claims_beta(summary: pd.DataFrame, demand: str, within: float = 0.05) -> dict:
    """Figs. 8 (high) and 11 (low), at α = 0.1 and 0.2: every β in the paper's range is within
    ``within`` (5 %) of the best β; the smallest and the largest β of the grid are worse than the
    best β in the range by more than 1 % (too little clearing; too much recomputation)."""
    lo, hi = PAPER_RANGES["beta"][demand]
    out = {}
    for a in (0.1, 0.2):
        lat = _latency(summary, demand, alpha=a)
        inside = lat[(lat.index >= lo - 1e-9) & (lat.index <= hi + 1e-9)]
        out[f"range_near_best_alpha{a:g}"] = bool(inside.max() <= (1 + within) * lat.min())
        out[f"low_beta_worse_alpha{a:g}"] = bool(lat.iloc[0] > 1.01 * inside.min())
        out[f"high_beta_worse_alpha{a:g}"] = bool(lat.iloc[-1] > 1.01 * inside.min())
    return out


def smallest_terminating_alpha(demand: str, n: int, seed: int = 0, *, kappa: float,
                               grid=tuple(np.round(np.arange(0.01, 0.41, 0.01), 2))) -> float:
    """Sec. 5.2's grid search: the smallest α of ``grid`` from which α-protection greedy (clear
    every running request on overflow) finishes the run at that α and every larger one. A run
    that evicts more than 50 times per request is taken as an endless cycle."""
    rate = DEMANDS[one_of("demand", demand, tuple(DEMANDS))]
    a, s, o = workload.poisson_requests(n, rate, np.random.default_rng(point_seed(seed, n, rate)))
    ok = [simulate(a, s, o, M_LLAMA, SimConfig("alpha", alpha=float(al)),
                   BatchTimeModel(kappa=kappa)).terminated for al in grid]
    smallest = float("nan")
    for al, fine in zip(reversed(grid), reversed(ok)):
        if not fine:
            break
        smallest = float(al)
    return smallest
