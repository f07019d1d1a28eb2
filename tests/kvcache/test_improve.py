"""The serial scheme's placement and the two searches over orders (kvcache.improve): the
placement's jump over starts that cannot fit gives the start a round-by-round scan gives, and the
iterated local search returns checked schedules that are never worse than one descent's, never
worse with more kicks, and the same for the same seed."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import improve, instances as ins
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_sf


def _instance(seed: int, big: bool = True) -> Instance:
    rng = np.random.default_rng(seed)
    if big:
        return (ins.arrival_model_1(rng, n_range=(20, 40)) if seed % 2 == 0
                else ins.arrival_model_2(rng, T_range=(20, 30)))
    return (ins.arrival_model_1(rng, n_range=(4, 6)) if seed % 2 == 0
            else ins.arrival_model_2(rng, T_range=(2, 2)))


def _scan_place(inst: Instance, order) -> list[int]:
    """The serial scheme by its definition: each request at the first start, tried one round
    after another, whose ramp fits beside the requests placed before it."""
    mem: dict[int, int] = {}
    starts = [0] * inst.n
    for i in order:
        s, o = int(inst.prompt[i]), int(inst.output[i])
        p = int(inst.arrival[i])
        while any(mem.get(p + j, 0) + s + j > inst.M for j in range(1, o + 1)):
            p += 1
        for j in range(1, o + 1):
            mem[p + j] = mem.get(p + j, 0) + s + j
        starts[i] = p
    return starts


@pytest.mark.parametrize("seed", range(6))
def test_placement_jump_gives_the_scanned_start(seed):
    inst = _instance(700 + seed)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        order = rng.permutation(inst.n)
        assert improve.serial_schedule(inst, order).tolist() == _scan_place(inst, order)


@pytest.mark.parametrize("seed", range(4))
def test_iterated_search_is_checked_monotone_and_seeded(seed):
    inst = _instance(800 + seed)
    base = mc_sf(inst)
    one, _ = improve.improve_schedule(inst, base)
    tel = {k: check_schedule(inst, improve.iterated_search(inst, base, kicks=k, seed=seed)[0])
           .require().tel for k in (0, 5, 20)}
    assert tel[0] == check_schedule(inst, one).tel          # no kick: one descent
    assert tel[20] <= tel[5] <= tel[0] <= check_schedule(inst, base).tel
    a, ea = improve.iterated_search(inst, base, kicks=20, seed=[seed, 1])
    b, eb = improve.iterated_search(inst, base, kicks=20, seed=[seed, 1])
    assert a.tolist() == b.tolist() and ea == eb


def test_iterated_search_never_beats_the_optimum_and_keeps_the_serial_limit():
    """On instances small enough to try every order, the search's schedule is one of the serial
    scheme's, so it is no better than the best order; on the spec's example (optimum 71, which
    holds a request back) it stays at the serial scheme's 73."""
    for seed in range(6):
        inst = _instance(900 + seed, big=False)
        best = min(check_schedule(inst, improve.serial_schedule(inst, o)).tel
                   for o in permutations(range(inst.n)))
        got = check_schedule(inst, improve.iterated_search(inst, mc_sf(inst), kicks=10)[0]).tel
        assert best <= got <= check_schedule(inst, mc_sf(inst)).tel
    inst = Instance.at_zero([5, 4, 5, 3, 5], [9, 13, 21, 4, 8], 31)
    assert check_schedule(inst, improve.iterated_search(inst, mc_sf(inst), kicks=20)[0]).tel == 73


@pytest.mark.parametrize("kwargs, name", [
    (dict(kicks=-1), "kicks"), (dict(kicks=2.5), "kicks"), (dict(kick_evals=0), "kick_evals"),
    (dict(kick_swaps=0), "kick_swaps"), (dict(kick_span=True), "kick_span"),
    (dict(seed=-3), "seed"), (dict(seed=[]), "seed"), (dict(seed="x"), "seed")])
def test_iterated_search_bad_arguments(kwargs, name):
    inst = _instance(1, big=False)
    with pytest.raises(ConfigError, match=name):
        improve.iterated_search(inst, mc_sf(inst), **kwargs)
