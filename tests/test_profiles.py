"""infsched.profiles: the Profile class, the artifact's post-processing, the RAMSIS data and
loader, the Pareto front (spec ramsis T10), the synthetic 60-model set (T9) and the profile
registry (a raw profile held by content, its errors, where a path is looked up)."""

from __future__ import annotations

import importlib.util
import shutil

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.profiles import (
    PROFILE_NAMES,
    QUANTILE_LEVELS,
    Profile,
    interpolate_models,
    load_profile,
    pareto_mask,
    postprocess_p95,
)
from infsched.report import find_data_dir

PARETO_9 = ["shufflenet_v2_x0_5", "mobilenet_v3_large", "efficientnet_b0", "efficientnet_b2",
            "efficientnet_b3", "efficientnet_b4", "efficientnet_v2_s", "efficientnet_v2_m",
            "efficientnet_v2_l"]

# spec ramsis §5.1: batch-1 p95 (ms) of the 26 image models, to 0.1 ms
IMAGE_B1 = {
    "shufflenet_v2_x0_5": 21.9, "mobilenet_v3_large": 31.5, "shufflenet_v2_x1_5": 32.2,
    "mobilenet_v2": 33.1, "googlenet": 40.5, "resnet18": 46.0, "efficientnet_b0": 54.1,
    "inception_v3": 54.5, "efficientnet_b2": 68.3, "resnet50": 69.6, "efficientnet_b1": 70.4,
    "shufflenet_v2_x1_0": 74.1, "resnet34": 79.9, "efficientnet_b3": 81.3, "efficientnet_b4": 105.9,
    "efficientnet_v2_s": 117.2, "shufflenet_v2_x2_0": 131.8, "efficientnet_b5": 137.8,
    "resnet101": 149.1, "efficientnet_b6": 156.9, "resnext101_64x4d": 187.2,
    "efficientnet_v2_m": 193.5, "resnet152": 208.8, "resnext101_32x8d": 210.5,
    "efficientnet_b7": 223.3, "efficientnet_v2_l": 366.7,
}

# spec ramsis §5.1 post-processed tables: (model, batch) -> p95 ms
IMAGE_SPOTS = {
    ("shufflenet_v2_x0_5", 32): 427.9, ("shufflenet_v2_x0_5", 13): 195.1,
    ("shufflenet_v2_x0_5", 14): 195.1, ("efficientnet_b4", 10): 1016.1,
    ("efficientnet_b4", 11): 1016.1, ("efficientnet_b4", 12): 1016.1,
    ("efficientnet_b4", 24): 2395.6, ("efficientnet_b4", 32): 3221.6,
    ("efficientnet_b0", 14): 623.0, ("efficientnet_b0", 17): 623.0,
    ("efficientnet_b0", 32): 1217.6, ("efficientnet_v2_l", 1): 366.7,
    ("efficientnet_v2_l", 9): 2464.5, ("efficientnet_v2_l", 32): 8702.1,
    ("efficientnet_b3", 19): 1540.8, ("efficientnet_v2_m", 8): 1160.7,
    ("mobilenet_v3_large", 16): 262.4, ("efficientnet_v2_s", 18): 1782.2,
}
TEXT_SPOTS = {
    ("bert_tiny", 1): 11.4, ("bert_tiny", 2): 16.8, ("bert_tiny", 8): 16.8,
    ("bert_tiny", 32): 44.9, ("bert_mini", 1): 23.7, ("bert_mini", 2): 23.7,
    ("bert_mini", 3): 37.2, ("bert_small", 7): 119.5, ("bert_medium", 5): 149.6,
    ("bert_medium", 32): 956.7, ("bert_base", 1): 136.6, ("bert_base", 10): 911.0,
    ("bert_base", 12): 1043.9, ("bert_base", 32): 2717.4,
}
TEXT_ACC = {"bert_tiny": 70.2, "bert_mini": 74.8, "bert_small": 77.6, "bert_medium": 80.0,
            "bert_base": 84.56}


@pytest.fixture(scope="module")
def image() -> Profile:
    return load_profile("ramsis-image")


@pytest.fixture(scope="module")
def text() -> Profile:
    return load_profile("ramsis-text")


def _toy(**kw) -> Profile:
    args = dict(name="toy", models=("slow", "fast", "mid"), accuracy=np.array([90.0, 60.0, 80.0]),
                latency_ms=np.array([[30.0, 50.0, 70.0], [10.0, 15.0, 20.0], [20.0, 30.0, 40.0]]))
    args.update(kw)
    return Profile(**args)


# --------------------------------------------------------------------------- Profile

def test_profile_sorts_by_batch1_latency_and_is_read_only():
    p = _toy()
    assert p.models == ("fast", "mid", "slow")
    np.testing.assert_array_equal(p.accuracy, [60.0, 80.0, 90.0])
    np.testing.assert_array_equal(p.latency_ms[:, 0], [10.0, 20.0, 30.0])
    assert (p.n_models, p.max_batch) == (3, 3)
    assert p.index("slow") == 2
    with pytest.raises(ValueError):
        p.latency_ms[0, 0] = 1.0
    assert p.accuracy.dtype == np.float64 and not p.accuracy.flags.writeable


def test_profile_ties_broken_by_name():
    p = Profile("t", ("b", "a"), np.array([1.0, 2.0]), np.array([[5.0], [5.0]]))
    assert p.models == ("a", "b")
    np.testing.assert_array_equal(p.accuracy, [2.0, 1.0])


@pytest.mark.parametrize("kw, needle", [
    (dict(models=()), "at least one model"),
    (dict(models=("a", "a", "b")), "unique"),
    (dict(models="abc"), "not one string"),
    (dict(name=""), "name"),
    (dict(accuracy=np.array([90.0, 60.0])), "accuracy.shape"),
    (dict(accuracy=np.array([90.0, 101.0, 80.0])), "[0, 100]"),
    (dict(accuracy=np.array([90.0, np.nan, 80.0])), "[0, 100]"),
    (dict(latency_ms=np.array([10.0, 20.0, 30.0])), "latency_ms.shape"),
    (dict(latency_ms=np.array([[30.0, 50.0, 70.0], [10.0, 0.0, 20.0], [20.0, 30.0, 40.0]])), "> 0"),
    (dict(latency_ms=np.array([[30.0, 50.0, np.inf], [10.0, 15.0, 20.0], [20.0, 30.0, 40.0]])), "finite"),
    (dict(latency_ms=np.array([[30.0, 50.0, 45.0], [10.0, 15.0, 20.0], [20.0, 30.0, 40.0]])),
     "non-decreasing"),
    (dict(spread=np.ones((3, 3, 4))), "spread.shape"),
    (dict(spread=np.zeros((3, 3, 5))), "> 0"),
    (dict(spread=np.tile([1.0, 0.9, 1.0, 1.1, 1.2], (3, 3, 1))), "non-decreasing"),
])
def test_profile_validation(kw, needle):
    with pytest.raises(ConfigError) as e:
        _toy(**kw)
    assert needle in str(e.value)


def test_profile_names_the_offending_model():
    with pytest.raises(ConfigError, match="slow"):
        _toy(latency_ms=np.array([[30.0, 50.0, 45.0], [10.0, 15.0, 20.0], [20.0, 30.0, 40.0]]))


def test_index_and_subset_errors():
    p = _toy()
    with pytest.raises(ConfigError, match="known models: fast, mid, slow"):
        p.index("nope")
    with pytest.raises(ConfigError, match="at least one"):
        p.subset([])
    with pytest.raises(ConfigError, match="unknown"):
        p.subset(["fast", "nope"])
    s = p.subset(["slow", "fast"])
    assert s.models == ("fast", "slow")
    np.testing.assert_array_equal(s.latency_ms, [[10.0, 15.0, 20.0], [30.0, 50.0, 70.0]])


def test_latency_extrapolation():
    p = _toy()
    np.testing.assert_allclose(p.extrapolation_slope(), [5.0, 10.0, 20.0])
    assert p.latency(0, 2) == 15.0
    assert p.latency(0, 3) == 20.0
    assert p.latency(0, 5) == 30.0          # 20 + 5 * 2
    assert p.latency(2, 4) == 90.0          # 70 + 20 * 1
    t = p.latency_table(5)
    assert t.shape == (3, 5)
    np.testing.assert_allclose(t[:, :3], p.latency_ms)
    np.testing.assert_allclose(t[1, 3:], [50.0, 60.0])
    assert np.all(np.diff(t, axis=1) >= 0)
    np.testing.assert_allclose(p.latency_table(2), p.latency_ms[:, :2])
    single = Profile("one", ("a",), np.array([50.0]), np.array([[7.0]]))
    np.testing.assert_array_equal(single.extrapolation_slope(), [0.0])
    assert single.latency(0, 10) == 7.0
    for bad in [(3, 1), (0, 0), (0, 1.5), (-1, 1)]:
        with pytest.raises(ConfigError):
            p.latency(*bad)
    with pytest.raises(ConfigError, match="b_max"):
        p.latency_table(0)


def test_sample_latency_matches_quantiles(image):
    rng = np.random.default_rng(20240101)
    for name, b in [("efficientnet_b0", 1), ("shufflenet_v2_x0_5", 16), ("efficientnet_v2_l", 20)]:
        m = image.index(name)
        x = image.sample_latency(m, b, rng, size=100_000)
        q = image.spread[m, min(b, image.max_batch) - 1]
        lat = image.latency(m, b)
        assert x.shape == (100_000,)
        assert np.percentile(x, 50) == pytest.approx(q[1] * lat, rel=0.02)
        assert np.percentile(x, 95) == pytest.approx(lat, rel=0.02)
        assert x.min() >= q[0] * lat - 1e-9 and x.max() <= q[-1] * lat + 1e-9
    one = image.sample_latency(0, 1, np.random.default_rng(1))
    assert isinstance(one, float)
    # same seed, same draws
    a = image.sample_latency(3, 4, np.random.default_rng(7), size=5)
    b = image.sample_latency(3, 4, np.random.default_rng(7), size=5)
    np.testing.assert_array_equal(a, b)


def test_sample_latency_errors(image):
    with pytest.raises(ConfigError, match="spread"):
        _toy().sample_latency(0, 1, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="rng"):
        image.sample_latency(0, 1, 42)


# --------------------------------------------------------------------------- postprocess_p95

def test_postprocess_ols_fill():
    # profiled 1..4 exactly on the line 10 + 5b: the fill continues the line
    out = postprocess_p95([1, 2, 3, 4], [15.0, 20.0, 25.0, 30.0], max_batch=6)
    np.testing.assert_allclose(out, [15, 20, 25, 30, 35, 40])
    # off-line points: OLS slope/intercept of the profiled points fill the gap at b = 3, 5
    b, y = np.array([1, 2, 4]), np.array([10.0, 14.0, 30.0])
    slope, icpt = np.polyfit(b, y, 1)
    out = postprocess_p95(b, y, max_batch=5)
    np.testing.assert_allclose(out, [10, 14, icpt + 3 * slope, 30, icpt + 5 * slope])


def test_postprocess_downward_sweep_lowers_outliers():
    out = postprocess_p95([1, 2, 3, 4], [10.0, 50.0, 20.0, 30.0], max_batch=4)
    np.testing.assert_allclose(out, [10.0, 20.0, 20.0, 30.0])
    # a chain: the sweep carries a low value down through several entries
    out = postprocess_p95([1, 2, 3, 4], [40.0, 35.0, 30.0, 25.0], max_batch=4)
    np.testing.assert_allclose(out, [25.0, 25.0, 25.0, 25.0])
    # order of the input does not matter
    np.testing.assert_allclose(postprocess_p95([4, 2, 1, 3], [30.0, 50.0, 10.0, 20.0], 4),
                               [10.0, 20.0, 20.0, 30.0])


def test_postprocess_beyond_max_batch_and_errors():
    out = postprocess_p95([1, 2, 3], [10.0, 20.0, 30.0], max_batch=2)
    np.testing.assert_allclose(out, [10.0, 20.0])
    np.testing.assert_allclose(postprocess_p95([1], [7.0], max_batch=1), [7.0])
    for args, needle in [
        (([1], [7.0], 3), "at least two"),
        (([1, 1], [7.0, 8.0], 3), "repeat"),
        (([0, 1], [7.0, 8.0], 3), "integers >= 1"),
        (([1, 2], [7.0], 3), "one value per"),
        (([1, 2], [7.0, -1.0], 3), "> 0"),
        (([1, 2], [7.0, 8.0], 0), "max_batch"),
        (([10, 11], [100.0, 200.0], 12), "<= 0"),  # the fitted line is negative at b = 1
    ]:
        with pytest.raises(ConfigError, match=needle):
            postprocess_p95(*args)


# --------------------------------------------------------------------------- RAMSIS data

def test_image_profile_shape_and_spec_values(image):
    assert image.n_models == 26 and image.max_batch == 32
    assert image.models[0] == "shufflenet_v2_x0_5"
    assert sorted(image.models) == sorted(IMAGE_B1)
    for m, v in IMAGE_B1.items():
        assert round(image.latency(image.index(m), 1), 1) == v, m
    for (m, b), v in IMAGE_SPOTS.items():
        assert round(image.latency(image.index(m), b), 1) == v, (m, b)
    assert image.accuracy[image.index("mobilenet_v3_large")] == 73.004
    assert image.accuracy[image.index("shufflenet_v2_x0_5")] == 57.972
    assert image.spread is not None and image.spread.shape == (26, 32, len(QUANTILE_LEVELS))
    np.testing.assert_allclose(image.spread[:, :, QUANTILE_LEVELS.index(0.95)], 1.0)
    assert np.all(np.diff(image.latency_ms, axis=1) >= 0)
    assert "RAMSIS" in image.source


def test_text_profile_spec_values(text):
    assert text.models == ("bert_tiny", "bert_mini", "bert_small", "bert_medium", "bert_base")
    assert dict(zip(text.models, text.accuracy)) == TEXT_ACC
    for (m, b), v in TEXT_SPOTS.items():
        assert round(text.latency(text.index(m), b), 1) == v, (m, b)
    # Fig. 9: all 5 BERTs are on the front
    assert text.pareto_front().models == text.models


def test_pareto_front_is_the_nine(image):
    """Spec T10: exactly the 9 models of the artifact, from the 26 batch-1 p95 latencies."""
    front = image.pareto_front()
    assert list(front.models) == PARETO_9
    assert np.all(np.diff(front.accuracy) > 0) and np.all(np.diff(front.latency_ms[:, 0]) > 0)
    np.testing.assert_allclose(front.accuracy, [57.972, 73.004, 77.692, 80.608, 82.008, 83.384,
                                                84.228, 85.112, 85.808])
    mask = pareto_mask(image.latency_ms[:, 0], image.accuracy)
    assert [m for m, k in zip(image.models, mask) if k] == PARETO_9


def test_pareto_mask_rules():
    # faster-and-better dominates; equal latency keeps only the more accurate; exact duplicate keeps one
    np.testing.assert_array_equal(pareto_mask([1, 2, 3], [50, 40, 60]), [True, False, True])
    np.testing.assert_array_equal(pareto_mask([1, 1, 2], [50, 55, 56]), [False, True, True])
    np.testing.assert_array_equal(pareto_mask([1, 1], [50, 50]), [True, False])
    np.testing.assert_array_equal(pareto_mask([1, 2], [50, 50]), [True, False])
    with pytest.raises(ConfigError):
        pareto_mask([1, 2], [50])


def test_interpolated_sixty_models(image):
    """Spec T9 / Fig. 8: 9 + 51 = 60 models, segments adding 30, 9, 5, 2, 2, 1, 1, 1."""
    front = image.pareto_front()
    many = interpolate_models(image, step=0.5)
    assert many.n_models == 60
    assert set(PARETO_9) < set(many.models)
    assert set(interpolate_models(front).models) == set(many.models)
    # in latency order the accuracies and batch-1 latencies increase strictly; each table is
    # non-decreasing in b and lies between its two Pareto neighbours at every batch size
    # (the Pareto models themselves cross at larger b, e.g. effnet_b4 vs v2_s at b = 6)
    assert np.all(np.diff(many.accuracy) > 0)
    assert np.all(np.diff(many.latency_ms[:, 0]) > 0)
    assert np.all(np.diff(many.latency_ms, axis=1) >= 0)
    seg = np.searchsorted(front.accuracy, many.accuracy, side="right") - 1
    for k in range(many.n_models):
        i = min(seg[k], front.n_models - 2)
        lo = np.minimum(front.latency_ms[i], front.latency_ms[i + 1])
        hi = np.maximum(front.latency_ms[i], front.latency_ms[i + 1])
        assert np.all((lo - 1e-9 <= many.latency_ms[k]) & (many.latency_ms[k] <= hi + 1e-9))
    added = [sum(1 for a in many.accuracy if lo < a < hi)
             for lo, hi in zip(front.accuracy[:-1], front.accuracy[1:])]
    assert added == [30, 9, 5, 2, 2, 1, 1, 1]
    # a synthetic model: accuracy 57.972 + 0.5 = 58.472, latency interpolated in accuracy
    m = many.index("synthetic_58.472")
    w = 0.5 / (73.004 - 57.972)
    np.testing.assert_allclose(many.latency_ms[m], (1 - w) * front.latency_ms[0] + w * front.latency_ms[1])
    np.testing.assert_allclose(many.spread[m], (1 - w) * front.spread[0] + w * front.spread[1])
    assert "synthetic_73.504" in many.models
    assert interpolate_models(front, step=100.0).models == front.models
    for bad in (0, -1, np.nan, "x"):
        with pytest.raises(ConfigError, match="step"):
            interpolate_models(front, step=bad)


# --------------------------------------------------------------------------- derived tables

def _derive_module():
    path = find_data_dir() / "profiles" / "derive_ramsis.py"
    spec = importlib.util.spec_from_file_location("derive_ramsis", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_derived_tables_equal_a_fresh_derivation():
    """The committed ramsis_{image,text}.csv are what derive_ramsis.py makes from the raw copy,
    so a hand edit of either the raw copy or a derived table is caught."""
    folder = find_data_dir() / "profiles"
    fresh = _derive_module().derive(folder)
    for task, fname in (("image", "ramsis_image.csv"), ("text", "ramsis_text.csv")):
        on_disk = pd.read_csv(folder / fname)
        pd.testing.assert_frame_equal(on_disk, fresh[task], check_exact=False, rtol=0, atol=1e-9)


def test_raw_copy_matches_spec_batch1_p95():
    raw = pd.read_csv(find_data_dir() / "profiles" / "ramsis_latency_raw.csv")
    b1 = raw[(raw["task"] == "image") & (raw["batch"] == 1)].set_index("model")["p95_ms"]
    assert {m: round(v, 1) for m, v in b1.items()} == IMAGE_B1
    assert set(raw.columns) == {"task", "model", "batch", "n_samples", "mean_ms", "std_ms", "min_ms",
                                "p50_ms", "p95_ms", "p99_ms", "max_ms"}


# --------------------------------------------------------------------------- loader errors

@pytest.fixture()
def data_copy(tmp_path):
    """A copy of the real profile files in tmp_path/profiles, to be broken by a test."""
    src = find_data_dir() / "profiles"
    dst = tmp_path / "profiles"
    dst.mkdir()
    for f in ("ramsis_accuracy.csv", "ramsis_image.csv", "ramsis_text.csv"):
        shutil.copy(src / f, dst / f)
    return tmp_path


def test_loader_with_data_dir_copy(data_copy):
    p = load_profile("ramsis-text", data_dir=data_copy)
    assert p.n_models == 5
    assert set(PROFILE_NAMES) == {"ramsis-image", "ramsis-text"}


def test_loader_unknown_name():
    with pytest.raises(ConfigError, match="'ramsis-image', 'ramsis-text'"):
        load_profile("ramsis-video")


def _edit(path, fn):
    df = pd.read_csv(path)
    df = fn(df)
    df.to_csv(path, index=False)


@pytest.mark.parametrize("fname, fn, needle", [
    ("ramsis_text.csv", lambda d: d.drop(columns=["q99"]), "missing: q99"),
    ("ramsis_text.csv", lambda d: d.assign(extra=1), "unknown: extra"),
    ("ramsis_accuracy.csv", lambda d: d.drop(columns=["metric"]), "missing: metric"),
    ("ramsis_accuracy.csv", lambda d: d[d["model"] != "bert_small"], "no accuracy"),
    ("ramsis_text.csv", lambda d: d[d["model"] != "bert_mini"], "no latencies"),
    ("ramsis_text.csv", lambda d: d.assign(p95_ms=np.where(d.index == 5, -1.0, d["p95_ms"])),
     "line 7 (model 'bert_base', batch 6): p95_ms = -1.0 must be > 0"),
    ("ramsis_text.csv", lambda d: d.assign(p95_ms=np.where(d.index == 3, np.inf, d["p95_ms"])),
     "line 5 (model 'bert_base'): p95_ms = 'inf' is not a finite number"),
    ("ramsis_text.csv", lambda d: d.assign(p95_ms=np.where(d.index == 3, "abc", d["p95_ms"])),
     "not a finite number"),
    ("ramsis_text.csv", lambda d: d.assign(p95_ms=np.where(d.index == 3, 1.0, d["p95_ms"])),
     "model 'bert_base': p95_ms must be non-decreasing in batch, but batch 4"),
    ("ramsis_text.csv", lambda d: pd.concat([d, d.iloc[[10]]]), "duplicate (model, batch) = ('bert_base', 11)"),
    ("ramsis_text.csv", lambda d: d.drop(index=[40]), "missing: [9]"),
    ("ramsis_text.csv", lambda d: d.assign(batch=np.where(d.index == 0, 0, d["batch"])), "integer >= 1"),
    ("ramsis_text.csv", lambda d: d.assign(q0=np.where(d.index == 0, 5.0, d["q0"])),
     "model 'bert_base', batch 1: the quantile columns"),
    ("ramsis_accuracy.csv", lambda d: d.assign(top1_accuracy=np.where(d["model"] == "bert_tiny", 170.0,
                                                                      d["top1_accuracy"])), "[0, 100]"),
    ("ramsis_accuracy.csv", lambda d: pd.concat([d, d[d["model"] == "bert_tiny"]]), "listed twice"),
    ("ramsis_accuracy.csv", lambda d: d[d["task"] != "text"], "no rows for task 'text'"),
])
def test_loader_rejects_malformed_files(data_copy, fname, fn, needle):
    path = data_copy / "profiles" / fname
    _edit(path, fn)
    with pytest.raises(ConfigError) as e:
        load_profile("ramsis-text", data_dir=data_copy)
    msg = str(e.value)
    assert needle in msg
    if "[0, 100]" not in needle:  # the Profile's own check names the field, not the file
        assert str(path) in msg


def test_loader_missing_file(data_copy):
    (data_copy / "profiles" / "ramsis_image.csv").unlink()
    with pytest.raises(ConfigError, match="ramsis_image.csv: not found"):
        load_profile("ramsis-image", data_dir=data_copy)


def test_lstsq_extrapolation_is_the_artifacts_least_squares_line():
    """Ours continues the secant through batch 1 and B from l(m, B); the RAMSIS artifact's rule
    (an option) takes the values of the least-squares line through every profiled batch."""
    import numpy as np

    from infsched.profiles import load_profile

    p = load_profile("ramsis-image")
    B = p.max_batch
    b = np.arange(1, B + 1)
    for m in (0, p.n_models - 1):
        beta, alpha = np.polyfit(b, p.latency_ms[m], 1)
        assert p.extrapolation_slope("lstsq")[m] == pytest.approx(beta, rel=1e-9)
        assert p.latency(m, B + 5, extrapolation="lstsq") == pytest.approx(alpha + beta * (B + 5), rel=1e-9)
        assert p.latency(m, B + 5) == pytest.approx(p.latency_ms[m, -1] + 5 * p.extrapolation_slope()[m])
    np.testing.assert_array_equal(p.latency_table(B + 3, "lstsq")[:, :B], p.latency_ms)
    with pytest.raises(ConfigError, match="extrapolation"):
        p.latency_table(B + 3, "cubic")


# ------------------------------------------------------------------ the registry (issue 25)

def test_the_registry_keys_a_raw_profile_by_its_content(tmp_path, monkeypatch):
    """A reader's raw profile is held by content: the same bytes under two names are one
    profile (one cache key), rewritten bytes are another, and a worker reading the copy gets
    exactly what was checked."""
    from infsched.profiles import content_key, raw_profile, read_copy, read_raw

    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    src = find_data_dir() / "profiles" / "measured_cpu.csv"
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    shutil.copy(src, a)
    shutil.copy(src, b)
    ra, rb = raw_profile(a), raw_profile(b)
    assert ra == rb and ra.key == content_key(src.read_bytes()) and ra.path == rb.path
    assert ra.origin == str(a.resolve()) and rb.origin == str(b.resolve())
    pd.testing.assert_frame_equal(read_copy(ra.path), read_raw(src))
    raw = pd.read_csv(a)
    raw["mean_ms"] *= 2
    raw.to_csv(a, index=False)
    assert raw_profile(a).key != rb.key
    # a copy whose bytes no longer match its name is refused, not read
    with open(rb.path, "ab") as fh:
        fh.write(b"\n")
    with pytest.raises(ConfigError, match="no longer matches its hash"):
        read_copy(rb.path)


def test_the_registry_names_the_file_line_column_and_value(tmp_path, monkeypatch):
    from infsched.profiles import raw_profile

    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    raw = pd.read_csv(find_data_dir() / "profiles" / "measured_cpu.csv")
    raw["p95_ms"] = raw["p95_ms"].astype(object)
    raw.loc[2, "p95_ms"] = "abc"
    path = tmp_path / "bad.csv"
    raw.to_csv(path, index=False)
    with pytest.raises(ConfigError) as info:
        raw_profile(path)
    msg = str(info.value)
    assert msg.startswith(f"profile file {path.resolve()}: line 4 (model ") and "p95_ms = 'abc'" in msg


def test_the_registry_looks_in_the_working_directory_then_the_repository(tmp_path, monkeypatch):
    from infsched.profiles import locate, measured_file, registry

    monkeypatch.chdir(tmp_path)
    found, places = locate("data/profiles/measured_cpu.csv")
    assert found == measured_file().resolve()
    assert places == [tmp_path / "data/profiles/measured_cpu.csv",
                      registry.REPO_ROOT / "data/profiles/measured_cpu.csv"]
    (tmp_path / "data" / "profiles").mkdir(parents=True)
    shutil.copy(measured_file(), tmp_path / "data" / "profiles" / "measured_cpu.csv")
    assert locate("data/profiles/measured_cpu.csv")[0] == tmp_path / "data/profiles/measured_cpu.csv"
    assert locate(tmp_path / "nope.csv") == (None, [tmp_path / "nope.csv"])
