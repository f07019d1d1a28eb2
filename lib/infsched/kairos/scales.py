"""The KAIROS chapter's scales (smoke, default, paper): how many queries a simulated run has and
how much of each experiment is recomputed live, and which items are scaled-down stand-ins."""

from __future__ import annotations

from dataclasses import dataclass

from infsched.errors import one_of
from infsched.kairos.model import MODELS

__all__ = ["SCALE_NAMES", "Scale", "SCALES", "get_scale", "ARTIFACT_QUERIES", "stand_in"]

SCALE_NAMES = ("smoke", "default", "paper")


@dataclass(frozen=True)
class Scale:
    """Sizes behind one scale.

    ``n_queries``: queries per simulated run (the artifact's default is 20,000; 2,000 keeps the
    exhaustive tables to minutes). ``live_top``: RM2's highest-UB configurations recomputed live
    under each policy and checked against the stored table. ``live_models``: models whose pick
    and homogeneous configuration are recomputed live. ``search_seeds``: seeds per search
    baseline (Fig. 11). ``sa_runs``: simulated-annealing runs (Fig. 2). ``robust_models``: models
    of the robustness variants (Figs. 15–16). ``recompute``: rebuild the exhaustive tables
    instead of reading them.
    """

    n_queries: int
    live_top: int
    live_models: tuple[str, ...]
    search_seeds: int
    sa_runs: int
    robust_models: tuple[str, ...]
    recompute: bool = False


SCALES: dict[str, Scale] = {
    "smoke": Scale(n_queries=2000, live_top=2, live_models=("rm2",), search_seeds=5, sa_runs=2,
                   robust_models=("rm2",)),
    "default": Scale(n_queries=2000, live_top=20, live_models=MODELS, search_seeds=50, sa_runs=10,
                     robust_models=MODELS),
    "paper": Scale(n_queries=20_000, live_top=20, live_models=MODELS, search_seeds=50, sa_runs=10,
                   robust_models=MODELS, recompute=True),
}


def get_scale(scale: str) -> Scale:
    return SCALES[one_of("scale", scale, SCALE_NAMES)]


#: queries per simulated run in the authors' artifact (its default)
ARTIFACT_QUERIES = 20_000
#: items computed without the simulator: the worked example, the upper bound, the overhead
_ANALYTIC = ("fig5", "ub", "overhead")


def stand_in(item: str, scale: str) -> str | None:
    """Why ``item`` at ``scale`` is a scaled-down stand-in of the paper's setting, or None:
    every simulated item whose runs are shorter than the artifact's 20,000 queries."""
    sc = get_scale(scale)
    if item in _ANALYTIC or sc.n_queries >= ARTIFACT_QUERIES:
        return None
    return f"{sc.n_queries:,} queries per simulated run, the artifact's {ARTIFACT_QUERIES:,}"
