"""MC-SF and MC-Benchmark in rounds (spec §7, checks 1–3, 5–8): feasibility, the prefix rule,
the worked example, and the instances of Theorems 4.1 and 4.3."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import instances as ins
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_benchmark, mc_sf, schedule_rounds

from .exact import exact_opt


def test_worked_example():
    """Spec §7.5: M = 31, s = (5,4,5,3,5), o = (9,13,21,4,8), all at 0."""
    inst = Instance.at_zero([5, 4, 5, 3, 5], [9, 13, 21, 4, 8], 31)
    starts = mc_sf(inst)
    assert starts.tolist() == [0, 7, 11, 0, 0]
    assert check_schedule(inst, starts).require().tel == 73
    opt, best = exact_opt(inst, horizon=40)
    assert opt == 71 and check_schedule(inst, best).require().tel == 71


@pytest.mark.parametrize("policy", [mc_sf, mc_benchmark])
@pytest.mark.parametrize("model", [ins.arrival_model_1, ins.arrival_model_2])
def test_schedules_never_exceed_memory(policy, model):
    """A1: every request starts, none before its arrival, memory ≤ M at every round (recomputed
    from the start times alone by check_schedule)."""
    for seed in range(30):
        inst = model(np.random.default_rng(seed))
        check = check_schedule(inst, policy(inst)).require()
        assert check.peak <= inst.M


def _waiting_order(inst: Instance, starts: np.ndarray, t: int, order: str) -> list[int]:
    waiting = [i for i in range(inst.n) if inst.arrival[i] <= t and starts[i] >= t]
    key = (lambda i: (inst.output[i], inst.arrival[i], i)) if order == "shortest" else \
        (lambda i: (inst.arrival[i], inst.arrival[i], i))
    return sorted(waiting, key=key)


def _fits(inst: Instance, starts: np.ndarray, t: int, chosen: list[int], j: int) -> bool:
    """Would request j started at t fit beside everything started before t and ``chosen``?"""
    keep = [i for i in range(inst.n) if starts[i] < t] + chosen + [j]
    sub = Instance(inst.arrival[keep], inst.prompt[keep], inst.output[keep], inst.M)
    p = np.array([starts[i] for i in keep[:-1]] + [t])
    return check_schedule(sub, p).feasible


@pytest.mark.parametrize("order", ["shortest", "fcfs"])
def test_each_round_admits_the_largest_feasible_prefix(order):
    """Check 3: at every round the admitted requests are a prefix of the waiting list in the
    policy's order, and the next one in that order would not have fitted (eq. 6), checked with
    the schedule check rather than the policy's own ledger."""
    for seed in range(6):
        inst = ins.arrival_model_2(np.random.default_rng(100 + seed), T_range=(8, 12))
        starts = schedule_rounds(inst, order)
        for t in range(int(starts.max()) + 1):
            queue = _waiting_order(inst, starts, t, order)
            admitted = [i for i in queue if starts[i] == t]
            assert queue[: len(admitted)] == admitted, (seed, t)
            if len(admitted) < len(queue):
                assert not _fits(inst, starts, t, admitted, queue[len(admitted)]), (seed, t)


def test_fcfs_blocks_behind_a_long_request_and_shortest_first_does_not():
    """M = 10; a long request (s = 2, o = 7) and a short one (s = 5, o = 2) at 0: together they
    would need 11 at round 2. FCFS starts the long one and holds the short one until it ends at
    7; MC-SF starts the short one and the long one a round later."""
    inst = Instance.at_zero([2, 5], [7, 2], 10)
    assert mc_benchmark(inst).tolist() == [0, 7]
    assert mc_sf(inst).tolist() == [1, 0]
    assert check_schedule(inst, mc_sf(inst)).tel == 10 < check_schedule(inst, mc_benchmark(inst)).tel == 16


def test_idle_gaps_jump_to_the_next_arrival():
    inst = Instance([0, 50], [1, 1], [2, 2], 4)
    assert mc_sf(inst).tolist() == [0, 50]


def test_ratio_to_the_exact_optimum_on_tiny_instances():
    """OPT ≤ TEL(MC-SF) (A2) on Model-1 instances with n = 4..5, by exhaustive search."""
    ratios = []
    for seed in range(8):
        inst = ins.arrival_model_1(np.random.default_rng(seed), n_range=(4, 5), M_range=(12, 16))
        tel = check_schedule(inst, mc_sf(inst)).require().tel
        opt, best = exact_opt(inst, horizon=int(inst.output.sum()) + 1)
        check_schedule(inst, best).require()
        assert opt <= tel
        ratios.append(tel / opt)
    assert 1.0 <= np.mean(ratios) <= 1.2


def test_theorem_41_ratio_grows_like_sqrt_M():
    """A6: on Thm 4.1's instance MC-SF's ratio to a feasible schedule's latency (an upper bound
    on OPT) is at least √M/28 and roughly doubles per 4× M."""
    ratios = []
    for M in (100, 400, 1600, 6400):
        inst = ins.theorem_41(M)
        tel = check_schedule(inst, mc_sf(inst)).require().tel
        ub, starts = ins.theorem_41_opt_bound(M)
        assert check_schedule(inst, starts).require().tel == ub
        ratios.append(tel / ub)
        assert tel / ub >= math.sqrt(M) / 28
    growth = np.array(ratios[1:]) / np.array(ratios[:-1])
    assert np.all((growth >= 1.6) & (growth <= 2.4)), ratios
    assert ratios[0] == pytest.approx(1.40, abs=0.01)


@pytest.mark.parametrize("n, s, o, M", [(50, 1, 1, 4), (40, 2, 3, 10), (30, 3, 5, 20),
                                        (25, 1, 8, 18), (60, 2, 2, 9)])
def test_theorem_43_equal_lengths_bound(n, s, o, M):
    """App. B.3: TEL(MC-SF) is within both closed-form upper bounds."""
    inst = ins.equal_lengths(n, s, o, M)
    tel = check_schedule(inst, mc_sf(inst)).require().tel
    tight, loose = ins.equal_lengths_bound(n, s, o, M)
    assert tel <= tight + 1e-9 and tight <= loose + 1e-9


@pytest.mark.parametrize("n, s, o, M", [(4, 1, 2, 6), (5, 1, 1, 4), (4, 2, 2, 8)])
def test_theorem_43_ratio_and_lower_bounds(n, s, o, M):
    """Equal lengths: TEL(MC-SF)/OPT ≤ 4, and OPT ≥ max(Σ o_i, n²·vol/(4M)) (Lemma 4.7's (11)
    with one output length, vol = s·o + o(o+1)/2), against the exact optimum."""
    inst = ins.equal_lengths(n, s, o, M)
    tel = check_schedule(inst, mc_sf(inst)).require().tel
    opt, _ = exact_opt(inst, horizon=int(tel) + o)
    vol = s * o + o * (o + 1) / 2
    assert opt >= n * o and opt >= n * n * vol / (4 * M)
    assert tel / opt <= 4


def test_bad_arguments():
    inst = Instance.at_zero([1], [1], 4)
    with pytest.raises(ConfigError, match="order = 'lifo'"):
        schedule_rounds(inst, "lifo")
    with pytest.raises(ConfigError, match="M = 17"):
        ins.theorem_41(17)
    with pytest.raises(ConfigError, match=r"M = 5: must be an integer >= 2\(s \+ o\) = 6"):
        ins.equal_lengths(3, 1, 2, 5)
    with pytest.raises(ConfigError, match="n_range"):
        ins.arrival_model_1(np.random.default_rng(0), n_range=(5, 3))
    with pytest.raises(ConfigError, match="rng"):
        ins.arrival_model_2(0)
