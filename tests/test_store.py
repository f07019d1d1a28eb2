"""The results store (infsched.store): exact encoding, serving, recording, staleness, strictness
and the recompute check, on a scratch store of real TAD points (milliseconds each)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from infsched import results, store
from infsched.errors import ConfigError
from infsched.shepherd.profile import ProfileSource
from infsched.sweep import run_sweep
from infsched.tad import bound
from infsched.tad.experiments import simulate_point

GRID = [dict(policy=p, n=4, a_star=76.0, rho=0.5, service="exp", n_jobs=4000, seed=s)
        for p in ("tad", "r-jiq") for s in (1, 2)]


@pytest.mark.parametrize("value", [
    {"a": 1.0, "b": float("nan"), "c": float("-inf"), "d": None, "e": True, "f": "x"},
    {"a": np.float64(0.1), "b": np.int32(3), "c": np.bool_(True), "d": (1, 2.5, "z")},
    {"arr": np.arange(6, dtype=np.int16).reshape(2, 3), "f": np.array([0.1, np.nan, 1e300])},
    {"policy": np.full((33, 101), -1, dtype=np.int32), "big": np.linspace(0, 1, 5000)},
    {1: "int key", (2, 3): [1, {"$odd": 2}]},
    pd.DataFrame({"x": [1, 2], "y": [0.1, np.nan], "s": ["a", None], "b": [True, False],
                  "o": [(1, 2), {"k": 1}]}),
    pd.DataFrame({"v": [1.5, 2.5]}, index=pd.Index(["p", "q"], name="key")),
    pd.DataFrame(columns=["a", "b"]).astype({"a": float, "b": "int64"}),
    pd.Series([1.0, 2.0], index=[3, 4], name="s"),
    {"profile": ProfileSource(sha256="ab", fits=(("rn18", 0.22, 3.74),), path="x.csv")},
])
def test_encoding_is_exact(value):
    back = store.decode(json.loads(json.dumps(store.encode(value), allow_nan=False)))
    assert store.same(back, value) == []
    if isinstance(value, pd.DataFrame):
        assert list(back.dtypes) == list(value.dtypes)


def test_same_finds_differences():
    assert store.same({"a": 1.0}, {"a": 1.0 + 1e-6})
    assert store.same({"a": 1.0}, {"a": 1.0 + 1e-13}, rtol=1e-9) == []
    assert store.same({"a": 1.0, "t": 5.0}, {"a": 1.0, "t": 9.0}, skip=("t",)) == []
    assert store.same(pd.DataFrame({"x": [1.0]}), pd.DataFrame({"x": [2.0]}))
    assert store.same((1, 2), [1, 2])
    with pytest.raises(TypeError):
        store.encode({"f": lambda: 0})


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch store, an empty sweep cache, and a record folder as `results build` sets them."""
    root, rec = tmp_path / "results", tmp_path / "rec"
    monkeypatch.setenv(store.DIR_ENV, str(root))
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(store.RECORD_ENV, str(rec))
    monkeypatch.delenv(store.STRICT_ENV, raising=False)
    monkeypatch.delenv(store.STORE_ENV, raising=False)
    store._LOADED.clear()
    store._SERVED.clear()
    run_sweep(simulate_point, GRID)
    monkeypatch.delenv(store.RECORD_ENV)
    manifest = store.commit_records("scratch", rec, root)
    return root, manifest


def test_build_records_points_with_provenance(scratch):
    root, manifest = scratch
    name = "infsched.tad.experiments.simulate_point"
    assert manifest["results_versions"] == {name: 1}
    assert len(manifest["points"][name]) == len(GRID)
    lines = (root / "points" / f"{name}.jsonl").read_text().splitlines()
    assert len(lines) == len(GRID) and lines == sorted(lines)
    for e in store.read_points(name, root).values():
        for k in ("commit", "code_version", "cpu_s", "wall_s", "date", "machine", "results_version"):
            assert k in e.provenance, k
        assert e.params["seed"] in (1, 2)
    st = store.status("scratch", root)
    assert st["current"] and st["n_points"] == len(GRID)


def test_store_serves_points_without_computing(scratch, tmp_path, monkeypatch):
    empty = tmp_path / "cache2"
    monkeypatch.setenv("INFSCHED_CACHE", str(empty))
    store._SERVED.clear()
    df = run_sweep(simulate_point, GRID)
    assert not empty.exists() or not any(empty.rglob("*.pkl"))  # nothing computed, nothing cached
    assert len(store._SERVED) == len(GRID)
    monkeypatch.setenv(store.STORE_ENV, "off")
    assert store.same(run_sweep(simulate_point, GRID, cache_dir=False), df) == []
    note = store.page_note("scratch", "paper")
    assert f"{len(GRID)} simulated points come from the results store" in note


def test_strict_book_refuses_a_point_not_stored(scratch, monkeypatch):
    monkeypatch.setenv(store.STRICT_ENV, "1")
    monkeypatch.delenv("INFSCHED_SCALE", raising=False)
    assert store.book_scale("scratch") == "paper"
    run_sweep(simulate_point, GRID)  # stored: served
    with pytest.raises(ConfigError, match="not stored.*infsched results build scratch"):
        run_sweep(simulate_point, [dict(GRID[0], seed=99)])
    monkeypatch.setenv("INFSCHED_SCALE", "default")
    assert store.book_scale("scratch") == "default"
    run_sweep(simulate_point, [dict(GRID[0], seed=99)])  # not rendering from the store: computed


def test_a_bumped_results_version_makes_the_build_stale(scratch, monkeypatch):
    root, _ = scratch
    monkeypatch.setattr(simulate_point, "__results_version__", 2)
    st = store.status("scratch", root)
    assert not st["current"] and "results version 1 stored, 2 now" in st["stale"][0]
    assert store.lookup(simulate_point, GRID[0]) is None
    assert all(results.recompute(e) == ["results version 1 stored, 2 now"]
               for e in store.all_entries(root))


def test_recompute_agrees_then_catches_an_altered_number(scratch):
    root, _ = scratch
    entries = store.all_entries(root)
    assert entries and all(results.recompute(e) == [] for e in entries)
    path = root / "points" / "infsched.tad.experiments.simulate_point.jsonl"
    lines = path.read_text().splitlines()
    d = json.loads(lines[0])
    d["value"]["latency"] = math.nextafter(d["value"]["latency"], 0) * (1 - 1e-8)
    path.write_text("\n".join([json.dumps(d)] + lines[1:]) + "\n")
    altered = store.read_points("infsched.tad.experiments.simulate_point", root)[d["key"]]
    assert any("latency" in m for m in results.recompute(altered))


def test_recompute_catches_a_changed_kernel(scratch, monkeypatch):
    """The LP bound's objective off by one part in 10^8: every stored point's T_lp differs."""
    import dataclasses

    root, _ = scratch
    lp = bound.lp_lower_bound
    monkeypatch.setattr(bound, "lp_lower_bound", lambda *a, **k: dataclasses.replace(
        lp(*a, **k), T=lp(*a, **k).T * (1 + 1e-8)))
    diffs = [results.recompute(e) for e in store.all_entries(root)]
    assert all(any("T_lp" in m for m in d) for d in diffs)


def test_sample_respects_its_budget(scratch):
    root, _ = scratch
    entries = store.all_entries(root)
    cost = sorted(float(e.provenance["cpu_s"]) for e in entries)
    budget = cost[0] + cost[1]
    sample = store.sample_entries(budget, seed=3, root=root)
    assert 1 <= len(sample) <= 2
    assert sum(float(e.provenance["cpu_s"]) for e in sample) <= budget
    assert [e.key for e in store.sample_entries(budget, seed=3, root=root)] == [e.key for e in sample]


def test_unused_points_are_pruned(scratch, tmp_path, monkeypatch):
    root, _ = scratch
    rec = tmp_path / "rec2"
    monkeypatch.setenv(store.RECORD_ENV, str(rec))
    monkeypatch.setenv(store.STORE_ENV, "off")
    run_sweep(simulate_point, GRID[:1])
    monkeypatch.delenv(store.RECORD_ENV)
    store.commit_records("scratch", rec, root)  # the chapter now reads one point only
    assert len(store.all_entries(root)) == 1


# ---- plug-in policies in the store: by reference to a library function, never a notebook's

def test_library_policy_round_trips_by_reference():
    from infsched.serving.examples import idle_cascade
    for p in (idle_cascade, idle_cascade.with_params(1.0, name="idle-cascade-1")):
        enc = json.loads(json.dumps(store.encode({"runs": (("x", 1.0, p),)})))
        back = store.decode(enc)
        assert back["runs"][0][2].key == p.key and back["runs"][0][2].select is p.select
        assert store.same(back, {"runs": (("x", 1.0, p),)}) == []

def test_changed_policy_code_is_refused():
    from infsched.serving.examples import idle_cascade
    enc = json.loads(json.dumps(store.encode(idle_cascade)))
    enc["state"]["key"] = "0" * 16
    with pytest.raises(ValueError, match="code changed"):
        store.decode(enc)

def test_notebook_policy_cannot_be_stored():
    from infsched.serving.plugins import UserPolicy
    def select(s, lat, by_accuracy, params):
        return 0, 1
    with pytest.raises(TypeError, match="module-level function of the library"):
        store.encode(UserPolicy("mine", select))


def test_large_values_are_packed_and_read_back_exactly(tmp_path):
    big = pd.DataFrame({"contender": ["batch-greedy", "slack-accurate"] * 60,
                        "attainment": np.linspace(0, 1, 120)})
    small = {"x": 1.5}
    for value in (big, small):
        e = store.Entry("k", "f", 1, {"a": 1}, value, {"cpu_s": 1.0})
        line = e.to_json()
        assert ('"$z"' in line) == (value is big)  # only what exceeds PACK_ABOVE is packed
        assert store.same(store.Entry.from_json(line).value, value) == []


def test_a_large_points_file_is_sharded_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "SHARD_ABOVE", 2_000)
    name = "infsched.tad.experiments.simulate_point"
    entries = {f"{i:024x}"[::-1]: store.Entry(f"{i:024x}"[::-1], name, 1, {"i": i}, {"x": float(i)},
                                               {"cpu_s": 1.0}) for i in range(40)}
    store.write_points(name, entries, tmp_path)
    files = sorted(p.name for p in (tmp_path / "points").iterdir())
    assert len(files) > 1 and all("@" in f for f in files)
    back = store.read_points(name, tmp_path)
    assert sorted(back) == sorted(entries) and store._stored_names(tmp_path) == [name]
    monkeypatch.setattr(store, "SHARD_ABOVE", 10**9)  # small again: one file, no stale shards
    store.write_points(name, entries, tmp_path)
    assert [p.name for p in (tmp_path / "points").iterdir()] == [f"{name}.jsonl"]
    assert sorted(store.read_points(name, tmp_path)) == sorted(entries)


def test_the_profiling_chapter_is_not_built_into_the_store(capsys):
    """`infsched results build` with no chapter builds every chapter with paper-scale results,
    not the profiling chapter (it measures the machine it runs on); naming it is refused."""
    from infsched.book import list_chapters
    from infsched.cli import main

    assert "profiling" in list_chapters() and "profiling" not in results.stored_chapters()
    assert set(results.stored_chapters()) == set(list_chapters()) - set(results.NOT_STORED)
    with pytest.raises(ConfigError, match="profiling"):
        results.build("profiling")
    assert main(["results", "build", "profiling"]) == 2
    assert "measures the machine it runs on" in capsys.readouterr().err
