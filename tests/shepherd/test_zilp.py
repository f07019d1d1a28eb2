"""The compact ZILP (Eq. 3, spec §1.5): equal to brute force on very small instances, its
schedules pass an independent checker, the Theorem A.1 instance, and the size limits."""

from __future__ import annotations

from functools import cache
from itertools import combinations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.shepherd.model import ModelSet, Requests
from infsched.shepherd.zilp import (
    Batch,
    InvalidSchedule,
    check_schedule,
    latency_table,
    zilp_optimum,
)


def _models(alpha, beta) -> ModelSet:
    k = len(alpha)
    return ModelSet(tuple(f"m{i}" for i in range(k)), np.array(alpha, float),
                    np.array(beta, float), np.ones(k, dtype=np.int64))


def brute_force(req: Requests, lat: np.ndarray, n_gpus: int, b_max: int) -> int:
    """Exhaustive search over schedules with integer starts: at each slot, each idle GPU
    either starts some feasible batch (any subset of one model's waiting requests) or not."""
    a = [int(x) for x in req.arrival]
    d = [int(x) for x in req.deadline]
    m = [int(x) for x in req.model]
    n, horizon = req.n, max(d)

    @cache
    def best(t: int, k: int, free: tuple[int, ...], mask: int) -> int:
        if t >= horizon:
            return 0
        if k == n_gpus:
            return best(t + 1, 0, free, mask)
        value = best(t, k + 1, free, mask)                      # GPU k starts nothing now
        if free[k] > t:
            return value
        waiting = [r for r in range(n) if not (mask >> r) & 1 and a[r] <= t]
        for model in set(m[r] for r in waiting):
            cand = [r for r in waiting if m[r] == model]
            for size in range(1, min(b_max, len(cand)) + 1):
                end = t + int(lat[model, size])
                for S in combinations(cand, size):
                    if end <= min(d[r] for r in S):
                        bits = sum(1 << r for r in S)
                        nf = free[:k] + (end,) + free[k + 1:]
                        value = max(value, size + best(t, k + 1, nf, mask | bits))
        return value

    return best(min(a), 0, (0,) * n_gpus, 0) if n else 0


def _random_instance(rng, n, n_models):
    arrival = np.sort(rng.integers(0, 8, n)).astype(float)
    slo = rng.integers(2, 9, n).astype(float)
    model = rng.integers(0, n_models, n)
    return Requests(arrival, model, arrival + slo)


@pytest.mark.parametrize("seed", range(12))
def test_matches_brute_force_one_model_one_gpu(seed):
    rng = np.random.default_rng(seed)
    req = _random_instance(rng, int(rng.integers(1, 7)), 1)
    models = _models([int(rng.integers(0, 3))], [int(rng.integers(1, 4))])
    b_max = int(rng.integers(1, 5))
    res = zilp_optimum(req, models, n_gpus=1, b_max=b_max)
    assert res.status == "optimal"
    assert res.value == brute_force(req, latency_table(models, b_max), 1, b_max)
    assert check_schedule(res.batches, req, models, 1, b_max) == res.value


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_two_models_two_gpus(seed):
    rng = np.random.default_rng(100 + seed)
    req = _random_instance(rng, int(rng.integers(2, 6)), 2)
    models = _models([1, 0], [2, 3])
    res = zilp_optimum(req, models, n_gpus=2, b_max=3)
    assert res.value == brute_force(req, latency_table(models, 3), 2, 3)
    assert check_schedule(res.batches, req, models, 2, 3) == res.value


def test_latency_table_input_and_largest_instance():
    rng = np.random.default_rng(7)
    arrival = np.sort(rng.integers(0, 70, 20)).astype(float)
    req = Requests(arrival, rng.integers(0, 2, 20), arrival + rng.integers(5, 30, 20))
    table = np.array([[2, 3, 3, 4, 5, 5, 6, 7], [4, 5, 7, 8, 10, 11, 13, 14]])
    res = zilp_optimum(req, latency=table, n_gpus=2, b_max=8)
    full = np.concatenate([[[0], [0]], table], axis=1)
    assert check_schedule(res.batches, req, full, 2, 8) == res.value
    assert res.status == "optimal" and 0 < res.value <= 20


@pytest.mark.parametrize("omega", [1, 5])
def test_theorem_a1_instance(omega):
    """X1 (1 request, ℓ = 2, d = 2) at 0; X2 (ω requests, d = 3) at 1: OPT = max(1, ω)
    (serving X1 blocks the GPU until 2, too late for X2)."""
    models = _models([0], [2])
    req = Requests(np.array([0.0] + [1.0] * omega), np.zeros(omega + 1, dtype=np.int64),
                   np.array([2.0] + [3.0] * omega))
    res = zilp_optimum(req, models, n_gpus=1, b_max=8)
    assert res.value == max(1, omega)
    assert check_schedule(res.batches, req, models, 1, 8) == res.value
    if omega > 1:
        assert res.batches == (Batch(start=1, gpu=0, model=0,
                                     requests=tuple(range(1, omega + 1))),)


def test_checker_catches_violations():
    models = _models([1], [1])
    req = Requests(np.array([0.0, 0.0, 1.0]), np.zeros(3, dtype=np.int64),
                   np.array([5.0, 5.0, 5.0]))   # ℓ(1) = 2, ℓ(2) = 3
    ok = (Batch(0, 0, 0, (0,)), Batch(2, 0, 0, (1,)))
    assert check_schedule(ok, req, models, 1, 2) == 2
    with pytest.raises(InvalidSchedule, match="overlap"):
        check_schedule((Batch(0, 0, 0, (0, 1)), Batch(2, 0, 0, (2,))), req, models, 1, 2)
    with pytest.raises(InvalidSchedule, match="deadline"):
        check_schedule((Batch(3, 0, 0, (0, 1)),), req, models, 1, 2)
    with pytest.raises(InvalidSchedule, match="arrives"):
        check_schedule((Batch(0, 0, 0, (2,)),), req, models, 1, 2)
    with pytest.raises(InvalidSchedule, match="twice"):
        check_schedule((Batch(0, 0, 0, (0,)), Batch(0, 1, 0, (0,))), req, models, 2, 2)
    with pytest.raises(InvalidSchedule, match="size"):
        check_schedule((Batch(0, 0, 0, (0, 1, 2)),), req, models, 1, 2)


def test_limits_rejected():
    models = _models([1], [1])
    small = Requests(np.array([0.0]), np.array([0]), np.array([5.0]))
    big = Requests(np.arange(21.0), np.zeros(21, dtype=np.int64), np.arange(21.0) + 5)
    with pytest.raises(ConfigError, match="at most 20"):
        zilp_optimum(big, models)
    with pytest.raises(ConfigError, match="b_max"):
        zilp_optimum(small, models, b_max=16)
    with pytest.raises(ConfigError, match="n_gpus"):
        zilp_optimum(small, models, n_gpus=3)
    with pytest.raises(ConfigError, match="integer"):
        zilp_optimum(small, _models([0.5], [1.0]))
    with pytest.raises(ConfigError, match="slots"):
        zilp_optimum(Requests(np.array([0.0]), np.array([0]), np.array([150.0])), models)
    with pytest.raises(ConfigError, match="whole ms"):
        zilp_optimum(Requests(np.array([0.5]), np.array([0]), np.array([5.0])), models)
    with pytest.raises(ConfigError, match="at most 2 models"):
        zilp_optimum(small, _models([1, 1, 1], [1, 2, 3]))
