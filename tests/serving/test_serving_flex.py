"""FLEX and FLEX-NP as policies of the neutral engine (Shepherd §5.2, Algorithms 1-2; spec
shepherd §2.2), checked against Shepherd's own engine (:mod:`infsched.shepherd.sim`, an
independent implementation) on Shepherd's scenario, on its toys, and against its own rules."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from infsched.errors import ConfigError
from infsched.serving import ServingConfig, Zoo, experiments as ex, simulate
from infsched.serving.flex import goodput_per_gpu, planner_model
from infsched.serving.sim import DEADLINE_TOL_MS
from infsched.shepherd import sim as shp
from infsched.shepherd.model import B_MAX, ModelSet, Requests, model_set
from infsched.shepherd.traces import maf_arrivals

ALPHA, BETA, K, SLO = 4.0, 12.0, 6, 120.0


def _linear_zoo() -> Zoo:
    b = np.arange(1, 33)
    return Zoo(("lin",), [75.0], (ALPHA * b + BETA)[None, :])


def _shepherd_group(model: str = "RN50"):
    """Shepherd's group (spec shepherd §1): Table 4's linear latency for one CV model up to
    B_max = 128, as a Shepherd ModelSet and as the neutral simulator's zoo (same floats)."""
    ms = model_set("cv16")
    one = ms.subset([ms.names.index(model)])
    b = np.arange(1, B_MAX + 1)
    return one, Zoo((model,), [76.0], one.latency(0, b)[None, :])


def _both(arr, slo, workers, policy, models, zoo):
    ours = simulate(ServingConfig(zoo, workers=workers, slo_ms=slo, policy=policy,
                                  model=zoo.names[0]), arrivals=arr)
    req = Requests.with_slo(arr, np.zeros(arr.size, np.int64), slo)
    return ours, shp.simulate(req, models, workers, policy, b_max=zoo.max_batch)


@pytest.mark.parametrize("policy", ["flex", "flex-np"])
@pytest.mark.parametrize("rate", [300.0, 600.0, 1400.0])
def test_same_arrivals_same_answer_as_the_shepherd_engine(policy, rate):
    """Both engines are deterministic given the arrivals and implement the same rules (two
    codes, written apart): on the same arrivals they agree query by query, preemptions
    included."""
    arr = ex.arrivals("mmpp", rate, 6000, np.random.default_rng(4))
    models = ModelSet(("lin",), np.array([ALPHA]), np.array([BETA]), np.array([1]))
    ours, theirs = _both(arr, SLO, K, policy, models, _linear_zoo())
    np.testing.assert_array_equal(np.isnan(ours.finish), np.isnan(theirs.completion))
    np.testing.assert_allclose(ours.finish, theirs.completion, rtol=0, atol=1e-9, equal_nan=True)
    assert ours.preemptions == theirs.preemptions
    assert (ours.preemptions > 0) == (policy == "flex")


# Shepherd's scenario: one group of 12 GPUs, SLO 250 ms (spec shepherd §1.3, §7), Table 4's
# RN50, MAF-synth bursty arrivals (1000 streams on the one model, spec §4.2) at 0.5, 1 and 1.5
# times the group's capacity at B_max (about 14.8k queries/s).
SEEDS = 16


def _metrics(ok, res, n):
    return ok.mean(), res.preemptions / n


@pytest.mark.parametrize("policy", ["flex", "flex-np"])
@pytest.mark.parametrize("rate", [7_000.0, 14_000.0, 21_000.0])
def test_agrees_with_the_shepherd_engine_on_its_scenario_within_ci(policy, rate):
    """Independent seeds for the two engines (the same generator, Shepherd's MAF-synth): the
    99 % Welch interval of the difference in SLO attainment and in preemptions per query holds
    0. (On common arrivals they agree exactly, above.)"""
    models, zoo = _shepherd_group()
    ours, theirs = [], []
    for s in range(SEEDS):
        a = maf_arrivals(1000, rate, 3.0, "bursty", 1, seed=s).arrival_ms
        o, _ = _both(a, 250.0, 12, policy, models, zoo)
        ours.append(_metrics(o.on_time, o, a.size))
        b = maf_arrivals(1000, rate, 3.0, "bursty", 1, seed=10_000 + s).arrival_ms
        _, t = _both(b, 250.0, 12, policy, models, zoo)
        theirs.append(_metrics(t.ok, t, b.size))
    ours, theirs = np.array(ours), np.array(theirs)
    for k in range(2):
        x, y = ours[:, k], theirs[:, k]
        if np.ptp(x) == 0 and np.ptp(y) == 0:
            assert x[0] == y[0]
            continue
        d = x.mean() - y.mean()
        se = np.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        assert abs(d) <= stats.t.ppf(0.995, 2 * SEEDS - 2) * se, (k, d, se)
    if policy == "flex" and rate == 7_000.0:
        assert ours[:, 1].mean() > 0.01  # preemption is exercised, not just allowed


def test_fig3_toy_exact():
    """Shepherd Fig 3: 10 ms per request, SLO 10 ms, no batching; 3 at 0, 1 at 40, 6 at 80."""
    zoo = Zoo(("m",), [75.0], np.array([[10.0, 20.0]]))
    arr = np.array([0.0] * 3 + [40.0] + [80.0] * 6)
    for workers, met in ((1, 3), (6, 10)):
        for pol in ("flex", "flex-np"):
            res = simulate(ServingConfig(zoo, workers=workers, slo_ms=10.0, policy=pol, model="m"),
                           arrivals=arr)
            assert int(res.on_time.sum()) == met


@pytest.mark.parametrize("omega", [1, 10, 100])
def test_theorem_a1_instance_exact(omega):
    """Shepherd Thm A.1 (spec claim 3): X1 (deadline 1) at 0, then omega queries at 0.001 with
    deadline 1.001, l(b) = 1 for every b: FLEX preempts X1 and serves omega, FLEX-NP serves 1."""
    zoo = Zoo(("m",), [75.0], np.ones((1, 128)))
    arr = np.array([0.0] + [0.001] * omega)
    got = {p: int(simulate(ServingConfig(zoo, workers=1, slo_ms=1.0, policy=p, model="m"),
                           arrivals=arr).on_time.sum()) for p in ("flex", "flex-np")}
    # (omega < λ: no preemption, X1 is served and the omega miss, as for FLEX-NP)
    assert got == {"flex": omega if omega >= 3.03 else 1, "flex-np": 1}


@pytest.mark.parametrize("lam", [1.5, 3.03, 10.0])
def test_preemption_rule_and_chain_bound(lam):
    """Every served query meets its deadline (deterministic service); FLEX-NP never preempts;
    per worker, the queries of preempted batches are at most those of completed batches over
    (λ - 1) (spec shepherd claim 6 / A21: each preemption at least multiplies the batch by λ)."""
    zoo = ex.load_zoo("ramsis-image")
    rate = 0.6 * zoo.capacity_qps(8, 150.0)
    arr = ex.arrivals("mmpp", rate, 30_000, np.random.default_rng(2))
    for pol in ("flex", "flex-np"):
        cfg = ServingConfig(zoo, workers=8, slo_ms=150.0, policy=pol, model=zoo.names[3],
                            lam=lam)
        res = simulate(cfg, arrivals=arr)
        s = res.served
        assert np.all(res.latency[s] <= cfg.slo_ms + DEADLINE_TOL_MS)
        assert np.all(res.bsize[s] <= zoo.max_batch)
        done, pre = res.preemption_chain()
        assert done.sum() == s.sum()
        if pol == "flex-np":
            assert res.preemptions == 0 and pre.sum() == 0
        else:
            assert res.preemptions > 0 or lam > 3.03  # (λ = 10: only batches of <= 3 could be)
            assert np.all(pre <= done / (lam - 1) + 1e-9)


def test_flex_drops_instead_of_serving_late():
    zoo = ex.load_zoo("ramsis-image")
    rate = 1.2 * zoo.capacity_qps(K, SLO)
    cfg = ex.contender_config("flex", zoo, K, SLO, rate_qps=rate)
    res = simulate(cfg, 6000, rate_qps=rate, seed=1)
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


def test_bad_flex_configurations():
    zoo = _linear_zoo()
    with pytest.raises(ConfigError, match="lam"):
        ServingConfig(zoo, workers=2, slo_ms=SLO, policy="flex", lam=1.0)
    with pytest.raises(ConfigError, match="lam"):
        ServingConfig(zoo, workers=2, slo_ms=SLO, policy="fcfs", lam=3.0)
    with pytest.raises(ConfigError, match="central queue"):
        ServingConfig(zoo, workers=2, slo_ms=SLO, policy="flex", queue="per-worker")
    with pytest.raises(ConfigError, match="policy"):
        ServingConfig(zoo, workers=2, slo_ms=SLO, policy="flex-turbo")
