"""TAD on the neutral simulator: against the simpy reference, its own constraint (accuracy >= a*
after every arrival), and the TAD paper engine (:mod:`infsched.tad.sim`) on the paper's system."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.metrics import batch_means_ci, mean_ci
from infsched.profiles import load_profile
from infsched.serving import ServingConfig, Zoo, simulate
from infsched.serving.reference import simulate_reference
from infsched.serving.scenarios import tad_system
from infsched.tad import bound
from infsched.tad.model import MAIN
from infsched.tad.sim import simulate as tad_engine

A_STAR = 76.0
N_SERVERS = 8


def _main_config(service: str, max_batch: int = 1) -> ServingConfig:
    zoo, workers = tad_system(MAIN, N_SERVERS)
    return ServingConfig(zoo, workers=N_SERVERS, slo_ms=1e9, policy="tad", a_star=A_STAR,
                         worker_models=workers, service=service, max_batch=max_batch)


def _rate(rho: float) -> float:
    """Total arrival rate (per 1000 time units, the simulator's 'per second') at rho λ^max."""
    return N_SERVERS * rho * bound.lambda_max(MAIN, A_STAR) * 1000.0


def _image_tad(max_batch: int) -> tuple[ServingConfig, float]:
    """TAD over the RAMSIS image Pareto models, 12 workers spread evenly over them."""
    zoo = Zoo.of("ramsis-image")
    front = load_profile("ramsis-image").pareto_front().models
    workers = tuple(front[i % len(front)] for i in range(12))
    cfg = ServingConfig(zoo, workers=12, slo_ms=1e9, policy="tad", a_star=78.0,
                        worker_models=workers, max_batch=max_batch)
    batch1_capacity = sum(1000.0 / zoo.latency_ms[zoo.names.index(m), 0] for m in workers)
    return cfg, batch1_capacity


@pytest.mark.parametrize("case", ["main-det", "main-exp", "image-batch4"])
@pytest.mark.parametrize("rho", [0.5, 0.95])
def test_tad_engine_matches_simpy_reference(case, rho):
    if case == "image-batch4":  # the variant where each TAD server batches what is queued at it
        cfg, cap = _image_tad(4)
        rate = rho * cap
    else:
        cfg, rate = _main_config("deterministic" if case == "main-det" else "exponential"), _rate(rho)
    fast = simulate(cfg, 2000, rate_qps=rate, seed=8)
    ref = simulate_reference(cfg, 2000, rate_qps=rate, seed=8)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_array_equal(fast.bsize, ref.bsize)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)
    assert (fast.final_delta, fast.min_delta) == (ref.final_delta, ref.min_delta)


def test_tad_keeps_accuracy_at_target_after_every_arrival():
    """TAD's guarantee (TAD paper Section 4): Δ >= 0 after every routing, i.e. the routed
    queries' running mean accuracy never falls below a*; on the RAMSIS image Pareto models."""
    cfg, cap = _image_tad(1)
    a_star = cfg.a_star
    res = simulate(cfg, 100_000, rate_qps=0.8 * cap, seed=9)
    acc = cfg.zoo.accuracy[res.model]
    running = np.cumsum(acc - a_star)  # Δ after each arrival, in arrival order
    assert res.min_delta >= 0 and running.min() >= -1e-6
    assert res.final_delta == pytest.approx(running[-1], abs=1e-6)


def test_tad_agrees_with_the_paper_engine_deterministic():
    """One long run each, deterministic service (the paper engine's Lindley loop): the mean
    response time agrees within the two runs' combined 99.9% batch-means intervals."""
    cfg = _main_config("deterministic")
    lam = 0.5 * bound.lambda_max(MAIN, A_STAR)
    ours = simulate(cfg, 500_000, rate_qps=N_SERVERS * lam * 1000.0, seed=21)
    k = int(0.2 * ours.arrival.size)
    mine = batch_means_ci(ours.latency[k:], 20, level=0.95)
    theirs = tad_engine(MAIN, "tad", n=N_SERVERS, lam=lam, a_star=A_STAR, n_jobs=500_000,
                        service="det", seed=21)
    z999_over_z95 = 3.2905 / 1.9600  # the engines report 95% half-widths
    tol = z999_over_z95 * np.hypot(mine.halfwidth, theirs.ci_halfwidth)
    assert abs(mine.mean - theirs.mean_response) <= tol, (mine, theirs.mean_response, tol)
    assert tol < 0.05 * theirs.mean_response  # sharp enough to catch a 5% difference


def test_tad_agrees_with_the_paper_engine_exponential():
    """Exponential service (the paper engine's Markov chain): the mean response of each engine
    over six seeds (independent runs), the difference's 99.9% Student-t interval holds 0."""
    cfg = _main_config("exponential")
    lam = 0.5 * bound.lambda_max(MAIN, A_STAR)
    mine, theirs = [], []
    for s in range(6):
        r = simulate(cfg, 300_000, rate_qps=N_SERVERS * lam * 1000.0, seed=30 + s)
        mine.append(r.latency[int(0.2 * r.arrival.size):].mean())
        theirs.append(tad_engine(MAIN, "tad", n=N_SERVERS, lam=lam, a_star=A_STAR,
                                 n_jobs=300_000, service="exp", seed=30 + s).mean_response)
    diff = mean_ci(np.array(mine) - np.array(theirs), level=0.999)  # independent pairs
    assert diff.contains(0.0), diff
    assert diff.halfwidth < 0.05 * np.mean(theirs), diff


def test_tad_configuration_errors():
    zoo, workers = tad_system(MAIN, 4)
    with pytest.raises(ConfigError, match=r"^a_star = None: policy 'tad' needs it"):
        ServingConfig(zoo, workers=4, slo_ms=100.0, policy="tad", worker_models=workers)
    with pytest.raises(ConfigError, match=r"^worker_models = None: policy 'tad' needs it"):
        ServingConfig(zoo, workers=4, slo_ms=100.0, policy="tad", a_star=76.0)
    with pytest.raises(ConfigError, match=r"^worker_models = .*: must name one model per worker \(5\)"):
        ServingConfig(zoo, workers=5, slo_ms=100.0, policy="tad", a_star=76.0, worker_models=workers)
    with pytest.raises(InfeasibleError, match=r"^a_star = 101.0 exceeds the most accurate worker model, 100"):
        ServingConfig(zoo, workers=4, slo_ms=100.0, policy="tad", a_star=101.0, worker_models=workers)
    with pytest.raises(ConfigError, match=r"^a_star = 76.0: only policies 'tad', 'tad-op', 'r-jiq' take it"):
        ServingConfig(zoo, workers=4, slo_ms=100.0, policy="fcfs", a_star=76.0)
    with pytest.raises(ConfigError, match=r"^routing = 'tad'"):
        ServingConfig(zoo, workers=4, slo_ms=100.0, policy="fcfs", queue="per-worker", routing="tad")
