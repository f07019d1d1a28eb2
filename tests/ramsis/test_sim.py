"""The RAMSIS and baseline simulators (``infsched.ramsis.sim``): against the simpy reference
query by query, against closed forms, and on their error paths (spec §2.11, §3, §4).

The equivalence cases use a small three-model profile (affine latencies with a spread, B = 8),
random-but-sensible policy tables whose action differs per load (so the load monitor matters),
N = 6 (so the fallback for n > N fires), and partial batches (b < n) in the RAMSIS tables.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.profiles import QUANTILE_LEVELS, Profile
from infsched.ramsis import sim
from infsched.ramsis.baselines import BaselineTable
from infsched.ramsis.policy import PolicyTable
from infsched.ramsis.reference import (
    simulate_central_reference,
    simulate_ramsis_reference,
)
from infsched.workload import PiecewiseRate, piecewise_poisson_arrivals, poisson_arrivals

SLO = 120.0
N_MAX = 6
PER_WORKER_QPS = np.array([25.0, 50.0, 75.0, 100.0, 125.0])


def toy_profile(spread: bool = True) -> Profile:
    b = np.arange(1, 9)
    lat = np.array([10 + 6.0 * (b - 1), 25 + 9.0 * (b - 1), 60 + 20.0 * (b - 1)])
    spr = None
    if spread:
        spr = np.empty(lat.shape + (5,))
        spr[0] = [0.80, 0.92, 1.0, 1.04, 1.10]
        spr[1] = [0.60, 0.85, 1.0, 1.10, 1.50]
        spr[2] = [0.90, 0.95, 1.0, 1.02, 1.05]
    return Profile("toy", ("fast", "mid", "slow"), np.array([60.0, 72.0, 80.0]), lat, spr)


def one_model_profile(latency_ms, B: int = 1, spread=None) -> Profile:
    lat = np.full((1, B), float(latency_ms))
    spr = None if spread is None else np.broadcast_to(np.asarray(spread, float), (1, B, 5))
    return Profile("one", ("only",), np.array([70.0]), lat, spr)


def random_policy(profile: Profile, K: int, seed: int, *, partial: bool = True,
                  J: int = 13) -> PolicyTable:
    """A policy per load: mostly the (p+1)-th most accurate model meeting the slack, sometimes a
    random model; batch n (maximal) or, with ``partial``, sometimes a random b < n."""
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, SLO, J)
    loads = K * PER_WORKER_QPS
    P, M = loads.size, profile.n_models
    lat = profile.latency_table(N_MAX)
    model = np.full((P, N_MAX + 1, J), -1)
    batch = np.full((P, N_MAX + 1, J), -1)
    for p in range(P):
        for n in range(1, N_MAX + 1):
            for j in range(J):
                ok = [m for m in range(M) if lat[m, n - 1] <= grid[j]]
                if ok and rng.random() < 0.85:
                    model[p, n, j] = ok[max(len(ok) - 1 - p // 2, 0)]
                else:
                    model[p, n, j] = rng.integers(M)
                maximal = not partial or rng.random() < 0.6
                batch[p, n, j] = n if maximal else rng.integers(1, n + 1)
    return PolicyTable(SLO, K, grid, loads, model, batch, 0, np.zeros(P), np.zeros(P))


def baseline_table(K: int) -> BaselineTable:
    return BaselineTable("toy", K * PER_WORKER_QPS, [2, 1, 1, 0, 0], [1, 2, 3, 4, 6])


def arrivals(K: int, kind: str, seed: int, n_target: int = 4000) -> np.ndarray:
    """Poisson at K·70 QPS, or piecewise: K·30 → K·120 → K·45 QPS in three equal pieces."""
    rng = np.random.default_rng(seed)
    if kind == "constant":
        return poisson_arrivals(K * 70.0 / 1000.0, horizon=n_target / (K * 70.0) * 1000.0, rng=rng)
    T = n_target / (K * 65.0) * 1000.0
    sched = PiecewiseRate((0.0, T / 3, 2 * T / 3), (K * 0.030, K * 0.120, K * 0.045))
    return piecewise_poisson_arrivals(sched, T, rng)


def assert_same_run(fast: sim.SimResult, ref: sim.SimResult) -> None:
    np.testing.assert_array_equal(fast.arrivals, ref.arrivals)
    np.testing.assert_array_equal(fast.worker, ref.worker)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_array_equal(fast.batch_head, ref.batch_head)
    np.testing.assert_allclose(fast.dispatch, ref.dispatch, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.completion, ref.completion, rtol=0, atol=1e-9)
    assert fast.served == ref.served == len(ref.arrivals)
    assert fast.violations == ref.violations
    np.testing.assert_array_equal(fast.queries, ref.queries)
    np.testing.assert_array_equal(fast.satisfied, ref.satisfied)
    np.testing.assert_array_equal(fast.batches, ref.batches)
    assert fast.pending_at_end == ref.pending_at_end
    assert fast.full_batches == ref.full_batches
    assert fast.accuracy == pytest.approx(ref.accuracy, abs=1e-12)
    assert fast.mean_response_ms == pytest.approx(ref.mean_response_ms, rel=1e-12)
    assert fast.mean_wait_ms == pytest.approx(ref.mean_wait_ms, rel=1e-12)
    # metrics agree with the per-query arrays
    assert fast.violations == int(fast.violated.sum())
    assert fast.batches.sum() == np.unique(fast.batch_head).size


# ============================================================================ engine == reference

@pytest.mark.parametrize("K", [1, 3, 7])
@pytest.mark.parametrize("load", ["constant", "monitor"])
@pytest.mark.parametrize("latency", ["p95", "sampled"])
@pytest.mark.parametrize("system", ["ramsis", "central"])
def test_engine_matches_reference_query_by_query(system, latency, load, K):
    """Same arrivals and the same pre-drawn uniforms → identical per-query worker, model, batch,
    dispatch and completion. ``constant``: Poisson at K·70 QPS with the load known;
    ``monitor``: a low/high/low piecewise Poisson rate and the 500 ms load monitor."""
    prof = toy_profile()
    arr = arrivals(K, "constant" if load == "constant" else "piecewise", seed=10 + K)
    kw = dict(slo_ms=SLO, workers=K, latency=latency,
              load_qps=K * 70.0 if load == "constant" else None)
    if system == "ramsis":
        table = random_policy(prof, K, seed=K)
        fast = sim.simulate_ramsis(prof, table, arr, rng=np.random.default_rng(7), record=True,
                                   **kw)
        ref = simulate_ramsis_reference(prof, table, arr, rng=np.random.default_rng(7), **kw)
        np.testing.assert_array_equal(fast.worker, np.arange(arr.size) % K)   # round robin
    else:
        table = baseline_table(K)
        fast = sim.simulate_central(prof, table, arr, rng=np.random.default_rng(7), record=True,
                                    **kw)
        ref = simulate_central_reference(prof, table, arr, rng=np.random.default_rng(7), **kw)
    assert_same_run(fast, ref)
    # not a trivial case: batches of several sizes, several models where the system can switch
    # (RAMSIS always; the baselines only under the monitor), late queries in the high-load piece
    assert len(np.unique(np.bincount(fast.batch_head)[np.unique(fast.batch_head)])) >= 3
    if system == "ramsis" or load == "monitor":
        assert np.count_nonzero(fast.queries) >= 2
    if load == "monitor":
        assert 0 < fast.violations < fast.served


@pytest.mark.parametrize("system", ["ramsis", "central"])
def test_engine_matches_reference_on_the_image_profile(system):
    """The same check on the artifact's 9 image models (B = 32, their measured spread), K = 7,
    SLO 150, sampled latencies and the load monitor on a 150 → 420 → 200 QPS piecewise rate;
    RAMSIS with a greedy N = 32 table, the baselines with Jellyfish+'s table."""
    from infsched.profiles import load_profile
    from infsched.ramsis.baselines import jellyfish_plus

    prof = load_profile("ramsis-image").pareto_front()
    K, slo, loads = 7, 150.0, np.array([100.0, 200.0, 300.0, 400.0])
    sched = PiecewiseRate((0.0, 4000.0, 8000.0), (0.15, 0.42, 0.20))
    arr = piecewise_poisson_arrivals(sched, 12_000.0, np.random.default_rng(8))
    kw = dict(slo_ms=slo, workers=K, latency="sampled")
    if system == "ramsis":
        grid, N = np.linspace(0.0, slo, 21), 32
        lat = prof.latency_table(N)
        model = np.zeros((loads.size, N + 1, grid.size), int)
        for p in range(loads.size):
            for n in range(1, N + 1):
                for j, T in enumerate(grid):
                    ok = np.flatnonzero(lat[:, n - 1] <= T)
                    model[p, n, j] = ok[max(ok.size - 1 - p, 0)] if ok.size else 0
        batch = np.broadcast_to(np.arange(N + 1)[None, :, None], model.shape)
        table = PolicyTable(slo, K, grid, loads, model, batch, 0, np.zeros(4), np.zeros(4))
        fast = sim.simulate_ramsis(prof, table, arr, rng=np.random.default_rng(9), record=True,
                                   **kw)
        ref = simulate_ramsis_reference(prof, table, arr, rng=np.random.default_rng(9), **kw)
    else:
        table = jellyfish_plus(prof, loads, K, slo)
        fast = sim.simulate_central(prof, table, arr, rng=np.random.default_rng(9), record=True,
                                    **kw)
        ref = simulate_central_reference(prof, table, arr, rng=np.random.default_rng(9), **kw)
    assert_same_run(fast, ref)
    assert np.count_nonzero(fast.queries) >= 3 and fast.violations > 0


def test_equivalence_cases_exercise_monitor_fallback_and_partial_batches():
    """The monitor runs move through several policies, RAMSIS hits the fallback (n > N) and
    serves partial batches (b < n), and the central system uses every model and every worker."""
    prof = toy_profile()
    K = 3
    arr = arrivals(K, "piecewise", seed=13)
    table = random_policy(prof, K, seed=K)
    res = sim.simulate_ramsis(prof, table, arr, slo_ms=SLO, workers=K, record=True)
    est = _estimates(arr, res.dispatch)
    assert len(np.unique([table.lookup(e) for e in est])) >= 4
    n, b = _queue_and_batch(res, K)
    assert np.any(n > N_MAX) and np.any(b < n)
    cres = sim.simulate_central(prof, baseline_table(K), arr, slo_ms=SLO, workers=K, record=True)
    heads = np.unique(cres.batch_head)
    assert len(np.unique(cres.model[heads])) == 3 and len(np.unique(cres.worker)) == K


def _estimates(arr, t):
    """The load monitor, independently: arrivals in (t − 500, t] per second."""
    t = np.asarray(t)
    recent = np.searchsorted(arr, t, side="right") - np.searchsorted(arr, t - 500.0, side="right")
    return recent / 0.5


def _queue_and_batch(res: sim.SimResult, K: int):
    """Per batch: the worker's queue length at dispatch and the batch size, from the record."""
    heads = np.unique(res.batch_head)
    sizes = np.bincount(res.batch_head)[heads]
    n = np.empty(heads.size, np.int64)
    for i, h in enumerate(heads):
        own = res.arrivals[h % K::K]
        n[i] = np.searchsorted(own, res.dispatch[h], side="right") - h // K
    return n, sizes


@pytest.mark.parametrize("K", [1, 4])
def test_ramsis_decisions_follow_the_policy(K):
    """Every recorded RAMSIS batch is the policy's action for the state at its dispatch, with the
    policy picked by an independent numpy load monitor (spec §2.11)."""
    prof = toy_profile()
    arr = arrivals(K, "piecewise", seed=20 + K)
    table = random_policy(prof, K, seed=5)
    res = sim.simulate_ramsis(prof, table, arr, slo_ms=SLO, workers=K, record=True)
    heads = np.unique(res.batch_head)
    n, b = _queue_and_batch(res, K)
    t = res.dispatch[heads]
    p = np.array([table.lookup(e) for e in _estimates(arr, t)])
    slack = SLO - (t - arr[heads])
    j = np.array([table.slack_index(s) for s in slack])
    over = n > N_MAX
    nn = np.minimum(n, N_MAX)
    np.testing.assert_array_equal(np.where(over, 0, table.model[p, nn, j]), res.model[heads])
    np.testing.assert_array_equal(np.where(over, n, table.batch[p, nn, j]), b)
    # non-preemptive FIFO: each worker's batches start after the previous one ends
    for k in range(K):
        hk = heads[heads % K == k]
        assert np.all(res.dispatch[hk][1:] >= res.completion[hk][:-1])
        assert np.all(res.dispatch[hk] >= arr[hk])


@pytest.mark.parametrize("K", [2, 5])
def test_central_dispatch_follows_the_table(K):
    """Each central batch runs the table's model for the monitor's estimate at its dispatch, takes
    min(queue, cap) queries from the head of the FIFO queue, and no worker runs two at once."""
    prof = toy_profile()
    arr = arrivals(K, "piecewise", seed=30 + K)
    table = baseline_table(K)
    res = sim.simulate_central(prof, table, arr, slo_ms=SLO, workers=K, record=True)
    heads = np.unique(res.batch_head)
    sizes = np.bincount(res.batch_head)[heads]
    t = res.dispatch[heads]
    p = np.array([table.lookup(e) for e in _estimates(arr, t)])
    np.testing.assert_array_equal(res.model[heads], table.model[p])
    queued = np.searchsorted(arr, t, side="right") - heads
    np.testing.assert_array_equal(sizes, np.minimum(queued, table.cap[p]))
    assert np.all(np.diff(res.dispatch) >= 0)                        # FIFO
    for w in range(K):
        hw = heads[res.worker[heads] == w]
        assert np.all(res.dispatch[hw][1:] >= res.completion[hw][:-1])


# ============================================================================ round robin

@pytest.mark.parametrize("K", [3, 7])
def test_round_robin_equals_independent_workers(K):
    """RAMSIS with K workers = K single-worker runs on the thinned streams k, k + K, … (§3)."""
    prof = toy_profile()
    arr = arrivals(K, "constant", seed=40 + K, n_target=20_000)
    table = random_policy(prof, K, seed=9)
    one = PolicyTable(SLO, 1, table.grid_ms, table.loads_qps, table.model, table.batch,
                      table.fallback, table.expected_accuracy, table.expected_violation)
    load = K * 70.0
    res = sim.simulate_ramsis(prof, table, arr, slo_ms=SLO, workers=K, load_qps=load, record=True)
    for k in range(K):
        sub = sim.simulate_ramsis(prof, one, arr[k::K], slo_ms=SLO, workers=1, load_qps=load,
                                  record=True)
        np.testing.assert_array_equal(sub.model, res.model[k::K])
        np.testing.assert_array_equal(sub.completion, res.completion[k::K])
        np.testing.assert_array_equal(sub.batch_head * K + k, res.batch_head[k::K])


# ============================================================================ closed forms

def test_md1_waiting_time_matches_pollaczek_khinchine():
    """One worker, batch cap 1, deterministic latency D, Poisson arrivals: M/D/1, whose mean wait
    is λD² / (2(1 − ρ)). ρ = 0.7, D = 10 ms: W_q = 11.667 ms. 1e6 queries (batch-means SE ≈ 0.5 %);
    tolerance 2.5 %. The same system run as RAMSIS (K = 1, always one query, model 0) gives the
    same per-query completions."""
    D, rho = 10.0, 0.7
    lam = rho / D
    prof = one_model_profile(D, B=4)
    arr = poisson_arrivals(lam, n=1_000_000, rng=np.random.default_rng(1))
    table = BaselineTable("md1", [1000.0], [0], [1])
    res = sim.simulate_central(prof, table, arr, slo_ms=50.0, workers=1, record=True)
    wq = lam * D * D / (2 * (1 - rho))
    assert res.mean_wait_ms == pytest.approx(wq, rel=0.025)
    assert res.mean_response_ms == pytest.approx(res.mean_wait_ms + D, rel=1e-9)
    assert res.mean_batch == 1.0
    # Little's law on the same path: time-average queue length = λ_eff · W_q
    horizon = res.completion.max()
    area = np.sum(res.dispatch - arr)
    assert area / horizon == pytest.approx(arr.size / horizon * res.mean_wait_ms, rel=1e-9)
    # M/D/1 as a RAMSIS worker that always serves one query
    grid, N = np.linspace(0, 50.0, 6), 60             # the queue never exceeds N = 60 here
    pol = PolicyTable(50.0, 1, grid, [1000.0], np.zeros((1, N + 1, 6), int),
                      np.ones((1, N + 1, 6), int), 0, [0.0], [0.0])
    r2 = sim.simulate_ramsis(prof, pol, arr[:200_000], slo_ms=50.0, workers=1, record=True)
    np.testing.assert_allclose(r2.completion, res.completion[:200_000], rtol=0, atol=1e-9)


@pytest.mark.parametrize("latency", ["p95", "sampled"])
def test_single_query_batches_follow_lindley(latency):
    """RAMSIS, K = 5, every batch one query: each worker is a FIFO single server fed by an
    Erlang-5 stream, so completions obey c_i = max(a_i, c_{i−1}) + s_i on its thinned stream, with
    s_i = D, or D times the spread's inverse CDF at the query's own pre-drawn uniform (one per
    query, in arrival order). N = 40 is never exceeded here, so the fallback never fires."""
    D, K, N = 12.0, 5, 40
    spread = [0.5, 0.9, 1.0, 1.2, 2.0]
    prof = one_model_profile(D, B=3, spread=spread)
    arr = poisson_arrivals(K * 0.06, n=100_000, rng=np.random.default_rng(2))
    grid = np.linspace(0, 100.0, 5)
    pol = PolicyTable(100.0, K, grid, [1.0], np.zeros((1, N + 1, 5), int),
                      np.ones((1, N + 1, 5), int), 0, [0.0], [0.0])
    res = sim.simulate_ramsis(prof, pol, arr, slo_ms=100.0, workers=K, latency=latency,
                              rng=np.random.default_rng(3), record=True)
    assert res.mean_batch == 1.0 and res.mean_wait_ms > 0.5
    u = np.random.default_rng(3).random(arr.size)
    s = D * (np.interp(u, QUANTILE_LEVELS, spread) if latency == "sampled" else np.ones(arr.size))
    for k in range(K):
        a, sk = arr[k::K], s[k::K]
        c = np.empty(a.size)
        prev = -np.inf
        for i in range(a.size):
            prev = max(a[i], prev) + sk[i]
            c[i] = prev
        np.testing.assert_allclose(res.completion[k::K], c, rtol=0, atol=1e-9)


@pytest.mark.parametrize("system", ["ramsis", "central"])
def test_maximal_batching_with_flat_latency(system):
    """One worker, one model whose latency D does not depend on the batch, every batch takes the
    whole queue. Each batch lasts D; after it the worker idles (an Exp(λ) wait) iff no query came
    during it, probability e^{−λD}. So the mean batch is λD + e^{−λD} and, by PASTA, the mean
    response D + (D/2)·λD / (λD + e^{−λD}). λD = 1: 1.3679 and 68.29 ms for D = 50 ms.
    3e5 queries; tolerance 1 % (SE ≈ 0.2 %)."""
    D, lam = 50.0, 0.02
    prof = one_model_profile(D, B=32)
    arr = poisson_arrivals(lam, n=300_000, rng=np.random.default_rng(4))
    if system == "ramsis":
        N = 40
        pol = PolicyTable(200.0, 1, np.linspace(0, 200.0, 3), [1.0], np.zeros((1, N + 1, 3), int),
                          np.broadcast_to(np.arange(N + 1)[None, :, None], (1, N + 1, 3)), 0,
                          [0.0], [0.0])
        res = sim.simulate_ramsis(prof, pol, arr, slo_ms=200.0, workers=1)
    else:
        res = sim.simulate_central(prof, BaselineTable("all", [1.0], [0], [1000]), arr,
                                   slo_ms=200.0, workers=1)
    x = lam * D
    assert res.mean_batch == pytest.approx(x + math.exp(-x), rel=0.01)
    assert res.mean_response_ms == pytest.approx(D + D / 2 * x / (x + math.exp(-x)), rel=0.01)


def test_sampled_latencies_follow_the_spread():
    """At a load so low that nobody waits, a batch of one's response time is l(m, 1) times a draw
    from the spread: its empirical median and p95 match the profile's (1e5 queries, ±1 %)."""
    prof = toy_profile()
    arr = np.arange(100_000) * 1000.0                    # one query per second
    table = BaselineTable("mid", [1.0], [1], [1])
    res = sim.simulate_central(prof, table, arr, slo_ms=SLO, workers=1, latency="sampled",
                               rng=np.random.default_rng(5), record=True)
    ratio = res.response_ms / prof.latency(1, 1)
    assert np.quantile(ratio, 0.5) == pytest.approx(prof.spread[1, 0, 1], rel=0.01)
    assert np.quantile(ratio, 0.95) == pytest.approx(1.0, rel=0.01)
    assert ratio.min() >= prof.spread[1, 0, 0] and ratio.max() <= prof.spread[1, 0, -1]
    assert res.mean_wait_ms == 0.0


def test_large_batches_use_linear_extrapolation_and_last_spread():
    """A fallback batch beyond the profiled B runs l(m, B) + (b − B)·slope (the artifact's rule),
    as Profile.latency computes it."""
    prof = toy_profile(spread=False)
    arr = np.zeros(20)                                   # 20 queries at once, one worker
    res = sim.simulate_central(prof, BaselineTable("all", [1.0], [2], [20]), arr, slo_ms=SLO,
                               workers=1, record=True)
    assert res.completion[0] == pytest.approx(prof.latency(2, 20))
    assert sim.batch_latency(prof.latency_ms, prof.extrapolation_slope(), 2, 20) == \
        prof.latency(2, 20)


# ============================================================================ accounting

def test_every_arrival_is_served_and_counted():
    """Under overload the queues drain after the last arrival: every query is served and counted
    (pending_at_end says how many were still queued when arrivals stopped)."""
    prof = toy_profile()
    K = 3
    arr = poisson_arrivals(K * 0.4, horizon=5000.0, rng=np.random.default_rng(6))
    table = random_policy(prof, K, seed=1)
    runs = (sim.simulate_ramsis(prof, table, arr, slo_ms=SLO, workers=K, load_qps=1200.0,
                                record=True),
            sim.simulate_central(prof, baseline_table(K), arr, slo_ms=SLO, workers=K,
                                 load_qps=1200.0, record=True))
    for run in runs:
        assert run.served == arr.size and np.all(np.isfinite(run.completion))
        assert run.pending_at_end == int(np.sum(run.dispatch > arr[-1])) > 0
        assert run.violation_rate > 0.5
        sat = ~run.violated
        assert run.accuracy == pytest.approx(prof.accuracy[run.model[sat]].mean())
        assert run.mean_accuracy == pytest.approx(prof.accuracy[run.model].mean())
        assert run.query_fraction.sum() == pytest.approx(1.0)
        assert run.batch_fraction.sum() == pytest.approx(1.0)
        assert run.mean_batch == pytest.approx(run.served / run.batches.sum())
        assert 0.0 < run.full_batch_fraction <= 1.0
    # a maximal-batching policy takes the whole queue at every decision, overflow included
    assert runs[0].full_batches < runs[0].batches.sum()
    maximal = sim.simulate_ramsis(prof, random_policy(prof, K, seed=1, partial=False), arr,
                                  slo_ms=SLO, workers=K, load_qps=1200.0)
    assert maximal.full_batches == maximal.batches.sum()


def test_deadline_is_inclusive():
    """A query completing exactly at arrival + SLO meets its deadline (violation iff later)."""
    prof = one_model_profile(40.0)
    table = BaselineTable("x", [1.0], [0], [1])
    res = sim.simulate_central(prof, table, [0.0, 0.0, 0.0], slo_ms=80.0, workers=1, record=True)
    np.testing.assert_array_equal(res.completion, [40.0, 80.0, 120.0])
    assert res.violations == 1 and res.accuracy == 70.0


def test_empty_arrivals():
    prof = toy_profile()
    res = sim.simulate_central(prof, baseline_table(1), np.empty(0), slo_ms=SLO, workers=1)
    assert res.served == 0 and math.isnan(res.violation_rate) and math.isnan(res.accuracy)
    res = sim.simulate_ramsis(prof, random_policy(prof, 2, 0), [], slo_ms=SLO, workers=2)
    assert res.served == 0


def test_quantile_levels_match_the_profile_module():
    assert tuple(sim.QUANTILE_LEVELS) == tuple(QUANTILE_LEVELS)


# ============================================================================ errors

def _ramsis_args(**over):
    prof = toy_profile()
    args = dict(profile=prof, policy=random_policy(prof, 3, 0), arrivals_ms=[1.0, 2.0, 3.0],
                slo_ms=SLO, workers=3)
    args.update(over)
    return args


@pytest.mark.parametrize("over, words", [
    (dict(arrivals_ms=[3.0, 1.0, 2.0]), ("arrivals_ms", "sorted")),
    (dict(arrivals_ms=[[1.0, 2.0]]), ("arrivals_ms", "1-D")),
    (dict(arrivals_ms=[1.0, np.nan]), ("arrivals_ms", "finite")),
    (dict(workers=0), ("workers = 0", ">= 1")),
    (dict(workers=2.5), ("workers",)),
    (dict(workers=4), ("workers = 4", "solved for (3)")),
    (dict(slo_ms=0.0), ("slo_ms = 0.0", "> 0")),
    (dict(slo_ms=100.0), ("slo_ms = 100.0", "120")),
    (dict(latency="p99"), ("latency = 'p99'", "'p95'", "'sampled'")),
    (dict(latency="sampled"), ("rng", "Generator")),
    (dict(load_qps=-5.0), ("load_qps",)),
    (dict(monitor_window_ms=0.0), ("monitor_window_ms",)),
    (dict(policy="greedy"), ("policy", "PolicyTable")),
])
def test_simulate_ramsis_rejects_bad_input(over, words):
    with pytest.raises(ConfigError) as err:
        args = _ramsis_args(**over)
        sim.simulate_ramsis(args.pop("profile"), args.pop("policy"), args.pop("arrivals_ms"),
                            **args)
    for w in words:
        assert w in str(err.value)


def test_policy_table_must_fit_the_profile():
    prof = toy_profile()
    pol = random_policy(prof, 3, 0)
    bad_batch = pol.batch.copy()
    bad_batch[0, 2, 3] = 3                               # more than the 2 queued
    bad = PolicyTable(SLO, 3, pol.grid_ms, pol.loads_qps, pol.model, bad_batch, 0,
                      pol.expected_accuracy, pol.expected_violation)
    with pytest.raises(ConfigError, match="policy.batch"):
        sim.simulate_ramsis(prof, bad, [1.0], slo_ms=SLO, workers=3)
    bad_model = pol.model.copy()
    bad_model[0, 1, 0] = 3
    bad = PolicyTable(SLO, 3, pol.grid_ms, pol.loads_qps, bad_model, pol.batch, 0,
                      pol.expected_accuracy, pol.expected_violation)
    with pytest.raises(ConfigError, match="policy.model"):
        sim.simulate_ramsis(prof, bad, [1.0], slo_ms=SLO, workers=3)
    bad = PolicyTable(SLO, 3, pol.grid_ms, pol.loads_qps, pol.model, pol.batch, 5,
                      pol.expected_accuracy, pol.expected_violation)
    with pytest.raises(ConfigError, match="policy.fallback"):
        sim.simulate_ramsis(prof, bad, [1.0], slo_ms=SLO, workers=3)


def test_simulate_central_rejects_bad_input():
    prof = toy_profile()
    with pytest.raises(ConfigError, match="table"):
        sim.simulate_central(prof, {"model": [0]}, [1.0], slo_ms=SLO, workers=1)
    with pytest.raises(ConfigError, match="table.model"):
        sim.simulate_central(prof, BaselineTable("x", [1.0], [7], [1]), [1.0], slo_ms=SLO,
                             workers=1)
    with pytest.raises(ConfigError, match="has none"):
        sim.simulate_central(toy_profile(spread=False), baseline_table(1), [1.0], slo_ms=SLO,
                             workers=1, latency="sampled", rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match="workers = 0"):
        sim.simulate_central(prof, baseline_table(1), [1.0], slo_ms=SLO, workers=0)
    with pytest.raises(ConfigError, match="sorted"):
        simulate_central_reference(prof, baseline_table(1), [2.0, 1.0], slo_ms=SLO, workers=1)
    res = sim.simulate_central(prof, baseline_table(1), [1.0], slo_ms=SLO, workers=1)
    with pytest.raises(ConfigError, match="record=True"):
        res.response_ms
