"""Real execution's instrumentation and its error interval, without torch: a fake pool of worker
threads that "execute" a job by sleeping the profile's latency (plus, in one test, a delay
injected where a real worker picks the job up), so the per-query timestamps, the attribution of
the latency to its segments, the error summary over informative runs and the SLO chosen near
the deadlines can be checked in a few seconds."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from infsched.errors import ConfigError
from infsched.serving import Zoo, realexec as rx, simulate
from infsched.workload import poisson_arrivals

ZOO = Zoo(("fast", "slow"), [60.0, 75.0], np.array([[2.0, 3.0, 4.0, 5.0], [6.0, 8.0, 10.0, 12.0]]))


class FakePool:
    """The pool interface of :mod:`infsched.serving.realexec` on threads: a job sleeps
    ``l(m, b)`` (after ``pickup_ms``) and answers with the worker's clock readings."""

    def __init__(self, workers: int, zoo: Zoo, pickup_ms: float = 0.0):
        self.workers, self.models, self.max_batch = workers, zoo.names, zoo.max_batch
        self.conns, self._threads = [], []
        for _ in range(workers):
            a, b = mp.Pipe()
            t = threading.Thread(target=self._serve, args=(b, zoo.latency_ms, pickup_ms), daemon=True)
            t.start()
            self.conns.append(a)
            self._threads.append(t)

    @staticmethod
    def _serve(conn, lat, pickup_ms):
        while True:
            msg = conn.recv()
            t_recv = time.perf_counter()
            if msg is None:
                return
            _, job, m, b = msg
            if pickup_ms:
                time.sleep(pickup_ms / 1000.0)
            t0 = time.perf_counter()
            time.sleep(lat[m, b - 1] / 1000.0)
            t1 = time.perf_counter()
            conn.send(("done", job, m, b, (t1 - t0) * 1000.0, t_recv, t0, t1))

    def recv(self, w):
        return self.conns[w].recv()

    def close(self):
        for c in self.conns:
            c.send(None)
        for t in self._threads:
            t.join(timeout=2.0)


def _run(pickup_ms=0.0, slo=30.0, load=0.6, seconds=1.0, name="batch-greedy", seed=3):
    K = 2
    rate = load * ZOO.capacity_qps(K, slo)
    arr = poisson_arrivals(rate / 1000.0, n=int(rate * seconds), rng=np.random.default_rng(seed))
    cfg = rx.real_contender(name, ZOO, K, slo, rate)
    pool = FakePool(K, ZOO, pickup_ms)
    try:
        run = rx.run_real(pool, cfg, arr)
    finally:
        pool.close()
    return run, simulate(cfg, arrivals=arr, seed=seed)


@pytest.fixture(scope="module")
def plain():
    return _run()


def test_every_query_records_its_timestamps_in_order(plain):
    run, _ = plain
    ts = run.timestamps()
    s = ts[ts["reply"].notna()]
    assert len(s) > 50
    chain = ["arrival", "seen", "decided", "sent", "w_recv", "w_start", "w_end", "reply"]
    for a, b in zip(chain, chain[1:]):  # one clock for the dispatcher and the workers
        assert (s[b] >= s[a]).all(), f"{b} before {a}"
    # a sleep of l(m, b) never takes less: the execution is at least what was planned
    assert ((s["w_end"] - s["w_start"]) >= s["planned"] - 1e-6).all()
    np.testing.assert_array_equal(s["planned"], ZOO.latency_ms[s["model"], s["batch"] - 1])
    assert ((s["busy"] >= 1) & (s["busy"] <= 2)).all()
    d = ts[ts["reply"].isna()]
    assert (d["dropped"] | d["cut"]).all() and d["sent"].isna().all()


def test_the_segments_add_up_to_the_latency_and_the_simulator_is_set_beside_them(plain):
    run, sim = plain
    tab = rx.attribution([plain]).set_index("segment")
    chain = [label for label, a, b in rx.SEGMENTS if b not in ("w_exec",) and (a, b) != ("arrival", "reply")]
    total = tab.loc["total: arrival -> reply", "measured mean (ms)"]
    assert tab.loc[chain, "measured mean (ms)"].sum() == pytest.approx(total, rel=1e-9)
    k = int(0.1 * sim.arrival.size)
    served = sim.served[k:]
    assert tab.loc["total: arrival -> reply", "simulated mean (ms)"] == pytest.approx(
        float(np.mean((sim.finish - sim.arrival)[k:][served])))
    late = tab.loc["total: arrival -> reply", "late it alone explains"]
    assert (tab.loc[chain, "late it alone explains"] <= late).all()


def test_a_delay_where_the_worker_picks_up_the_job_is_found_where_it_is():
    """Eight ms injected between a worker receiving a job and starting it, with an SLO that
    leaves batch-greedy no room for it: the attribution puts the 8 ms in that segment, nowhere
    else, and that segment alone explains most of the misses the simulator does not have."""
    run, sim = _run(pickup_ms=8.0, slo=14.0, load=0.5)
    tab = rx.attribution([(run, sim)]).set_index("segment")
    pick = tab.loc["worker received -> model call begins"]
    assert pick["measured mean (ms)"] == pytest.approx(8.0, abs=1.5)
    assert pick["measured - simulated (ms)"] == pytest.approx(8.0, abs=1.5)
    for other in ("decided -> job handed to the pipe (decision code)", "handed to the pipe -> worker received (pipe)",
                  "model call ends -> reply received (pipe, dispatcher loop)"):
        assert tab.loc[other, "measured mean (ms)"] < 2.0
    missed = tab.loc["queries missed (late or dropped)"]
    assert missed["measured count"] > missed["simulated count"]
    late = tab.loc["total: arrival -> reply", "late it alone explains"]  # served, but late
    assert late > 0 and pick["late it alone explains"] >= 0.5 * late
    ex = rx.execution_table([run])
    assert ex[ex["by"] == "batch size"]["batches"].sum() == len(run.batches)


def test_error_summary_counts_only_informative_runs():
    df = pd.DataFrame({"contender": ["a"] * 5 + ["b"] * 2,
                       "measured_on_time": [1.0, 0.0, 0.90, 0.80, 0.70, 0.95, 1.0],
                       "simulated_on_time": [1.0, 0.0, 0.92, 0.84, 0.76, 0.99, 1.0]})
    df["simulated_jitter_on_time"] = df["simulated_on_time"]
    s = rx.error_summary(df).set_index("contender")
    a = s.loc["a"]
    assert a["runs"] == 5 and a["informative"] == 3  # both 100 % and both 0 % left out
    x = np.array([2.0, 4.0, 6.0])
    half = stats.t.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3)
    assert a["error_mean"] == pytest.approx(4.0)
    assert a["error_halfwidth"] == pytest.approx(half)
    assert a["error_low"] == pytest.approx(4.0 - half) and a["error_high"] == pytest.approx(4.0 + half)
    assert s.loc["b", "informative"] == 1 and np.isnan(s.loc["b", "error_halfwidth"])
    assert s.loc["all", "informative"] == 4 and s.loc["all", "error_mean"] == pytest.approx(4.0)
    with pytest.raises(ConfigError, match="level"):
        rx.error_summary(df, level=1.0)


def test_pick_slo_lands_near_the_deadlines_on_the_simulated_curve():
    K, ref = 2, 30.0
    rate = 0.8 * ZOO.capacity_qps(K, ref)
    arr = poisson_arrivals(rate / 1000.0, n=4_000, rng=np.random.default_rng(7))
    slo, curve = rx.pick_slo("fixed", ZOO, K, rate, arr, ref_slo_ms=ref, target=0.9)
    row = curve[curve["chosen"]].iloc[0]
    assert row["slo_ms"] == slo and bool(row["in_band"])
    inside = curve[curve["in_band"]]
    assert abs(row["simulated_on_time"] - 0.9) == pytest.approx((inside["simulated_on_time"] - 0.9).abs().min())
    assert curve["slo_ms"].min() > ZOO.latency_ms[:, 0].min()
    with pytest.raises(ConfigError, match="target"):
        rx.pick_slo("fixed", ZOO, K, rate, arr, ref_slo_ms=ref, target=0.3)


def test_the_benchmark_runs_as_one_command_on_a_fake_pool(tmp_path, monkeypatch):
    """``benchmarks/real_execution.py`` end to end (fake workers, the fake zoo as the measured
    profile, two seeds of half a second): every output is written, each (contender, load) runs
    at one SLO picked before the scored runs, and the summary counts the runs it was given."""
    import importlib.util
    from pathlib import Path

    from infsched.profiles import Profile
    from infsched.profiling import workers

    class Pool(FakePool):
        threads, torch_version = 1, "fake"

        def __init__(self, k, models, max_batch=8, threads=1, **kw):
            super().__init__(k, ZOO)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    from infsched.profiles import QUANTILE_LEVELS

    q = np.asarray(QUANTILE_LEVELS, float)  # a spread of quantiles / p95 rising to 1 at the p95
    spread = np.broadcast_to(np.minimum(0.9 + 0.1 * q / 0.95, 1.2), ZOO.latency_ms.shape + q.shape).copy()
    prof = Profile(name="fake", models=ZOO.names, accuracy=ZOO.accuracy, latency_ms=ZOO.latency_ms,
                   spread=spread)
    monkeypatch.setattr(workers, "WorkerPool", Pool)
    monkeypatch.setattr(workers, "measure_profile", lambda pool, **kw: (pd.DataFrame({"model": ["fast"]}), prof))
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "real_execution.py"
    spec = importlib.util.spec_from_file_location("real_execution", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--out", str(tmp_path), "--workers", "2", "--seconds", "0.5", "--seeds", "2",
                       "--loads", "0.8", "--contenders", "fixed,batch-greedy"]) == 0
    runs = pd.read_csv(tmp_path / "real_execution.csv")
    assert len(runs) == 4 and set(runs["seed"]) == {0, 1}
    assert runs.groupby("contender")["slo_ms"].nunique().eq(1).all()
    curve = pd.read_csv(tmp_path / "real_execution_slo.csv")
    chosen = curve[curve["chosen"]].set_index("contender")["slo_ms"]
    assert runs.groupby("contender")["slo_ms"].first().to_dict() == chosen.to_dict()
    summ = pd.read_csv(tmp_path / "real_execution_summary.csv")
    allrow = summ[(summ["contender"] == "all")].iloc[0]
    assert allrow["runs"] == 4 and allrow["informative"] == runs["informative"].sum()
    attr = pd.read_csv(tmp_path / "real_execution_attribution.csv")
    assert set(attr["contender"]) == {"fixed", "batch-greedy"} and len(attr) == 2 * (len(rx.SEGMENTS) + 2)
    assert (tmp_path / "real_execution_batches.csv").is_file()
