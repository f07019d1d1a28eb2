"""The Nexus-like baseline (``infsched.shepherd.nexus``, spec §2.5): the squishy-bin-packing plan,
the runtime's invariants and exact hand cases, the fast engine against the simpy reference, and
the served rate against ``min(offered, planned)``.

Tolerances on served rates. Nexus plans a residual node's batch as ``b_s = ⌈r'_s d⌉``, the *mean*
number of arrivals per duty cycle, with no headroom, so Poisson cycles with more than ``b_s``
arrivals overflow and their oldest requests miss (``d + ℓ(b_s) ≈ L`` leaves no second cycle):
the loss is ≈ E[(X − b)⁺]/b with X ~ Poisson(b), 4 % at b ≈ 90 and the more the smaller b. Hence
a served fraction ≥ 0.90 of ``min(offered, planned)``. Above, the bound is the plan's capacity
(``b / duty`` per GPU) plus one batch per GPU and session for the window's edges.
"""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.shepherd import nexus as nx
from infsched.shepherd.model import ModelSet, Requests, model_set

CV16 = model_set("cv16")
BATCH_FIELDS = ("batch_gpu", "batch_start", "batch_end", "batch_size", "batch_model")


def poisson_requests(rates, horizon_s: float, slo_ms: float, seed: int) -> Requests:
    """Independent Poisson streams, one per model (req/s), on [0, horizon_s)."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(np.asarray(rates, dtype=float) * horizon_s)
    arrival = rng.uniform(0.0, 1000.0 * horizon_s, counts.sum())
    model = np.repeat(np.arange(len(rates)), counts)
    return Requests.with_slo(arrival, model, slo_ms)


def toy(alpha=1.0, beta=4.0) -> ModelSet:
    return ModelSet(("X",), np.array([alpha]), np.array([beta]), np.array([1]))


# --------------------------------------------------------------------------------------- plan

def test_below_saturation_is_one_residual_node():
    rn50 = CV16.subset([CV16.names.index("RN50")])
    p = nx.plan([500.0], rn50, 1, 250.0)
    assert p.scale == 1.0 and not p.dropped and p.gpus_needed == 1
    (g,) = p.gpus
    # b' = max{b : b/0.5 + 0.75 b + 7.96 ≤ 250} = ⌊242.04 / 2.75⌋ = 88, d = 88 / 0.5 = 176 ms
    assert g.kind == "residual" and g.batch == (88,)
    assert g.duty_ms == pytest.approx(176.0) and g.occupancy == pytest.approx(73.96 / 176.0)
    np.testing.assert_allclose(p.planned, [500.0])


def test_above_saturation_is_dedicated_plus_residual():
    rn50 = CV16.subset([CV16.names.index("RN50")])
    p = nx.plan([3000.0], rn50, 4, 250.0)
    # 2ℓ(128) = 207.9 ≤ 250, so b = 128, T = 128 / 103.96 ms = 1231.2 req/s: 2 dedicated GPUs
    t_sat = 128 / 103.96 * 1000
    assert [g.kind for g in p.gpus] == ["dedicated", "dedicated", "residual"]
    assert p.gpus[0].batch == (128,) and p.gpus[0].rates[0] == pytest.approx(t_sat)
    assert p.gpus[2].rates[0] == pytest.approx(3000 - 2 * t_sat)
    assert sum(r for g in p.gpus for r in g.rates) == pytest.approx(3000.0)


def test_worst_case_latency_rule():
    """b_k = max{b ≤ 128 : 2ℓ_k(b) ≤ L_k} for every model and a few SLOs."""
    ks = np.arange(CV16.n)
    for slo in (50.0, 100.0, 250.0, 500.0):
        p = nx.plan(np.full(CV16.n, 1e5), CV16, 10_000, slo)
        ded = {g.models[0]: g.batch[0] for g in p.gpus if g.kind == "dedicated"}
        for k in ks:
            feasible = [b for b in range(1, 129) if 2 * CV16.latency(k, b) <= slo]
            assert ded.get(k, 0) == (max(feasible) if feasible else 0), (slo, CV16.names[k])


def test_tight_slo_drops_unservable_sessions():
    p = nx.plan(np.full(CV16.n, 200.0), CV16, 12, 50.0)
    # spec Fig 9: at 50 ms, 2ℓ(1) > 50 for RS269 and also RS200, RS101, DN169, DN201
    assert set(p.dropped) == {"RS269", "RS200", "RS101", "DN169", "DN201"}
    assert "unservable" in p.dropped["RS269"]
    for name in p.dropped:
        assert p.planned[CV16.names.index(name)] == 0
    served = {k for g in p.gpus for k in g.models}
    assert not served & {CV16.names.index(n) for n in p.dropped}


def test_oversubscription_scales_rates_to_fit():
    rates = np.full(CV16.n, 144_000 / CV16.n)
    p = nx.plan(rates, CV16, 12, 250.0)
    assert p.demand_gpus > 12 and 0 < p.scale < 1 and p.gpus_needed <= 12
    np.testing.assert_allclose(p.planned, p.scale * rates)
    # the bisection's upper end does not fit
    assert nx.plan(rates * p.scale * (1 + 1e-6), CV16, 12, 250.0).scale < 1
    # capacity covers the planned rate on every model
    assert np.all(p.capacity() >= p.planned * (1 - 1e-9))


def test_no_room_even_at_vanishing_rate_drops_costliest_sessions():
    p = nx.plan(np.full(CV16.n, 100.0), CV16, 1, 250.0)
    assert p.gpus_needed == 1 and p.dropped
    assert all("no room" in why for why in p.dropped.values())


@pytest.mark.parametrize("total, slo", [(3000, 250.0), (48_000, 250.0), (3000, 100.0),
                                        (800, 150.0)])
def test_residual_nodes_are_feasible(total, slo):
    """Step 3's feasibility: Σ ℓ(b_s) ≤ d, d + ℓ(b_s) ≤ L_s, and b_s / d ≥ r'_s."""
    p = nx.plan(np.full(CV16.n, total / CV16.n), CV16, 12, slo)
    for g in p.gpus:
        lat = CV16.latency(np.array(g.models), np.array(g.batch))
        if g.kind == "residual":
            assert lat.sum() <= g.duty_ms * (1 + 1e-12)
            assert np.all(g.duty_ms + lat <= slo * (1 + 1e-12))
        assert np.all(np.array(g.capacity) >= np.array(g.rates) * (1 - 1e-9))
        assert all(1 <= b <= 128 for b in g.batch)


def test_plan_for_peak_uses_the_peak_one_second_bin():
    arrival = np.r_[np.linspace(0, 999, 10), np.linspace(1000, 1999, 30)]
    r = Requests.with_slo(arrival, np.zeros(40, dtype=np.int64), 250.0)
    rn18 = CV16.subset([0])
    assert nx.plan_for_peak(r, rn18, 2, 250.0).offered[0] == 30.0
    with pytest.raises(ConfigError, match="window_s"):
        nx.plan_for_peak(r, rn18, 2, 250.0, window_s=1.0)


def test_plan_to_frame():
    df = nx.plan(np.full(CV16.n, 200.0), CV16, 12, 250.0).to_frame()
    assert set(df["model"]) == set(CV16.names) and set(df["kind"]) <= {"dedicated", "residual"}


# ------------------------------------------------------------------------------------ runtime

def test_dedicated_early_drop_by_hand():
    """ℓ(b) = b + 4, L = 20: b_k = 6 (2·10 ≤ 20). 14 requests at t = 0 on one dedicated GPU:
    [0,10) serves 6, [10,20) serves 6 (10 + 10 ≤ 20), at 20 the last 2 cannot make it."""
    m = toy()
    p = nx.plan([600.0], m, 1, 20.0)
    assert [(g.kind, g.batch) for g in p.gpus] == [("dedicated", (6,))]
    r = Requests.with_slo(np.zeros(14), np.zeros(14, dtype=np.int64), 20.0)
    for res in (nx.simulate(r, m, 1, p), nx.nexus_reference(r, m, 1, p)):
        np.testing.assert_array_equal(res.completion[:12], [10.0] * 6 + [20.0] * 6)
        assert np.isnan(res.completion[12:]).all()
        assert res.status.tolist() == [nx.SERVED] * 12 + [nx.DROPPED] * 2
        assert res.batch_start.tolist() == [0.0, 10.0] and res.busy_ms.tolist() == [20.0]


def test_goodput_and_utilization_by_hand():
    """ℓ(b) = b + 4, L = 20, 700 req/s: one dedicated GPU (600/s) and one residual (100/s).
    SWRR with weights 600:100 sends the first 3 requests to the dedicated GPU."""
    m = toy()
    p = nx.plan([700.0], m, 2, 20.0)
    assert [g.kind for g in p.gpus] == ["dedicated", "residual"]
    r = Requests.with_slo([0.0, 1.0, 2.0], [0, 0, 0], 20.0)
    res = nx.simulate(r, m, 3, p)
    assert res.gpu.tolist() == [0, 0, 0]
    assert res.completion.tolist() == [5.0, 11.0, 11.0] and res.ok.all()
    assert res.busy_ms.tolist() == [11.0, 0.0, 0.0]
    assert res.utilization(0.0, 11.0) == pytest.approx(11.0 / 33.0)
    assert res.goodput(0.0, 10.0) == pytest.approx(300.0)
    assert res.goodput(1.5, 10.0) == pytest.approx(1 / 8.5e-3)
    np.testing.assert_allclose(res.latency(), [5.0, 10.0, 9.0])


def test_swrr_shares_follow_planned_rates():
    m = toy()
    p = nx.plan([700.0], m, 2, 20.0)
    r = Requests.with_slo(np.arange(700.0), np.zeros(700, dtype=np.int64), 20.0)
    res = nx.simulate(r, m, 2, p)
    assert np.bincount(res.gpu).tolist() == [600, 100]


def test_unplanned_models_are_not_routed():
    sub = CV16.subset([0, 1])
    p = nx.plan([100.0, 0.0], sub, 2, 250.0)
    r = poisson_requests([100.0, 100.0], 1.0, 250.0, 0)
    res = nx.simulate(r, sub, 2, p)
    assert np.all(res.status[r.model == 1] == nx.UNROUTED) and np.all(res.gpu[r.model == 1] < 0)


@pytest.mark.parametrize("total", [3000, 48_000])
def test_invariants_cv16(total):
    """Every served request meets its deadline; batches respect the plan and never overlap."""
    rates = np.full(CV16.n, total / CV16.n)
    r = poisson_requests(rates, 1.0, 250.0, 3)
    p = nx.plan(rates, CV16, 12, 250.0)
    res = nx.simulate(r, CV16, 12, p)
    served = res.status == nx.SERVED
    assert np.all(res.ok == served) and np.all(res.completion[served] <= r.deadline[served])
    assert res.batch_size.sum() == served.sum()
    for g, gp in enumerate(p.gpus):
        on = res.batch_gpu == g
        assert np.all(res.batch_start[on][1:] >= res.batch_end[on][:-1])
        limit = dict(zip(gp.models, gp.batch))
        assert all(b <= limit[k] for b, k in zip(res.batch_size[on], res.batch_model[on]))
        if gp.kind == "residual":  # one batch per session per cycle
            cyc = np.floor(res.batch_start[on] / gp.duty_ms + 1e-9)
            pairs = set(zip(cyc.tolist(), res.batch_model[on].tolist()))
            assert len(pairs) == on.sum()
    assert 0 < res.utilization(0, 1000) <= 1


def test_served_rate_underloaded_residual():
    """GN alone at 500 req/s (one residual node, b' ≈ 90): served ≈ offered, minus ≈ 4 %
    Poisson overflow (module docstring)."""
    gn = CV16.subset([CV16.names.index("GN")])
    p = nx.plan([500.0], gn, 1, 250.0)
    for seed in range(2):
        res = nx.simulate(poisson_requests([500.0], 30.0, 250.0, seed), gn, 1, p)
        assert 0.90 * 500 <= res.goodput(1000, 29000) <= 500 * 1.03


def test_served_rate_underloaded_dedicated():
    rn50 = CV16.subset([CV16.names.index("RN50")])
    p = nx.plan([3000.0], rn50, 4, 250.0)
    res = nx.simulate(poisson_requests([3000.0], 10.0, 250.0, 1), rn50, 4, p)
    assert 0.95 * 3000 <= res.goodput(1000, 9000) <= 3000 * 1.03


def test_served_rate_oversubscribed_is_planned():
    """cv16 at 48k req/s on 12 GPUs: each model's goodput ≈ its planned (scaled) rate."""
    rates = np.full(CV16.n, 3000.0)
    p = nx.plan(rates, CV16, 12, 250.0)
    r = poisson_requests(rates, 4.0, 250.0, 2)
    res = nx.simulate(r, CV16, 12, p)
    t0, t1 = 500.0, 3500.0
    got = res.goodput_per_model(t0, t1, CV16.n)
    edge = np.zeros(CV16.n)  # one batch per GPU and session at the window's edges
    for g in p.gpus:
        for k, b in zip(g.models, g.batch):
            edge[k] += b / ((t1 - t0) / 1000)
    assert np.all(got >= 0.90 * np.minimum(rates, p.planned))
    assert np.all(got <= p.capacity() + edge)


# --------------------------------------------------------------------- fast engine = reference

SMALL = [  # (models, n_gpus, rates req/s, horizon s)
    ([0, 8, 13], 2, [900.0, 60.0, 600.0], 0.6),     # RN18 + GN share a residual node
    ([0, 8, 13], 4, [5000.0, 300.0, 2000.0], 0.4),  # dedicated + residual, over-subscribed
    ([0, 8, 13], 6, [3000.0, 150.0, 3000.0], 0.4),
    ([2, 7, 15, 11], 3, [400.0, 150.0, 200.0, 300.0], 0.5),
    ([1, 4, 9, 14], 5, [2500.0, 900.0, 800.0, 400.0], 0.3),
]


@pytest.mark.parametrize("case", range(len(SMALL)))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_equals_reference(case, seed):
    idx, n_gpus, rates, horizon = SMALL[case]
    ms = CV16.subset(idx)
    r = poisson_requests(rates, horizon, 250.0, seed)
    p = nx.plan(rates, ms, n_gpus, 250.0)
    fast, ref = nx.simulate(r, ms, n_gpus, p), nx.nexus_reference(r, ms, n_gpus, p)
    np.testing.assert_array_equal(fast.gpu, ref.gpu)
    np.testing.assert_array_equal(fast.status, ref.status)
    np.testing.assert_array_equal(fast.completion, ref.completion)  # NaNs compare equal here
    for f in BATCH_FIELDS:
        np.testing.assert_array_equal(getattr(fast, f), getattr(ref, f), err_msg=f)
    assert (fast.status == nx.SERVED).any() and fast.ok.sum() == ref.ok.sum()


def test_fast_equals_reference_simultaneous_bursts():
    """Bursts of identical arrival times on dedicated and residual GPUs."""
    ms = CV16.subset([0, 8])
    arrival = np.repeat(np.arange(0.0, 600.0, 50.0), 40)
    model = np.tile(np.r_[np.zeros(30, dtype=np.int64), np.ones(10, dtype=np.int64)], 12)
    r = Requests.with_slo(arrival, model, 250.0)
    p = nx.plan([6000.0, 120.0], ms, 3, 250.0)
    fast, ref = nx.simulate(r, ms, 3, p), nx.nexus_reference(r, ms, 3, p)
    np.testing.assert_array_equal(fast.completion, ref.completion)
    for f in BATCH_FIELDS:
        np.testing.assert_array_equal(getattr(fast, f), getattr(ref, f), err_msg=f)


# ---------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("kwargs, name", [
    (dict(rates_per_model=[-1.0] + [1.0] * 15), "rates_per_model"),
    (dict(rates_per_model=[1.0] * 3), "rates_per_model"),
    (dict(n_gpus=0), "n_gpus"),
    (dict(n_gpus=2.5), "n_gpus"),
    (dict(slo_ms=0.0), "slo_ms"),
    (dict(slo_ms=-5.0), "slo_ms"),
    (dict(slo_ms=[250.0] * 3), "slo_ms"),
    (dict(b_max=0), "b_max"),
])
def test_plan_errors_name_the_parameter(kwargs, name):
    args = dict(rates_per_model=[100.0] * CV16.n, models=CV16, n_gpus=12, slo_ms=250.0)
    args.update(kwargs)
    with pytest.raises(ConfigError, match=name):
        nx.plan(**args)


def test_simulate_errors_name_the_parameter():
    p = nx.plan([100.0] * CV16.n, CV16, 12, 250.0)
    r = poisson_requests([100.0] * CV16.n, 0.1, 250.0, 0)
    with pytest.raises(ConfigError, match="n_gpus"):
        nx.simulate(r, CV16, p.gpus_needed - 1, p)
    with pytest.raises(ConfigError, match="models"):
        nx.simulate(r, model_set("all17"), 12, p)
    with pytest.raises(ConfigError, match="plan"):
        nx.simulate(r, CV16, 12, "plan")
    res = nx.simulate(r, CV16, 12, p)
    with pytest.raises(ConfigError, match="t1"):
        res.goodput(10.0, 10.0)
