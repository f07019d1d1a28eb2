"""The experiments module: parameters, registry, the reader's own setting, and the chapter's
live check against the stored tables."""

from __future__ import annotations

import pytest

from infsched.errors import ConfigError
from infsched.kairos import experiments as ex
from infsched.kairos.model import configurations


@pytest.mark.parametrize("kw, name", [(dict(model="bert"), "model"), (dict(budget=0.3), "budget"),
                                      (dict(service="noisy"), "service")])
def test_chapter_parameters_fail_clearly(kw, name):
    args = dict(model="rm2", budget=2.5, service="mean") | kw
    with pytest.raises(ConfigError, match=name):
        ex.check_parameters(**args)


def test_unknown_scale_and_experiment():
    with pytest.raises(ConfigError, match="scale"):
        ex.get_scale("huge")
    with pytest.raises(ConfigError, match="experiment"):
        ex.run_experiment("fig99")


def test_search_space_sizes():
    """A18: 331 configurations at $2.5/h, 77,096 at $10/h; homogeneous 4 and 19 GPUs."""
    assert len(configurations(2.5)) == 331 and len(configurations(10)) == 77_096
    assert ex.homogeneous(2.5)[0][0] == 4 and ex.homogeneous(10)[0][0] == 19


def test_live_check_matches_the_stored_tables():
    live = ex.live_check("smoke")
    assert len(live) >= 8 and live["rel_diff"].max() <= 1e-5


def test_registry_runs_cheap_entries():
    assert len(ex.run_experiment("table3")) == 5
    assert list(ex.run_experiment("fig5")["met_qos"]).count(True) == 7


def test_your_setting_at_a_larger_budget():
    """`infsched run kairos -p model=dien -p budget=10`: the pick beats homogeneous, and
    KAIROS+ evaluates a handful of the 77,096 configurations."""
    r = ex.your_setting("dien", 10.0, scale="smoke", top=3)
    s = r["summary"].iloc[0]
    assert s["configurations"] == 77_096
    assert s["pick_over_homogeneous"] > 1.15
    assert 1 <= s["kairos_plus_evaluations"] <= 20
    assert len(r["top"]) == 3
