"""Each paper's headline claims with their verdicts, one line each, for the book's front page.

A chapter glues its headlines (:func:`glue_headlines`) from the verdict table it has just built,
so the front page shows the verdicts of this build, at the scale each chapter rendered, next to
the paper's own number and ours. The claims are the ones each paper's abstract and conclusion
lead with; the paper's own words for each are in the chapter's table (its ``quote`` column).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .errors import require

__all__ = ["HEADLINES", "headline_lines", "glue_headlines"]

#: chapter -> [(item, quantity, the claim in a few words)]: what each paper leads with
HEADLINES: dict[str, list[tuple[str, str, str]]] = {
    "tad": [
        ("fig7", "tadop_over_bound_max", "TAD-OP, oblivious to the load, matches the LP lower "
                                         "bound at n = 4096 (worst load, ratio to the bound)"),
        ("fig6", "tadop_lowest_latency", "TAD-OP is the most latency-efficient policy at n = 64"),
        ("fig4", "rjiq_over_bound_n64_high_astar", "R-JIQ converges to the LP bound as n grows "
                                                   "(ratio at n = 64)"),
        ("ex2", "improvement_pct", "Example 2: the optimal routing is 16.67 % faster than TAD's"),
    ],
    "ramsis": [
        ("fig5", "ramsis_minus_jf_mean", "On the Twitter trace RAMSIS gains accuracy over "
                                         "Jellyfish+ (average, points)"),
        ("fig5", "ramsis_minus_ms_mean", "... and over ModelSwitching (average, points)"),
        ("fig6", "ramsis_ge_baselines", "RAMSIS is at least as accurate as both baselines at "
                                        "every load it can serve"),
        ("fig5", "fewer_workers_vs_ms_max", "RAMSIS needs up to 50 % fewer workers than "
                                            "ModelSwitching (the authors' prototype)"),
    ],
    "kvcache": [
        ("fig2", "model1_mean", "MC-SF is within 0.5 % of the hindsight optimum on average "
                                "(Arrival Model 1, n = 40–60)"),
        ("fig2", "model1_exact_pct", "MC-SF is optimal in 57 % of those trials"),
        ("fig3", "mcsf_lowest_everywhere", "MC-SF has the lowest average latency at every n"),
        ("tab1", "ratio_mc_benchmark", "Table 1: MC-Benchmark's latency over MC-SF's"),
    ],
    "kairos": [
        ("fig8", "rm2_ratio", "KAIROS gives up to 2× the throughput of a homogeneous pool"),
        ("fig9", "kairos_over_ribbon_median_ribbon_own_best",
         "KAIROS gives around 1.5× Ribbon's throughput"),
        ("fig9", "over_sota_max_ribbon_own_best", "KAIROS is up to 70 % above the state of the art"),
        ("fig13", "optimum_in_top10", "the best configuration is among the bound's top ten"),
    ],
    "shepherd": [
        ("fig7", "sh_over_nexus_bursty", "Shepherd's goodput is 18.1× Nexus's under bursty load"),
        ("fig7", "sh_over_cw_bursty", "... and 5.2× Clockwork's"),
        ("fig9", "sh_over_nexus_max", "Shepherd beats Nexus by up to 38× at tight SLOs"),
        ("fig10", "sh_linear", "Shepherd's goodput scales linearly with the cluster"),
    ],
}


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, (bool,)) or type(v).__name__ == "bool_":
        return "holds" if v else "fails"
    if isinstance(v, (int, float)) or hasattr(v, "__float__"):
        try:
            x = float(v)
        except (TypeError, ValueError):
            return str(v)
        return f"{x:.4g}"
    return str(v)


def headline_lines(chapter: str, card: pd.DataFrame) -> list[str]:
    """One markdown line per headline of ``chapter`` found in its verdict table ``card``: the
    claim, the paper's number, ours and the verdict (a headline missing from the table, as at a
    scale that skips its figure, is left out)."""
    require(chapter in HEADLINES, "chapter", chapter, "must be one of " + ", ".join(HEADLINES))
    out = []
    for item, quantity, claim in HEADLINES[chapter]:
        rows = card[(card["item"] == item) & (card["quantity"] == quantity)]
        if rows.empty:
            continue
        r = rows.iloc[0]
        paper = r.get("paper")
        ours = _fmt(r.get("ours"))
        unit = r.get("unit") or ""
        unit = "" if not isinstance(unit, str) or unit in ("", "nan") else f" {unit}"
        said = (f"paper {_fmt(paper)}{unit}, ours {ours}{unit}"
                if _fmt(paper) != "—" else f"ours: the claim {ours}")
        where = item.replace("fig", "Fig. ").replace("tab", "Table ").replace("ex", "Example ")
        out.append(f"- {claim} ({where}; {said}): "
                   f"**{r['verdict']}**")
    return out


def glue_headlines(chapter: str, card: pd.DataFrame, scale: str) -> str:
    """Glue ``<chapter>_headlines`` (markdown, not displayed) for the front page; returns it."""
    from myst_nb import glue

    from .store import GluedMarkdown

    lines = headline_lines(chapter, card)
    text = "\n".join(lines) if lines else f"(no headline claim is computed at the `{scale}` scale)"
    glue(f"{chapter}_headlines", GluedMarkdown(text), display=False)  # pasted on the front page
    return text
