"""The Shepherd chapter's scales: what ``smoke``, ``default`` and ``paper`` simulate, and which
items a scale runs on a scaled-down stand-in (:func:`stand_in`).
"""

from __future__ import annotations

from dataclasses import dataclass

from infsched.errors import one_of

SCALE_NAMES = ("smoke", "default", "paper")


@dataclass(frozen=True)
class Scale:
    """Sizes behind one scale.

    ``cv_streams``/``cv_minutes``: the count matrices of Figs. 2 and 5 (``group_streams`` for
    Fig. 5's largest groups); ``warmup_s``/``measure_s``: the simulated horizon of Figs. 7–9;
    ``scal_warmup_s``/``scal_measure_s``: of Figs. 10–11b; ``rates``: Fig. 7's offered loads for
    12 GPUs (req/s); ``slos``: Fig. 9's SLOs (ms); ``workers``: Fig. 10's cluster sizes;
    ``seeds``: runs per point; ``streams``: MAF-synth streams; ``table5_K``: Table 5's sizes.
    """

    cv_streams: int
    cv_minutes: int
    group_streams: int
    warmup_s: float
    measure_s: float
    scal_warmup_s: float
    scal_measure_s: float
    rates: tuple[float, ...]
    slos: tuple[float, ...]
    workers: tuple[int, ...]
    seeds: int
    streams: int
    table5_K: tuple[int, ...]
    fig11a_s: float


SCALES: dict[str, Scale] = {
    "smoke": Scale(cv_streams=300, cv_minutes=1440, group_streams=2000, warmup_s=0.2,
                   measure_s=0.4, scal_warmup_s=0.1, scal_measure_s=0.3,
                   rates=(3e3, 24e3, 144e3), slos=(50.0, 250.0), workers=(12, 48),
                   seeds=1, streams=1000, table5_K=(200, 1000), fig11a_s=2.0),
    "default": Scale(cv_streams=1000, cv_minutes=10080, group_streams=10000, warmup_s=0.5,
                     measure_s=1.5, scal_warmup_s=0.25, scal_measure_s=1.0,
                     rates=(3e3, 6e3, 12e3, 24e3, 48e3, 96e3, 144e3),
                     slos=(50.0, 100.0, 150.0, 200.0, 250.0, 500.0),
                     workers=(12, 48, 96, 144, 192, 288, 400), seeds=1, streams=4600,
                     table5_K=(200, 400, 600, 800, 1000), fig11a_s=12.0),
    "paper": Scale(cv_streams=1000, cv_minutes=20160, group_streams=10000, warmup_s=1.0,
                   measure_s=10.0, scal_warmup_s=0.5, scal_measure_s=5.0,
                   rates=(3e3, 6e3, 12e3, 24e3, 48e3, 96e3, 144e3),
                   slos=(10.0, 50.0, 100.0, 150.0, 200.0, 250.0, 500.0),
                   workers=(12, 48, 96, 144, 192, 288, 400), seeds=3, streams=46000,
                   table5_K=(200, 400, 600, 800, 1000), fig11a_s=60.0),
}


def get_scale(scale: str) -> Scale:
    return SCALES[one_of("scale", scale, SCALE_NAMES)]


#: the Scale fields that set each simulated item's size and run length (``seeds`` repeats a
#: run: it widens our confidence interval, it does not shrink the setting)
_STAND_IN_FIELDS: dict[str, tuple[str, ...]] = {
    "fig2": ("cv_streams", "cv_minutes"), "fig5": ("cv_streams", "cv_minutes", "group_streams"),
    "fig7": ("warmup_s", "measure_s", "streams", "rates"),
    "fig8": ("warmup_s", "measure_s", "streams", "rates"),
    "fig9": ("warmup_s", "measure_s", "streams", "slos"),
    "fig10": ("scal_warmup_s", "scal_measure_s", "workers"),
    "fig11b": ("scal_warmup_s", "scal_measure_s", "workers"),
    "fig11a": ("fig11a_s",), "table5": ("table5_K",),
}


def stand_in(item: str, scale: str) -> str | None:
    """Why ``item`` at ``scale`` is a scaled-down stand-in of the ``paper`` scale's setting (the
    paper's horizon, streams and grids), or None."""
    from infsched.report import setting_shortfall

    return setting_shortfall(get_scale(scale), SCALES["paper"], _STAND_IN_FIELDS.get(item, ()))
