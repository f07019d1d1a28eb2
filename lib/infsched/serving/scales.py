"""The sizes behind each scale of the head-to-head chapter (queries per run, seeds, the loads and
knob values its sweeps visit)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import one_of

__all__ = ["SCALE_NAMES", "Scale", "SCALES", "get_scale"]

SCALE_NAMES = ("smoke", "default", "paper")


@dataclass(frozen=True)
class Scale:
    """Sizes behind one scale: queries per run, seeds per point, loads of the sweep, and the
    knob values each contender's frontier sweeps."""

    n: int
    seeds: int
    twitter_interval_s: float          # seconds each ten-second trace interval lasts
    ms_queries: int                    # queries per model in ModelSwitching's search
    loads: tuple[float, ...]
    frontier_loads: tuple[float, ...]
    slo_factors: tuple[float, ...]     # planned SLO / judged SLO
    a_stars: tuple[float, ...]         # TAD's targets (accuracy, %)
    regime_loads: tuple[float, float] = (0.3, 0.9)
    regime_slo_factors: tuple[float, float] = (2 / 3, 2.0)
    # the load levels (share of the capacity at the planned SLO) the re-planning contenders plan
    # for; RAMSIS plans on the RAMSIS chapter's grids instead (contenders.ramsis_loads)
    plan_levels: tuple[float, ...] = (0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)
    # the decision table (issue 33): loads from light to overload, judged SLOs (x slo_ms), each
    # contender's knob values, seeds that choose the knob and (disjoint) seeds that score it
    decision_workloads: tuple[str, ...] = ("poisson", "mmpp")
    decision_loads: tuple[float, ...] = (0.3, 0.6, 0.9, 1.1)
    decision_slos: tuple[float, ...] = (1.0, 2.0)
    decision_factors: tuple[float, ...] = (0.6, 0.8, 1.0)
    decision_a_stars: tuple[float, ...] = (70.0, 74.0, 78.0, 82.0)
    decision_seeds: tuple[int, int] = (2, 3)
    decision_n: int = 50_000
    # the judged SLOs (of decision_slos) at which the Twitter trace enters the decision: a run
    # replays its 27 intervals once, rate x 27 x twitter_interval_s queries whatever decision_n
    # (at real time and 60 workers near capacity, about a million)
    decision_twitter_slos: tuple[float, ...] = (1.0,)
    # the burstiness and overheads sweep (issue 33, item 6): queries per run, seeds, loads
    sens_n: int = 40_000
    sens_seeds: int = 5
    sens_loads: tuple[float, ...] = (0.9,)


SCALES: dict[str, Scale] = {
    # seconds, for CI: every path runs, nothing is resolved
    "smoke": Scale(n=3_000, seeds=2, twitter_interval_s=0.05, ms_queries=2_000, loads=(0.3, 0.9), frontier_loads=(0.9,),
                   slo_factors=(0.5, 1.0), a_stars=(74.0, 82.0), plan_levels=(0.3, 0.6, 0.9, 1.2),
                   decision_workloads=("poisson",), decision_loads=(0.5, 1.1), decision_slos=(1.0,),
                   decision_factors=(0.8, 1.0), decision_a_stars=(74.0, 82.0), decision_seeds=(1, 2),
                   decision_n=3_000, sens_n=2_000, sens_seeds=2),
    # the rendered book: a few minutes on 2 cores
    "default": Scale(n=100_000, seeds=5, twitter_interval_s=2.0, ms_queries=30_000, loads=(0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2),
                     frontier_loads=(0.3, 0.9),
                     slo_factors=(0.4, 0.6, 0.8, 1.0, 1.5, 2.0),
                     a_stars=(60.0, 70.0, 74.0, 78.0, 80.0, 82.0, 84.0)),
    # longer runs, more seeds, a finer grid
    "paper": Scale(n=500_000, seeds=10, twitter_interval_s=10.0, ms_queries=100_000, loads=tuple(np.round(np.arange(0.1, 1.21, 0.1), 2)),
                   frontier_loads=(0.3, 0.5, 0.7, 0.9),
                   slo_factors=(0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0),
                   a_stars=(60.0, 70.0, 73.0, 74.0, 76.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0),
                   plan_levels=tuple(np.round(np.arange(0.1, 1.21, 0.1), 2)),
                   decision_workloads=("poisson", "mmpp", "twitter"),
                   decision_loads=(0.1, 0.3, 0.5, 0.7, 0.9, 1.0, 1.1, 1.2), decision_slos=(2 / 3, 1.0, 2.0),
                   decision_factors=(0.4, 0.6, 0.8, 1.0, 1.5), decision_a_stars=(70.0, 74.0, 76.0, 78.0, 80.0, 82.0),
                   decision_seeds=(3, 7), decision_n=100_000,
                   sens_n=100_000, sens_seeds=10, sens_loads=(0.6, 0.9)),
}


def get_scale(scale: str) -> Scale:
    return SCALES[one_of("scale", scale, SCALE_NAMES)]
