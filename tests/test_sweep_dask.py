"""Sweeps that scale out: a Dask LocalCluster gives the serial numbers, a killed worker or a
killed process loses nothing and recomputes nothing, a failing point is recorded."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.sweep import local_cluster, point_key, run_sweep

distributed = pytest.importorskip("distributed")

HERE = Path(__file__).resolve().parent


def _count(counter):
    with open(counter, "a") as f:
        f.write("x")


def calls(counter):
    return len(open(counter).read()) if os.path.exists(counter) else 0


def simulate(lam, seed, counter, fail_flag=None, kill_flag=None, sleep=0.0, hold=None,
             hold_after=0):
    """A seeded toy point that counts its completed calls in a file. At lam = 2 it raises while
    ``fail_flag`` exists; at lam = 1, seed = 1 it SIGKILLs its own process once (removing
    ``kill_flag`` first, so that the retry succeeds). While the file ``hold`` exists, no point
    finishes once ``hold_after`` have: an interrupt test then stops the sweep mid-way however
    busy the machine is (with a bare sleep, a slow test process could see it end first)."""
    if fail_flag is not None and lam == 2.0 and os.path.exists(fail_flag):
        raise RuntimeError(f"boom at lam={lam}")
    if kill_flag is not None and lam == 1.0 and seed == 1 and os.path.exists(kill_flag):
        os.unlink(kill_flag)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(sleep)
    while hold is not None and os.path.exists(hold) and calls(counter) >= hold_after:
        time.sleep(0.01)
    rng = np.random.default_rng([seed, int(lam * 1000)])
    out = {"mean": float(rng.exponential(1 / lam, 200).mean())}
    _count(counter)  # last: a run killed before this line did not compute the point
    return out


def grid(counter, **kw):
    return [{"lam": lam, "seed": s, "counter": str(counter), **kw}
            for lam in (0.5, 1.0, 2.0) for s in (0, 1)]


@pytest.fixture(scope="module")
def cluster():
    before = dict(os.environ)
    with local_cluster(2) as c:
        assert isinstance(c, distributed.LocalCluster) and len(c.workers) == 2
        assert dict(os.environ) == before  # the nanny's variables do not leak into this process
        yield c


def test_local_cluster_workers(cluster):
    with distributed.Client(cluster, set_as_default=False) as client:
        env = client.run(lambda dask_worker: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                              dask_worker.state.nthreads))
    assert sorted(env.values()) == [(None, 1), (None, 1)]  # one thread each, glibc's malloc defaults


def test_local_cluster_equals_serial(tmp_path, cluster, monkeypatch):
    c, cache = tmp_path / "calls", tmp_path / "cache"
    serial = run_sweep(simulate, grid(c), cache_dir=False)
    on_dask = run_sweep(simulate, grid(c), cache_dir=cache, dask=cluster.scheduler_address,
                        progress=True)
    pd.testing.assert_frame_equal(serial, on_dask)
    assert calls(c) == 12 and len(list(cache.rglob("*.pkl"))) == 6  # the workers wrote the cache
    # $INFSCHED_DASK: every run_sweep goes to the cluster; cached points are not recomputed
    monkeypatch.setenv("INFSCHED_DASK", cluster.scheduler_address)
    pd.testing.assert_frame_equal(serial, run_sweep(simulate, grid(c), cache_dir=cache))
    assert calls(c) == 12
    with distributed.Client(cluster, set_as_default=False) as client:  # a client object works too
        again = run_sweep(simulate, grid(c), cache_dir=False, dask=client)
    pd.testing.assert_frame_equal(serial, again)
    assert calls(c) == 18


def test_killed_worker_loses_nothing(tmp_path, cluster):
    c, cache, kill = tmp_path / "calls", tmp_path / "cache", tmp_path / "kill"
    kill.write_text("")
    df = run_sweep(simulate, grid(c, kill_flag=str(kill)), cache_dir=cache,
                   dask=cluster.scheduler_address)
    assert not kill.exists()  # a worker died under one point: Dask ran it again elsewhere
    assert calls(c) == 6 and len(list(cache.rglob("*.pkl"))) == 6
    ref = run_sweep(simulate, grid(tmp_path / "other", kill_flag=str(kill)), cache_dir=False)
    pd.testing.assert_frame_equal(df.drop(columns="counter"), ref.drop(columns="counter"))


@pytest.mark.parametrize("backend", ["serial", "loky", "dask"])
def test_failing_point_is_recorded(tmp_path, backend, request):
    c, cache, flag = tmp_path / "calls", tmp_path / "cache", tmp_path / "fail"
    flag.write_text("")
    kw = {"serial": {}, "loky": {"n_jobs": 2},
          "dask": {"dask": request.getfixturevalue("cluster").scheduler_address}}[backend]
    g = grid(c, fail_flag=str(flag))
    with pytest.warns(RuntimeWarning, match=r"2 of 6 point\(s\) failed .*RuntimeError: boom at lam=2.0"):
        df = run_sweep(simulate, g, cache_dir=cache, on_error="record", progress=True, **kw)
    assert list(df.columns)[-1] == "error" and len(df) == 6
    bad = df["lam"] == 2.0
    assert list(df.loc[bad, "error"]) == ["RuntimeError: boom at lam=2.0"] * 2
    assert df.loc[bad, "mean"].isna().all() and df.loc[~bad, "error"].isna().all()
    assert df.loc[~bad, "mean"].notna().all() and calls(c) == 4
    # failures are not cached: a rerun computes only them
    flag.unlink()
    again = run_sweep(simulate, g, cache_dir=cache, on_error="record", **kw)
    assert calls(c) == 6 and again["error"].isna().all()
    pd.testing.assert_frame_equal(again.drop(columns="error"), run_sweep(simulate, g, cache_dir=cache))


PLAIN_SIGINT = """
import signal
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
"""


def interrupt_after(code, cache, points, sig, *, timeout=60):
    """Run ``code`` in a subprocess, send it ``sig`` as soon as ``points`` points are cached, and
    return its return code and stderr."""
    # the child gets SIGINT as a terminal's Ctrl-C would reach it: default disposition, unblocked,
    # whatever the pytest worker that starts it has inherited or set (a worker whose SIGINT is
    # ignored or blocked would pass that on, and the child would never see the interrupt)
    proc = subprocess.Popen([sys.executable, "-c", PLAIN_SIGINT + code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while len(list(cache.rglob("*.pkl"))) < points:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the subprocess did not get going"
        time.sleep(0.01)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the sweep did not stop within 60 s of signal {sig}; this process's SIGINT "
                             f"handler {signal.getsignal(signal.SIGINT)!r}, blocked "
                             f"{sorted(signal.pthread_sigmask(signal.SIG_BLOCK, set()))}") from None
    return proc.returncode, err


SCRIPT = """
import sys
sys.path.insert(0, {here!r})
from test_sweep_dask import grid, simulate
from infsched.sweep import run_sweep
g = [dict(p, sleep=0.3, hold={hold!r}, hold_after={hold_after}) for p in grid({counter!r})]
run_sweep(simulate, g, cache_dir={cache!r}, n_jobs={n_jobs})
"""


def held(tmp_path):
    """A hold file (see `simulate`): present while a test interrupts a sweep, removed after."""
    hold = tmp_path / "hold"
    hold.write_text("")
    return hold


def test_killed_process_resumes(tmp_path):
    """SIGKILL a sweep in a subprocess after three points; the rerun computes only the rest."""
    c, cache, hold = tmp_path / "calls", tmp_path / "cache", held(tmp_path)
    code = SCRIPT.format(here=str(HERE), counter=str(c), cache=str(cache), n_jobs=1,
                         hold=str(hold), hold_after=3)
    rc, _ = interrupt_after(code, cache, 3, signal.SIGKILL)  # just after a point was written
    assert rc == -signal.SIGKILL
    hold.unlink()
    done = calls(c)
    assert done == 3
    g = [dict(p, sleep=0.3, hold=str(hold), hold_after=3) for p in grid(c)]
    df = run_sweep(simulate, g, cache_dir=cache)
    assert calls(c) == 6  # every point computed exactly once overall
    assert len(list(cache.rglob("*.pkl"))) == 6 and not list(cache.rglob("*.tmp"))
    pd.testing.assert_frame_equal(df, run_sweep(simulate, g, cache_dir=False))


def test_interrupted_local_processes_resume(tmp_path):
    """Ctrl-C a sweep running on two local processes: the points they finished are kept (joblib
    stops its workers), and the rerun computes only the rest."""
    c, cache, hold = tmp_path / "calls", tmp_path / "cache", held(tmp_path)
    code = SCRIPT.format(here=str(HERE), counter=str(c), cache=str(cache), n_jobs=2,
                         hold=str(hold), hold_after=2)
    rc, err = interrupt_after(code, cache, 2, signal.SIGINT, timeout=120)
    assert rc != 0 and b"KeyboardInterrupt" in err
    hold.unlink()  # a worker that outlived its parent would now finish its point
    time.sleep(1.0)
    done = calls(c)
    assert 2 <= done < 6 and done == len(list(cache.rglob("*.pkl")))
    g = [dict(p, sleep=0.3, hold=str(hold), hold_after=2) for p in grid(c)]
    df = run_sweep(simulate, g, cache_dir=cache, n_jobs=2)
    assert calls(c) == 6 and len(list(cache.rglob("*.pkl"))) == 6
    pd.testing.assert_frame_equal(df, run_sweep(simulate, g, cache_dir=False))


def test_killed_sweep_stops_its_workers(tmp_path):
    """SIGKILL the process running a sweep on two local processes: its workers notice that their
    parent is gone and stop, writing nothing more to the cache (no orphans)."""
    import psutil

    c, cache, hold = tmp_path / "calls", tmp_path / "cache", held(tmp_path)
    code = SCRIPT.format(here=str(HERE), counter=str(c), cache=str(cache), n_jobs=2,
                         hold=str(hold), hold_after=1)
    # the child gets SIGINT as a terminal's Ctrl-C would reach it: default disposition, unblocked,
    # whatever the pytest worker that starts it has inherited or set (a worker whose SIGINT is
    # ignored or blocked would pass that on, and the child would never see the interrupt)
    proc = subprocess.Popen([sys.executable, "-c", PLAIN_SIGINT + code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(cache.rglob("*.pkl")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the subprocess did not get going"
        time.sleep(0.01)
    workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
               if "loky" in " ".join(p.cmdline()) and "tracker" not in " ".join(p.cmdline())]
    assert len(workers) == 2
    proc.kill()
    proc.communicate(timeout=60)
    _, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive
    kept = sorted(cache.rglob("*.pkl"))
    hold.unlink()
    time.sleep(0.7)  # longer than a point: a worker that went on would have written by now
    assert sorted(cache.rglob("*.pkl")) == kept and len(kept) < 6


DASK_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
from test_sweep_dask import grid, simulate
from infsched.sweep import run_sweep
g = [dict(p, sleep=0.4, hold={hold!r}, hold_after=2) for p in grid({counter!r})]
run_sweep(simulate, g, cache_dir={cache!r}, dask={address!r})
"""


def test_interrupted_dask_sweep_resumes(tmp_path, cluster):
    """Ctrl-C a sweep running on the cluster: what the workers finish is kept, and the rerun
    computes only the rest."""
    c, cache, hold = tmp_path / "calls", tmp_path / "cache", held(tmp_path)
    code = DASK_SCRIPT.format(here=str(HERE), counter=str(c), cache=str(cache),
                              address=cluster.scheduler_address, hold=str(hold))
    rc, err = interrupt_after(code, cache, 2, signal.SIGINT)
    assert rc != 0 and b"KeyboardInterrupt" in err
    hold.unlink()
    with distributed.Client(cluster, set_as_default=False) as client:  # let running points end
        while any(client.run(lambda dask_worker: len(dask_worker.state.executing)).values()):
            time.sleep(0.05)
    assert 2 <= calls(c) < 6 and calls(c) == len(list(cache.rglob("*.pkl")))
    g = [dict(p, sleep=0.4, hold=str(hold), hold_after=2) for p in grid(c)]
    df = run_sweep(simulate, g, cache_dir=cache, dask=cluster.scheduler_address)
    assert calls(c) == 6 and len(list(cache.rglob("*.pkl"))) == 6
    pd.testing.assert_frame_equal(df, run_sweep(simulate, g, cache_dir=False))


def test_cache_folder_the_workers_cannot_see(tmp_path, monkeypatch):
    """Workers on other machines may not see the caller's cache folder: their write goes
    elsewhere or fails. The caller then writes each point as its result arrives, so a rerun
    recomputes nothing. (Simulated with in-process workers whose write is dropped.)"""
    from infsched import sweep

    task = sweep._dask_task

    def worker_without_the_folder(fn, point, path, record, version=""):
        return task(fn, point, None, record, version)

    c, cache = tmp_path / "calls", tmp_path / "cache"
    monkeypatch.setattr(sweep, "_dask_task", worker_without_the_folder)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as lc:
        df = run_sweep(simulate, grid(c), cache_dir=cache, dask=lc.scheduler_address)
        assert calls(c) == 6 and len(list(cache.rglob("*.pkl"))) == 6
        again = run_sweep(simulate, grid(c), cache_dir=cache, dask=lc.scheduler_address)
    assert calls(c) == 6
    pd.testing.assert_frame_equal(df, again)
    pd.testing.assert_frame_equal(df, run_sweep(simulate, grid(c), cache_dir=False))


def test_library_version_in_key(monkeypatch):
    import infsched.cache as sw

    before = point_key(simulate, {"a": 1})
    monkeypatch.setattr(sw, "__version__", "999")
    assert point_key(simulate, {"a": 1}) != before


def test_bad_arguments(tmp_path, monkeypatch):
    g = grid(tmp_path / "calls")
    with pytest.raises(ConfigError, match="on_error = 'ignore'"):
        run_sweep(simulate, g, on_error="ignore")
    with pytest.raises(ConfigError, match="dask = 8786: must be a scheduler address"):
        run_sweep(simulate, g, dask=8786)
    import dask.config

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ConfigError, match="no Dask scheduler answers there"):
            run_sweep(simulate, g, cache_dir=False, dask="tcp://127.0.0.1:9")
        monkeypatch.setenv("INFSCHED_DASK", "tcp://127.0.0.1:9")
        with pytest.raises(ConfigError, match="tcp://127.0.0.1:9"):
            run_sweep(simulate, g, cache_dir=False)
    # dask=False runs locally whatever $INFSCHED_DASK says; an empty value means local too
    assert len(run_sweep(simulate, g, cache_dir=False, dask=False)) == 6
    monkeypatch.setenv("INFSCHED_DASK", "")
    assert len(run_sweep(simulate, g, cache_dir=False)) == 6
