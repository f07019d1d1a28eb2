"""The profiler's timing: synchronised, repeated, summarised in the raw schema; settings and
device errors; resuming an interrupted zoo run."""

import time

import numpy as np
import pandas as pd
import pytest
import torch

from infsched.errors import ConfigError
from infsched.profiling import (
    RAW_COLUMNS,
    ProfileSettings,
    parse_batch_sizes,
    profile_model,
    profile_zoo,
    read_raw,
    resolve_device,
    summarise,
)

SLEEP_MS_PER_ITEM = 2.0


class Sleeper(torch.nn.Module):
    """Takes ``SLEEP_MS_PER_ITEM`` ms per item of the batch: a model with known latency."""

    def forward(self, x):
        time.sleep(SLEEP_MS_PER_ITEM * x.shape[0] / 1e3)
        return x


def sleeper_input(b, device):
    return torch.zeros(b, 1)


# --------------------------------------------------------------------------- batch sizes

@pytest.mark.parametrize("spec, want", [
    ("1-4", (1, 2, 3, 4)), ("1,2,4", (1, 2, 4)), ("1-3,8,16-17", (1, 2, 3, 8, 16, 17)),
    ("4,1,4", (1, 4)), (8, (8,)), ([32, 1], (1, 32)), (" 1, 2 ", (1, 2)),
])
def test_batch_sizes_parse(spec, want):
    assert parse_batch_sizes(spec) == want


@pytest.mark.parametrize("spec", ["0", "0-4", "-1", "4-1", "a", "1,,2", "", [], [0, 1], [1.5], True, "1-b"])
def test_bad_batch_sizes_name_the_parameter(spec):
    with pytest.raises(ConfigError, match="batch_sizes"):
        parse_batch_sizes(spec)


@pytest.mark.parametrize("kw, name", [
    ({"device": "tpu"}, "device"), ({"reps": 0}, "reps"), ({"warmup": -1}, "warmup"),
    ({"min_reps": 10, "reps": 5}, "min_reps"), ({"budget_s": 0}, "budget_s"),
    ({"max_forward_s": float("nan")}, "max_forward_s"), ({"threads": 0}, "threads"),
    ({"batch_sizes": "0"}, "batch_sizes"),
])
def test_bad_settings_name_the_parameter(kw, name):
    with pytest.raises(ConfigError, match=name):
        ProfileSettings(**kw)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_asked_for_where_there_is_none():
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ConfigError, match="device = 'cuda'.*use 'cpu' or 'auto'"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="device = 'cuda'"):
        profile_model(Sleeper(), sleeper_input, ProfileSettings(batch_sizes=1, device="cuda"))


def test_half_is_for_cuda_only():
    with pytest.raises(ConfigError, match="half"):
        profile_model(Sleeper(), sleeper_input, ProfileSettings(batch_sizes=1, device="cpu", half=True))


# --------------------------------------------------------------------------- timing

def test_summary_statistics():
    s = summarise([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s["n_samples"] == 5 and s["mean_ms"] == 3.0 and s["min_ms"] == 1.0 and s["max_ms"] == 5.0
    assert s["p50_ms"] == 3.0 and s["p95_ms"] == pytest.approx(4.8) and s["p99_ms"] == pytest.approx(4.96)
    assert s["std_ms"] == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1))
    with pytest.raises(ConfigError, match="samples_ms"):
        summarise([])
    with pytest.raises(ConfigError, match="samples_ms"):
        summarise([1.0, float("nan")])


def test_timing_of_a_model_with_known_latency():
    """A model that sleeps 2 ms per item: every timing is at least that (sleep never returns
    early: the timer never under-counts), and all the timings together are no more than the wall
    time that passed around them (it never over-counts). How far above 2 ms a call lands depends
    on the machine's load, so that is not asserted."""
    s = ProfileSettings(batch_sizes=(1, 4, 8), device="cpu", warmup=1, reps=7, min_reps=7)
    t0 = time.perf_counter()
    df = profile_model(Sleeper(), sleeper_input, s, name="sleeper")
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert list(df.columns) == list(RAW_COLUMNS)
    assert df["batch"].tolist() == [1, 4, 8]
    assert (df["n_samples"] == 7).all()
    want = SLEEP_MS_PER_ITEM * df["batch"]
    assert (df["min_ms"] >= want - 1e-6).all()
    assert (df["mean_ms"] * df["n_samples"]).sum() <= wall_ms
    stats = df[["min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"]].to_numpy()
    assert (np.diff(stats, axis=1) >= 0).all()
    assert (df["device"] == "cpu").all() and (df["precision"] == "fp32").all()
    assert (df["threads"] == torch.get_num_threads()).all()
    assert df["torch"].iloc[0] == torch.__version__


def test_threads_are_recorded_and_restored():
    before = torch.get_num_threads()
    df = profile_model(Sleeper(), sleeper_input, ProfileSettings(batch_sizes=1, device="cpu", warmup=0,
                                                                  reps=1, min_reps=1, threads=1))
    assert df["threads"].iloc[0] == 1
    assert torch.get_num_threads() == before


def test_budget_stops_the_timed_calls_after_min_reps():
    # 8 ms per call, a 20 ms budget: 3 calls reach it, min_reps 4 forces a fourth
    s = ProfileSettings(batch_sizes=4, device="cpu", warmup=0, reps=50, min_reps=4, budget_s=0.02)
    assert profile_model(Sleeper(), sleeper_input, s)["n_samples"].iloc[0] == 4


def test_max_forward_skips_larger_batches():
    s = ProfileSettings(batch_sizes=(1, 8, 16, 32), device="cpu", warmup=1, reps=1, min_reps=1,
                        max_forward_s=0.01)
    df = profile_model(Sleeper(), sleeper_input, s)
    assert df["batch"].tolist() == [1, 8]  # 16 ms at batch 8 is over 10 ms: 16 and 32 skipped


def test_cpu_timing_matches_a_wall_clock_around_the_calls():
    """The per-call timer accounts for the whole call: the sum of the timings is no more than
    the wall time of the timed loop and covers at least 90 % of it."""
    s = ProfileSettings(batch_sizes=5, device="cpu", warmup=0, reps=10, min_reps=10)
    t0 = time.perf_counter()
    df = profile_model(Sleeper(), sleeper_input, s)
    wall_ms = (time.perf_counter() - t0) * 1e3
    total = df["mean_ms"].iloc[0] * 10
    assert total <= wall_ms
    assert total >= 0.5 * wall_ms  # the rest: one untimed call and set-up


# --------------------------------------------------------------------------- zoo runs and resuming

def test_zoo_run_writes_rows_as_measured_and_resumes(tmp_path):
    out = tmp_path / "p.csv"
    s = ProfileSettings(batch_sizes=(1, 2), device="cpu", warmup=1, reps=2, min_reps=2, threads=1)
    first = profile_zoo(["bert_tiny"], s, out=out, progress=False)
    assert first.resumed == 0 and len(first.raw) == 2
    on_disk = read_raw(out)
    assert on_disk[["model", "batch"]].values.tolist() == [["bert_tiny", 1], ["bert_tiny", 2]]
    assert (on_disk["precision"] == "int8-dynamic").all() and (on_disk["input"] == "384 tokens").all()
    # an interruption after the first row: drop the second, then ask for one more size
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n")
    kept = pd.read_csv(out).iloc[0]
    s3 = ProfileSettings(batch_sizes=(1, 2, 4), device="cpu", warmup=1, reps=2, min_reps=2, threads=1)
    again = profile_zoo(["bert_tiny"], s3, out=out, progress=False)
    assert again.resumed == 1
    final = read_raw(out)
    assert final["batch"].tolist() == [1, 2, 4]
    assert final.iloc[0]["mean_ms"] == pytest.approx(kept["mean_ms"])  # the kept row untouched
    assert len(again.raw) == 3


def test_zoo_run_reports_models_it_cannot_build(tmp_path, monkeypatch):
    from infsched.profiling import timing, zoo

    def broken(name, **kw):
        raise zoo.ModelUnavailable(f"{name}: its library is missing")

    monkeypatch.setattr(zoo, "build", broken)
    run = timing.profile_zoo(["resnet18"], ProfileSettings(batch_sizes=1, device="cpu"),
                             out=tmp_path / "x.csv", progress=False)
    assert run.unavailable == {"resnet18": "resnet18: its library is missing"}
    assert run.raw.empty and not (tmp_path / "x.csv").exists()
