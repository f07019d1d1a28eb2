"""Jellyfish+ and ModelSwitching (spec §4, T8): the JF+ tables of §4.1 exactly, ModelSwitching
against the choices the authors' artifact ships (§4.2), and the tables' validation."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.profiles import Profile, load_profile
from infsched.ramsis import baselines
from infsched.ramsis.baselines import (
    BaselineTable,
    jellyfish_plus,
    model_switching,
    model_switching_search,
)

LOADS = np.arange(400.0, 4001.0, 400.0)


@pytest.fixture(scope="module")
def image():
    return load_profile("ramsis-image").pareto_front()


@pytest.fixture(scope="module")
def text():
    return load_profile("ramsis-text")


def _expand(spec: dict[tuple[int, int], str]) -> list[str]:
    """{(first load, last load): model} → the model at each load of LOADS."""
    out = []
    for load in LOADS:
        out += [m for (lo, hi), m in spec.items() if lo <= load <= hi]
    assert len(out) == LOADS.size
    return out


SHUF, MOB = "shufflenet_v2_x0_5", "mobilenet_v3_large"
B0, B2, B3, V2S = "efficientnet_b0", "efficientnet_b2", "efficientnet_b3", "efficientnet_v2_s"
JF_EXPECTED = {   # spec §4.1, derived from the artifact profiles
    ("image", 150.0): {(400, 800): B2, (1200, 2400): MOB, (2800, 4000): SHUF},
    ("image", 300.0): {(400, 400): V2S, (800, 800): B3, (1200, 1200): B0, (1600, 2800): MOB,
                       (3200, 4000): SHUF},
    ("image", 500.0): {(400, 400): V2S, (800, 800): B3, (1200, 1200): B2, (1600, 1600): B0,
                       (2000, 2800): MOB, (3200, 4000): SHUF},
    ("text", 100.0): {(400, 400): "bert_small", (800, 2400): "bert_mini",
                      (2800, 4000): "bert_tiny"},
    ("text", 200.0): {(400, 400): "bert_medium", (800, 800): "bert_small",
                      (1200, 3600): "bert_mini", (4000, 4000): "bert_tiny"},
    ("text", 300.0): {(400, 400): "bert_medium", (800, 800): "bert_small",
                      (1200, 4000): "bert_mini"},
}


@pytest.mark.parametrize("task, slo", list(JF_EXPECTED))
def test_jellyfish_plus_reproduces_spec_table(task, slo, image, text):
    """T8: the JF+ model per load, image (9 Pareto models, K = 60) and text (5 BERTs, K = 20)."""
    prof, K = (image, 60) if task == "image" else (text, 20)
    table = jellyfish_plus(prof, LOADS, K, slo)
    assert [prof.models[m] for m in table.model] == _expand(JF_EXPECTED[task, slo])
    np.testing.assert_array_equal(table.loads_qps, LOADS)


def test_jellyfish_plus_caps_image_slo150(image):
    """§4.1's caps at SLO 150: effnet_b2 b ≤ 1, mobilenet b ≤ 3, shufflenet b ≤ 4 at 2800–3200,
    then no model sustains the load and the fallback runs shufflenet with cap 32."""
    table = jellyfish_plus(image, LOADS, 60, 150.0)
    np.testing.assert_array_equal(table.cap, [1, 1, 3, 3, 3, 3, 4, 4, 32, 32])


def test_jellyfish_plus_rule_on_a_small_profile():
    """By hand: K = 2, SLO 100, per-worker load λ/K; 1.05 × headroom, l ≤ SLO/2 = 50 ms."""
    lat = np.array([[10.0, 15.0, 20.0, 60.0],     # fast: 100, 133, 150 QPS at b = 1..3
                    [30.0, 45.0, 70.0, 80.0]])    # slow: 33.3, 44.4 QPS at b = 1..2
    prof = Profile("hand", ("fast", "slow"), np.array([60.0, 80.0]), lat)
    table = jellyfish_plus(prof, [60.0, 84.0, 90.0, 280.0, 320.0], 2, 100.0, max_batch=4)
    # 60 QPS: 31.5 per worker → slow, cap 2 (b = 1 and 2 both qualify; the cap is the largest);
    # 84: 44.1 → slow, only b = 2 (44.4); 90: 47.25 → slow fails, fast with cap 3;
    # 280: 147 → fast, cap 3 (150); 320: 168 → no model → the fastest with cap max_batch = 4
    np.testing.assert_array_equal(table.model, [1, 1, 0, 0, 0])
    np.testing.assert_array_equal(table.cap, [2, 2, 3, 3, 4])


# ============================================================================ ModelSwitching

ARTIFACT_MS_K60 = {   # spec §4.2, image SLO 150, K = 60: 1-based index into the 9 Pareto models
    **{x: 7 for x in (200, 400)}, 600: 5, 800: 4, 1000: 3,
    **{x: 2 for x in range(1200, 2801, 200)}, **{x: 1 for x in range(3000, 4001, 200)},
}


def test_model_switching_matches_artifact_choices(image):
    """T8: ModelSwitching for image, SLO 150, K = 60 on the artifact's grid 200…4000 step 200,
    with the artifact's 5-minute runs (300 s per model and load, ≈ 2 s in all): at least 80 % of
    the grid points agree with the shipped choices (we get 20 of 20 on seeds 0, 1 and 2; with 30 s
    runs 19 of 20, the miss being 3000 QPS, where mobilenet_v3_large at cap 4 sustains 3015 QPS)."""
    loads = np.arange(200.0, 4001.0, 200.0)
    table = model_switching(image, loads, 60, 150.0, duration_s=300.0, seed=0)
    got = {int(x): int(m) + 1 for x, m in zip(table.loads_qps, table.model)}
    agree = sum(got[x] == ARTIFACT_MS_K60[x] for x in got)
    assert agree >= 0.8 * loads.size, {x: (got[x], ARTIFACT_MS_K60[x]) for x in got}
    assert agree == loads.size
    # caps: the JF+ cap of the JF+ choice at each load (the artifact's rule)
    np.testing.assert_array_equal(table.cap, jellyfish_plus(image, loads, 60, 150.0).cap)


def test_model_switching_search_frame(image):
    """The full search: one row per (load, model), common random numbers across models, one
    choice per load, the most accurate model under the threshold; the early-stopping search picks
    the same."""
    loads = [1000.0, 3000.0]
    df = model_switching_search(image, loads, 60, 150.0, duration_s=20.0, seed=3)
    assert len(df) == 2 * image.n_models
    assert set(df.columns) >= {"load_qps", "model", "model_name", "model_accuracy", "cap",
                               "violation", "accuracy", "served", "chosen"}
    for _, g in df.groupby("load_qps"):
        assert g["served"].nunique() == 1                      # the same arrivals for all
        assert g["chosen"].sum() == 1
        best = g[g["chosen"]].iloc[0]
        assert best["violation"] < baselines.MS_THRESHOLD
        assert (g[g["model_accuracy"] > best["model_accuracy"]]["violation"]
                >= baselines.MS_THRESHOLD).all()
    quick = model_switching(image, loads, 60, 150.0, duration_s=20.0, seed=3)
    np.testing.assert_array_equal(quick.model, df[df["chosen"]]["model"].to_numpy())
    again = model_switching(image, loads, 60, 150.0, duration_s=20.0, seed=3)
    np.testing.assert_array_equal(again.model, quick.model)


def test_model_switching_falls_back_to_fastest(image):
    """No model stays under 1 % violations (K = 2 at 4000 QPS): the fastest model is chosen."""
    df = model_switching_search(image, [4000.0], 2, 150.0, duration_s=2.0, seed=1, full=False)
    assert len(df) == image.n_models and (df["violation"] >= 0.01).all()
    assert df[df["chosen"]]["model"].tolist() == [0]


def test_model_switching_with_sampled_latencies(image):
    table = model_switching(image, [400.0, 2000.0], 60, 150.0, duration_s=10.0, seed=2,
                            latency="sampled")
    assert table.name == "ModelSwitching" and table.model.shape == (2,)
    assert table.model[0] >= table.model[1]


@pytest.mark.parametrize("kwargs, words", [
    (dict(duration_s=0.0), ("duration_s",)),
    (dict(threshold=1.5), ("threshold",)),
    (dict(latency="p50"), ("latency", "'p95'")),
    (dict(seed="x"), ("seed",)),
    (dict(workers=0), ("workers = 0",)),
    (dict(loads_qps=[800.0, 400.0]), ("loads_qps", "increasing")),
])
def test_model_switching_rejects_bad_input(image, kwargs, words):
    args = dict(loads_qps=[400.0], workers=60, slo_ms=150.0, duration_s=1.0, seed=0)
    args.update(kwargs)
    with pytest.raises(ConfigError) as err:
        model_switching_search(image, args.pop("loads_qps"), args.pop("workers"),
                               args.pop("slo_ms"), **args)
    for w in words:
        assert w in str(err.value)


# ============================================================================ BaselineTable

def test_baseline_table_lookup_and_frame(image):
    t = BaselineTable("x", [400.0, 800.0, 1200.0], [3, 1, 0], [1, 3, 4])
    assert [t.lookup(x) for x in (0.0, 400.0, 401.0, 1200.0, 5000.0)] == [0, 0, 1, 2, 2]
    df = t.to_frame(image)
    assert df["model_name"].tolist() == [image.models[3], image.models[1], image.models[0]]
    assert t.model.dtype == np.int64 and t.cap.dtype == np.int64


@pytest.mark.parametrize("kwargs, name", [
    (dict(loads_qps=[800.0, 400.0]), "loads_qps"),
    (dict(loads_qps=[0.0, 400.0]), "loads_qps"),
    (dict(model=[0]), "model"),
    (dict(model=[0, -1]), "model"),
    (dict(model=[0, 1.5]), "model"),
    (dict(cap=[1, 0]), "cap"),
    (dict(name=3), "name"),
])
def test_baseline_table_validation(kwargs, name):
    args = dict(name="x", loads_qps=[400.0, 800.0], model=[0, 1], cap=[1, 2])
    args.update(kwargs)
    with pytest.raises(ConfigError, match=name):
        BaselineTable(**args)


def test_jellyfish_plus_rejects_bad_input(image):
    with pytest.raises(ConfigError, match="slo_ms"):
        jellyfish_plus(image, LOADS, 60, -1.0)
    with pytest.raises(ConfigError, match="workers"):
        jellyfish_plus(image, LOADS, 0, 150.0)
    with pytest.raises(ConfigError, match="loads_qps"):
        jellyfish_plus(image, [], 60, 150.0)
