"""The RAMSIS chapter's scales (what ``smoke``, ``default`` and ``paper`` run), its constants
(methods, SLOs, workers per task) and the checks of its parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infsched.errors import one_of
from infsched.report import setting_shortfall

SCALE_NAMES = ("smoke", "default", "paper")
METHODS = ("ramsis", "jf", "ms")
METHOD_LABELS = {"ramsis": "RAMSIS", "jf": "Jellyfish+", "ms": "ModelSwitching",
                 "ramsis-query": "RAMSIS, per-query objective"}
#: the paper's SLOs per task (§7): low, middle, high
TASK_SLOS = {"image": (150.0, 300.0, 500.0), "text": (100.0, 200.0, 300.0)}
#: workers of the constant-load experiments (§7.2)
TASK_WORKERS = {"image": 60, "text": 20}
OBJECTIVES = ("decision", "query")
BATCHINGS = ("max", "variable")
FIG12_MODELS = ("shufflenet_v2_x0_5", "efficientnet_b2", "efficientnet_v2_s")
#: a point is plotted (and compared) only below this violation rate (§7: "less than 5 %")
PLOT_VIOLATION = 0.05


@dataclass(frozen=True)
class Scale:
    """Sizes behind one scale. Loads in QPS, durations in seconds."""

    d: int                              # FLD D of every policy except Fig. 10's sweep
    loads: tuple[float, ...]            # constant-load grid (Figs. 6, 7, 10, 12)
    duration_s: float                   # constant-load run length (paper: 30 s)
    fig6_panels: tuple[tuple[str, float], ...]
    fig7_workers: tuple[int, ...]
    trace_workers: tuple[int, ...]      # Fig. 5 x axis
    trace_duration_s: float             # Twitter trace playback (paper: 300 s)
    trace_panels: tuple[tuple[str, float], ...]
    policy_loads: tuple[float, ...]     # load grid of RAMSIS policies and baseline tables (trace)
    ms_duration_s: float                # ModelSwitching's search runs per (model, load)
    fig8_loads: tuple[float, ...]
    fig10_ds: tuple[int, ...]
    fig10_loads: tuple[float, ...]
    fig11_profiles: tuple[str, ...] = ("image", "image-60")   # Fig. 11's model sets


def _grid(lo: float, hi: float, step: float) -> tuple[float, ...]:
    return tuple(float(x) for x in np.arange(lo, hi + step / 2, step))


SCALES: dict[str, Scale] = {
    # seconds: every code path, small grids
    "smoke": Scale(d=10, loads=(400.0, 2000.0, 2800.0, 3600.0), duration_s=5.0,
                   fig6_panels=(("image", 150.0), ("text", 100.0)), fig7_workers=(60,),
                   trace_workers=(60, 80), trace_duration_s=30.0, trace_panels=(("image", 150.0),),
                   policy_loads=_grid(1600, 4000, 800), ms_duration_s=5.0,
                   fig8_loads=(1200.0, 3200.0), fig10_ds=(2, 10, 100),
                   fig10_loads=(1200.0, 2800.0), fig11_profiles=("image",)),
    # what the book shows: the paper's loads and run lengths, D = 20, image SLO 150 for the trace
    "default": Scale(d=20, loads=_grid(400, 4000, 400), duration_s=30.0,
                     fig6_panels=tuple(("image", s) for s in TASK_SLOS["image"])
                     + tuple(("text", s) for s in TASK_SLOS["text"]),
                     fig7_workers=(40, 60, 80), trace_workers=tuple(range(30, 101, 10)),
                     trace_duration_s=300.0, trace_panels=(("image", 150.0),),
                     policy_loads=_grid(200, 4000, 200), ms_duration_s=30.0,
                     fig8_loads=_grid(400, 4000, 400), fig10_ds=(2, 10, 20, 100),
                     fig10_loads=_grid(400, 4000, 400)),
    # the paper's D = 100, every trace panel, 20..100 workers, ModelSwitching's 5-minute search
    "paper": Scale(d=100, loads=_grid(400, 4000, 400), duration_s=30.0,
                   fig6_panels=tuple(("image", s) for s in TASK_SLOS["image"])
                   + tuple(("text", s) for s in TASK_SLOS["text"]),
                   fig7_workers=(40, 60, 80), trace_workers=tuple(range(20, 101, 10)),
                   trace_duration_s=300.0,
                   trace_panels=tuple(("image", s) for s in TASK_SLOS["image"])
                   + tuple(("text", s) for s in TASK_SLOS["text"]),
                   policy_loads=_grid(200, 4000, 200), ms_duration_s=300.0,
                   fig8_loads=_grid(400, 4000, 400), fig10_ds=(2, 10, 100),
                   fig10_loads=_grid(400, 4000, 400)),
}


def get_scale(scale: str) -> Scale:
    return SCALES[one_of("scale", scale, SCALE_NAMES)]


#: the Scale fields that set the paper's configuration of each simulated item
_STAND_IN_FIELDS: dict[str, tuple[str, ...]] = {
    "fig5": ("d", "trace_workers", "trace_duration_s", "trace_panels", "ms_duration_s"),
    "tab3": ("d", "trace_workers", "trace_duration_s", "trace_panels", "ms_duration_s"),
    "fig6": ("d", "loads", "duration_s", "fig6_panels"),
    "tab4": ("d", "loads", "duration_s", "fig6_panels"),
    "fig7": ("d", "loads", "duration_s", "fig7_workers"),
    "fig8": ("d", "fig8_loads", "duration_s"),
    "fig10": ("fig10_loads", "duration_s"),
    "fig11": ("d", "fig11_profiles"),
    "fig12": ("d", "loads", "duration_s"),
}


_FIELD_LABELS = {"d": "FLD D", "trace_workers": "worker counts", "trace_duration_s": "trace seconds",
                 "trace_panels": "trace panels", "ms_duration_s": "ModelSwitching search seconds",
                 "loads": "loads", "duration_s": "run seconds", "fig6_panels": "panels",
                 "fig7_workers": "worker counts", "fig8_loads": "loads", "fig10_loads": "loads",
                 "fig11_profiles": "model sets"}


#: items of which only some quantities are simulated: Table 3's averages are recomputed from
#: the paper's own table at every scale, only its last claim comes from our runs
_SIMULATED_ONLY: dict[str, tuple[str, ...]] = {"tab3": ("ramsis_below_1pct_when_satisfiable",)}


def stand_in(item: str, scale: str) -> str | dict[str, str] | None:
    """Why ``item`` at ``scale`` is a scaled-down stand-in of the paper's setting, or None (a
    mapping quantity -> reason where only some of the item's quantities are simulated).

    The ``paper`` scale is the paper's configuration (FLD D = 100, every trace panel, 20 to 100
    workers, ModelSwitching's 5-minute search); an item run with any of its fields smaller or
    coarser is a stand-in. Profiles, Table 2's timings and Figs. 3 and 9 are not simulated."""
    reason = setting_shortfall(get_scale(scale), SCALES["paper"], _STAND_IN_FIELDS.get(item, ()),
                               _FIELD_LABELS)
    if reason and item in _SIMULATED_ONLY:
        return {q: reason for q in _SIMULATED_ONLY[item]}
    return reason
