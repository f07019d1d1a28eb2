"""The regime sweep (issue 34, item 3): instances with the asked spread, memory and load, and
per point a bracket on MC-SF's gap that holds (bound ≤ best ≤ MC-SF, every schedule feasible)."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import regimes as rg
from infsched.kvcache.bounds import volume
from infsched.kvcache.policies import mc_sf


@pytest.mark.parametrize("cv", [0.5, 2.0])
def test_instances_have_the_asked_spread_memory_and_load(cv):
    inst, cut = rg.regime_instance(4000, cv, 8.0, 1.0, seed=3)
    s = inst.prompt
    assert inst.M == round(8.0 * (rg.PROMPT_MEAN + rg.OUTPUT_MEAN))
    assert abs(s.mean() / rg.PROMPT_MEAN - 1) < 0.1          # rounding to >= 1 moves it a little
    assert abs(s.std() / s.mean() / cv - 1) < 0.25            # a lognormal's CV, sampled
    assert cut <= 0.01 * inst.n and np.all(inst.prompt + inst.output <= inst.M)
    span = inst.arrival.max() - inst.arrival.min() + 1
    load = volume(inst).sum() / span / inst.M
    assert 0.8 < load < 1.25


def test_load_and_spread_change_the_instance_only_as_asked():
    a, _ = rg.regime_instance(50, 1.0, 4.0, 1.0, seed=0)
    b, _ = rg.regime_instance(50, 1.0, 4.0, 1.0, seed=0)
    c, _ = rg.regime_instance(50, 1.0, 4.0, 4.0, seed=0)
    assert np.array_equal(a.arrival, b.arrival) and np.array_equal(a.prompt, b.prompt)
    assert c.arrival.max() < a.arrival.max()                  # four times the load: faster arrivals


def test_points_bracket_mcsf():
    for axis, value in (("cv", 4.0), ("m_ratio", 2.0), ("load", 4.0)):
        r = rg.regime_point(axis, value, 0, 0, 20, 300)
        assert r["lower"] <= r["best"] <= min(r["tel_mcsf"], r["tel_online"])
        assert 0 <= r["mcsf_gap_lo"] <= r["mcsf_gap_hi"]


def test_sweep_at_smoke_scale():
    df = rg.regimes("smoke", 0, n_jobs=1, cache=False)
    summ = rg.regime_summary(df)
    assert len(summ) == sum(len(v) for v in rg.AXES.values())
    assert (summ["mcsf_gap_lo"] <= summ["mcsf_gap_hi"] + 1e-12).all()
    # the base point is on every axis and draws the same instances there
    base = df[[row["value"] == rg.BASE[row["axis"]] for _, row in df.iterrows()]]
    assert base["tel_mcsf"].nunique() == 1


@pytest.mark.parametrize("kw, name", [(dict(cv=0.0), "cv"), (dict(m_ratio=-1.0), "m_ratio"),
                                      (dict(load=float("nan")), "load"), (dict(n=0), "n")])
def test_bad_parameters(kw, name):
    args = dict(n=10, cv=1.0, m_ratio=4.0, load=1.0, seed=0) | kw
    with pytest.raises(ConfigError, match=name):
        rg.regime_instance(**args)
    with pytest.raises(ConfigError, match="axis"):
        rg.regime_point("rate", 1.0, 0, 0, 10, 10)
