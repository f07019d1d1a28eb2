"""The RAMSIS experiments on a measured profile (``use_profile``): the published default is
unchanged, a raw profile CSV gives the same model sets rebuilt from its latencies, worker
processes and the disk cache see which profile a point belongs to, and a bad source fails early
with a ConfigError naming ``profile``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.profiles import interpolate_models, load_profile
from infsched.ramsis import experiments as ex
from infsched.report import find_data_dir
from infsched.sweep import point_key

RAW = find_data_dir() / "profiles" / "ramsis_latency_raw.csv"
STATS = ["mean_ms", "std_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"]


@pytest.fixture(autouse=True)
def _published_after(tmp_path, monkeypatch):
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    ex.use_profile("published")
    yield
    ex.use_profile("published")


def _write(df: pd.DataFrame, path) -> str:
    df.to_csv(path, index=False)
    return str(path)


def _halved(tmp_path) -> str:
    raw = pd.read_csv(RAW)
    raw[STATS] = raw[STATS] * 0.5
    return _write(raw, tmp_path / "half.csv")


def test_published_is_the_default():
    assert ex.profile_source() == "published"
    assert [ex.profile_key(k) for k in ex.PROFILE_KEYS] == list(ex.PROFILE_KEYS)
    image, full = ex.get_profile("image"), load_profile("ramsis-image")
    assert image.models == full.pareto_front().models and image.n_models == 9
    assert np.array_equal(image.latency_ms, full.pareto_front().latency_ms)
    assert ex.get_profile("text") is ex.get_profile("text")            # cached, as before
    assert ex.get_profile("image-3").models == ex.get_profile("image").subset(list(ex.FIG12_MODELS)).models


def test_the_published_raw_table_gives_the_same_sets_under_other_keys():
    published = {k: ex.get_profile(k) for k in ex.PROFILE_KEYS}
    copy = ex.use_profile(str(RAW))
    assert ex.profile_source() == str(RAW.resolve()) and copy != "published"
    for k in ex.PROFILE_KEYS:
        key = ex.profile_key(k)
        assert key.startswith(k + "@") and key != k
        a, b = published[k], ex.get_profile(k)
        assert a.models == b.models, k
        assert np.array_equal(a.latency_ms, b.latency_ms) and np.array_equal(a.spread, b.spread)
        assert np.array_equal(a.accuracy, b.accuracy)
    # a bound key resolves to its own source whatever the current one is (worker processes)
    bound = ex.profile_key("image")
    ex.use_profile("published")
    assert ex.profile_key(bound) == bound and ex.get_profile(bound).name == "measured-image"
    # the cache never shares a point between the two
    point = dict(profile="image", slo_ms=150.0, workers=60, load_qps=2000.0, d=10)
    v = ex._sweep_version(ex.solve_point, "image")
    assert ex._sweep_version(ex.solve_point, bound) != v
    assert point_key(ex.solve_point, point, v) != \
        point_key(ex.solve_point, {**point, "profile": bound}, ex._sweep_version(ex.solve_point, bound))


def test_paths_relative_to_the_repository_root(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    ex.use_profile("data/profiles/ramsis_latency_raw.csv")
    assert ex.profile_source() == str(RAW.resolve())


def test_a_faster_profile_changes_the_latencies_and_the_front(tmp_path):
    pub_all, pub_front = ex.get_profile("image-all"), ex.get_profile("image")
    raw = pd.read_csv(RAW)
    raw[STATS] = raw[STATS] * 0.5
    # make resnet18 (off the published front) the fastest model at batch 1: it joins the front
    # and knocks out shufflenet_v2_x0_5, which is slower and less accurate now
    r18 = raw["model"] == "resnet18"
    raw.loc[r18, STATS] = raw.loc[r18, STATS] * 0.2
    ex.use_profile(_write(raw, tmp_path / "fast.csv"))
    full, front = ex.get_profile("image-all"), ex.get_profile("image")
    assert set(full.models) == set(pub_all.models)
    m = "efficientnet_b2"
    assert np.allclose(full.latency_ms[full.index(m)], 0.5 * pub_all.latency_ms[pub_all.index(m)],
                       rtol=1e-5)
    assert "resnet18" in front.models and "resnet18" not in pub_front.models
    assert "shufflenet_v2_x0_5" not in front.models and front.models[0] == "resnet18"
    assert front.models == full.pareto_front().models
    assert ex.get_profile("image-60").models == interpolate_models(front, 0.5).models
    assert ex.get_profile("image-3").models == full.subset(list(ex.FIG12_MODELS)).models


def test_halved_latencies_run_a_policy_in_a_worker_process(tmp_path):
    pub = ex.policies("image", 150.0, 60, [3600.0], d=4, n_jobs=1, cache=tmp_path / "c")
    ex.use_profile(_halved(tmp_path))
    half = ex.get_profile("image")
    assert np.allclose(half.latency_ms, 0.5 * ex._model_set("image").latency_ms, rtol=1e-5)
    # two points on two processes: the workers load the measured profile from the bound key
    rows = ex.policies("image", 150.0, 60, [2000.0, 3600.0], d=4, n_jobs=2, cache=tmp_path / "c")
    assert len(list((tmp_path / "c").rglob("*.pkl"))) == 3          # none shared with published
    assert rows["feasible"].all() and rows["profile"].str.startswith("image@").all()
    # twice as fast: at 3600 QPS the policy can afford more accurate models than published
    assert rows["expected_accuracy"].iloc[1] > pub["expected_accuracy"].iloc[0]


def test_rewriting_the_file_gives_new_keys(tmp_path):
    path = _halved(tmp_path)
    ex.use_profile(path)
    first = ex.profile_key("image")
    lat = ex.get_profile("image").latency_ms.copy()
    raw = pd.read_csv(path)
    raw[STATS] = raw[STATS] * 0.5
    _write(raw, path)
    ex.use_profile(path)
    assert ex.profile_key("image") != first
    assert np.allclose(ex.get_profile("image").latency_ms, 0.5 * lat, rtol=1e-4)


def test_a_missing_file_names_the_parameter(tmp_path):
    with pytest.raises(ConfigError, match=r'profile = .*nope\.csv.: no such file.*"published"'):
        ex.use_profile(str(tmp_path / "nope.csv"))
    assert ex.profile_source() == "published"
    with pytest.raises(ConfigError, match=r"profile = ''"):
        ex.use_profile("")


def test_a_malformed_file_names_the_parameter(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("model,latency\nresnet18,3\n")
    with pytest.raises(ConfigError, match=r'profile = .*bad\.csv.*"published"'):
        ex.use_profile(str(path))
    assert ex.profile_source() == "published"


def test_a_file_without_image_models(tmp_path):
    raw = pd.read_csv(RAW)
    path = _write(raw[raw["task"] == "text"], tmp_path / "text.csv")
    with pytest.raises(ConfigError, match=r'profile = .*text\.csv.*no image model.*"published"'):
        ex.use_profile(path)
    assert ex.profile_source() == "published"


def test_a_file_without_text_models_fails_on_the_text_set(tmp_path):
    raw = pd.read_csv(RAW)
    ex.use_profile(_write(raw[raw["task"] == "image"], tmp_path / "image.csv"))
    assert ex.get_profile("image").n_models == 9
    with pytest.raises(ConfigError, match=r"profile = .*image\.csv.*no text model.*'text'"):
        ex.get_profile("text")


def test_a_missing_fig12_model_is_named(tmp_path):
    raw = pd.read_csv(RAW)
    ex.use_profile(_write(raw[raw["model"] != "efficientnet_b2"], tmp_path / "no_b2.csv"))
    assert ex.get_profile("image-all").n_models == 25
    with pytest.raises(ConfigError, match=r"profile = .*no_b2\.csv.*efficientnet_b2.*image-3"):
        ex.get_profile("image-3")


def test_an_slo_below_every_model_gives_no_policy(tmp_path):
    """A measured profile can be too slow for a panel's SLO: reported as not solved (the
    published profiles keep their ConfigError)."""
    with pytest.raises(ConfigError, match=r"slo_ms = 5: below the fastest model"):
        ex.policies("text", 5.0, 20, [400.0], d=4, n_jobs=1, cache=tmp_path / "c")
    ex.use_profile(str(RAW))
    rows = ex.policies("text", 5.0, 20, [400.0, 800.0], d=4, n_jobs=1, cache=tmp_path / "c")
    assert not rows["feasible"].any() and len(rows) == 2
    assert not list((tmp_path / "c").rglob("*.pkl"))


def test_measured_points_have_their_own_folder_and_fall_back_where_iteration_cycles(
        tmp_path, monkeypatch):
    """Relative value iteration can cycle on a measured profile's chain: the policy is then the
    artifact's fixed 100 sweeps, flagged; published points keep solve_point and its cache."""
    from infsched.ramsis import mdp

    ex.use_profile(str(RAW))
    solve = mdp.solve

    def cycling(profile, cfg, *, horizon=None, **kw):
        if horizon is None and cfg.load_qps > 3000:
            raise mdp.ConvergenceError("cycles")
        return solve(profile, cfg, horizon=horizon, **kw)

    monkeypatch.setattr(mdp, "solve", cycling)
    rows = ex.policies("image", 150.0, 60, [2000.0, 3600.0], d=4, n_jobs=1, cache=tmp_path / "c")
    assert rows["feasible"].all() and rows["converged"].tolist() == [True, False]
    assert rows["iterations"].iloc[1] == ex.ARTIFACT_SWEEPS
    assert [p.name for p in (tmp_path / "c").iterdir()] == \
        ["infsched.ramsis.points.solve_point_measured"]
