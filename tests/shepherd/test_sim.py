"""The fast FLEX / SHEPHERD-NP / Clockwork engine (infsched.shepherd.sim): the spec's exact
toys (Fig 3, Thm A.1, Fig 11(a)), BATCHGEN against brute force, and the invariants every run
must keep (deadlines, batch limits, one batch per GPU, the preemption chain of Eq. 21)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.shepherd.model import ModelSet, Requests, model_set
from infsched.shepherd.sim import LAMBDA, batchgen_size, controller_release, latency_table, simulate

POLICIES = ("flex", "flex-np", "clockwork")


def one_model(alpha: float, beta: float, exits: int = 10) -> ModelSet:
    return ModelSet(("X",), np.array([alpha]), np.array([beta]), np.array([exits]))


def fig11a(slo: float, horizon: float = 12000.0) -> tuple[Requests, ModelSet]:
    """Spec §3 Fig 11(a): RN18 bursts of 1024 every 120 ms from t=5, RS269 one per ms."""
    cv = model_set("cv16")
    ms = cv.subset([cv.names.index("RN18"), cv.names.index("RS269")])
    ta = np.repeat(np.arange(5.0, horizon, 120.0), 1024)
    tb = np.arange(0.0, horizon, 1.0)
    m = np.r_[np.zeros(ta.size, int), np.ones(tb.size, int)]
    return Requests.with_slo(np.r_[ta, tb], m, slo), ms


def poisson_cv16(rate_per_s: float, horizon_ms: float, seed: int = 0, slo: float = 250.0):
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate_per_s * horizon_ms / 1000.0)
    a = np.sort(rng.uniform(0.0, horizon_ms, n))
    return Requests.with_slo(a, rng.integers(0, 16, n), slo)


def random_case(seed: int, n: int = 2000):
    """A few models, bursts with simultaneous arrivals, mixed SLOs (unsorted deadlines per model
    on odd seeds), heavy enough to preempt."""
    rng = np.random.default_rng(seed)
    M = int(rng.integers(1, 5))
    ms = ModelSet(tuple(f"m{i}" for i in range(M)), rng.uniform(0.05, 2, M).round(2),
                  rng.uniform(0.5, 8, M).round(2), rng.integers(5, 60, M))
    span = n * 1.3
    a = np.sort(np.r_[rng.integers(0, span, n // 2),
                      np.repeat(rng.integers(0, span, n // 40), 20)]).astype(float)
    m = rng.integers(0, M, a.size)
    slo = rng.choice([12.0, 30.0, 80.0], M)[m]
    if seed % 2:
        slo = slo + rng.uniform(0, 20, a.size).round(1)
    return Requests.with_slo(a, m, slo), ms


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("kw, name", [
    (dict(policy="edf"), "policy"),
    (dict(n_gpus=0), "n_gpus"),
    (dict(lam=1.0), "lam"),
    (dict(lam=float("inf")), "lam"),
    (dict(b_max=0), "b_max"),
    (dict(batchgen="greedy"), "batchgen"),
    (dict(preempt_delay="max"), "preempt_delay"),
    (dict(eps_exec=-0.1), "eps_exec"),
    (dict(controller_us=-1.0), "controller_us"),
    (dict(seed=-1), "seed"),
])
def test_config_errors_name_the_parameter(kw, name):
    req = Requests.with_slo([0.0, 1.0], [0, 0], 10.0)
    args = dict(requests=req, models=one_model(1.0, 1.0), n_gpus=1, policy="flex")
    args.update(kw)
    with pytest.raises(ConfigError, match=name):
        simulate(**args)


def test_zero_gpus_says_group_limit_zero_not_allowed():
    req = Requests.with_slo([0.0], [0], 10.0)
    with pytest.raises(ConfigError, match="n_gpus.*group limit of zero is not allowed"):
        simulate(req, one_model(1.0, 1.0), 0, "flex")


def test_model_index_out_of_range():
    req = Requests.with_slo([0.0, 1.0], [0, 3], 10.0)
    with pytest.raises(ConfigError, match="requests.model"):
        simulate(req, model_set("cv16").subset([0, 1]), 1, "clockwork")


def test_empty_requests():
    r = simulate(Requests.with_slo([], [], 10.0), one_model(1.0, 1.0), 2, "flex")
    assert r.n == 0 and r.batches == 0 and r.utilization(0, 10) == 0.0


# ----------------------------------------------------------------------------- exact toys

@pytest.mark.parametrize("policy", POLICIES)
def test_fig3_toy(policy):
    """Spec §3 Fig 3 / A2: 1 GPU meets 3 of 10; 6 GPUs meet all at utilization 100/600."""
    ms = one_model(10.0, 0.0)
    req = Requests.with_slo([0, 0, 0, 40, 80, 80, 80, 80, 80, 80], np.zeros(10, int), 10.0)
    one = simulate(req, ms, 1, policy)
    assert one.ok.sum() == 3 and (~one.ok).sum() == 7
    six = simulate(req, ms, 6, policy)
    assert six.ok.sum() == 10
    assert six.utilization(0.0, 100.0) == pytest.approx(100 / 600)
    assert six.busy_ms.sum() == pytest.approx(100.0)


def thm_a1(omega: int, eps: float = 0.5):
    """Thm A.1: X1 = one request at 0 with deadline 1; X2 = ω requests at ε, deadline 1 + ε;
    ℓ = 1 for every batch size (α = 0, β = 1)."""
    a = np.r_[0.0, np.full(omega, eps)]
    d = np.r_[1.0, np.full(omega, 1.0 + eps)]
    return Requests(a, np.zeros(omega + 1, int), d), one_model(0.0, 1.0)


@pytest.mark.parametrize("omega", [1, 10, 100, 1000])
def test_thm_a1_instance(omega):
    """Spec claim 3 / A3 (Fig 4 scenario B): FLEX preempts for the burst and gets ω (= OPT for
    ω ≥ λ); non-preemptive FLEX-NP and Clockwork are stuck with X1's single request."""
    req, ms = thm_a1(omega)
    b_max = max(omega, 1)
    flex = simulate(req, ms, 1, "flex", b_max=b_max)
    assert flex.ok.sum() == (omega if omega >= LAMBDA else 1)
    assert flex.preemptions == (1 if omega >= LAMBDA else 0)
    assert simulate(req, ms, 1, "flex-np", b_max=b_max).ok.sum() == 1
    assert simulate(req, ms, 1, "clockwork", b_max=b_max).ok.sum() == 1


def test_literal_and_largest_differ_on_a_tight_head():
    """A head request that only fits alone: "largest" skips it for a batch of 4, the literal
    reading of Alg. 2 is stuck behind it."""
    ms = one_model(1.0, 1.0)
    req = Requests([0.0, 0.0, 0.0, 0.0, 0.0], np.zeros(5, int), np.array([2.0, 5, 5, 5, 5]))
    big = simulate(req, ms, 1, "flex", batchgen="largest")
    lit = simulate(req, ms, 1, "flex", batchgen="literal")
    assert big.batch_size.tolist() == [4] and big.ok.sum() == 4
    assert lit.batch_size[0] == 1 and lit.ok.sum() < 4


def test_clockwork_picks_earliest_deadline_and_pow2():
    """Spec §2.4: r* is the earliest deadline; b is the largest size meeting d_{r*}."""
    ms = ModelSet(("A", "B"), np.array([1.0, 1.0]), np.array([0.0, 0.0]), np.array([4, 4]))
    # model B has the earliest deadline (5.5): b = 5 fits (0 + 5 ≤ 5.5), 6 does not
    a = np.zeros(15)
    m = np.r_[np.zeros(8, int), np.ones(7, int)]
    d = np.r_[np.full(8, 50.0), np.full(7, 5.5)]
    r = simulate(Requests(a, m, d), ms, 1, "clockwork")
    assert (r.batch_model[0], r.batch_size[0]) == (1, 5)
    r2 = simulate(Requests(a, m, d), ms, 1, "clockwork", cw_pow2=True)
    assert (r2.batch_model[0], r2.batch_size[0]) == (1, 4)
    # FLEX instead takes the largest batch: model A's 8 beats B's 5
    f = simulate(Requests(a, m, d), ms, 1, "flex")
    assert (f.batch_model[0], f.batch_size[0]) == (0, 8)


def test_eps_and_preemption_delay_timing():
    """ε_exec stretches execution; the "mean" delay is ℓ_c/(2E) before the new batch starts."""
    ms = one_model(0.0, 10.0, exits=5)
    req = Requests(np.r_[0.0, np.full(4, 1.0)], np.zeros(5, int), np.r_[100.0, np.full(4, 100)])
    r = simulate(req, ms, 1, "flex", eps_exec=0.1, preempt_delay="mean")
    lat = 1.1 * 10.0
    assert r.batch_preempted.tolist() == [True, False]   # 4 ≥ 3.03 × 1: preempted at t = 1
    delay = lat / (2 * 5)
    assert r.batch_start[1] == pytest.approx(1.0 + delay)
    assert r.batch_end[0] == pytest.approx(1.0 + delay)
    assert r.batch_end[1] - r.batch_start[1] == pytest.approx(lat)
    assert r.batch_size[1] == 5                    # the preempted request was re-batched
    assert r.wasted_ms[0] == pytest.approx(1.0 + delay)


# ----------------------------------------------------------------------------- BATCHGEN

def test_batchgen_matches_brute_force():
    """Spec claim 4: the size equals the largest subset with t + ℓ(|B|) ≤ min deadline."""
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(0, 11))
        alpha = float(rng.choice([0.0, 0.5, 1.0, 2.5]))
        beta = float(rng.uniform(0, 3))
        b_max = int(rng.integers(1, 12))
        t = float(rng.uniform(0, 5))
        d = np.round(rng.uniform(0, 25, n), 1)
        size, first = batchgen_size(d, t, alpha, beta, b_max)
        best = 0
        for k in range(1, min(n, b_max) + 1):
            for sub in itertools.combinations(range(n), k):
                if t + (alpha * k + beta) <= d[list(sub)].min():
                    best = k
                    break
        assert size == best, (d, t, alpha, beta, b_max)
        ds = np.sort(d)
        if size:
            assert t + (alpha * size + beta) <= ds[first]          # the window is feasible
            for i in range(first):                                 # ties to the smallest i
                assert min(n - i, b_max) < size or t + (alpha * size + beta) > ds[i]
        lit, lfirst = batchgen_size(d, t, alpha, beta, b_max, literal=True)
        assert lit <= size


# ----------------------------------------------------------------------------- invariants

def check_invariants(r, req: Requests, ms: ModelSet, b_max: int, lam: float, eps: float = 0.0):
    """Every served request made its deadline; batches ≤ b_max; one batch at a time per GPU;
    completed batches hold exactly their members; the Eq. 21 chain bound per GPU."""
    served = r.served
    assert np.all(r.completion[served] <= req.deadline[served])
    assert np.all(r.ok == served)
    assert np.all((r.batch_size >= 1) & (r.batch_size <= b_max))
    L = latency_table(ms, eps, b_max)
    for g in range(r.n_gpus):
        k = np.flatnonzero(r.batch_gpu == g)
        assert np.all(np.diff(k) > 0)
        assert np.all(r.batch_start[k][1:] >= r.batch_end[k][:-1])
    done = np.flatnonzero(~r.batch_preempted)
    assert np.allclose(r.batch_end[done] - r.batch_start[done],
                       L[r.batch_model[done], r.batch_size[done]])
    counts = np.bincount(r.batch[served], minlength=r.batch_size.size)
    assert np.array_equal(counts[done], r.batch_size[done])
    assert np.all(counts[r.batch_preempted] == 0)
    assert np.all(r.batch_model[r.batch[served]] == req.model[served])
    assert np.array_equal(r.completion[served], r.batch_end[r.batch[served]])
    assert np.all(r.batch_start[r.batch[served]] >= req.arrival[served])
    pre, fin = r.preemption_chain()
    assert np.all(pre <= fin / (lam - 1.0) + 1e-9)          # nothing in flight at the end
    if r.policy != "flex":
        assert r.preemptions == 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", POLICIES)
def test_invariants_random(seed, policy):
    req, ms = random_case(seed)
    for bg, delay, eps, lam in [("largest", "none", 0.0, LAMBDA), ("literal", "none", 0.0, 2.0),
                                ("largest", "mean", 0.05, LAMBDA),
                                ("largest", "uniform", 0.0, 1.5)]:
        r = simulate(req, ms, 2 + seed % 3, policy, batchgen=bg, preempt_delay=delay,
                     eps_exec=eps, lam=lam, b_max=16, seed=seed)
        check_invariants(r, req, ms, 16, lam, eps)


def test_invariants_and_preemptions_at_scale():
    """One group at overload (spec §2.2 setting): invariants hold and FLEX preempts."""
    req = poisson_cv16(144000, 400.0)
    ms = model_set("cv16")
    for policy in POLICIES:
        r = simulate(req, ms, 12, policy)
        check_invariants(r, req, ms, 128, LAMBDA)
    lo = poisson_cv16(6000, 2000.0, seed=1)
    r = simulate(lo, ms, 12, "flex")
    check_invariants(r, lo, ms, 128, LAMBDA)
    assert r.preemptions > 0


# ----------------------------------------------------------------------------- Fig 11(a)

#: spec §3 scratch check (12 s, no overheads): SLO -> (SHEPHERD, SHEPHERD-NP, Clockwork) req/s
SCRATCH = {250.0: (4056.0, 4032.0, 1284.0), 90.0: (2984.0, 1131.0, 1286.0)}


@pytest.fixture(scope="module")
def fig11a_goodput():
    out = {}
    for slo in SCRATCH:
        req, ms = fig11a(slo)
        for p in POLICIES:
            r = simulate(req, ms, 1, p)
            out[slo, p] = (r.goodput(0.0, 12000.0), r)
    return out


def test_fig11a_slo250(fig11a_goodput):
    """A7, A8: SHEPHERD ≥ 2.5× Clockwork; NP/SHEPHERD ∈ [0.95, 1.05]; 3.9k–4.2k req/s."""
    sh, np_, cw = (fig11a_goodput[250.0, p][0] for p in POLICIES)
    assert sh / cw >= 2.5
    assert 0.95 <= np_ / sh <= 1.05
    assert 3900 <= sh <= 4200
    for got, want in zip((sh, np_, cw), SCRATCH[250.0]):
        assert got == pytest.approx(want, rel=0.01)


def test_fig11a_slo90(fig11a_goodput):
    """A9: SHEPHERD ≥ 2× NP and Clockwork; NP/CW ∈ [0.75, 1.25]; SHEPHERD in [2800, ceiling].
    The 2983 req/s ceiling (128+128+102 per 120-ms burst) is for stream A; stream B adds a
    couple of RS269 requests, so the total is checked against it with that allowance."""
    sh, np_, cw = (fig11a_goodput[90.0, p][0] for p in POLICIES)
    assert sh / np_ >= 2.0 and sh / cw >= 2.0
    assert 0.75 <= np_ / cw <= 1.25
    r = fig11a_goodput[90.0, "flex"][1]
    a_only = np.count_nonzero(r.ok & (r.model == 0)) / 12.0
    assert a_only <= 358 * 100 / 12.0 + 1e-9
    assert 2800 <= sh <= 2983 + 1.0
    for got, want in zip((sh, np_, cw), SCRATCH[90.0]):
        assert got == pytest.approx(want, rel=0.01)


# ----------------------------------------------------------------------------- controller

def test_controller_capacity_caps_throughput():
    """Spec §2.4: a 20 µs controller passes at most 50 requests per ms; requests that would be
    late at its head are discarded at no cost."""
    ms = model_set("cv16").subset([0])
    rng = np.random.default_rng(3)
    a = np.sort(rng.uniform(0, 200.0, 40000))        # 200k req/s offered
    req = Requests.with_slo(a, np.zeros(a.size, int), 250.0)
    L = latency_table(ms, 0.0, 128)
    rel_t, rel_i = controller_release(req, L, 20.0)
    assert np.all(np.diff(rel_t) >= 0.02 - 1e-12)
    r = simulate(req, ms, 64, "flex", controller_us=20.0)
    assert r.released.sum() == rel_i.size < req.n
    assert r.ok.sum() <= rel_i.size
    assert r.goodput(0, 200.0) <= 50_000 * (1 + 0.25 / 0.2)   # the backlog drains after 200 ms
    free = simulate(req, ms, 64, "flex")
    assert free.ok.sum() > r.ok.sum()
    assert np.array_equal(simulate(req, ms, 2, "clockwork", controller_us=0.0).completion,
                          simulate(req, ms, 2, "clockwork").completion, equal_nan=True)


# ----------------------------------------------------------------------------- speed

def test_flex_one_group_overload_runs():
    """The issue's target is >= 1M simulated requests/s on one core for FLEX at one group
    (12 GPUs, cv16, 144k req/s, 250 ms); ``benchmarks/bench_shepherd.py`` measures it (about 4M).
    A timed assertion would fail on a busy machine, so here only the run itself is checked."""
    req = poisson_cv16(144000, 1000.0)
    r = simulate(req, model_set("cv16"), 12, "flex")
    assert 0 < int(r.ok.sum()) < req.n
