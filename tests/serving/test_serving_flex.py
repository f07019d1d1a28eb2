"""FLEX and FLEX-NP on the head-to-head's inputs (infsched.serving.flex): the Shepherd engine's
own answer, its promise (no served query is late), and the planner's model choice."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.serving import Zoo
from infsched.serving import experiments as ex
from infsched.serving.flex import goodput_per_gpu, planner_model, simulate_flex
from infsched.shepherd import sim as shp
from infsched.shepherd.model import ModelSet, Requests

ALPHA, BETA, K, SLO = 4.0, 12.0, 6, 120.0


def _linear_zoo() -> Zoo:
    b = np.arange(1, 33)
    return Zoo(("lin",), [75.0], (ALPHA * b + BETA)[None, :])


@pytest.mark.parametrize("policy", ["flex", "flex-np"])
@pytest.mark.parametrize("rate", [600.0, 1400.0])
def test_same_answer_as_the_shepherd_engine(policy, rate):
    """A linear zoo is a Shepherd ModelSet: simulate_flex gives shepherd.sim.simulate's
    completions query by query."""
    arr = ex.arrivals("mmpp", rate, 4000, np.random.default_rng(4))
    ours = simulate_flex(_linear_zoo(), K, SLO, arr, rate, policy)
    models = ModelSet(("lin",), np.array([ALPHA]), np.array([BETA]), np.array([1]))
    theirs = shp.simulate(Requests.with_slo(arr, np.zeros(arr.size, np.int64), SLO), models, K, policy)
    np.testing.assert_array_equal(np.isnan(ours.finish), np.isnan(theirs.completion))
    np.testing.assert_allclose(ours.finish, theirs.completion, rtol=0, atol=1e-9, equal_nan=True)


def test_flex_never_serves_late_and_drops_instead():
    zoo = ex.load_zoo("ramsis-image")
    rate = 1.2 * zoo.capacity_qps(K, SLO)
    arr = ex.arrivals("poisson", rate, 6000, np.random.default_rng(1))
    res = simulate_flex(zoo, K, SLO, arr, rate)
    m = ex.judge(res, SLO, warmup=0.0)
    assert m["served_late"] == 0.0 and m["dropped"] > 0.0
    assert m["attainment"] == pytest.approx(1.0 - m["dropped"])


def test_planner_model_is_the_most_accurate_the_group_can_carry():
    zoo = ex.load_zoo("ramsis-image")
    T = goodput_per_gpu(zoo, 150.0)
    for rate in (200.0, 1500.0, 3000.0):
        m = planner_model(zoo, 60, 150.0, rate)
        assert 60 * T[m] >= rate
        assert not np.any((60 * T >= rate) & (zoo.accuracy > zoo.accuracy[m]))
    assert planner_model(zoo, 60, 150.0, 1e6) == int(np.argmax(T))  # beyond every model


def test_unknown_flex_policy():
    with pytest.raises(ConfigError, match="policy"):
        simulate_flex(_linear_zoo(), K, SLO, np.arange(10.0), 100.0, "flex-turbo")
