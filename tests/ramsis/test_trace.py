"""infsched.ramsis.trace: the Twitter trace of RAMSIS §7.1 (spec ramsis §5.3)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.ramsis.trace import (
    TRACE_FILE,
    artifact_per_second,
    load_twitter_trace,
    twitter_schedule,
)
from infsched.report import find_data_dir
from infsched.workload import PiecewiseRate, piecewise_poisson_arrivals

SPEC_QPS = [1850, 1617, 1880, 1729, 1747, 1839, 1786, 2070, 1992, 2227, 2343, 2344, 2838, 2857,
            3191, 3248, 3418, 3613, 3596, 3875, 3778, 3905, 3738, 3512, 3495, 3459, 3295]


def test_trace_file_is_the_spec_values():
    df = load_twitter_trace()
    assert list(df.columns) == ["t_s", "qps"]
    assert df["qps"].tolist() == SPEC_QPS
    assert df["t_s"].tolist() == [10.0 * i for i in range(27)]
    assert df["qps"].mean() == pytest.approx(2786.7, abs=0.05)
    assert (df["qps"].min(), df["qps"].max()) == (1617, 3905)  # the paper's range


def test_artifact_per_second_list():
    per_s = artifact_per_second(SPEC_QPS)
    assert per_s.size == 261
    assert per_s[0] == 1850 and per_s[9] == 1850 and per_s[10] == 1617
    assert per_s[259] == 3459 and per_s[260] == 3295


def test_default_total_is_791796():
    s = twitter_schedule()
    assert isinstance(s, PiecewiseRate)
    assert s.mean_count(300_000.0) == pytest.approx(791_796, rel=1e-6)
    # nothing after the end: the schedule drops to 0 at 300 s
    assert s.mean_count(1e9) == pytest.approx(791_796, rel=1e-6)
    assert s.breakpoints[-1] == 300_000.0 and s.rates[-1] == 0.0
    # milliseconds: 1850 QPS = 1.85 per ms at t = 0; the wrap replays interval 0 at 261 s
    assert s.rate_at(0.0) == pytest.approx(1.85)
    assert s.rate_at(259_500.0) == pytest.approx(3.459)
    assert s.rate_at(260_500.0) == pytest.approx(3.295)
    assert s.rate_at(261_500.0) == pytest.approx(1.85)
    assert s.rate_at(271_500.0) == pytest.approx(1.617)
    assert s.rate_at(299_999.0) == pytest.approx(1.729)  # second 299 -> index 38 -> interval 3
    # merged: one piece per change of rate, not one per second
    assert len(s.rates) < 40
    assert np.all(np.diff(s.rates[:-1]) != 0)


def test_compression_scales_time_not_rate():
    full = twitter_schedule()
    fast = twitter_schedule(duration_s=30.0, interval_s=1.0)
    assert fast.mean_count(30_000.0) == pytest.approx(791_796 / 10, rel=1e-6)
    assert max(fast.rates) == max(full.rates)
    for t_ms in (0.0, 5_500.0, 12_345.0, 26_050.0, 29_999.0):
        assert fast.rate_at(t_ms) == full.rate_at(t_ms * 10)
    # a longer duration wraps the per-second list again
    longer = twitter_schedule(duration_s=305.5)
    assert longer.mean_count(1e9) == pytest.approx(791_796 + 1729 + 4.5 * 1747, rel=1e-9)
    assert twitter_schedule(duration_s=None).mean_count(1e9) == pytest.approx(791_796, rel=1e-6)


def test_intervals_playback():
    s = twitter_schedule(playback="intervals")
    assert s.breakpoints[-1] == 270_000.0
    assert s.mean_count(1e9) == pytest.approx(10 * sum(SPEC_QPS), rel=1e-9)
    s2 = twitter_schedule(duration_s=300.0, interval_s=10.0, playback="intervals")
    assert s2.mean_count(1e9) == pytest.approx(10 * sum(SPEC_QPS), rel=1e-9)
    short = twitter_schedule(duration_s=2.0, interval_s=1.0, playback="intervals")
    assert short.mean_count(1e9) == pytest.approx(1850 + 1617, rel=1e-9)
    s3 = twitter_schedule(interval_s=2.0, playback="intervals")
    assert s3.breakpoints[-1] == 54_000.0
    assert s3.mean_count(1e9) == pytest.approx(2 * sum(SPEC_QPS), rel=1e-9)


def test_sampled_arrivals_follow_the_schedule():
    s = twitter_schedule(duration_s=30.0, interval_s=1.0)
    arr = piecewise_poisson_arrivals(s, 30_000.0, np.random.default_rng(5))
    expected = s.mean_count(30_000.0)
    assert abs(arr.size - expected) < 5 * np.sqrt(expected)
    assert arr.max() < 30_000.0


@pytest.mark.parametrize("kw, needle", [
    (dict(playback="loop"), "playback"),
    (dict(interval_s=0.0), "interval_s"),
    (dict(interval_s=-1.0), "interval_s"),
    (dict(interval_s=float("nan")), "interval_s"),
    (dict(interval_s="ten"), "interval_s"),
    (dict(duration_s=0.0), "duration_s"),
    (dict(duration_s=float("inf")), "duration_s"),
    (dict(duration_s="long"), "duration_s"),
])
def test_schedule_errors(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        twitter_schedule(**kw)


@pytest.fixture()
def trace_copy(tmp_path):
    (tmp_path / "traces").mkdir()
    shutil.copy(find_data_dir() / "traces" / TRACE_FILE, tmp_path / "traces" / TRACE_FILE)
    return tmp_path


@pytest.mark.parametrize("fn, needle", [
    (lambda d: d.rename(columns={"qps": "rate"}), "missing: qps"),
    (lambda d: d.assign(extra=1), "unknown: extra"),
    (lambda d: d.assign(qps=np.where(d.index == 4, -5, d["qps"])), "line 6: qps = '-5'"),
    (lambda d: d.assign(qps=np.where(d.index == 4, "x", d["qps"])), "line 6: qps = 'x'"),
    (lambda d: d.iloc[[1, 0] + list(range(2, 27))], "t_s must be 0, 10, 20"),
    (lambda d: d.iloc[:0], "no rows"),
])
def test_trace_loader_errors(trace_copy, fn, needle):
    path = trace_copy / "traces" / TRACE_FILE
    fn(pd.read_csv(path)).to_csv(path, index=False)
    with pytest.raises(ConfigError) as e:
        twitter_schedule(data_dir=trace_copy)
    assert needle in str(e.value) and str(path) in str(e.value)


def test_trace_loader_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_twitter_trace(data_dir=tmp_path)
