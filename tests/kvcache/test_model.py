"""The model of Section 2: instance validation, the memory convention, the schedule check."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.kvcache.model import Instance, check_schedule, memory_profile, total_latency


def brute_memory(inst: Instance, starts) -> np.ndarray:
    """Constraint (3) summed literally, request by request and round by round."""
    horizon = int(max(p + o for p, o in zip(starts, inst.output)))
    mem = np.zeros(horizon + 1, dtype=np.int64)
    for p, s, o in zip(starts, inst.prompt, inst.output):
        for t in range(horizon + 1):
            if p + 1 <= t <= p + o:
                mem[t] += s + t - p
    return mem


@pytest.mark.parametrize("seed", range(5))
def test_memory_profile_is_constraint_3(seed):
    rng = np.random.default_rng(seed)
    n = 12
    s = rng.integers(1, 6, n)
    o = rng.integers(1, 20, n)
    inst = Instance(rng.integers(0, 10, n), s, o, 1000)
    starts = inst.arrival + rng.integers(0, 15, n)
    assert np.array_equal(memory_profile(inst, starts), brute_memory(inst, starts))


def test_finishing_and_starting_requests_do_not_overlap():
    """A request finishing at c holds its peak s + o at c; one started at c is first counted at
    c + 1, so back-to-back requests of size M fit."""
    inst = Instance.at_zero([2, 2], [3, 3], 5)
    check = check_schedule(inst, [0, 3])
    assert check.feasible and check.peak == 5
    assert check.memory.tolist() == [0, 3, 4, 5, 3, 4, 5]
    assert not check_schedule(inst, [0, 2]).feasible


def test_check_names_the_first_problem():
    inst = Instance([0, 4, 0], [2, 2, 2], [3, 3, 3], 6)
    c = check_schedule(inst, [0, np.nan, 3])
    assert not c.feasible and "request 1 is never started" in c.problem
    c = check_schedule(inst, [0, 2, 3])
    assert not c.feasible and "request 1 starts at 2, before its arrival at 4" in c.problem
    c = check_schedule(inst, [0, 4, 0])
    assert not c.feasible and "memory 8 exceeds M = 6 at t = 2 (2 rounds over)" in c.problem
    with pytest.raises(InfeasibleError, match="exceeds M = 6"):
        c.require()
    ok = check_schedule(inst, [0, 4, 7]).require()
    assert ok.tel == total_latency(inst, [0, 4, 7]) == 3 + 3 + 10


@pytest.mark.parametrize("kwargs, match", [
    (dict(arrival=[0, 1], prompt=[1], output=[1, 1], M=10), "arrival/prompt/output"),
    (dict(arrival=[], prompt=[], output=[], M=10), "must hold at least one request"),
    (dict(arrival=[0, -1], prompt=[1, 1], output=[1, 1], M=10), r"arrival\[1\] = -1"),
    (dict(arrival=[0, 1], prompt=[1, -1], output=[1, 1], M=10), r"prompt\[1\] = -1"),
    (dict(arrival=[0, 1], prompt=[1, 1], output=[1.5, 1], M=10), "output"),
    (dict(arrival=[0, 1], prompt=[1, 4], output=[1, 7], M=10), r"prompt\[1\] \+ output\[1\] = 11"),
    (dict(arrival=[0], prompt=[1], output=[1], M=True), "M = True"),
    (dict(arrival=[0], prompt=[1], output=[1], M=2.5), "M = 2.5"),
    (dict(arrival="abc", prompt=[1], output=[1], M=10), "arrival"),
])
def test_bad_instances_are_refused(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Instance(**kwargs)


def test_bad_start_times_are_refused():
    inst = Instance.at_zero([1, 1], [1, 1], 4)
    with pytest.raises(ConfigError, match="starts"):
        check_schedule(inst, [0, 1, 2])
    with pytest.raises(ConfigError, match="starts"):
        check_schedule(inst, [0, 0.5])
