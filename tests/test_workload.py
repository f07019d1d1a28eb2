"""Arrival processes: counts, per-piece means, exactness, errors."""

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.workload import (
    PiecewiseRate,
    mmpp_arrivals,
    piecewise_poisson_arrivals,
    poisson_arrivals,
)


def rng(seed=0):
    return np.random.default_rng(seed)


def test_poisson_n_and_horizon():
    a = poisson_arrivals(2.0, n=10_000, rng=rng())
    assert a.shape == (10_000,) and np.all(np.diff(a) >= 0) and a[0] > 0
    # mean inter-arrival 1/rate within 4 sigma (sd of the mean = (1/rate)/sqrt(n))
    assert abs(np.diff(a, prepend=0).mean() - 0.5) < 4 * 0.5 / 100
    rate, horizon = 5.0, 2_000.0
    b = poisson_arrivals(rate, horizon=horizon, rng=rng(1))
    mu = rate * horizon
    assert abs(b.size - mu) < 4 * np.sqrt(mu)
    assert np.all((b >= 0) & (b < horizon)) and np.all(np.diff(b) >= 0)


def test_poisson_counts_over_replications():
    counts = [poisson_arrivals(3.0, horizon=10.0, rng=rng(s)).size for s in range(300)]
    # mean of 300 Poisson(30) counts: sd = sqrt(30/300)
    assert abs(np.mean(counts) - 30) < 4 * np.sqrt(30 / 300)
    assert abs(np.var(counts, ddof=1) / 30 - 1) < 0.35  # Poisson: variance = mean


def test_same_seed_same_numbers():
    assert np.array_equal(poisson_arrivals(1.0, n=50, rng=rng(7)), poisson_arrivals(1.0, n=50, rng=rng(7)))


@pytest.mark.parametrize("kw, name", [
    ({"rate": 0.0, "n": 5}, "rate"), ({"rate": -1.0, "n": 5}, "rate"),
    ({"rate": float("nan"), "n": 5}, "rate"), ({"rate": 1.0}, "n/horizon"),
    ({"rate": 1.0, "n": 5, "horizon": 1.0}, "n/horizon"), ({"rate": 1.0, "n": -1}, "n"),
    ({"rate": 1.0, "n": 2.5}, "n"), ({"rate": 1.0, "horizon": -1.0}, "horizon"),
])
def test_poisson_errors(kw, name):
    with pytest.raises(ConfigError, match=f"^{name} = "):
        poisson_arrivals(**kw, rng=rng())


def test_poisson_needs_generator():
    with pytest.raises(ConfigError, match="rng = 3: must be a numpy.random.Generator"):
        poisson_arrivals(1.0, n=3, rng=3)


def test_piecewise_rate_at():
    s = PiecewiseRate([0, 10, 20], [1.0, 0.0, 4.0])
    assert s.rate_at(0) == 1.0 and s.rate_at(9.99) == 1.0 and s.rate_at(10) == 0.0
    assert s.rate_at(1e6) == 4.0
    assert list(s.rate_at(np.array([5, 15, 25]))) == [1.0, 0.0, 4.0]
    assert s.mean_count(30) == 10 + 0 + 40
    assert s.mean_count(15) == 10


def test_piecewise_per_piece_means():
    s = PiecewiseRate([0, 50, 80], [2.0, 0.0, 6.0])
    horizon = 100.0
    per = np.array([[np.sum((t >= a) & (t < b)) for a, b in [(0, 50), (50, 80), (80, 100)]]
                    for t in (piecewise_poisson_arrivals(s, horizon, rng(k)) for k in range(200))])
    means = per.mean(axis=0)
    expected = np.array([100.0, 0.0, 120.0])
    assert per[:, 1].sum() == 0  # an idle piece is exactly empty: no thinning
    for m, e in zip(means[[0, 2]], expected[[0, 2]]):
        assert abs(m - e) < 4 * np.sqrt(e / 200)


def test_piecewise_sorted_and_within_horizon():
    t = piecewise_poisson_arrivals(PiecewiseRate([0, 1], [10.0, 20.0]), 5.0, rng())
    assert np.all(np.diff(t) >= 0) and t.min() >= 0 and t.max() < 5.0


@pytest.mark.parametrize("bp, rates, match", [
    ([1, 2], [1, 1], "breakpoints = .*must start at 0"),
    ([0, 2, 2], [1, 1, 1], "breakpoints = .*strictly increasing"),
    ([0, 1], [1.0], "rates = .*one rate per breakpoint"),
    ([0, 1], [1.0, -1.0], "rates = .*>= 0"),
    ([], [], "breakpoints = .*at least one"),
    ([0, float("inf")], [1, 1], "breakpoints = .*finite"),
])
def test_piecewise_errors(bp, rates, match):
    with pytest.raises(ConfigError, match=match):
        PiecewiseRate(bp, rates)


def test_piecewise_call_errors():
    with pytest.raises(ConfigError, match="schedule = "):
        piecewise_poisson_arrivals([1, 2], 1.0, rng())
    with pytest.raises(ConfigError, match="t = "):
        PiecewiseRate([0], [1.0]).rate_at(-1)


def test_mmpp_rate():
    rates = [1.0, 9.0]
    Q = [[-0.1, 0.1], [0.1, -0.1]]  # symmetric: stationary (1/2, 1/2), mean rate 5
    counts = [mmpp_arrivals(rates, Q, 200.0, rng(s))[0].size for s in range(60)]
    assert abs(np.mean(counts) / 200.0 - 5.0) < 0.5
    t, st = mmpp_arrivals(rates, Q, 50.0, rng(0), initial_state=1)
    assert np.all(np.diff(t) >= 0) and t.size == st.size and set(st) <= {0, 1}
    with pytest.raises(ConfigError, match="generator = "):
        mmpp_arrivals(rates, [[1, 0], [0, 1]], 1.0, rng())
    with pytest.raises(ConfigError, match="initial_state = 5"):
        mmpp_arrivals(rates, Q, 1.0, rng(), initial_state=5)
