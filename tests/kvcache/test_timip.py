"""Branch and bound on the strengthened time-indexed program (kvcache.timip) is exact: on random
small instances (with and without arrivals) it finds the brute-force optimum, certifies it, its
schedule passes the memory check, and its bound is never above the optimum."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.timip import ti_optimum

from .exact import exact_opt


def _instance(rng, arrivals: bool) -> Instance:
    n, M = int(rng.integers(4, 7)), int(rng.integers(8, 16))
    s = rng.integers(1, 4, size=n)
    o = rng.integers(1, M - s + 1)
    a = np.sort(rng.integers(0, 5, size=n)) if arrivals else np.zeros(n, np.int64)
    return Instance(a, s, o, M)


@pytest.mark.parametrize("arrivals", [False, True])
def test_equals_the_brute_force_optimum(arrivals):
    rng = np.random.default_rng(7 + arrivals)
    for _ in range(6):
        inst = _instance(rng, arrivals)
        opt, _ = exact_opt(inst, int(inst.arrival.max() + inst.output.sum()))
        r = ti_optimum(inst, node_limit=2_000)
        assert r.ti_bound <= r.bound <= opt + 1e-6
        assert check_schedule(inst, r.starts).require().tel == r.objective
        assert r.certified and r.objective == opt


def test_no_nodes_still_brackets_the_optimum():
    rng = np.random.default_rng(9)
    inst = _instance(rng, False)
    opt, _ = exact_opt(inst, int(inst.output.sum()))
    r = ti_optimum(inst, node_limit=0)
    assert r.bound <= opt + 1e-6 <= r.objective + 1e-6
    with pytest.raises(ConfigError, match="node_limit"):
        ti_optimum(inst, node_limit=-1)
