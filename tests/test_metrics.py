"""Confidence intervals (coverage), batch means, replicate/summarize, percentiles."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from infsched.errors import ConfigError
from infsched.metrics import batch_means_ci, mean_ci, percentile, replicate, summarize


def test_mean_ci_values():
    ci = mean_ci([1.0, 2.0, 3.0, 4.0])
    hw = stats.t.ppf(0.975, 3) * np.std([1, 2, 3, 4], ddof=1) / 2
    assert ci.mean == 2.5 and ci.n == 4 and ci.halfwidth == pytest.approx(hw)
    assert ci.low == pytest.approx(2.5 - hw) and ci.high == pytest.approx(2.5 + hw)
    assert ci.contains(2.5) and not ci.contains(100)
    one = mean_ci([3.0])
    assert one.mean == 3.0 and np.isinf(one.halfwidth)


def test_mean_ci_coverage():
    """Of R=400 95% intervals on N(1, 2^2) samples of 10, the number covering 1 is
    Binomial(400, 0.95): mean 380, sd 4.36. Accept within 4 sd (364..396)."""
    rng = np.random.default_rng(12345)
    x = rng.normal(1.0, 2.0, size=(400, 10))
    covered = sum(mean_ci(row).contains(1.0) for row in x)
    sd = np.sqrt(400 * 0.95 * 0.05)
    assert abs(covered - 380) <= 4 * sd
    # a wider level covers at least as often, on the same samples
    assert sum(mean_ci(row, level=0.99).contains(1.0) for row in x) >= covered


def test_batch_means_on_ar1():
    """AR(1) with phi=0.9, mean 5: batch means with large batches still cover the mean."""
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(40):
        e = rng.normal(size=20_000)
        x = np.empty_like(e)
        x[0] = 0
        for i in range(1, len(e)):
            x[i] = 0.9 * x[i - 1] + e[i]
        ci = batch_means_ci(x + 5.0, n_batches=20)
        covered += ci.contains(5.0)
        assert ci.n == 20
    assert covered >= 40 * 0.95 - 4 * np.sqrt(40 * 0.95 * 0.05)


def test_ci_errors():
    with pytest.raises(ConfigError, match="level = 1.5"):
        mean_ci([1, 2], level=1.5)
    with pytest.raises(ConfigError, match="^x = "):
        mean_ci([])
    with pytest.raises(ConfigError, match="^x = .*finite"):
        mean_ci([1.0, float("nan")])
    with pytest.raises(ConfigError, match="n_batches = 1"):
        batch_means_ci(range(100), n_batches=1)
    with pytest.raises(ConfigError, match="samples = .*at least n_batches"):
        batch_means_ci(range(5), n_batches=10)


def experiment(seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return {"latency": scale * rng.exponential(), "policy": "tad" if seed % 2 else "jsq"}


def test_replicate_and_summarize():
    df = replicate(experiment, range(20), scale=2.0)
    assert list(df.columns) == ["seed", "latency", "policy"] and len(df) == 20
    assert df.loc[3, "latency"] == experiment(3, 2.0)["latency"]
    s = summarize(df, "policy", "latency")
    assert list(s.columns) == ["policy", "n", "mean", "low", "high", "halfwidth"]
    assert list(s["policy"]) == ["jsq", "tad"] and list(s["n"]) == [10, 10]
    ci = mean_ci(df[df.policy == "tad"].latency)
    assert s.loc[1, "mean"] == pytest.approx(ci.mean) and s.loc[1, "halfwidth"] == pytest.approx(ci.halfwidth)
    whole = summarize(df.assign(y=1.0), None, ["latency", "y"])
    assert {"latency", "latency_low", "latency_high", "latency_halfwidth", "y"} <= set(whole.columns)
    assert len(whole) == 1 and whole.loc[0, "n"] == 20


def test_replicate_series_and_errors():
    df = replicate(lambda seed: pd.Series({"a": seed * 2}), [1, 2])
    assert list(df["a"]) == [2, 4]
    with pytest.raises(ConfigError, match="must return a dict or Series"):
        replicate(lambda seed: 3, [1])
    with pytest.raises(ConfigError, match="seeds = "):
        replicate(experiment, [])
    with pytest.raises(ConfigError, match="column = 'nope'"):
        summarize(pd.DataFrame({"a": [1.0]}), "nope", "a")


def test_percentile():
    x = np.arange(101.0)
    assert percentile(x, 99) == 99.0
    assert list(percentile(x, [50, 90])) == [50.0, 90.0]
    with pytest.raises(ConfigError, match="q = 101"):
        percentile(x, 101)
