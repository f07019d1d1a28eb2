"""The model zoo (architectures only, nothing downloaded), the fits the chapters load, and the
raw profile format's checks."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from infsched.errors import ConfigError
from infsched.profiles import load_profile
from infsched.profiling import (
    SHEPHERD_NAMES,
    ZOO,
    ModelUnavailable,
    availability,
    build,
    linear_fit,
    measured_model_set,
    measured_profile,
    monotone_table,
    read_raw,
    zoo_names,
)
from infsched.profiling.fit import fit_residuals
from infsched.profiling.zoo import check_names
from infsched.shepherd.model import TABLE4, model_set

DATA = Path(__file__).resolve().parents[2] / "data" / "profiles"
PUBLISHED_RAW = DATA / "ramsis_latency_raw.csv"


# --------------------------------------------------------------------------- the zoo

def test_zoo_covers_the_papers_models():
    ramsis = set(pd.read_csv(DATA / "ramsis_accuracy.csv")["model"])
    assert ramsis <= set(ZOO)
    assert set(SHEPHERD_NAMES) == {v[0] for v in TABLE4.values()}
    assert set(SHEPHERD_NAMES.values()) <= set(ZOO)
    assert zoo_names("tad") == ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")


def test_names_families_and_papers_expand():
    assert check_names("resnet") == zoo_names("tad")
    assert check_names(["resnet18", "resnet"]) == zoo_names("tad")
    assert set(check_names("shepherd")) == set(SHEPHERD_NAMES.values())
    assert len(check_names("all")) == len(ZOO)
    with pytest.raises(ConfigError, match="model = 'resnet19': unknown"):
        check_names(["resnet19"])


@pytest.mark.parametrize("name, out_shape", [
    ("resnet18", (2, 1000)), ("googlenet", (2, 1000)), ("resnest50d", (2, 1000)), ("bert_tiny", (2, 3)),
])
def test_models_build_from_architectures_and_run(name, out_shape):
    bm = build(name)
    assert not bm.module.training
    with torch.inference_mode():
        y = bm.module(**bm.make_input(2, "cpu")) if bm.entry.task == "text" else bm.module(bm.make_input(2, "cpu"))
    y = y.logits if hasattr(y, "logits") else y
    assert tuple(y.shape) == out_shape


def test_bert_is_int8_dynamic_on_the_cpu_as_in_the_ramsis_artifact():
    assert build("bert_tiny").precision == "int8-dynamic"
    assert build("bert_tiny", quantize=False).precision == "fp32"
    assert ZOO["bert_base_fp32"].quantize_cpu is False


def test_a_model_that_cannot_be_built_is_reported_with_its_reason():
    """R-CNN needs torchvision's compiled operators; where they do not load (PyPI's CUDA
    torchvision beside the CPU torch) it is unavailable, with the reason, never skipped."""
    table = availability(["resnet18", "fasterrcnn_resnet50_fpn"]).set_index("model")
    assert bool(table.loc["resnet18", "available"])
    assert table.loc["resnet18", "params_M"] == pytest.approx(11.69, abs=0.01)
    if not table.loc["fasterrcnn_resnet50_fpn", "available"]:
        assert "compiled operators" in table.loc["fasterrcnn_resnet50_fpn", "note"]
        with pytest.raises(ModelUnavailable, match="compiled operators"):
            build("fasterrcnn_resnet50_fpn")


# --------------------------------------------------------------------------- fits

def _linear_raw(alpha, beta, batches=range(1, 33), noise=None):
    rows = []
    for m, (a, b0) in enumerate(zip(alpha, beta)):
        for b in batches:
            y = a * b + b0 + (0 if noise is None else noise[m][b - 1])
            rows.append({"task": "image", "model": f"m{m}", "batch": b, "n_samples": 10,
                         "mean_ms": y, "std_ms": 0.0, "min_ms": y, "p50_ms": y, "p95_ms": y,
                         "p99_ms": y, "max_ms": y})
    return pd.DataFrame(rows)


def test_linear_fit_recovers_alpha_and_beta():
    fits = linear_fit(_linear_raw([0.22, 40.98], [3.74, 5.67]))
    assert fits["alpha_ms"].tolist() == pytest.approx([0.22, 40.98], rel=1e-9)
    assert fits["beta_ms"].tolist() == pytest.approx([3.74, 5.67], rel=1e-9)
    assert fits["r2"].tolist() == pytest.approx([1.0, 1.0])
    assert fits["max_rel_residual"].max() < 1e-9
    assert (fits["n_batches"] == 32).all()


def test_linear_fit_never_gives_a_negative_fixed_cost():
    # convex growth: the OLS line would cross zero at b = 0; NNLS holds beta at 0
    raw = _linear_raw([0.0], [0.0])
    raw["mean_ms"] = raw["batch"].astype(float) ** 2
    fit = linear_fit(raw).iloc[0]
    assert fit["beta_ms"] == 0.0 and fit["alpha_ms"] > 0
    assert np.polyfit(raw["batch"], raw["mean_ms"], 1)[1] < 0


def test_fit_residuals_and_batch_limit():
    rng = np.random.default_rng(0)
    raw = _linear_raw([2.0], [10.0], noise=[rng.normal(0, 0.5, 32)])
    fits = linear_fit(raw, max_batch=16)
    assert fits["b_max"].iloc[0] == 16
    res = fit_residuals(raw, fits)
    assert len(res) == 32
    np.testing.assert_allclose(res["measured_ms"] - res["fit_ms"], res["residual_ms"])
    assert res["residual_ms"].abs().max() < 3.0


def test_monotone_table_is_non_decreasing_and_fills_every_size():
    rng = np.random.default_rng(1)
    raw = _linear_raw([5.0, 1.0], [20.0, 3.0], batches=[1, 2, 4, 8, 16],
                      noise=[rng.normal(0, 4, 32), rng.normal(0, 4, 32)])
    table = monotone_table(raw, max_batch=32)
    assert table.groupby("model")["batch"].apply(list).tolist() == [list(range(1, 33))] * 2
    for _, g in table.groupby("model"):
        assert (np.diff(g["p95_ms"]) >= 0).all()
    # a measured dip is lowered to the later value, never the later value raised
    raw.loc[(raw.model == "m0") & (raw.batch == 4), "p95_ms"] = 1e3
    t2 = monotone_table(raw).query("model == 'm0'")
    assert t2["p95_ms"].max() < 1e3


def test_measured_profile_of_the_published_summary_is_the_published_profile():
    for task in ("image", "text"):
        ours, published = measured_profile(PUBLISHED_RAW, task), load_profile(f"ramsis-{task}")
        idx = [ours.index(m) for m in published.models]
        np.testing.assert_array_equal(ours.latency_ms[idx], published.latency_ms)
        np.testing.assert_array_equal(ours.spread[idx], published.spread)
        assert ours.pareto_front().models == published.pareto_front().models


def test_measured_model_set_from_table4_latencies_is_table4():
    base = model_set("cv16")
    rows = []
    for short, a, b0 in zip(base.names, base.alpha, base.beta):
        for b in (1, 2, 4, 8, 16, 32):
            y = a * b + b0
            rows.append({"task": "image", "model": SHEPHERD_NAMES[short], "batch": b, "n_samples": 5,
                         "mean_ms": y, "std_ms": 0, "min_ms": y, "p50_ms": y, "p95_ms": y,
                         "p99_ms": y, "max_ms": y})
    raw = pd.DataFrame(rows)
    ms, dropped = measured_model_set(raw)
    assert dropped == [] and ms.names == base.names
    np.testing.assert_allclose(ms.alpha, base.alpha, rtol=1e-9)
    np.testing.assert_allclose(ms.beta, base.beta, rtol=1e-9)
    np.testing.assert_array_equal(ms.exit_points, base.exit_points)
    ms2, dropped2 = measured_model_set(raw[raw["model"] != "fasterrcnn_resnet50_fpn"])
    assert dropped2 == ["RCNN"] and "RCNN" not in ms2.names and ms2.n == 15
    with pytest.raises(ConfigError, match="none of Shepherd's models"):
        measured_model_set(raw.assign(model="other"))


# --------------------------------------------------------------------------- the raw format

def _write(tmp_path, df):
    p = tmp_path / "raw.csv"
    df.to_csv(p, index=False)
    return p


def test_read_raw_accepts_the_published_summary():
    df = read_raw(PUBLISHED_RAW)
    assert len(df) > 500 and set(df["task"]) == {"image", "text"}


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.drop(columns=["p95_ms"]), "columns must be"),
    (lambda d: d.assign(p95_ms=-1.0), "p95_ms = '-1.0' must be a finite number >= 0"),
    (lambda d: d.assign(batch=0), "batch = '0' must be a finite number >= 1"),
    (lambda d: d.assign(task="audio"), "task = 'audio'"),
    (lambda d: pd.concat([d, d.iloc[:1]]), "appears twice"),
    (lambda d: d.iloc[:0], "no rows"),
])
def test_read_raw_rejects_malformed_files_naming_the_line(tmp_path, mutate, match):
    df = pd.read_csv(PUBLISHED_RAW).head(5)
    with pytest.raises(ConfigError, match=match):
        read_raw(_write(tmp_path, mutate(df)))


def test_read_raw_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        read_raw(tmp_path / "nope.csv")


def test_measured_profile_without_models_of_the_task(tmp_path):
    df = pd.read_csv(PUBLISHED_RAW)
    with pytest.raises(ConfigError, match="no text model"):
        measured_profile(df[df["task"] == "image"], "text")
