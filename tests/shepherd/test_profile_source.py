"""The Shepherd chapter's ``profile`` parameter: Table 4 by default, or α, β fitted to a raw
profile CSV (``infsched profile``), carried into the sweeps' worker processes and cache keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.profiles import registry
from infsched.profiling.timing import RAW_COLUMNS
from infsched.profiling.zoo import SHEPHERD_NAMES
from infsched.report import NotReproducible, compare
from infsched.shepherd import experiments as ex
from infsched.shepherd.model import TABLE4, model_set
from infsched.sweep import point_key, run_sweep

# a small Fig. 7 point: 12 GPUs, 3k req/s, 0.3 s simulated
POINT = dict(system="SHEPHERD", variant="stable", rate=3000.0, workers=12, slo_ms=250.0, seed=0,
             warmup_s=0.1, measure_s=0.2, streams=300)


@pytest.fixture(autouse=True)
def published_after():
    """Every test starts and ends on the published profile."""
    ex.use_profile("published")
    yield
    ex.use_profile("published")


def synthetic_raw(factor: float = 1.0, drop=(), batches=range(1, 33)) -> pd.DataFrame:
    """A raw profile in which every statistic of a Table 4 model at batch b is
    factor·(α b + β), under its zoo name."""
    rows = []
    for short, a, b in ((v[0], v[1], v[2]) for v in TABLE4.values()):
        if short in drop:
            continue
        for bs in batches:
            v = factor * (a * bs + b)
            rows.append({"task": "text" if short == "BERT" else "image",
                         "model": SHEPHERD_NAMES[short], "batch": bs, "n_samples": 5,
                         "mean_ms": v, "std_ms": 0.0, "min_ms": v, "p50_ms": v, "p95_ms": v,
                         "p99_ms": v, "max_ms": v, "device": "cpu", "device_name": "synthetic",
                         "threads": 1, "precision": "fp32", "compiled": False,
                         "input": "3x224x224", "torch": "2.13.0+cpu"})
    return pd.DataFrame(rows, columns=list(RAW_COLUMNS))


def write(tmp_path, name, raw: pd.DataFrame):
    path = tmp_path / name
    raw.to_csv(path, index=False)
    return path


def test_published_is_the_default_and_unchanged():
    p = ex.active_profile()
    assert p.published and p.label == "published" and ex.load_profile("published") is p
    for name in ("cv16", "all17"):
        a, b = ex.profile_models(name), model_set(name)
        assert a.names == b.names
        for f in ("alpha", "beta", "exit_points"):
            assert np.array_equal(getattr(a, f), getattr(b, f))
    assert ex.claims_table4() == {"rn18_b1_ms": 0.22 + 3.74, "rn18_b128_ms": 128 * 0.22 + 3.74,
                                  "rs269_b1_ms": 4.37 + 74.20}
    t = ex.profile_table()
    assert (t["status"] == "measured").all() and np.allclose(t["l(1) / Table 4's"], 1.0)


@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_fitted_set_is_table4_times_the_factor(tmp_path, factor):
    p = ex.use_profile(write(tmp_path, "raw.csv", synthetic_raw(factor)))
    assert not p.published and p.dropped == () and len(p.sha256) == 16
    assert p.where == "synthetic (cpu, 1 threads, fp32)"
    for name in ("cv16", "all17"):
        got, paper = ex.profile_models(name), model_set(name)
        assert got.names == paper.names
        np.testing.assert_allclose(got.alpha, factor * paper.alpha, rtol=0, atol=1e-9)
        np.testing.assert_allclose(got.beta, factor * paper.beta, rtol=0, atol=1e-9)
        assert np.array_equal(got.exit_points, paper.exit_points)
    assert ex.claims_table4()["rs269_b1_ms"] == pytest.approx(factor * 78.57, abs=1e-9)


def test_models_not_measured_are_dropped_and_shown(tmp_path):
    p = ex.use_profile(write(tmp_path, "raw.csv", synthetic_raw(10.0, drop=("RCNN", "BERT"),
                                                                   batches=(1, 2, 4, 8))))
    assert p.dropped == ("RCNN", "BERT")
    ms = ex.profile_models("cv16")
    assert ms.n == 15 and "RCNN" not in ms.names
    t = ex.profile_table("cv16", 250.0).set_index("short")
    assert t.loc["RCNN", "status"] == "not measured"
    assert t.loc["RS269", "status"] == "unservable at 250 ms"   # 10 x 78.57 ms > 250 ms
    assert t.loc["RN18", "b_max at 250 ms"] == 96 and t.loc["RN18", "largest batch fitted"] == 8
    # unservable models are handled as at a tight SLO: the SLO check names the fastest model
    ex.check_parameters(12, 250.0)
    with pytest.raises(ConfigError, match=r"slo_ms = 30.*39.60 ms \(RN18\)"):
        ex.check_parameters(12, 30.0)
    assert "RS269" in ms.unservable(250.0)


def test_the_measured_profile_changes_an_experiment(tmp_path):
    base = ex.run_system(**POINT)
    p = ex.use_profile(write(tmp_path, "raw.csv", synthetic_raw(10.0, drop=("RCNN",))))
    slow = ex.run_system(**POINT, profile=p)
    assert slow["goodput"] < base["goodput"] and slow["bound"] < base["bound"]
    assert ex.run_system(**POINT, profile="published") == base
    # Fig. 11a: ResNeSt269 is unservable, the claims still compare (numbers or NotReproducible)
    c = ex.claims_fig11a(ex.fig11a("smoke"))
    assert all(isinstance(v, (float, NotReproducible)) for v in c.values())
    compare("shepherd", "fig11a", c)


def test_workers_and_cache_see_the_callers_models(tmp_path):
    """Points carry the fitted profile: loky workers rebuild the caller's models even after the
    file changed, and the cache keeps published, and two files' contents, apart."""
    raw1 = write(tmp_path, "a.csv", synthetic_raw(10.0, drop=("RCNN",), batches=(1, 2, 4, 8)))
    p1 = ex.use_profile(raw1)
    local = ex.run_system(**POINT, profile=p1)
    write(tmp_path, "a.csv", synthetic_raw(1.0))          # the file changes under the run
    pub, p2 = ex.load_profile("published"), ex.load_profile(raw1)
    grid = [dict(POINT, profile=pr) for pr in (p1, pub)]
    out = run_sweep(ex.run_system, grid, n_jobs=2, cache_dir=tmp_path / "cache")
    assert out.loc[0, "goodput"] == local["goodput"]
    assert out.loc[1, "goodput"] == ex.run_system(**POINT)["goodput"]
    again = run_sweep(ex.run_system, grid, n_jobs=1, cache_dir=tmp_path / "cache")
    pd.testing.assert_frame_equal(out, again)
    keys = {point_key(ex.run_system, dict(POINT, profile=pr)) for pr in (pub, p1, p2)}
    assert len(keys) == 3 and p1.sha256 != p2.sha256
    # the same content elsewhere shares the key: it hashes the content, not the path
    copy = write(tmp_path, "b.csv", pd.read_csv(raw1))
    assert point_key(ex.run_system, dict(POINT, profile=ex.load_profile(copy))) \
        == point_key(ex.run_system, dict(POINT, profile=p2))
    assert len(list((tmp_path / "cache").rglob("*.pkl"))) == 2


def test_relative_paths_from_the_cwd_and_the_repository_root(tmp_path, monkeypatch):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "root" / "profiles").mkdir(parents=True)
    write(tmp_path / "cwd", "here.csv", synthetic_raw(2.0, batches=(1, 8)))
    write(tmp_path / "root" / "profiles", "there.csv", synthetic_raw(3.0, batches=(1, 8)))
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(registry, "REPO_ROOT", tmp_path / "root")
    assert ex.load_profile("here.csv").fits[0] == pytest.approx(("RN18", 0.44, 7.48))
    assert ex.load_profile("profiles/there.csv").fits[0] == pytest.approx(("RN18", 0.66, 11.22))


def test_bad_sources_fail_clearly(tmp_path):
    allowed = r"profile = .*must be 'published' .* raw profile CSV"
    for bad in (None, 3, "", "Published"):
        with pytest.raises(ConfigError, match=allowed):
            ex.use_profile(bad)
    with pytest.raises(ConfigError, match=allowed + r".*no such file"):
        ex.use_profile(tmp_path / "missing.csv")
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match=r"profile = .*junk.csv.*columns"):
        ex.use_profile(tmp_path / "junk.csv")
    other = synthetic_raw(1.0, batches=(1, 2))
    other["model"] = other["model"].map(lambda m: m + "_x")
    with pytest.raises(ConfigError, match=r"profile = .*none of Shepherd's models"):
        ex.use_profile(write(tmp_path, "other.csv", other))
    bert = synthetic_raw(1.0, drop=tuple(v[0] for v in TABLE4.values() if v[0] != "BERT"))
    p = ex.load_profile(write(tmp_path, "bert.csv", bert))
    with pytest.raises(ConfigError, match=r"profile = .*bert.csv.*none of cv16's models"):
        ex.profile_models("cv16", p)
    with pytest.raises(ConfigError, match="profile"):
        ex.fig7("smoke", profile=p)
    assert ex.active_profile().published   # a failed use_profile leaves the profile as it was
