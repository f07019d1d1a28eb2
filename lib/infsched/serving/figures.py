"""Figures of the head-to-head chapter: metric against load, and each contender's frontier.

Every function draws on given matplotlib axes from a :func:`.experiments.with_ci` table, in the
book's theme and policy styles (:mod:`infsched.plotting`), with labelled axes and units.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .. import plotting
from .experiments import LABELS

__all__ = ["AXIS_LABELS", "STYLES", "metric_vs_load", "frontier_plot", "zoo_plot"]

#: metric column -> axis label with its unit
AXIS_LABELS = {
    "attainment": "SLO attainment (share)",
    "accuracy_served": "accuracy per on-time query (%)",
    "accuracy_per_arrival": "accuracy per arrival, late = 0 (%)",
    "goodput_qps": "goodput (on-time queries/s)",
    "mean_latency_ms": "mean latency (ms)",
    "p99_latency_ms": "p99 latency (ms)",
    "load": "load ρ (share of capacity)",
}


#: one distinct style per contender (the book's shared table gives TAD and Jellyfish the same
#: colour, and has no entry for the neutral baselines)
STYLES = {
    "most-accurate": plotting.PolicyStyle(plotting.PALETTE[7], plotting.DOTTED, "v"),
    "fastest": plotting.PolicyStyle(plotting.PALETTE[5], plotting.DOTTED, "D"),
    "slack-accurate": plotting.PolicyStyle(plotting.PALETTE[2], plotting.SOLID, "^"),
    "batch-greedy": plotting.PolicyStyle(plotting.PALETTE[0], plotting.SOLID, "s"),
    "tad": plotting.PolicyStyle(plotting.PALETTE[3], plotting.DASHED, "o"),
    "tad-batch": plotting.PolicyStyle(plotting.PALETTE[4], plotting.DASHED, "P"),
    "tad-op": plotting.PolicyStyle(plotting.PALETTE[9], plotting.DASHED, "s"),
    "r-jiq": plotting.PolicyStyle(plotting.PALETTE[6], plotting.DASHDOT, "^"),
    "jellyfish+": plotting.PolicyStyle(plotting.PALETTE[1], plotting.DASHDOT, "x"),
    "ramsis": plotting.PolicyStyle("#000000", plotting.SOLID, "*"),
    "modelswitching": plotting.PolicyStyle(plotting.PALETTE[8], plotting.DASHDOT, "v"),
    "flex": plotting.PolicyStyle("#005f5f", plotting.DASHED, "h"),     # outside the palette:
    "flex-np": plotting.PolicyStyle("#7f7f00", plotting.DOTTED, "h"),  # 13 contenders, 10 colours
}


#: the range each metric can take: a drawn interval is clipped to it (two seeds' t interval can
#: reach a negative goodput; the mean it brackets cannot)
RANGES = {
    "attainment": (0.0, 1.0), "accuracy_served": (0.0, 100.0), "accuracy_per_arrival": (0.0, 100.0),
    "goodput_qps": (0.0, np.inf), "mean_latency_ms": (0.0, np.inf), "p99_latency_ms": (0.0, np.inf),
}


def _short(v: float) -> str:
    """20, 500, 1000, 20k, 1M: tick labels that stay short over six decades."""
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    return f"{v / 1e3:g}k" if v >= 1e4 else f"{v:g}"


def _plain_log(axis) -> None:
    """Log scale labelled in plain numbers (matplotlib's default labels every minor tick as
    3×10¹, 4×10¹, ..., and they overlap): ticks at 1, 2 and 5 per decade over a narrow range,
    one per decade over a wide one. Call it after the data are drawn."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    wide = lo > 0 and np.log10(hi / lo) > 2.5
    axis.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _short(v)))
    axis.set_minor_formatter(NullFormatter())


def _style(contender: str) -> dict:
    st = STYLES.get(contender)
    return (st or plotting.policy_style(LABELS[contender])).kw


def metric_vs_load(summary: pd.DataFrame, metric: str, axes: Sequence, workloads: Sequence[str],
                   log: bool = False, slo_ms: float | None = None) -> None:
    """One panel per workload: ``metric`` (mean and CI over seeds) against load, per contender;
    each interval is drawn clipped to the metric's range (:data:`RANGES`). Goodput panels show,
    as a thin line, the arrival rate over the judged queries (every query on time): the mean rate,
    times :func:`.streams.judged_rate_factor` for the Twitter trace; p99 panels the SLO when
    given."""
    for ax, wl in zip(axes, workloads):
        g = summary[summary["workload"] == wl]
        for c, gc in g.groupby("contender", sort=False):
            gc = gc.sort_values("load")
            y = gc[metric].to_numpy(float)
            hw = gc.get(f"{metric}_halfwidth", pd.Series(np.zeros(len(gc)))).to_numpy(float)
            hw = np.where(np.isfinite(hw), hw, 0.0)
            lo, hi = RANGES.get(metric, (-np.inf, np.inf))
            yerr = np.vstack([np.clip(np.minimum(hw, y - lo), 0, None),
                              np.clip(np.minimum(hw, hi - y), 0, None)])
            ax.errorbar(gc["load"], y, yerr=np.nan_to_num(yerr), label=LABELS[c],
                        capsize=2, markersize=4, **_style(c))
        if metric == "goodput_qps" and "rate_qps" in g.columns:
            # the rate over the judged queries (after the warm-up), the ceiling of a goodput:
            # above the stream's mean rate for the Twitter trace, which rises through the day
            from .streams import judged_rate_factor

            off = g.groupby("load")["rate_qps"].mean() * judged_rate_factor(wl)
            ax.plot(off.index, off.to_numpy(), color="black", linewidth=0.8, marker="",
                    label="offered load (judged queries)")
        if metric.endswith("latency_ms") and slo_ms is not None:
            ax.axhline(slo_ms, color="black", linestyle=":", linewidth=0.8)
        if log:
            ax.set_yscale("log")
            _plain_log(ax.yaxis)
        plotting.label_axes(ax, AXIS_LABELS["load"], AXIS_LABELS[metric], title=wl)


def frontier_plot(summary: pd.DataFrame, x: str, y: str, axes: Sequence,
                  panels: Sequence[tuple[str, float]], log_x: bool = False) -> None:
    """One panel per (workload, load): each contender's points over its own knob, joined in
    knob order (TAD by a*, the others by the SLO they plan for)."""
    for ax, (wl, load) in zip(axes, panels):
        g = summary[(summary["workload"] == wl) & (summary["load"] == load)]
        for c, gc in g.groupby("contender", sort=False):
            gc = gc.sort_values("a_star" if gc["a_star"].notna().any() else "slo_factor")
            ax.plot(gc[x], gc[y], label=LABELS[c], markersize=5, linewidth=1, **_style(c))
        if log_x:
            ax.set_xscale("log")
            _plain_log(ax.xaxis)
        plotting.label_axes(ax, AXIS_LABELS[x], AXIS_LABELS[y], title=f"{wl}, ρ = {load:g}")


def zoo_plot(zoo, slo_ms: float, ax) -> None:
    """The zoo: accuracy against batch-1 latency, the Pareto front joined, the SLO marked."""
    from ..profiles import pareto_mask

    l1 = zoo.latency_ms[:, 0]
    front = pareto_mask(l1, zoo.accuracy)
    ax.scatter(l1[~front], zoo.accuracy[~front], color=plotting.PALETTE[7], s=18, label="dominated")
    o = np.argsort(l1[front])
    ax.plot(l1[front][o], zoo.accuracy[front][o], color=plotting.PALETTE[0], marker="o",
            label="Pareto front")
    ax.axvline(slo_ms, color="black", linestyle=":", label=f"SLO {slo_ms:g} ms")
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    ax.legend(fontsize=8)
    plotting.label_axes(ax, "latency at batch 1, l(m, 1) (ms)", "ImageNet top-1 accuracy (%)")
