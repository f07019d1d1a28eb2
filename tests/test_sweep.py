"""Sweeps: results, disk cache, resume after an interruption, parallel equals serial."""

import os

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.sweep import point_key, run_sweep


def _count(counter):
    with open(counter, "a") as f:
        f.write("x")


def simulate(lam, seed, counter, fail_flag=None):
    """A seeded toy experiment that counts its calls in a file; fails at lam=2 while the
    file ``fail_flag`` exists (an interruption that is not part of the parameters)."""
    if fail_flag is not None and lam == 2.0 and os.path.exists(fail_flag):
        raise RuntimeError(f"boom at lam={lam}")
    _count(counter)
    rng = np.random.default_rng([seed, int(lam * 1000)])
    return {"mean": float(rng.exponential(1 / lam, 200).mean())}


def table(lam, counter):
    _count(counter)
    return pd.DataFrame({"k": [1, 2], "y": [lam, 2 * lam]})


def calls(counter):
    return len(open(counter).read()) if os.path.exists(counter) else 0


def grid(counter, fail_flag=None):
    return [{"lam": lam, "seed": s, "counter": str(counter), "fail_flag": fail_flag}
            for lam in (0.5, 1.0, 2.0) for s in (0, 1)]


def test_results_in_grid_order(tmp_path):
    c = tmp_path / "calls"
    df = run_sweep(simulate, grid(c), cache_dir=False)
    assert list(df.columns) == ["lam", "seed", "counter", "fail_flag", "mean"]
    assert list(df["lam"]) == [0.5, 0.5, 1.0, 1.0, 2.0, 2.0] and calls(c) == 6
    assert df["mean"].iloc[0] > df["mean"].iloc[-1]
    run_sweep(simulate, grid(c), cache_dir=False)
    assert calls(c) == 12  # cache_dir=False: recomputed


def test_resume_after_failure_recomputes_only_missing(tmp_path):
    c, cache = tmp_path / "calls", tmp_path / "cache"
    flag = tmp_path / "fail"
    flag.write_text("")
    g = grid(c, str(flag))
    # the first run dies at the first lam=2.0 point: the four points before it are persisted
    with pytest.raises(RuntimeError, match="boom"):
        run_sweep(simulate, g, cache_dir=cache)
    assert calls(c) == 4
    flag.unlink()
    df = run_sweep(simulate, g, cache_dir=cache)
    assert calls(c) == 6  # only the 2 missing points were computed
    again = run_sweep(simulate, g, cache_dir=cache)
    assert calls(c) == 6
    pd.testing.assert_frame_equal(df, again)
    pd.testing.assert_frame_equal(df, run_sweep(simulate, g, cache_dir=False))
    assert calls(c) == 12
    # a new version string invalidates the cache
    run_sweep(simulate, g, cache_dir=cache, version="2")
    assert calls(c) == 18


def test_default_cache_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "envcache"))
    c = tmp_path / "calls"
    run_sweep(simulate, grid(c)[:2])
    run_sweep(simulate, grid(c)[:2])
    assert calls(c) == 2 and any((tmp_path / "envcache").rglob("*.pkl"))


def test_parallel_identical(tmp_path):
    c = tmp_path / "calls"
    serial = run_sweep(simulate, grid(c), cache_dir=False)
    parallel = run_sweep(simulate, grid(c), cache_dir=tmp_path / "cache", n_jobs=2, progress=True)
    pd.testing.assert_frame_equal(serial, parallel)
    assert calls(c) == 12
    assert len(list((tmp_path / "cache").rglob("*.pkl"))) == 6


def logged(lam, log):
    with open(log, "a") as f:
        f.write(f"{lam} ")
    return {"y": 2 * lam}


def test_cost_runs_longest_first(tmp_path):
    log = tmp_path / "log"
    g = [{"lam": lam, "log": str(log)} for lam in (0.5, 3.0, 1.0, 2.0)]
    df = run_sweep(logged, g, cache_dir=False, cost=lambda p: p["lam"])
    assert open(log).read().split() == ["3.0", "2.0", "1.0", "0.5"]
    assert list(df["lam"]) == [0.5, 3.0, 1.0, 2.0] and list(df["y"]) == [1.0, 6.0, 2.0, 4.0]
    par = run_sweep(logged, g, cache_dir=False, cost=lambda p: p["lam"], n_jobs=2)
    pd.testing.assert_frame_equal(df, par)
    with pytest.raises(ConfigError, match="cost"):
        run_sweep(logged, g, cache_dir=False, cost=3.0)


def test_prepare_sees_only_the_points_to_compute(tmp_path):
    log = tmp_path / "log"
    g = [{"lam": lam, "log": str(log)} for lam in (1.0, 2.0, 3.0)]
    seen = []
    run_sweep(logged, g[:2], cache_dir=tmp_path / "cache", prepare=seen.append)
    df = run_sweep(logged, g, cache_dir=tmp_path / "cache", n_jobs=2, prepare=seen.append)
    assert seen == [g[:2], [g[2]]]                      # the cached ones are never prepared for
    assert list(df["y"]) == [2.0, 4.0, 6.0]
    run_sweep(logged, g, cache_dir=tmp_path / "cache", prepare=seen.append)
    assert len(seen) == 2                               # nothing to compute: not called
    with pytest.raises(ConfigError, match="prepare"):
        run_sweep(logged, g, cache_dir=False, prepare="yes")


def test_dataframe_results(tmp_path):
    c = tmp_path / "calls"
    df = run_sweep(table, [{"lam": 1.0, "counter": str(c)}, {"lam": 3.0, "counter": str(c)}],
                   cache_dir=tmp_path / "cache")
    assert list(df.columns) == ["lam", "counter", "k", "y"] and list(df["y"]) == [1.0, 2.0, 3.0, 6.0]


def test_point_key():
    assert point_key(simulate, {"a": 1, "b": 2}) == point_key(simulate, {"b": 2, "a": 1})
    assert point_key(simulate, {"a": 1}) != point_key(table, {"a": 1})
    assert point_key(simulate, {"a": 1}) != point_key(simulate, {"a": 1}, version="v2")
    assert point_key(simulate, {"a": np.int64(1)}) == point_key(simulate, {"a": 1})


def test_errors(tmp_path):
    with pytest.raises(ConfigError, match="n_jobs = 0"):
        run_sweep(simulate, [], n_jobs=0)
    with pytest.raises(ConfigError, match=r"grid\[1\] = 3"):
        run_sweep(simulate, [{}, 3], cache_dir=False)
    with pytest.raises(ConfigError, match="must return a dict or a DataFrame"):
        run_sweep(lambda x: x, [{"x": 1}], cache_dir=False)
    assert run_sweep(simulate, [], cache_dir=False).empty


def _entries(cache):
    return sorted((cache).rglob("*.pkl"))


def _rewrite(path, payload, *, schema=None, sha=None, length=None):
    """Replace an entry's pickle by ``payload``, keeping (or forging) its header fields."""
    import hashlib
    import json

    from infsched.cache import _MAGIC

    head = json.loads(path.read_bytes()[len(_MAGIC):].split(b"\n", 1)[0])
    if schema is not None:
        head["schema"] = schema
    if sha is not None:
        head["sha256"] = hashlib.sha256(payload).hexdigest()
    if length is not None:
        head["length"] = len(payload)
    path.write_bytes(_MAGIC + json.dumps(head).encode() + b"\n" + payload)


def test_damaged_cache_entries_are_recomputed_with_a_warning(tmp_path):
    import pickle

    c, cache = tmp_path / "calls", tmp_path / "cache"
    g = grid(c)
    good = run_sweep(simulate, g, cache_dir=cache)
    paths = _entries(cache)
    assert len(paths) == 6 and calls(c) == 6
    blob = paths[0].read_bytes()
    paths[0].write_bytes(blob[: len(blob) // 2])                       # truncated
    blob = bytearray(paths[1].read_bytes())
    blob[-5] ^= 0xFF
    paths[1].write_bytes(bytes(blob))                                  # a flipped byte in the pickle
    blob = bytearray(paths[2].read_bytes())
    blob[20] ^= 0x55
    paths[2].write_bytes(bytes(blob))                                  # a flipped byte in the header
    value = pickle.loads(paths[3].read_bytes().split(b"\n", 2)[2])
    value["mean"] = 1e9
    _rewrite(paths[3], pickle.dumps(value))                            # a loadable wrong number
    _rewrite(paths[4], pickle.dumps({"mean": "x", "other": 1}), sha=True, length=True)  # schema
    _rewrite(paths[5], b"cno_such_module_here\nthing\n.", sha=True, length=True)  # does not unpickle
    with pytest.warns(RuntimeWarning) as record:
        healed = run_sweep(simulate, g, cache_dir=cache)
    messages = [str(w.message) for w in record if "infsched cache" in str(w.message)]
    assert len(messages) == 6 and all(len(m.splitlines()) == 1 for m in messages)
    assert {m.split(": ")[1] for m in messages} == {str(p) for p in paths}
    assert calls(c) == 12
    pd.testing.assert_frame_equal(healed, good)
    # healed: the next run loads every entry, silently
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pd.testing.assert_frame_equal(run_sweep(simulate, g, cache_dir=cache), good)
    assert calls(c) == 12
    # an entry of an older layout (a bare pickle) is never trusted either
    paths[0].write_bytes(pickle.dumps({"mean": 5.0}))
    with pytest.warns(RuntimeWarning, match="no header"):
        pd.testing.assert_frame_equal(run_sweep(simulate, g, cache_dir=cache), good)


def test_damaged_entry_in_a_chapter_kernel_is_reported_on_stdout(tmp_path, monkeypatch, capsys):
    """Inside a chapter's kernel the line goes to stdout: stderr in a cell fails the strict book
    build, and a cache that has just healed itself must not fail it."""
    import warnings

    from infsched import cache as sweep_cache

    c, cache = tmp_path / "calls", tmp_path / "cache"
    g = grid(c)
    good = run_sweep(simulate, g, cache_dir=cache)
    paths = _entries(cache)
    paths[0].write_bytes(paths[0].read_bytes()[:10])
    monkeypatch.setattr(sweep_cache, "_in_kernel", lambda: True)
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pd.testing.assert_frame_equal(run_sweep(simulate, g, cache_dir=cache), good)
    out = capsys.readouterr()
    assert f"infsched cache: {paths[0]}:" in out.out and "recomputing this point" in out.out
    assert out.err == ""


def slow(lam, counter):
    import time

    time.sleep(0.005)
    _count(counter)
    return {"y": lam * 3}


def test_concurrent_runs_share_one_cache_safely(tmp_path, monkeypatch):
    import threading

    import infsched.cache as sweep_cache

    c, cache = tmp_path / "calls", tmp_path / "cache"
    g = [{"lam": float(x), "counter": str(c)} for x in range(40)]
    out, errors, bad = [], [], []
    monkeypatch.setattr(sweep_cache, "_warn_entry", lambda path, why: bad.append((path, why)))

    def go():
        try:
            out.append(run_sweep(slow, g, cache_dir=cache))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not bad and len(out) == 3  # no run ever saw a partial entry
    for df in out:
        assert list(df["y"]) == [3.0 * x for x in range(40)]
    assert len(_entries(cache)) == 40 and not list(cache.rglob("*.tmp"))
    before = calls(c)
    run_sweep(slow, g, cache_dir=cache)
    assert calls(c) == before


def blas_point(seed):
    import hashlib

    rng = np.random.default_rng(seed)
    a, v = rng.standard_normal((400, 400)), rng.standard_normal(400)
    return {"h": hashlib.sha256(np.linalg.solve(a, v).tobytes()).hexdigest()}


def test_points_are_bit_identical_in_the_main_process_and_in_workers():
    """A multithreaded BLAS/LAPACK (here a linear solve, as in the RAMSIS MDP's stationary law)
    sums in an order that depends on its thread count; every point runs with one BLAS thread, so
    where it was computed does not show in its bits."""
    g = [{"seed": s} for s in range(4)]
    serial = run_sweep(blas_point, g, cache_dir=False, n_jobs=1)
    pd.testing.assert_frame_equal(serial, run_sweep(blas_point, g, cache_dir=False, n_jobs=2))
