"""The neutral simulator against queueing closed forms (spec headtohead §4; DESIGN "Simulators").

With one model at batch 1 every policy is a plain queue: a central FCFS queue with exponential
service is M/M/c (Erlang C), with deterministic service and one worker M/D/1
(Pollaczek–Khinchine), and per-worker queues with random routing split a Poisson stream into K
independent M/D/1 queues. The tolerance is the run's own uncertainty: the exact mean must lie
in the 99.9% batch-means confidence interval of the simulated mean wait (seeded, so the check is
deterministic; the wide level keeps it from resting on one lucky seed).
"""

from __future__ import annotations

import math

import pytest

from infsched.metrics import batch_means_ci
from infsched.serving import ServingConfig, Zoo, simulate

LEVEL = 0.999
N = 1_000_000
D_MS = 10.0  # the one model's service time (mean, for exponential service)


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait in queue of M/M/c: ``C(c, a) / (c mu - lam)``, ``a = lam / mu``."""
    a = lam / mu
    rho = a / c
    top = a**c / math.factorial(c) / (1.0 - rho)
    p_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


def md1_wait(lam: float, d: float) -> float:
    """Mean wait in queue of M/D/1 (Pollaczek–Khinchine): ``lam d^2 / (2 (1 - lam d))``."""
    rho = lam * d
    return lam * d * d / (2.0 * (1.0 - rho))


def _check(result, exact: float) -> None:
    k = int(0.05 * result.arrival.size)  # warm-up: the run starts empty
    ci = batch_means_ci((result.start - result.arrival)[k:], 20, level=LEVEL)
    assert ci.contains(exact), f"exact {exact:.4f} ms outside {ci}"
    # the check must be able to fail: it would catch a 10% error in the mean wait
    assert ci.halfwidth < 0.10 * exact, ci


@pytest.mark.parametrize("c,rho", [(1, 0.7), (4, 0.8)])
def test_mmc_erlang_c(c, rho):
    cfg = ServingConfig(Zoo.single(D_MS), workers=c, slo_ms=1e6, policy="fcfs", service="exponential")
    lam = rho * c / D_MS  # per ms
    res = simulate(cfg, N, rate_qps=lam * 1000.0, seed=11)
    _check(res, erlang_c_wait(lam, 1.0 / D_MS, c))


def test_md1_pollaczek_khinchine():
    cfg = ServingConfig(Zoo.single(D_MS), workers=1, slo_ms=1e6, policy="fcfs")
    lam = 0.7 / D_MS
    _check(simulate(cfg, N, rate_qps=lam * 1000.0, seed=12), md1_wait(lam, D_MS))


def test_random_routing_splits_into_md1_queues():
    K = 3
    cfg = ServingConfig(Zoo.single(D_MS), workers=K, slo_ms=1e6, policy="fcfs",
                        queue="per-worker", routing="random")
    lam = 0.6 * K / D_MS
    _check(simulate(cfg, N, rate_qps=lam * 1000.0, seed=13), md1_wait(lam / K, D_MS))
