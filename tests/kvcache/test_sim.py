"""The continuous-time batch simulation, the batch-time model and the substitute workload."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import instances as ins, workload as wl
from infsched.kvcache.model import check_schedule
from infsched.kvcache.policies import mc_benchmark, mc_sf
from infsched.kvcache.sim import SimConfig, simulate
from infsched.kvcache.timing import BatchTimeModel

M = 16492
UNIT = BatchTimeModel(kappa=1.0, floor_ms=1000.0, intercept_ms=0.0, per_token_ms=0.0,
                      per_kv_token_ms=0.0, prefill_sq_ms=0.0)          # every batch takes 1 s
CONFIGS = [SimConfig("mc-sf"), SimConfig("mc-benchmark"), SimConfig("alpha", alpha=0.25),
           SimConfig("alpha-beta", alpha=0.1, beta=0.2)]


def test_substitute_matches_the_papers_statistics():
    """A13: the frozen 10k sample has the paper's medians exactly and its means within 3 %."""
    prompt, output = wl.substitute_dataset()
    assert np.median(prompt) == 11 and np.median(output) == 45
    assert prompt.mean() == pytest.approx(40.62, rel=0.03)
    assert output.mean() == pytest.approx(85.32, rel=0.03)
    again = wl.substitute_dataset()
    assert np.array_equal(prompt, again[0]) and np.array_equal(output, again[1])


@pytest.mark.parametrize("policy, rounds", [("mc-sf", mc_sf), ("mc-benchmark", mc_benchmark)])
def test_unit_batches_reproduce_the_round_model(policy, rounds):
    """With every batch 1 s long and integer arrivals, the simulation is the round model:
    the same total latency as the schedule of Algorithm 1 / 2."""
    for seed in range(10):
        inst = ins.arrival_model_2(np.random.default_rng(seed))
        res = simulate(inst.arrival, inst.prompt, inst.output, inst.M, SimConfig(policy), UNIT)
        tel = check_schedule(inst, rounds(inst)).require().tel
        assert res.terminated and np.sum(res.latency) == pytest.approx(tel)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.label)
def test_memory_never_exceeds_M_and_every_request_completes(config):
    """A1 for the real-data runs: 2000 requests at 50/s, memory after every round ≤ M; the
    memory-constrained policies fill it exactly under that load."""
    a, s, o = wl.poisson_requests(2000, 50.0, np.random.default_rng(3))
    res = simulate(a, s, o, M, config, clearing_rng=np.random.default_rng(4))
    assert res.terminated and np.all(np.isfinite(res.latency))
    assert res.peak_memory <= M and np.all(np.diff(res.clock) > 0)
    assert np.all(res.latency > 0)
    if config.policy.startswith("mc"):
        assert res.peak_memory == M and res.evictions == 0


def test_mc_sf_is_fastest_on_table_1_setting():
    """Spec §7 check 10 in one seed: n = 1000 at 50/s, κ = 1.73 — MC-SF has the lowest mean
    latency, MC-Benchmark beats the α variants."""
    a, s, o = wl.poisson_requests(1000, 50.0, np.random.default_rng(11))
    timing = BatchTimeModel(kappa=1.73)
    mean = {c.label: simulate(a, s, o, M, c, timing, np.random.default_rng(5)).mean_latency
            for c in CONFIGS}
    assert min(mean, key=mean.get) == "MC-SF"
    assert mean["MC-Benchmark"] < min(v for k, v in mean.items() if k.startswith("α"))


def test_overflow_clears_and_a_cycle_is_stopped():
    """α = 0.01 admits two long requests that outgrow M together: both are cleared, re-admitted,
    and cleared again, forever; the run stops and says so. α = 0.85 (3 of 20 tokens for new
    prompts) admits one at a time, and both finish."""
    a, s, o = np.zeros(2), np.ones(2, dtype=int), np.full(2, 15)
    loop = simulate(a, s, o, 20, SimConfig("alpha", alpha=0.01, max_evictions_per_request=5), UNIT)
    assert not loop.terminated and loop.evictions > 10 and np.isnan(loop.mean_latency)
    safe = simulate(a, s, o, 20, SimConfig("alpha", alpha=0.85), UNIT)
    assert safe.terminated and safe.evictions == 0 and safe.peak_memory == 16
    assert sorted(safe.latency.tolist()) == [15.0, 30.0]


def test_beta_clearing_uses_its_own_generator():
    a, s, o = np.zeros(4), np.ones(4, dtype=int), np.full(4, 12)
    cfg = SimConfig("alpha-beta", alpha=0.01, beta=0.5)
    one = simulate(a, s, o, 30, cfg, UNIT, np.random.default_rng(1))
    two = simulate(a, s, o, 30, cfg, UNIT, np.random.default_rng(1))
    assert one.evictions > 0 and np.array_equal(one.latency, two.latency)


def test_batch_time_model():
    t = BatchTimeModel()
    assert t.empty_batch_seconds == pytest.approx(0.057)
    assert t.seconds(0, 0.0, 1000, 0.0) == pytest.approx((42.0 + 316.0) / 1000)
    assert BatchTimeModel(kappa=2.0).seconds(10, 5000.0, 0, 0) == pytest.approx(
        2 * (57.0 + 1.1e-4 * 5000) / 1000)


@pytest.mark.parametrize("make, match", [
    (lambda: SimConfig("lifo"), "policy = 'lifo'"),
    (lambda: SimConfig("alpha", alpha=1.0), "alpha = 1.0"),
    (lambda: simulate([], [], [], 16, SimConfig()), "must hold at least one request"),
    (lambda: simulate([0.0, 1.0], [2, 3], [4, 0], 16, SimConfig()), r"output\[1\] = 0: must be >= 1"),
    (lambda: simulate([0.0, -1.0], [2, 3], [4, 1], 16, SimConfig()), r"arrival\[1\] = -1.0"),
    (lambda: SimConfig("alpha", alpha=0.0), r"alpha = 0.0: must be a number in \(0, 1\)"),
    (lambda: SimConfig("alpha-beta", alpha=0.1, beta=1.0), "beta = 1.0"),
    (lambda: SimConfig("alpha-beta", alpha=0.1, beta=0.0), "beta = 0.0"),
    (lambda: BatchTimeModel(kappa=0), "kappa = 0"),
    (lambda: simulate([0.0], [5], [20], 16, SimConfig()), r"prompt \+ output"),
    (lambda: simulate([0.0], [5], [2], 16, SimConfig("alpha-beta", alpha=0.1, beta=0.1)),
     "clearing_rng"),
    (lambda: wl.poisson_requests(20_000, 50.0, np.random.default_rng(0)), "n = 20000"),
    (lambda: wl.LengthModel(mean=5.0, median=11.0), "mean = 5.0"),
])
def test_bad_arguments(make, match):
    with pytest.raises(ConfigError, match=match):
        make()


@pytest.mark.parametrize("rate", [50.0, 10.0])
def test_compiled_engine_equals_the_reference_loop(rate):
    """The numba engine and the readable Python loop give the same run, round for round, for
    every policy, including runs that clear, stall and loop until the eviction limit."""
    from infsched.kvcache import workload

    a, s, o = workload.poisson_requests(1500, rate, np.random.default_rng(7))
    configs = CONFIGS + [SimConfig("alpha", alpha=0.02), SimConfig("alpha-beta", alpha=0.1, beta=0.5),
                         SimConfig("alpha-beta", alpha=0.02, beta=0.01),
                         SimConfig("alpha-beta", alpha=0.1, beta=0.1, max_rounds=500)]
    for cfg in configs:
        runs = [simulate(a, s, o, 16492, cfg, BatchTimeModel(kappa=1.6), np.random.default_rng(3),
                         engine=e) for e in ("python", "numba")]
        py, nb = runs
        assert (py.rounds, py.evictions, py.stalls, py.terminated) == \
            (nb.rounds, nb.evictions, nb.stalls, nb.terminated), cfg
        for field in ("latency", "memory", "clock", "queued"):
            assert np.array_equal(getattr(py, field), getattr(nb, field), equal_nan=True), (cfg, field)
