"""CP-SAT beside HiGHS on the hindsight program, and the lower bounds that bracket Fig. 2.

Both solvers must reach the same certified optimum on small instances; every schedule either
returns passes ``check_schedule``; every lower bound (area, LP, CP-SAT's own) sits at or below a
certified optimum; and CP-SAT, limited by deterministic work, gives the same answer twice, the
second time beside a CPU-bound process.
"""

from __future__ import annotations

import multiprocessing as mp
import time

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import bounds, experiments as ex, hindsight as hs, improve, instances as ins
from infsched.kvcache.model import Instance, check_schedule, memory_profile
from infsched.kvcache.policies import mc_benchmark, mc_sf
from infsched.optim import solve_milp


def _small(seed: int) -> Instance:
    rng = np.random.default_rng(seed)
    return (ins.arrival_model_1(rng, n_range=(3, 6)) if seed % 2 == 0
            else ins.arrival_model_2(rng, T_range=(2, 2)))


@pytest.mark.parametrize("seed", range(8))
def test_cpsat_and_highs_certify_the_same_optimum(seed):
    inst = _small(seed)
    h = hs.solve_hindsight(inst, solver="highs")
    c = hs.solve_hindsight(inst, solver="cpsat", effort=10.0)
    assert h.certified and c.certified
    assert c.objective == h.objective <= check_schedule(inst, mc_sf(inst)).tel
    for r in (h, c):
        check_schedule(inst, r.starts).require()
        assert check_schedule(inst, r.starts).tel == r.objective


@pytest.mark.parametrize("seed", range(40))
def test_every_lower_bound_is_below_the_certified_optimum(seed):
    """Area and LP bounds on 40 instances with 2 to 6 requests (Model 1) or a horizon of 2 to 3
    (Model 2), against HiGHS's certified optimum; and both below every schedule we can build.
    (Up to 8 requests: the acceptance test's certified study checks every bound there.)"""
    rng = np.random.default_rng(1000 + seed)
    inst = (ins.arrival_model_1(rng, n_range=(2, 6)) if seed % 2 == 0
            else ins.arrival_model_2(rng, T_range=(2, 3)))
    opt = hs.solve_hindsight(inst, solver="highs", lp=True)
    assert opt.certified
    assert opt.bounds["area"] <= opt.objective + 1e-9
    assert opt.bounds["lp"] <= opt.objective * (1 + 1e-9)
    for policy in (mc_sf, mc_benchmark):
        assert opt.bounds["area"] <= check_schedule(inst, policy(inst)).tel


def test_an_interrupted_cpsat_bound_is_below_the_optimum():
    """CP-SAT stopped long before a proof still reports a bound no higher than the optimum
    (HiGHS's, certified)."""
    for seed in range(2):
        inst = ins.arrival_model_1(np.random.default_rng(seed), n_range=(4, 5))
        opt = hs.solve_hindsight(inst, solver="highs")
        quick = hs.solve_hindsight(inst, solver="cpsat", effort=0.01, lp=False, local_search=0)
        assert opt.certified
        assert quick.bounds["cpsat"] <= opt.objective and quick.lower_bound <= opt.objective
        assert quick.objective >= opt.objective
        check_schedule(inst, quick.starts).require()


def test_area_bound_by_hand():
    """Two requests at 0, M = 10: volumes 1·2 + 3 = 5 and 2·3 + 6 = 12, so c_(1) ≥ ⌈5/10⌉ = 1
    but also ≥ o = 2, and c_(2) ≥ ⌈17/10⌉ = 2 but ≥ 3: the bound is 2 + 3 = 5, here the optimum
    (both start at 0: memory 2+3, 3+4 then 5 ≤ 10)."""
    inst = Instance.at_zero([1, 2], [2, 3], 10)
    assert list(bounds.volume(inst)) == [5, 12]
    assert bounds.volume_bound(inst) == 5 == check_schedule(inst, [0, 0]).tel


@pytest.mark.parametrize("seed", range(6))
def test_local_search_schedules_are_feasible_and_never_worse(seed):
    """The serial schedules are feasible for any order; the local search returns a checked
    schedule no worse than MC-SF's, deterministically."""
    rng = np.random.default_rng(500 + seed)
    inst = (ins.arrival_model_1(rng, n_range=(20, 40)) if seed % 2 == 0
            else ins.arrival_model_2(rng, T_range=(20, 30)))
    check_schedule(inst, improve.serial_schedule(inst, rng.permutation(inst.n))).require()
    base = mc_sf(inst)
    better, evals = improve.improve_schedule(inst, base, max_evals=2000)
    again, _ = improve.improve_schedule(inst, base, max_evals=2000)
    assert 1 <= evals <= 2000 and better.tolist() == again.tolist()
    assert check_schedule(inst, better).require().tel <= check_schedule(inst, base).tel


def test_the_local_search_cannot_delay_a_request_cp_sat_can():
    """Spec §7's example: MC-SF 73, optimum 71 with a request held back two rounds. The serial
    scheme never holds a request back, so no order reaches 71 (all 120 checked); CP-SAT does."""
    from itertools import permutations
    inst = Instance.at_zero([5, 4, 5, 3, 5], [9, 13, 21, 4, 8], 31)
    best = min(check_schedule(inst, improve.serial_schedule(inst, order)).tel
               for order in permutations(range(5)))
    assert best == 73
    assert check_schedule(inst, improve.improve_schedule(inst, mc_sf(inst))[0]).tel == 73
    r = hs.solve_hindsight(inst, solver="cpsat", effort=5.0)
    assert r.certified and r.objective == 71


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def test_cpsat_is_deterministic_under_load():
    """The same instance and budget twice, the second time beside a CPU-bound process: the same
    schedule and the same bound (deterministic time, interleaved search)."""
    inst = ins.arrival_model_1(np.random.default_rng(7), n_range=(14, 16))
    first = hs.solve_hindsight(inst, solver="cpsat", effort=0.2, lp=False, local_search=0)
    burner = mp.get_context("spawn").Process(target=_burn, args=(60.0,))
    burner.start()
    try:
        second = hs.solve_hindsight(inst, solver="cpsat", effort=0.2, lp=False, local_search=0)
    finally:
        burner.terminate()
        burner.join()
    assert second.starts.tolist() == first.starts.tolist()
    assert second.bounds == first.bounds and second.work == first.work


def test_paper_horizon_gives_the_same_optimum():
    """The paper's horizon Σ(a_i + o_i) against our window: windows built from a one-at-a-time
    schedule (every request after the previous one completes) reach past the paper's horizon,
    and the optimum over them is the one over MC-SF's window."""
    for seed in range(3):
        inst = ins.arrival_model_1(np.random.default_rng(seed), n_range=(4, 5), M_range=(12, 16))
        order = np.argsort(inst.output)
        seq = np.zeros(inst.n, dtype=np.int64)
        seq[order] = np.concatenate([[0], np.cumsum(inst.output[order])[:-1]])
        wide = hs.build_model(inst, seq)
        assert wide.horizon >= int(np.sum(inst.arrival + inst.output))
        sol = solve_milp(wide.cost, A_ub=wide.A_mem, b_ub=np.full(wide.horizon, float(inst.M)),
                         A_eq=wide.A_eq, b_eq=np.ones(inst.n), bounds=(0, 1), integrality=1)
        assert sol.optimal
        assert sol.objective + wide.offset == pytest.approx(hs.solve_hindsight(inst).objective)


def test_readings_rewrite_the_memory_rule():
    """Each reading's instance, in our canonical rule, holds what that reading says: the ramp from
    ``s`` (``ramp-from-s``) and ``s`` in the start round too (``prompt-round``)."""
    inst = Instance.at_zero([3, 2], [4, 2], 20)
    starts = np.array([0, 1])
    ramp, shift = ex.reading_instance(inst, "ramp-from-s")
    assert shift == 0
    # request 0: 3, 4, 5, 6 at rounds 1..4; request 1: 2, 3 at rounds 2..3
    assert memory_profile(ramp, starts).tolist() == [0, 3, 4 + 2, 5 + 3, 6]
    pr, shift = ex.reading_instance(inst, "prompt-round")
    # the reading's memory (3..7 at rounds 0..4, 2..4 at rounds 1..3), one round later
    assert memory_profile(pr, starts).tolist()[1:] == [3, 4 + 2, 5 + 3, 6 + 4, 7]
    assert check_schedule(pr, starts).tel + shift == check_schedule(inst, starts).tel


@pytest.mark.parametrize("kwargs, name", [
    (dict(solver="gurobi"), "solver = 'gurobi'"),
    (dict(time_limit=-1.0), "time_limit = -1.0"),
    (dict(node_limit=0), "node_limit = 0"),
    (dict(solver="cpsat", workers=0), "workers = 0"),
    (dict(solver="cpsat", effort=0), "effort = 0"),
    (dict(solver="cpsat", effort=float("nan")), "effort = nan"),
    (dict(solver="cpsat", time_limit=5.0), "time_limit/node_limit"),
    (dict(lp="sometimes"), "lp = 'sometimes'"),
    (dict(seed=-1), "seed = -1"),
    (dict(local_search=-5), "local_search = -5"),
    (dict(solver="cpsat", portfolio_share=1.5), "portfolio_share = 1.5"),
])
def test_bad_solver_arguments(kwargs, name):
    with pytest.raises(ConfigError, match=name.replace("(", r"\(").replace(")", r"\)")):
        hs.solve_hindsight(Instance.at_zero([1], [1], 4), **kwargs)
