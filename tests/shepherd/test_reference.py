"""The simpy reference (infsched.shepherd.reference) against the fast engine: the same
completion time for every request, the same batches, on small random cases of every policy and
option; and both against closed forms (M/D/1, the Fig 3 and Thm A.1 toys)."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.shepherd.model import ModelSet, Requests
from infsched.shepherd.reference import simulate_reference
from infsched.shepherd.sim import simulate

from .test_sim import one_model, thm_a1

POLICIES = ("flex", "flex-np", "clockwork")


def small_case(seed: int, n: int = 300):
    """2–4 GPUs' worth of load over a few models: bursts (simultaneous arrivals), integer-ms
    times (ties), mixed SLOs; odd seeds jitter the SLOs so deadlines are unsorted per model."""
    rng = np.random.default_rng(seed)
    M = int(rng.integers(1, 4))
    ms = ModelSet(tuple(f"m{i}" for i in range(M)), rng.uniform(0.1, 2, M).round(2),
                  rng.uniform(0.5, 8, M).round(2), rng.integers(5, 50, M))
    a = np.sort(np.r_[rng.integers(0, 400, n // 2),
                      np.repeat(rng.integers(0, 400, 10), n // 20)]).astype(float)
    m = rng.integers(0, M, a.size)
    slo = rng.choice([15.0, 30.0, 60.0], M)[m]
    if seed % 2:
        slo = slo + rng.uniform(0, 10, a.size).round(1)
    return Requests.with_slo(a, m, slo), ms


def assert_same(a, b):
    assert np.array_equal(a.completion, b.completion, equal_nan=True)
    assert np.array_equal(a.batch, b.batch)
    for f in ("batch_gpu", "batch_model", "batch_size", "batch_start", "batch_end",
              "batch_preempted"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert np.array_equal(a.released, b.released)


OPTIONS = [dict(), dict(batchgen="literal"), dict(eps_exec=0.05),
           dict(preempt_delay="mean"), dict(preempt_delay="uniform", eps_exec=0.02),
           dict(controller_us=50.0), dict(preempt_delay="mean", controller_us=50.0, lam=2.0),
           dict(cw_pow2=True)]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("policy", POLICIES)
def test_engine_equals_reference(seed, policy):
    req, ms = small_case(seed)
    n_gpus = 2 + seed % 3
    preempted = 0
    for opt in OPTIONS:
        if policy != "flex" and ("preempt_delay" in opt or "lam" in opt):
            continue
        if policy != "clockwork" and "cw_pow2" in opt:
            continue
        fast = simulate(req, ms, n_gpus, policy, seed=seed, **opt)
        ref = simulate_reference(req, ms, n_gpus, policy, seed=seed, **opt)
        assert_same(fast, ref)
        preempted += fast.preemptions
    if policy == "flex":
        assert preempted > 0          # the cases exercise preemption


def test_reference_toys():
    """Fig 3 and Thm A.1 (ω = 100) in the reference, as in the engine."""
    ms = one_model(10.0, 0.0)
    req = Requests.with_slo([0, 0, 0, 40, 80, 80, 80, 80, 80, 80], np.zeros(10, int), 10.0)
    for p in POLICIES:
        assert simulate_reference(req, ms, 1, p).ok.sum() == 3
        six = simulate_reference(req, ms, 6, p)
        assert six.ok.sum() == 10 and six.utilization(0, 100) == pytest.approx(1 / 6)
    req, ms = thm_a1(100)
    got = {p: simulate_reference(req, ms, 1, p, b_max=100).ok.sum() for p in POLICIES}
    assert got == {"flex": 100, "flex-np": 1, "clockwork": 1}


@pytest.mark.parametrize("policy", POLICIES)
def test_md1_closed_form(policy):
    """No batching (B_max = 1), one model, deterministic service D = 1 ms, Poisson arrivals at
    ρ = 0.5, one GPU, deadlines out of reach of nothing: every policy is FIFO and the mean
    latency is Pollaczek–Khinchine's D + ρD/(2(1−ρ)) = 1.5 ms."""
    rng = np.random.default_rng(11)
    a = np.cumsum(rng.exponential(2.0, 100_000))
    req = Requests.with_slo(a, np.zeros(a.size, int), 1e9)
    r = simulate(req, one_model(1.0, 0.0), 1, policy, b_max=1)
    assert r.ok.all()
    assert r.latency.mean() == pytest.approx(1.5, rel=0.03)
    assert r.utilization(0.0, a[-1]) == pytest.approx(0.5, rel=0.03)
    small = Requests.with_slo(a[:1500], np.zeros(1500, int), 1e9)
    assert_same(simulate(small, one_model(1.0, 0.0), 1, policy, b_max=1),
                simulate_reference(small, one_model(1.0, 0.0), 1, policy, b_max=1))


def test_deterministic_hand_case():
    """Two models on one GPU, worked by hand: at 0 the queue holds 3 of A (ℓ_A(b) = b + 1) and
    2 of B (ℓ_B(b) = 2b); FLEX takes A's 3 (largest), runs [0, 4); then B's 2, [4, 8).
    Clockwork takes B first (earlier deadline 9): b = 2, [0, 4); then A's 3, [4, 8)."""
    ms = ModelSet(("A", "B"), np.array([1.0, 2.0]), np.array([1.0, 0.0]), np.array([4, 4]))
    req = Requests(np.zeros(5), np.array([0, 0, 0, 1, 1]), np.array([20.0, 20, 20, 9, 9]))
    for engine in (simulate, simulate_reference):
        f = engine(req, ms, 1, "flex")
        assert f.completion.tolist() == [4.0, 4.0, 4.0, 8.0, 8.0]
        c = engine(req, ms, 1, "clockwork")
        assert c.completion.tolist() == [8.0, 8.0, 8.0, 4.0, 4.0]
