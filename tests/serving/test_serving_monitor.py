"""Every contender estimating the load (issue 33, item 4): R-JIQ and FLEX on the RAMSIS paper's
500 ms load monitor, and the overhead knobs (issue 33, item 6), on the neutral simulator.

R-JIQ on the monitor is held to the simpy reference query by query, FLEX to its plain-Python
reference (:mod:`infsched.serving.reference_flex`) and to its rule, the model of every batch
being the planner's model for the level the monitor reads when the batch forms, computed here
from the arrivals alone. With one load level each variant is today's told version,
query by query."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.serving import ServingConfig, experiments as ex, simulate
from infsched.serving.flex import planner_model
from infsched.serving.reference import simulate_reference
from infsched.serving.scenarios import tad_system
from infsched.serving.streams import arrivals
from infsched.tad import bound
from infsched.tad.model import MAIN

ZOO = ex.load_zoo("ramsis-image")
K, SLO, A_STAR = 12, 150.0, 76.0
WINDOW = 500.0
A_TAD, N_TAD = 76.0, 8  # the TAD paper's main system, as tests/serving/test_serving_tadop_rjiq.py


def _bursty(load: float, n: int = 6_000, seed: int = 3) -> tuple[np.ndarray, float]:
    """An MMPP whose states (0.1x and 1.9x the mean, 0.5 s each on average) straddle several
    planned levels, so the monitor's level moves."""
    rate = load * ZOO.capacity_qps(K, SLO)
    return arrivals("mmpp", rate, n, np.random.default_rng(seed), burst=0.9, sojourn_s=0.5), rate


def _levels_at(arr: np.ndarray, t: np.ndarray, plan_loads) -> np.ndarray:
    """The monitor's level at times ``t``, from the arrivals in ``(t - window, t]``."""
    est = (np.searchsorted(arr, t, "right") - np.searchsorted(arr, t - WINDOW, "right")) / (WINDOW / 1000.0)
    return np.minimum(np.searchsorted(np.asarray(plan_loads), est, "left"), len(plan_loads) - 1)


def _same(a, b) -> None:
    for f in ("start", "finish", "model", "bsize"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert (a.n_batches, a.final_delta, a.min_delta, a.preemptions) == \
        (b.n_batches, b.final_delta, b.min_delta, b.preemptions)


def _rjiq_levels(rho: float, n: int = 6_000, seed: int = 3):
    """R-JIQ on the TAD paper's main system (4 server classes, so p_RJIQ(λ) moves with λ), one
    split per level at (0.2, 0.4, ..., 1.0) x λ^max, and MMPP arrivals whose states (0.1x and 1.9x
    the mean, 0.5 s each on average) straddle several levels."""
    zoo, workers = tad_system(MAIN, N_TAD)
    lmax = bound.lambda_max(MAIN, A_TAD) * N_TAD * 1000.0  # queries/s
    levels = tuple(x * lmax for x in (0.2, 0.4, 0.6, 0.8, 1.0))
    splits = tuple(tuple(bound.rjiq_probs(MAIN, A_TAD, x / 1000.0 / N_TAD, N_TAD)) for x in levels)
    cfg = ServingConfig(zoo, workers=N_TAD, slo_ms=1e9, policy="r-jiq", a_star=A_TAD, worker_models=workers,
                        plan_loads=levels, class_p=splits)
    arr = arrivals("mmpp", rho * lmax, n, np.random.default_rng(seed), burst=0.9, sojourn_s=0.5)
    return cfg, arr


@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_rjiq_on_the_monitor_matches_the_simpy_reference(rho):
    cfg, arr = _rjiq_levels(rho)
    fast = simulate(cfg, arrivals=arr, seed=4)
    ref = simulate_reference(cfg, arrivals=arr, seed=4)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)
    assert (fast.final_delta, fast.min_delta) == (ref.final_delta, ref.min_delta)
    # the split did move: the levels the arrivals saw hold different splits
    seen = np.unique(_levels_at(arr, arr, cfg.plan_loads))
    assert len({cfg.class_p[p] for p in seen}) > 1
    told = dataclasses.replace(cfg, plan_loads=None, class_p=cfg.class_p[seen[0]])
    assert not np.array_equal(simulate(told, arrivals=arr, seed=4).model, fast.model)


@pytest.mark.parametrize("service", ["deterministic", "exponential"])
def test_rjiq_with_one_level_is_the_told_rjiq(service):
    arr, rate = _bursty(0.7)
    told = ex.contender_config("r-jiq", ZOO, K, SLO, rate_qps=rate, a_star=A_STAR, service=service)
    one = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="r-jiq", a_star=A_STAR, service=service,
                        worker_models=told.worker_models, plan_loads=(rate,), class_p=(told.class_p,))
    _same(simulate(told, arrivals=arr, seed=6), simulate(one, arrivals=arr, seed=6))


@pytest.mark.parametrize("policy", ["flex", "flex-np"])
def test_flex_with_one_level_is_the_told_flex(policy):
    arr, rate = _bursty(0.9)
    told = ex.contender_config(policy, ZOO, K, SLO, rate_qps=rate)
    one = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy=policy, plan_loads=(rate,),
                        plan=((told.model, ZOO.max_batch),))
    _same(simulate(told, arrivals=arr, seed=1), simulate(one, arrivals=arr, seed=1))
    # several levels that all plan the same model are the told FLEX too
    same = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy=policy, plan_loads=(rate / 2, rate, 2 * rate),
                         plan=((told.model, ZOO.max_batch),) * 3)
    _same(simulate(told, arrivals=arr, seed=1), simulate(same, arrivals=arr, seed=1))


@pytest.mark.parametrize("load", [0.4, 0.9])
def test_flex_on_the_monitor_serves_each_batch_on_its_levels_model(load):
    arr, rate = _bursty(load)
    cfg = ex.contender_config("flex@monitor", ZOO, K, SLO, rate_qps=rate, scale="smoke")
    res = simulate(cfg, arrivals=arr, seed=2)
    s = res.served
    want = [planner_model(ZOO, K, SLO, x) for x in cfg.plan_loads]
    assert [ZOO.names.index(m) for m, _ in cfg.plan] == want
    lv = _levels_at(arr, res.start[s], cfg.plan_loads)
    np.testing.assert_array_equal(res.model[s], np.asarray(want)[lv])
    assert np.unique(res.model[s]).size > 1  # the model did change with the load
    # FLEX's promise holds on every model it switches to: no batch starts late
    assert np.all(res.finish[s] - arr[s] <= SLO + 1e-9)


@pytest.mark.parametrize("name", ["flex@monitor", "flex", "flex-np"])
@pytest.mark.parametrize("load", [0.5, 1.0])
def test_flex_matches_the_python_reference(name, load):
    """Random service times (no two completions at one instant: the engine breaks such ties by
    its heap, the reference does not try to), bursty arrivals, and every overhead on."""
    arr, rate = _bursty(load, n=2_500, seed=11)
    cfg = ex.contender_config(name.split("@")[0] if name != "flex@monitor" else name, ZOO, K, SLO,
                              rate_qps=rate, service="exponential", scale="smoke")
    over = dict(switch_ms=3.0, dispatch_ms=1.5, preempt_ms=4.0 if cfg.policy == "flex" else 0.0)
    for kw in ({}, over):
        c = dataclasses.replace(cfg, **kw)
        fast, ref = simulate(c, arrivals=arr, seed=3), simulate_reference(c, arrivals=arr, seed=3)
        np.testing.assert_array_equal(fast.model, ref.model)
        np.testing.assert_array_equal(fast.bsize[fast.served], ref.bsize[ref.served])
        np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)
        np.testing.assert_allclose(fast.start[fast.served], ref.start[ref.served], rtol=0, atol=1e-9)
        assert (fast.n_batches, fast.preemptions) == (ref.n_batches, ref.preemptions)
        np.testing.assert_array_equal(fast.worker_stats, ref.worker_stats)
    if cfg.policy == "flex" and load == 1.0:
        assert fast.preemptions > 0  # the preemption path ran
    if name == "flex@monitor":
        assert np.unique(fast.model[fast.served]).size > 1


# ------------------------------------------------------------------------------ overheads

def _with(cfg: ServingConfig, **kw) -> ServingConfig:
    return dataclasses.replace(cfg, **kw)


@pytest.mark.parametrize("name", ["jellyfish+", "batch-greedy", "ramsis", "tad"])
def test_overheads_engine_matches_the_simpy_reference(name):
    arr, rate = _bursty(0.6, n=4_000)
    cfg = ex.contender_config(name, ZOO, K, SLO, rate_qps=rate, a_star=A_STAR, profile="ramsis-image",
                              scale="smoke")
    cfg = dataclasses.replace(cfg, switch_ms=7.0, dispatch_ms=3.0)
    fast = simulate(cfg, arrivals=arr, seed=8)
    ref = simulate_reference(cfg, arrivals=arr, seed=8)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_allclose(fast.start, ref.start, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)
    base = simulate(_with(cfg, switch_ms=0.0, dispatch_ms=0.0), arrivals=arr, seed=8)
    assert not np.array_equal(base.finish, fast.finish, equal_nan=True)


def test_overheads_on_rjiq_with_levels_match_the_simpy_reference():
    cfg, arr = _rjiq_levels(0.7, n=3_000)
    cfg = dataclasses.replace(cfg, switch_ms=0.5, dispatch_ms=0.25)
    fast, ref = simulate(cfg, arrivals=arr, seed=2), simulate_reference(cfg, arrivals=arr, seed=2)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)


def test_dispatch_delays_each_start_and_switch_costs_only_a_change_of_model():
    arr, rate = _bursty(0.3, n=3_000)
    cfg = ex.contender_config("jellyfish+", ZOO, K, SLO, rate_qps=rate, scale="smoke")
    d, sw = 4.0, 9.0
    res = simulate(_with(cfg, dispatch_ms=d, switch_ms=sw), arrivals=arr, seed=1)
    # a batch's length is l(m, b), plus the switch cost where its worker last ran another model
    length = res.finish - res.start
    lb = ZOO.latency_ms[res.model, res.bsize - 1]
    extra = length - lb
    assert np.all(np.isclose(extra, 0.0, atol=1e-9) | np.isclose(extra, sw, atol=1e-9))
    assert np.isclose(extra, sw, atol=1e-9).any() and np.isclose(extra, 0.0, atol=1e-9).any()
    # the worker is held from the decision: no batch starts sooner than d after its first query arrived
    assert np.all(res.start - arr >= d - 1e-9)
    # a contender that never changes model pays no switch cost at all
    fixed = ex.contender_config("jellyfish+@mean", ZOO, K, SLO, rate_qps=rate)
    _same(simulate(fixed, arrivals=arr, seed=1), simulate(_with(fixed, switch_ms=sw), arrivals=arr, seed=1))


def test_flex_preemption_delay_lengthens_only_preempting_batches():
    arr, rate = _bursty(0.9, n=6_000, seed=5)
    cfg = ex.contender_config("flex", ZOO, K, SLO, rate_qps=rate)
    pd_ = 6.0
    res = simulate(_with(cfg, preempt_ms=pd_), arrivals=arr, seed=5)
    s = res.served
    extra = (res.finish - res.start - ZOO.latency_ms[res.model, res.bsize - 1])[s]
    assert np.all(np.isclose(extra, 0.0, atol=1e-9) | np.isclose(extra, pd_, atol=1e-9))
    # completed preempting batches (one per distinct start on a worker) are at most the preemptions
    starts = np.unique(np.round(res.start[s][np.isclose(extra, pd_, atol=1e-9)], 9))
    assert 0 < starts.size <= res.preemptions
    # FLEX-NP never preempts, and switch cost on FLEX's single model never applies
    _same(simulate(cfg, arrivals=arr, seed=5), simulate(_with(cfg, switch_ms=5.0), arrivals=arr, seed=5))


def test_overhead_and_level_errors():
    kw = dict(workers=K, slo_ms=SLO)
    for name in ("switch_ms", "dispatch_ms", "preempt_ms"):
        with pytest.raises(ConfigError, match=rf"^{name} = -1.0: must be a finite number of ms >= 0"):
            ServingConfig(ZOO, policy="flex", **{name: -1.0}, **kw)
    with pytest.raises(ConfigError, match=r"^preempt_ms = 2.0: only policy 'flex' preempts"):
        ServingConfig(ZOO, policy="flex-np", preempt_ms=2.0, **kw)
    told = ex.contender_config("r-jiq", ZOO, K, SLO, rate_qps=500.0, a_star=A_STAR)
    with pytest.raises(ConfigError, match=r"^class_p = .*one split per load level \(3\)"):
        ServingConfig(ZOO, policy="r-jiq", a_star=A_STAR, worker_models=told.worker_models,
                      plan_loads=(100.0, 200.0, 300.0), class_p=told.class_p, **kw)
    with pytest.raises(ConfigError, match=r"^class_p = .*summing to 1, per load level"):
        ServingConfig(ZOO, policy="r-jiq", a_star=A_STAR, worker_models=told.worker_models,
                      plan_loads=(100.0, 200.0), class_p=(told.class_p, (0.5, 0.6)), **kw)
    with pytest.raises(ConfigError, match=r"^plan = .*splits in class_p"):
        ServingConfig(ZOO, policy="r-jiq", a_star=A_STAR, worker_models=told.worker_models,
                      plan_loads=(100.0,), class_p=(told.class_p,), plan=(("x", 1),), **kw)
    with pytest.raises(ConfigError, match=r"^plan = .*one \(model, batch cap\) per load level"):
        ServingConfig(ZOO, policy="flex", plan_loads=(100.0, 200.0), **kw)

