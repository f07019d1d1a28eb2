"""The head-to-head's experiment on other zoos and with random service times (issue 23: "the
profile measured on this machine by infsched.profiling ... Any profile CSV a user passes works
too"; spec headtohead §1: "a ``jitter`` option draws from the profile's measured spread")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.report import find_data_dir
from infsched.serving import experiments as ex

K, SLO = 8, 150.0
MEASURED = find_data_dir() / "profiles" / "measured_cpu.csv"


def _check_sweep(df: pd.DataFrame, profile: str, contenders=ex.CONTENDERS) -> None:
    assert "error" not in df.columns
    assert set(df["contender"]) == set(contenders)
    assert df["attainment"].between(0, 1).all()
    zoo = ex.load_zoo(profile)
    cap = zoo.capacity_qps(K, SLO)
    np.testing.assert_allclose(df["rate_qps"], df["load"] * cap)
    # every on-time query was served by a model of this zoo: its accuracy is one of the zoo's
    acc = df["accuracy_served"].dropna()
    assert acc.between(zoo.accuracy.min() - 1e-9, zoo.accuracy.max() + 1e-9).all()


def test_the_chapters_sweep_on_the_profile_measured_here(tmp_path):
    """``profile="measured"``: data/profiles/measured_cpu.csv, written by infsched.profiling."""
    assert MEASURED.is_file()
    df = ex.load_sweep("smoke", 0, workloads=("poisson", "mmpp"), slo_ms=SLO, K=K,
                       profile="measured", workers=1, cache=tmp_path)
    _check_sweep(df, "measured")
    zoo = ex.load_zoo("measured")
    # the measured zoo is not the published one: its capacity differs
    assert zoo.capacity_qps(K, SLO) != ex.load_zoo("ramsis-image").capacity_qps(K, SLO)


def _user_csv(path) -> str:
    """A user's own raw profile (the format ``infsched profile`` writes): four models of the
    measured file, twice as fast, as if measured on a faster machine."""
    raw = pd.read_csv(MEASURED)
    keep = ["mobilenet_v2", "efficientnet_b0", "resnet18", "resnet50"]
    raw = raw[raw["model"].isin(keep)].copy()
    for c in ("mean_ms", "std_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"):
        raw[c] = raw[c] / 2.0
    out = path / "my_profile.csv"
    raw.to_csv(out, index=False)
    return str(out)


def test_the_chapters_sweep_on_a_users_profile_csv(tmp_path):
    csv = _user_csv(tmp_path)
    zoo = ex.load_zoo(csv)
    assert set(zoo.names) == {"mobilenet_v2", "efficientnet_b0", "resnet18", "resnet50"}
    measured = ex.load_zoo("measured")
    i, j = zoo.names.index("resnet18"), measured.names.index("resnet18")
    assert zoo.latency_ms[i, 0] == pytest.approx(measured.latency_ms[j, 0] / 2.0, rel=1e-6)
    df = ex.load_sweep("smoke", 0, workloads=("poisson", "twitter"), slo_ms=SLO, K=K, profile=csv,
                       workers=1, cache=tmp_path)
    _check_sweep(df, csv)


def test_a_missing_profile_csv_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="profile = .*neither a profile name"):
        ex.load_sweep("smoke", profile=str(tmp_path / "nope.csv"), K=K, workers=1, cache=tmp_path)


@pytest.mark.parametrize("profile", ["ramsis-image", "measured"])
def test_jitter_draws_service_times_from_the_profiles_spread(tmp_path, profile):
    """Same arrivals, same plans; each batch's time drawn from the spread around the p95 the
    contenders plan with: most batches are faster, a few slower, so the numbers move, and FLEX,
    which never serves late with deterministic times, can."""
    kw = dict(workloads=("poisson",), loads=(0.9,), slo_ms=SLO, K=K, profile=profile,
              contenders=("batch-greedy", "flex", "jellyfish+"), workers=1, cache=tmp_path)
    det = ex.load_sweep("smoke", 0, **kw)
    jit = ex.load_sweep("smoke", 0, service="jitter", **kw)
    assert len(det) == len(jit)
    assert not np.allclose(det["mean_latency_ms"], jit["mean_latency_ms"])
    assert (det.loc[det["contender"] == "flex", "served_late"] == 0).all()
    with pytest.raises(ConfigError, match="service"):
        ex.load_sweep("smoke", service="gamma", **kw)


def test_a_profile_csv_rewritten_in_place_is_not_served_from_the_cache(tmp_path):
    """Cached points are keyed by the content of a profile file, not its path: a reader who
    re-profiles into the same file gets points computed on the new numbers."""
    import time

    csv = _user_csv(tmp_path)
    kw = dict(workloads=("poisson",), slo_ms=SLO, K=K, profile=csv, contenders=("most-accurate",),
              loads=(0.6,), workers=1, cache=tmp_path / "cache")
    before = ex.load_sweep("smoke", 0, **kw)
    raw = pd.read_csv(csv)
    for c in ("mean_ms", "std_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"):
        raw[c] = raw[c] * 3.0                     # the same file, a slower machine
    time.sleep(0.01)
    raw.to_csv(csv, index=False)
    after = ex.load_sweep("smoke", 0, **kw)
    fresh = ex.load_sweep("smoke", 0, **{**kw, "cache": False})
    pd.testing.assert_frame_equal(after, fresh)
    assert not np.allclose(after["rate_qps"], before["rate_qps"])
