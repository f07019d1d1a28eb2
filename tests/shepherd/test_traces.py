"""Shepherd workloads: CV versus window (claim 9, A19), MAF-synth slices, the Azure loader."""

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.shepherd.model import model_set
from infsched.shepherd.traces import (
    FIG2_WINDOWS_MIN,
    MafSynth,
    cv_by_window,
    group_cv,
    load_azure_invocations,
    maf_arrivals,
    maf_counts,
    maf_minute_rates,
    maf_requests,
    maf_stream_rates,
    subminute_cv,
    synthetic_poisson_counts,
)

# MAF-synth with (almost) equal, unmodulated rates: every stream at total/n
EQUAL = MafSynth(sigma=0.0, amp_max=0.0, noise_cv_min=1e-4, noise_cv_max=1e-4)


def _mmpp_count_var(rate, horizon, p=MafSynth()):
    """Var of an MMPP count on [0, H): λH + λ²·Var(∫f), f the state factor with autocovariance
    Var(f)·exp(−θ|t|), θ = h_to_l + l_to_h (stationary 2-state chain)."""
    th = p.h_to_l + p.l_to_h
    vf = p.p_high * (1 - p.p_high) * (p.high_factor - p.low_factor) ** 2
    vint = 2 * vf * (horizon / th - (1 - np.exp(-th * horizon)) / th ** 2)
    return rate * horizon + rate ** 2 * vint


def _per_stream_cv(sl, streams, bin_ms):
    nb = int(sl.horizon_s * 1000 / bin_ms)
    sel = np.isin(sl.stream, streams)
    local = np.searchsorted(streams, sl.stream[sel])
    b = np.minimum((sl.arrival_ms[sel] // bin_ms).astype(np.int64), nb - 1)
    x = np.bincount(local * nb + b, minlength=streams.size * nb).reshape(streams.size, nb)
    return float((x.std(axis=1) / x.mean(axis=1)).mean())


# ------------------------------------------------------------------ CV vs window (claim 9)

def test_single_poisson_stream_cv_matches_analytic():
    lam = 5.0  # per minute; λτ >= 5 at every window, >= 500 windows at τ <= 20
    counts = np.random.default_rng(1).poisson(lam, size=(1, 20_000)).astype(np.int32)
    df = cv_by_window(counts, [1, 2, 5, 10, 20])
    assert (df.n_windows >= 500).all()
    expect = 1 / np.sqrt(lam * df.window_min)
    assert np.all(np.abs(df.mean_cv - expect) / expect <= 0.10), df


@pytest.fixture(scope="module")
def synth():
    return synthetic_poisson_counts(1000, 10_080, 10.0, seed=0)


@pytest.fixture(scope="module")
def maf():
    return maf_counts(None, 1000, 10_080, seed=0)


def test_mean_cv_decreases_with_window(synth, maf):
    for counts in (synth, maf):
        df = cv_by_window(counts, FIG2_WINDOWS_MIN)
        assert np.all(np.diff(df.mean_cv) < 0), df
    # synthetic: mean of 1/√(λτ) over λ ~ Exp(10/min) is √(π/10) ≈ 0.56 at τ = 1 (spec §3 Fig 2)
    assert cv_by_window(synth, [1]).mean_cv[0] == pytest.approx(np.sqrt(np.pi / 10), rel=0.10)


def test_zero_streams_excluded_and_truncation():
    counts = np.zeros((3, 10), dtype=np.int32)
    counts[1] = 1
    counts[2, ::2] = 2  # 2,0,2,0,...: CV 1 at τ = 1, 0 at τ = 2
    df = cv_by_window(counts, [1, 2, 3])
    assert list(df.n_streams) == [2, 2, 2]
    assert df.mean_cv[0] == pytest.approx(0.5) and df.mean_cv[1] == pytest.approx(0.0)
    assert list(df.n_windows) == [10, 5, 3]  # τ = 3 drops the 10th minute


def test_group_cv_decreases_with_group_size(synth):
    big = maf_counts(None, 10_000, 1440, seed=2)  # g = 1000 needs many streams: 10 groups
    for counts in (synth, big):
        df = group_cv(counts, (1, 10, 100, 1000), (1, 10), seed=3)
        for _, d in df.groupby("window_min"):
            assert np.all(np.diff(d.mean_cv.to_numpy()) < 0), df
    assert group_cv(synth, (1000,), (1,)).n_groups[0] == 1  # 1k streams: a single group


def test_group_cv_of_iid_poisson_scales_as_inverse_sqrt_g():
    counts = np.random.default_rng(4).poisson(2.0, size=(2000, 2000)).astype(np.int32)
    df = group_cv(counts, (1, 10, 100, 1000), (1,), seed=5)
    cv1 = df.mean_cv[0]
    assert cv1 == pytest.approx(1 / np.sqrt(2.0), rel=0.05)
    for g, cv in zip(df.group_size, df.mean_cv):
        assert cv == pytest.approx(cv1 / np.sqrt(g), rel=0.15), df


def test_subminute_cv_bursty_above_stable(maf):
    kw = dict(n_streams=100, n_minutes=5, min_mean_per_min=60, seed=6)
    st = subminute_cv(maf, (0.1, 0.5), variant="stable", **kw)
    bu = subminute_cv(maf, (0.1, 0.5), variant="bursty", **kw)
    assert np.all(bu.mean_cv > 1.2 * st.mean_cv), (st, bu)
    assert np.all(np.diff(st.mean_cv) < 0)


# ------------------------------------------------------------------ MAF-synth

def test_minute_rates_total_and_slice_consistency():
    rates = maf_minute_rates(None, 500, 1440, total_rate=100.0, seed=7)
    assert rates.shape == (500, 1440) and np.all(rates > 0)
    # Σ λ̄ = total; the modulation has mean 1 over a full day (sinusoid) and over minutes (Gamma)
    assert rates.sum(axis=0).mean() == pytest.approx(100.0, rel=0.10)
    sr = maf_stream_rates(500, 40.0, 16, minute=123, seed=7)
    col = rates[:, 123].astype(float)
    np.testing.assert_allclose(sr.rate, col * 40.0 / col.sum(), rtol=1e-5)
    np.testing.assert_array_equal(maf_counts(None, 50, 100, seed=7),
                                  maf_counts(None, 50, 100, seed=7))
    # a stream's draws do not depend on the horizon asked for
    np.testing.assert_array_equal(maf_counts(None, 50, 100, seed=7)[:, :70],
                                  maf_counts(None, 50, 70, seed=7))


@pytest.mark.parametrize("variant", ["stable", "bursty", "gamma"])
def test_maf_requests_total_sorted_models(variant):
    n, total, horizon = 4600, 144e3, 1.0
    cv_scale = 2.0 if variant == "gamma" else 1.0
    sl = maf_arrivals(n, total, horizon, variant, model_set("cv16"), cv_scale=cv_scale, seed=8)
    r = sl.rates.rate
    assert sl.rates.total == pytest.approx(total)
    assert sl.rates.model_rate.sum() == pytest.approx(total)
    # 5 sd: Poisson var = RH; MMPP adds λ²Var(∫f) per stream (heavy streams dominate);
    # gamma renewal var ≈ RH·cv² asymptotically, doubled for finite-horizon terms
    var = {"stable": r.sum() * horizon, "bursty": _mmpp_count_var(r, horizon).sum(),
           "gamma": 2 * r.sum() * horizon * cv_scale ** 2}[variant]
    assert abs(sl.arrival_ms.size - total * horizon) <= 5 * np.sqrt(var)
    assert np.all(np.diff(sl.arrival_ms) >= 0)
    assert sl.arrival_ms.min() >= 0 and sl.arrival_ms.max() < horizon * 1000
    assert np.array_equal(sl.rates.model, np.arange(n) % 16)
    assert np.array_equal(sl.model, sl.stream % 16)
    req = sl.requests(250.0)
    np.testing.assert_allclose(req.deadline - req.arrival, 250.0)


def test_maf_requests_reproducible_and_scaled():
    a = maf_requests(300, 1000.0, 0.5, "bursty", 16, 250.0, seed=9)
    b = maf_requests(300, 1000.0, 0.5, "bursty", 16, 250.0, seed=9)
    c = maf_requests(300, 1000.0, 0.5, "bursty", 16, 250.0, seed=10)
    assert np.array_equal(a.arrival, b.arrival) and np.array_equal(a.model, b.model)
    assert a.n != c.n or not np.array_equal(a.arrival, c.arrival)
    sr = maf_stream_rates(300, 1000.0, 5, rate_scale=2.0, seed=9)
    assert sr.total == pytest.approx(2000.0) and sr.model_rate.shape == (5,)


def test_bursty_has_higher_subsecond_cv_than_stable():
    st = maf_arrivals(4600, 144e3, 2.0, "stable", 16, seed=11)
    bu = maf_arrivals(4600, 144e3, 2.0, "bursty", 16, seed=11)
    top = np.sort(np.argsort(st.rates.rate)[-100:])  # same rates: same seed
    cs, cb = _per_stream_cv(st, top, 100.0), _per_stream_cv(bu, top, 100.0)
    assert cb > 1.5 * cs, (cs, cb)


def test_mmpp_and_gamma_counts_match_theory():
    n, total, h = 2000, 2000 * 20.0, 2.0  # 2000 streams at 20 req/s
    bu = maf_arrivals(n, total, h, "bursty", 1, params=EQUAL, seed=12)
    x = np.bincount(bu.stream, minlength=n)
    assert x.mean() == pytest.approx(40.0, abs=4 * np.sqrt(_mmpp_count_var(20.0, h) / n))
    assert x.var() == pytest.approx(_mmpp_count_var(20.0, h), rel=0.15)
    # stationary gamma renewal: the mean count is exactly λH even with CV 3 (length-biased start)
    ga = maf_arrivals(n, n * 5.0, 1.0, "gamma", 1, params=EQUAL, cv_scale=3.0, seed=13)
    y = np.bincount(ga.stream, minlength=n)
    assert y.mean() == pytest.approx(5.0, abs=4 * y.std() / np.sqrt(n))
    assert y.var() > 2 * 5.0  # overdispersed against Poisson


@pytest.mark.parametrize("kw, name", [
    ({"total_rate": -1.0}, "total_rate"), ({"n_streams": 0}, "n_streams"),
    ({"variant": "spiky"}, "variant"), ({"horizon_s": 0.0}, "horizon_s"),
    ({"cv_scale": 2.0}, "cv_scale"), ({"models": 0}, "models"), ({"seed": -1}, "seed"),
    ({"rate_scale": 0.0}, "rate_scale"), ({"minute": -1}, "minute"),
])
def test_maf_errors(kw, name):
    args = dict(n_streams=10, total_rate=10.0, horizon_s=1.0, variant="stable")
    args.update(kw)
    with pytest.raises(ConfigError, match=f"^{name} = "):
        maf_arrivals(**args)


def test_parameter_errors():
    with pytest.raises(ConfigError, match="preserve the mean"):
        MafSynth(high_factor=5.0)
    with pytest.raises(ConfigError, match="^amp_max = "):
        MafSynth(amp_max=1.0)
    with pytest.raises(ConfigError, match="^windows_min = "):
        cv_by_window(np.ones((2, 10), dtype=np.int32), [6])
    with pytest.raises(ConfigError, match="^counts = "):
        cv_by_window(-np.ones((2, 10), dtype=np.int32), [1])
    with pytest.raises(ConfigError, match="^group_sizes = "):
        group_cv(np.ones((5, 10), dtype=np.int32), (10,))
    with pytest.raises(ConfigError, match="^slo_ms = "):
        maf_requests(10, 10.0, 1.0, slo_ms=0.0)


# ------------------------------------------------------------------ Azure loader

def _day_file(path, rows, minutes=1440, drop=None, bad=None):
    cols = {"HashOwner": [r[0] for r in rows], "HashApp": [r[1] for r in rows],
            "HashFunction": [r[2] for r in rows], "Trigger": ["http"] * len(rows)}
    df = pd.DataFrame(cols)
    counts = pd.DataFrame(np.array([[r[3]] * minutes for r in rows], dtype=object),
                          columns=[str(i) for i in range(1, minutes + 1)])
    df = pd.concat([df, counts], axis=1)
    if drop:
        df = df.drop(columns=[drop])
    if bad is not None:
        df.loc[1, "7"] = bad
    df.to_csv(path, index=False)
    return path


def test_load_azure_two_days(tmp_path):
    d1 = _day_file(tmp_path / "invocations_per_function_md.anon.d01.csv",
                   [("o1", "a1", "f1", 1), ("o1", "a1", "f2", 2), ("o2", "a2", "f3", 3)])
    d2 = _day_file(tmp_path / "invocations_per_function_md.anon.d02.csv",
                   [("o1", "a1", "f1", 4), ("o2", "a2", "f3", 5), ("o1", "a1", "f2", 6)])
    tr = load_azure_invocations([d1, d2])
    assert tr.counts.shape == (3, 2880) and tr.counts.dtype == np.int32
    assert list(tr.ids.HashFunction) == ["f1", "f2", "f3"] and list(tr.ids.Trigger) == ["http"] * 3
    assert list(tr.counts[:, 0]) == [1, 2, 3] and list(tr.counts[:, -1]) == [4, 6, 5]
    app = load_azure_invocations([d1, d2], by="app")
    assert app.counts.shape == (2, 2880) and list(app.counts[:, 0]) == [3, 3]
    # a function missing on a day counts 0 there
    d3 = _day_file(tmp_path / "d03.csv", [("o1", "a1", "f1", 7), ("o9", "a9", "f9", 8)])
    tr3 = load_azure_invocations([d1, d3])
    assert tr3.counts.shape == (4, 2880) and list(tr3.counts[:, -1]) == [7, 0, 0, 8]
    assert cv_by_window(tr.counts, [1, 60]).shape == (2, 4)


@pytest.mark.parametrize("kw, msg", [
    ({"drop": "HashApp"}, "missing column"), ({"minutes": 1439}, "1439 minute columns"),
    ({"bad": "x"}, "non-numeric count 'x' in row 2, minute column '7'"),
    ({"bad": "-1"}, "negative count"), ({"bad": "1.5"}, "non-integer count"),
    ({"bad": ""}, "non-numeric count ''"),
])
def test_load_azure_malformed(tmp_path, kw, msg):
    p = _day_file(tmp_path / "bad.csv", [("o", "a", "f1", 1), ("o", "a", "f2", 2)], **kw)
    with pytest.raises(ConfigError, match="bad.csv") as e:
        load_azure_invocations(p)
    assert msg in str(e.value)


def test_load_azure_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_azure_invocations(tmp_path / "nope.csv")
