"""The re-planning online policy (issue 34, item 2): memory never exceeded, MC-SF exactly where it
should be, no look-ahead, better than MC-SF where the hindsight search is, and the study's
Table 1 instance is the one MC-SF's simulated run saw."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import instances as ins, online, online_study, workload
from infsched.kvcache.improve import improve_schedule
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.kvcache.sim import SimConfig, simulate
from infsched.kvcache.timing import BatchTimeModel
from infsched.sweep import point_seed


def _inst(seed: int, big: bool = False) -> Instance:
    rng = np.random.default_rng(seed)
    lo, hi = (40, 60) if big else (5, 20)
    return (ins.arrival_model_1(rng, n_range=(lo, hi)) if seed % 2 == 0
            else ins.arrival_model_2(rng, T_range=(lo, hi)))


@pytest.mark.parametrize("seed", range(40))
def test_without_search_it_is_mcsf_start_for_start(seed):
    inst = _inst(seed, big=seed % 4 == 0)
    assert np.array_equal(online.replan(inst, evals=0), mc_sf(inst))


CONFIGS = [dict(evals=300), dict(evals=200, every=2, depth=10), dict(evals=50, every=1, window=3)]


@pytest.mark.parametrize("seed", range(24))
def test_memory_never_exceeded_and_never_before_arrival(seed):
    inst = _inst(seed)
    for cfg in CONFIGS:
        st = online.replan(inst, **cfg)
        chk = check_schedule(inst, st)
        assert chk.feasible, chk.problem
        assert chk.peak <= inst.M


def test_memory_holds_on_a_long_queue():
    """A Table-1-like instance (hundreds waiting, outputs up to thousands of tokens), and a tight
    memory where only one or two requests fit at once."""
    a, s, o = workload.poisson_requests(120, 50.0, np.random.default_rng(3))
    big = Instance((a * 10).astype(np.int64), s, o, int((s + o).max()) + 500)
    rng = np.random.default_rng(7)
    tight = Instance(np.sort(rng.integers(0, 30, 40)), rng.integers(1, 4, 40),
                     rng.integers(1, 9, 40), 12)
    for inst in (big, tight):
        for cfg in CONFIGS:
            check_schedule(inst, online.replan(inst, **cfg)).require()


def test_identical_to_mcsf_when_everything_fits():
    """With memory for all requests at once, MC-SF starts each on arrival, which no schedule
    beats; the search finds nothing strictly better and the policy keeps MC-SF's plan."""
    rng = np.random.default_rng(0)
    a = np.sort(rng.integers(0, 20, 30))
    s, o = rng.integers(1, 6, 30), rng.integers(1, 20, 30)
    inst = Instance(a, s, o, int((s + o).sum()))
    run = online.replan_run(inst, evals=500, every=1)
    assert np.array_equal(run.starts, mc_sf(inst)) and np.array_equal(run.starts, a)
    assert run.improved == 0


@pytest.mark.parametrize("seed", [0, 2, 4, 6])
def test_all_at_zero_it_is_the_hindsight_search(seed):
    """Arrival Model 1: one plan at round 0, the local search from MC-SF's order, which is
    improve_schedule's (same order, same moves, same budget), with MC-SF as the fallback."""
    inst = _inst(seed, big=True)
    for evals in (1, 300, 3000):
        found, _ = improve_schedule(inst, mc_sf(inst), max_evals=evals)
        run = online.replan_run(inst, evals=evals)
        assert run.plans == 1
        assert check_schedule(inst, run.starts).tel == check_schedule(inst, found).tel


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_no_look_ahead(seed):
    """Decisions up to round t are the same when the requests arriving after t do not exist."""
    inst = _inst(seed, big=True)
    full = online.replan(inst, evals=200, every=2, depth=15)
    for t in (int(inst.arrival.max()) // 3, int(inst.arrival.max()) // 2 + 1):
        keep = np.flatnonzero(inst.arrival <= t)
        part = Instance(inst.arrival[keep], inst.prompt[keep], inst.output[keep], inst.M)
        st = online.replan(part, evals=200, every=2, depth=15)
        early = full[keep] <= t
        assert np.array_equal(st <= t, early)
        assert np.array_equal(st[early], full[keep][early])


def test_beats_mcsf_on_model_2():
    """The claim, on four Model 2 instances of the paper's distribution (T ~ U{20..30}): the
    policy is never worse than MC-SF in total, and closes at least half of the gap to the
    best schedule the hindsight search finds (0.62-1.0 per trial when this was written)."""
    closed = gap = 0.0
    for seed in range(4):
        inst = ins.arrival_model_2(np.random.default_rng(100 + seed), T_range=(20, 30))
        tel = check_schedule(inst, mc_sf(inst)).tel
        st = online.replan(inst, **{k: v for k, v in online_study.POLICY.items()})
        on = check_schedule(inst, st).require().tel
        found, _ = improve_schedule(inst, mc_sf(inst), max_evals=5000)
        best = min(on, check_schedule(inst, found).tel)
        closed += tel - on
        gap += tel - best
    assert gap > 0 and closed / gap >= 0.5


def test_table1_instance_is_what_mcsf_saw():
    """MC-SF in rounds on the binned instance starts every request in the round its simulated
    run did (the round its completion falls in, less o − 1), at high demand and at a rate low
    enough for idle spells."""
    for n, rate, kappa in ((400, 50.0, 1.5), (150, 2.0, 1.0)):
        inst = online_study.table1_rounds(n, kappa, 1, rate)
        a, s, o = workload.poisson_requests(n, rate, np.random.default_rng(point_seed(1, n, rate)))
        run = simulate(a, s, o, 16492, SimConfig("mc-sf"), BatchTimeModel(kappa=kappa))
        sim_start = np.searchsorted(run.clock, run.completion, side="left") - o + 1
        assert np.array_equal(mc_sf(inst), sim_start)


def test_share_interval_and_claims():
    share, lo, hi = online_study.share_ci([1, 2, 3, 0], [2, 2, 4, 1], seed=0)
    assert share == pytest.approx(6 / 9) and lo <= share <= hi
    assert np.isnan(online_study.share_ci([0, 0], [0, 0])[0])


def test_study_at_smoke_scale():
    df = online_study.online_study("smoke", 0, kappa=1.5, n_jobs=1, cache=False)
    assert set(df["workload"]) == {"model2", "table1"}
    assert (df["best"] <= df[["tel_mcsf", "tel_online", "tel_ls_mcsf", "tel_ls_online"]].min(axis=1)).all()
    c = online_study.claims_online(df)
    assert list(c["workload"]) == ["model2", "table1"]
    assert (c["policy / best"] >= 1).all()


@pytest.mark.parametrize("kw, name", [
    (dict(evals=-1), "evals"), (dict(evals=1.5), "evals"), (dict(window=0), "window"),
    (dict(every=-2), "every"), (dict(depth=1), "depth"), (dict(evals=True), "evals")])
def test_bad_parameters_name_themselves(kw, name):
    with pytest.raises(ConfigError, match=name):
        online.replan(_inst(1), **kw)


def test_bad_study_parameters():
    with pytest.raises(ConfigError, match="scale"):
        online_study.online_study("huge", kappa=1.0)
    with pytest.raises(ConfigError, match="kappa"):
        online_study.online_study("smoke", kappa=-1.0)
    with pytest.raises(ConfigError, match="workload"):
        online_study.online_point("model3", 0, 0, "smoke", 1.0, 10, 0, 5, 8)
