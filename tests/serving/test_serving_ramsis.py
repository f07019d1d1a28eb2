"""RAMSIS and its baselines on the neutral simulator: against the simpy reference, against the
RAMSIS paper engine (:mod:`infsched.ramsis.sim`) on the paper's own scenario, and the
constraint RAMSIS promises (it starts the batch its MDP policy prescribes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.profiles import load_profile
from infsched.ramsis import mdp
from infsched.ramsis.baselines import jellyfish_plus, model_switching
from infsched.ramsis.model import MDPConfig
from infsched.ramsis.policy import PolicyTable
from infsched.ramsis.sim import simulate_central, simulate_ramsis
from infsched.serving import ServingConfig, Zoo, experiments as ex, simulate
from infsched.serving.reference import simulate_reference
from infsched.workload import poisson_arrivals

PROF = load_profile("ramsis-image")
ZOO = Zoo.of(PROF)
K, SLO = 8, 150.0


def _policy(load: float, d: int = 10):
    return mdp.solve(PROF, MDPConfig(SLO, K, load, d=d), metrics=False)


@pytest.fixture(scope="module")
def policies():
    return {load: _policy(load) for load in (150.0, 450.0)}


@pytest.mark.parametrize("load", [150.0, 450.0])
def test_engine_matches_simpy_reference(policies, load):
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=policies[load])
    arr = poisson_arrivals(load / 1000.0, n=3000, rng=np.random.default_rng(2))
    fast, ref = simulate(cfg, arrivals=arr, seed=2), simulate_reference(cfg, arrivals=arr, seed=2)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_array_equal(fast.bsize, ref.bsize)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)


@pytest.mark.parametrize("load", [150.0, 450.0])
def test_ramsis_agrees_with_the_ramsis_engine(policies, load):
    """RAMSIS's own scenario (round-robin, one policy per load, p95 latencies, Poisson): the
    same arrivals give the same violation rate and accuracy per satisfied query."""
    sol = policies[load]
    arr = poisson_arrivals(load / 1000.0, n=20_000, rng=np.random.default_rng(5))
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=sol)
    ours = simulate(cfg, arrivals=arr, seed=5).summary(warmup=0.0)
    tab = PolicyTable(SLO, K, sol.grid, [load], sol.model[None], sol.batch[None], 0,
                      np.array([0.0]), np.array([0.0]))
    theirs = simulate_ramsis(PROF, tab, arr, slo_ms=SLO, workers=K, load_qps=load)
    assert 1.0 - ours["attainment"].mean == pytest.approx(theirs.violation_rate, abs=1e-12)
    assert ours["accuracy_served"] == pytest.approx(theirs.accuracy, rel=1e-12)


def test_jellyfish_agrees_with_the_ramsis_central_engine():
    load = 400.0
    tab = jellyfish_plus(PROF, [load], K, SLO)
    arr = poisson_arrivals(load / 1000.0, n=20_000, rng=np.random.default_rng(6))
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", model=PROF.models[tab.model[0]],
                        max_batch=int(tab.cap[0]))
    ours = simulate(cfg, arrivals=arr, seed=6).summary(warmup=0.0)
    theirs = simulate_central(PROF, tab, arr, slo_ms=SLO, workers=K, load_qps=load)
    assert 1.0 - ours["attainment"].mean == pytest.approx(theirs.violation_rate, abs=1e-12)
    assert ours["accuracy_served"] == pytest.approx(theirs.accuracy, rel=1e-12)


def test_ramsis_starts_the_batch_its_policy_prescribes(policies):
    """Every batch: its model and size are the policy's action for the worker's state when it
    started, recomputed here from the per-query record (round-robin: worker = query mod K)."""
    sol = policies[450.0]
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=sol)
    res = simulate(cfg, 5000, rate_qps=450.0, seed=3)
    idx = np.arange(res.arrival.size)
    for w in range(K):
        mine = idx[idx % K == w]
        starts = np.unique(res.start[mine])
        for t in starts[:200]:
            batch = mine[res.start[mine] == t]
            head = batch[0]
            n = int(((res.arrival[mine] <= t) & (res.start[mine] >= t)).sum())  # queued at t
            slack = res.arrival[head] + SLO - t
            j = max(int(np.searchsorted(sol.grid, slack, side="right")) - 1, 0)
            if n <= sol.model.shape[0] - 1:
                assert res.model[head] == sol.model[n, j] and batch.size == min(sol.batch[n, j], 32)


def test_model_switching_is_the_ramsis_rule():
    """The search on this simulator picks what the RAMSIS chapter's search picks at a load
    where the choice is clear-cut (the two search runs differ only in their random draws)."""
    load = 300.0
    theirs = model_switching(PROF, [load], K, SLO, duration_s=20.0, seed=1)
    ours = ex.model_switching_choice(ZOO, K, SLO, load, 6_000, seed=1)
    assert ours == (PROF.models[theirs.model[0]], int(theirs.cap[0]))


def test_ramsis_configuration_errors(policies):
    with pytest.raises(ConfigError, match=r"^mdp_policy = 'NoneType': policy 'ramsis' needs it"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis")
    with pytest.raises(ConfigError, match=r"only policy 'ramsis' takes it"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", mdp_policy=policies[150.0])
    sol = policies[150.0]
    with pytest.raises(ConfigError, match=r"^mdp_policy = .*shape"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=(sol.grid[:-1], sol.model, sol.batch))
    bad = sol.model.copy()
    bad[1, 0] = 99
    with pytest.raises(ConfigError, match=r"models must be in"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=(sol.grid, bad, sol.batch))


# ---- re-planning per load level: the RAMSIS paper's 500 ms load monitor (its §6; spec §1 rule 7)

LEVELS = (150.0, 300.0, 450.0)


@pytest.fixture(scope="module")
def level_policies():
    return [_policy(x) for x in LEVELS]


def _bursty(n=20_000, seed=7):
    from infsched.workload import mmpp_arrivals

    t, _ = mmpp_arrivals([0.1, 0.45], [[-0.002, 0.002], [0.002, -0.002]], 10.0 * n, np.random.default_rng(seed))
    return t[:n]


def test_replanning_ramsis_agrees_with_the_ramsis_engine_under_its_monitor(level_policies):
    """The RAMSIS paper's own scenario with its load monitor: the same bursty arrivals give the
    RAMSIS engine's violation rate and accuracy exactly (one policy per level, picked by the
    rate over the last 500 ms)."""
    arr = _bursty()
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=level_policies,
                        plan_loads=LEVELS)
    ours = simulate(cfg, arrivals=arr, seed=5).summary(warmup=0.0)
    sols = level_policies
    tab = PolicyTable(SLO, K, sols[0].grid, list(LEVELS), np.stack([s.model for s in sols]),
                      np.stack([s.batch for s in sols]), 0, np.zeros(3), np.zeros(3))
    theirs = simulate_ramsis(PROF, tab, arr, slo_ms=SLO, workers=K)  # no load_qps: the monitor
    assert 1.0 - ours["attainment"].mean == pytest.approx(theirs.violation_rate, abs=1e-12)
    assert ours["accuracy_served"] == pytest.approx(theirs.accuracy, rel=1e-12)
    # and it did switch: a single policy gives another answer
    one = simulate(ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=sols[0]),
                   arrivals=arr, seed=5).summary(warmup=0.0)
    assert one["accuracy_served"] != ours["accuracy_served"]


def test_replanning_jellyfish_agrees_with_the_ramsis_central_engine_and_the_reference():
    tab = jellyfish_plus(PROF, list(LEVELS), K, SLO)
    arr = _bursty(6_000, seed=8)
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", plan_loads=LEVELS,
                        plan=tuple((PROF.models[m], int(c)) for m, c in zip(tab.model, tab.cap)))
    res = simulate(cfg, arrivals=arr, seed=6)
    ours = res.summary(warmup=0.0)
    theirs = simulate_central(PROF, tab, arr, slo_ms=SLO, workers=K)
    assert 1.0 - ours["attainment"].mean == pytest.approx(theirs.violation_rate, abs=1e-12)
    assert ours["accuracy_served"] == pytest.approx(theirs.accuracy, rel=1e-12)
    assert len(set(res.model.tolist())) > 1  # the model changed with the load
    ref = simulate_reference(cfg, arrivals=arr, seed=6)
    np.testing.assert_array_equal(res.model, ref.model)
    np.testing.assert_allclose(res.finish, ref.finish, rtol=0, atol=1e-9)


def test_replanning_configuration_errors(level_policies):
    with pytest.raises(ConfigError, match=r"^plan_loads = .*strictly increasing"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=level_policies,
                      plan_loads=(300.0, 150.0, 450.0))
    with pytest.raises(ConfigError, match=r"one policy per load level"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=level_policies[:2],
                      plan_loads=LEVELS)
    with pytest.raises(ConfigError, match=r"^plan_loads = .*only policies 'fcfs'"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="batch-greedy", plan_loads=LEVELS)
    with pytest.raises(ConfigError, match=r"^plan = .*one \(model, batch cap\) per load level"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", plan_loads=LEVELS,
                      plan=((PROF.models[0], 4),))
    with pytest.raises(ConfigError, match=r"^plan = 'nope'"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", plan_loads=(100.0,), plan=(("nope", 4),))
    with pytest.raises(ConfigError, match=r"needs plan_loads"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", plan=((PROF.models[0], 4),))
    with pytest.raises(ConfigError, match=r"monitor_window_ms"):
        ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="fcfs", monitor_window_ms=0)


# ---- overload (issue 33, item 4): past the pool's capacity RAMSIS drops nothing and, above its
# MDP's N queued queries, serves the whole queue on the fallback model, as the RAMSIS engine does

def _capacity():
    from infsched.ramsis.model import capacity_qps

    return capacity_qps(PROF, K, SLO)


def _table(sols, loads):
    return PolicyTable(SLO, K, sols[0].grid, list(loads), np.stack([s.model for s in sols]),
                       np.stack([s.batch for s in sols]), 0, np.zeros(len(loads)), np.zeros(len(loads)))


@pytest.mark.parametrize("rho", [1.0, 1.2, 1.6])
def test_ramsis_in_overload_matches_the_ramsis_engine_query_by_query(policies, rho):
    """ρ >= 1 (the RAMSIS engine's own capacity of the pool): the same arrivals give the same
    model and completion time for every query, no query is dropped, and the queues do pass N
    (so the fallback path is what is compared)."""
    rate = rho * _capacity()
    sol = policies[450.0]
    arr = poisson_arrivals(rate / 1000.0, n=12_000, rng=np.random.default_rng(21))
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=sol)
    ours = simulate(cfg, arrivals=arr, seed=21)
    theirs = simulate_ramsis(PROF, _table([sol], [450.0]), arr, slo_ms=SLO, workers=K,
                             load_qps=450.0, record=True)
    assert ours.served.all()
    np.testing.assert_array_equal(ours.model, theirs.model)
    np.testing.assert_allclose(ours.finish, theirs.completion, rtol=1e-12, atol=1e-9)
    N = sol.model.shape[0] - 1
    if rho > 1.0:
        assert ours.bsize.max() > N, "the fallback batch past N was never used"
    s = ours.summary(warmup=0.0)
    assert 1.0 - s["attainment"].mean == pytest.approx(theirs.violation_rate, abs=1e-12)
    assert s["accuracy_served"] == pytest.approx(theirs.accuracy, rel=1e-12)


def test_replanning_ramsis_in_overload_matches_the_ramsis_engine(level_policies):
    """Re-planning under the 500 ms monitor on an MMPP whose high state is 1.5 times the
    pool's capacity: the same outcome query by query."""
    from infsched.workload import mmpp_arrivals

    cap = _capacity() / 1000.0
    t, _ = mmpp_arrivals([1.5 * cap, 0.6 * cap], [[-0.001, 0.001], [0.001, -0.001]], 40_000.0,
                         np.random.default_rng(22))
    arr = t[:15_000]
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=level_policies,
                        plan_loads=LEVELS)
    ours = simulate(cfg, arrivals=arr, seed=22)
    theirs = simulate_ramsis(PROF, _table(level_policies, LEVELS), arr, slo_ms=SLO, workers=K,
                             record=True)
    assert ours.served.all()
    assert ours.bsize.max() > level_policies[0].model.shape[0] - 1
    np.testing.assert_array_equal(ours.model, theirs.model)
    np.testing.assert_allclose(ours.finish, theirs.completion, rtol=1e-12, atol=1e-9)


def test_engine_matches_simpy_reference_in_overload(policies):
    cfg = ServingConfig(ZOO, workers=K, slo_ms=SLO, policy="ramsis", mdp_policy=policies[450.0])
    arr = poisson_arrivals(1.4 * _capacity() / 1000.0, n=3000, rng=np.random.default_rng(23))
    fast, ref = simulate(cfg, arrivals=arr, seed=2), simulate_reference(cfg, arrivals=arr, seed=2)
    assert fast.bsize.max() > 32
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_array_equal(fast.bsize, ref.bsize)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)


# ---- the head to head's RAMSIS contender is the RAMSIS chapter's RAMSIS: its load grid, its slack
# grid, its policies, and its simulator's decisions on the same arrivals

@pytest.mark.parametrize("scale", ["smoke", "default"])
def test_the_contenders_levels_are_the_ramsis_chapters_grid(scale):
    """On the chapter's own pool (the image models, 60 workers) the contender plans for the
    chapter's policy loads at the same scale, query rate for query rate; on another pool the same
    grid as shares of that pool's capacity."""
    from infsched.ramsis.model import capacity_qps
    from infsched.ramsis.points import servable_loads
    from infsched.ramsis.scales import get_scale as ramsis_scale

    sc = ramsis_scale(scale)
    want = tuple(servable_loads(PROF, 60, sc.policy_loads))
    assert ex.ramsis_loads("ramsis-image", 60, scale) == want
    half = ex.ramsis_loads("ramsis-image", 30, scale)
    ratio = capacity_qps(PROF, 30) / capacity_qps(PROF, 60)
    np.testing.assert_allclose(half, np.array(want) * ratio, rtol=1e-9)


def test_the_contender_decides_like_the_ramsis_chapters_simulator():
    """The contender as the head to head builds it, on the chapter's pool and SLO: its policy
    for a load is the chapter's own (:func:`infsched.ramsis.points.solve_point` at the chapter's
    D, on the chapter's key for all 26 image models, the head to head's zoo; one load checked,
    each solve takes a second), and on the same bursty arrivals (the rate moving across the grid,
    so the monitor switches policies) it serves every query with the same model, finishing at
    the same time, as the RAMSIS chapter's simulator with a table of the chapter's grid."""
    from infsched.ramsis.model_sets import get_profile
    from infsched.ramsis.points import servable_loads, solve_point
    from infsched.ramsis.scales import get_scale as ramsis_scale
    from infsched.workload import mmpp_arrivals

    sc, K60 = ramsis_scale("smoke"), 60
    chapter = get_profile("image-all")
    assert chapter.models == PROF.models
    loads = servable_loads(chapter, K60, sc.policy_loads)
    cfg = ex.contender_config("ramsis", ZOO, K60, SLO, rate_qps=1.0, profile="ramsis-image", scale="smoke")
    assert cfg.plan_loads == tuple(loads)
    grid, model, batch = cfg.mdp_policy
    theirs = solve_point("image-all", SLO, K60, loads[-1], sc.d)
    np.testing.assert_array_equal(grid, theirs["grid"])  # the chapter's slack grid (its D)
    np.testing.assert_array_equal(model[-1], theirs["model"])
    np.testing.assert_array_equal(batch[-1], theirs["batch"])
    tab = PolicyTable(SLO, K60, grid, list(loads), model, batch, 0, np.zeros(len(loads)), np.zeros(len(loads)))
    t, _ = mmpp_arrivals([1.2, 3.9], [[-0.001, 0.001], [0.001, -0.001]], 8_000.0, np.random.default_rng(31))
    arr = t[:20_000]
    ours = simulate(cfg, arrivals=arr, seed=31)
    ref = simulate_ramsis(chapter, tab, arr, slo_ms=SLO, workers=K60, record=True)
    assert len(set(ours.model.tolist())) > 2  # the monitor did switch policies
    np.testing.assert_array_equal(ours.model, ref.model)
    np.testing.assert_allclose(ours.finish, ref.completion, rtol=1e-12, atol=1e-9)
    s = ours.summary(warmup=0.0)
    assert 1.0 - s["attainment"].mean == pytest.approx(ref.violation_rate, abs=1e-12)


def test_a_sweep_solves_each_ramsis_plan_once_and_its_points_read_them(tmp_path, monkeypatch):
    """The head to head's sweep solves every RAMSIS plan its points need once, before they run
    (``experiments._prefetch_plans``), and keeps it in the cache folder: the kept plan is the
    solved one to the bit, each plan is kept once however many points and contenders need it,
    and the points give the same table as points that solve their own plans (no cache)."""
    from infsched.serving import contenders as ct

    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    nan = float("nan")
    point = dict(workload="poisson", load=0.8, slo_ms=SLO, seed=5, n=3000, workers=60,
                 profile="ramsis-image", interval_s=10.0, scale="smoke",
                 runs=(("ramsis", 1.0, nan), ("ramsis", 0.8, nan), ("ramsis@mean", 1.0, nan),
                       ("fastest", 1.0, nan)))
    points = [dict(point), dict(point, seed=6)]
    ct._ramsis_solution.cache_clear()
    own = ex._sweep([dict(p) for p in points], 1, False, "smoke")
    assert not (tmp_path / "cache").exists()            # no cache: nothing kept, plans solved here
    ct._ramsis_solution.cache_clear()
    kept = ex._sweep([dict(p) for p in points], 1, tmp_path / "sweep", "smoke")
    pd.testing.assert_frame_equal(own, kept)
    zoo = ex.load_zoo("ramsis-image")
    rate = 0.8 * zoo.capacity_qps(60, SLO)
    plans = {a for f, name in ((1.0, "ramsis"), (0.8, "ramsis"), (1.0, "ramsis@mean"))
             for a in ct.ramsis_plans(name, zoo, 60, SLO * f, rate, "ramsis-image", "smoke")}
    files = list((tmp_path / "cache").rglob("*.pkl"))
    assert len(files) == len(plans) > 2
    for a in plans:
        assert ct._plan_path(*a[:5]) in files
        for got, want in zip(ct._ramsis_solution(*a), ct._solve_plan(*a)):
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype
