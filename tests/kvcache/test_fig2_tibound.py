"""Fig. 2 with the time-indexed bound (kvcache.fig2_tibound): the subset of trials is fixed by the
seed alone, and raising the lower bounds moves only the upper brackets of the trials that got
the bound (that every bound is below its trial's schedules is checked on the smoke run of Fig. 2
in test_experiments.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.kvcache import experiments as ex
from infsched.kvcache.scales import get_scale


def test_subset_is_seeded_and_sized_by_the_scale():
    for scale in ("smoke", "default", "paper"):
        sc = get_scale(scale)
        pairs = ex.tibound_trials(scale, 0)
        assert pairs == ex.tibound_trials(scale, 0)
        for m in (1, 2):
            trials = [t for mm, t in pairs if mm == m]
            assert len(trials) == len(set(trials)) == min(sc.fig2_tibound_trials, sc.fig2_trials)
            assert all(0 <= t < sc.fig2_trials for t in trials)
    assert ex.tibound_trials("paper", 0) != ex.tibound_trials("paper", 1)


def test_raised_bounds_touch_only_the_subset():
    f2 = pd.DataFrame({"model": [1, 1, 2], "trial": [0, 1, 0], "tel_mcsf": [120.0, 110.0, 90.0],
                       "best": [100.0, 100.0, 90.0], "lower_bound": [80.0, 80.0, 70.0],
                       "nonoptimal": [True, True, False],
                       "ratio_hi": [1.5, 1.375, 90 / 70], "certified": False,
                       "mcsf_optimal": False})
    fb = pd.DataFrame({"model": [1, 2], "trial": [1, 0], "lower_ti": [99.2, 60.0],
                       "best_ils": [100.0, 88.0]})
    out = ex.fig2_with_tibound(f2, fb)
    assert list(out["lower_bound"]) == [80.0, 99.2, 70.0]      # a weaker bound never lowers one
    assert list(out["best"]) == [100.0, 100.0, 88.0]           # a better schedule lowers best
    assert out["tibound"].tolist() == [False, True, True]
    assert out["ratio_hi"].tolist() == pytest.approx([1.5, 110 / 99.2, 90 / 70])
    assert out["ratio_lo"].tolist() == pytest.approx([1.2, 1.1, 90 / 88])
    assert out["nonoptimal"].tolist() == [True, True, True]   # 88 < 90 proves MC-SF not optimal
    # 99.2 rounds up to 100 = best: an integer latency proves the schedule optimal
    assert out["certified"].tolist() == [False, True, False]
    assert out["mcsf_optimal"].tolist() == [False, False, False]
    assert np.array_equal(f2["lower_bound"], [80.0, 80.0, 70.0])   # the input is left alone
    assert np.array_equal(f2["best"], [100.0, 100.0, 90.0])


def test_every_stored_bound_is_below_the_stored_schedules():
    """The committed store's time-indexed bounds (the paper-scale chapter's: Fig. 2's subset and
    the certified small trials), each against the best schedule stored for the same trial by
    Fig. 2's own point (the local search's; on the small trials the optimum HiGHS certified),
    the local search's and the iterated search's it stores itself. Reads the store only: no bound is recomputed here
    (tests/test_store_sample.py recomputes a sample)."""
    from infsched import store

    tb = store.read_points("infsched.kvcache.fig2_tibound.fig2_bound_point")
    f2 = store.read_points("infsched.kvcache.fig2.fig2_point")
    best: dict[tuple, float] = {}
    for e in f2.values():
        if e.params.get("reading", "canonical") != "canonical":
            continue
        k = tuple(e.params[p] for p in ("model", "trial", "seed", "lo", "hi"))
        best[k] = min(best.get(k, np.inf), float(e.value["best"]))
    sc = get_scale("paper")
    paper, small = 0, 0
    for e in tb.values():
        k = tuple(e.params[p] for p in ("model", "trial", "seed", "lo", "hi"))
        v = e.value
        assert k in best, k
        for b in ("ti_bound", "dff_bound"):
            assert v[b] <= min(best[k], v["upper"], v["ils"]) * (1 + 1e-9), (k, b, v[b], best[k])
        assert v["ils"] <= v["upper"]          # its first descent is the local search
        is_small = (e.params["lo"], e.params["hi"]) in (sc.fig2_small_n, sc.fig2_small_T)
        if is_small:
            assert v["ils"] >= best[k]         # a schedule is never below the certified optimum
        paper += (e.params["lo"], e.params["hi"]) == sc.fig2_sizes
        small += is_small
    assert paper == 2 * sc.fig2_tibound_trials and small > 0
