"""TAD-OP and R-JIQ (TAD paper) on the neutral simulator: against the simpy reference, and
against the TAD paper engine (:mod:`infsched.tad.sim`) on the paper's own system."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.metrics import batch_means_ci
from infsched.serving import ServingConfig, simulate
from infsched.serving.reference import simulate_reference
from infsched.serving.scenarios import tad_system
from infsched.tad import bound
from infsched.tad.model import MAIN
from infsched.tad.sim import simulate as tad_engine

A_STAR = 76.0
N = 8


def _config(policy: str, rho: float, service: str = "deterministic") -> tuple[ServingConfig, float]:
    zoo, workers = tad_system(MAIN, N)
    lam = rho * bound.lambda_max(MAIN, A_STAR)
    extra = {"class_p": tuple(bound.rjiq_probs(MAIN, A_STAR, lam, N))} if policy == "r-jiq" else {}
    cfg = ServingConfig(zoo, workers=N, slo_ms=1e9, policy=policy, a_star=A_STAR, worker_models=workers,
                        service=service, **extra)
    return cfg, lam


@pytest.mark.parametrize("policy", ["tad-op", "r-jiq"])
@pytest.mark.parametrize("service", ["deterministic", "exponential"])
@pytest.mark.parametrize("rho", [0.5, 0.95])
def test_engine_matches_simpy_reference(policy, service, rho):
    cfg, lam = _config(policy, rho, service)
    fast = simulate(cfg, 2000, rate_qps=N * lam * 1000.0, seed=5)
    ref = simulate_reference(cfg, 2000, rate_qps=N * lam * 1000.0, seed=5)
    np.testing.assert_array_equal(fast.model, ref.model)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=0, atol=1e-9)
    assert (fast.final_delta, fast.min_delta) == (ref.final_delta, ref.min_delta)


def test_system_params_are_the_papers():
    cfg, _ = _config("tad-op", 0.5)
    p = cfg.system_params()
    assert p.mu == pytest.approx(MAIN.mu) and p.a == MAIN.a and p.alpha == pytest.approx(MAIN.alpha)


@pytest.mark.parametrize("policy", ["tad-op", "r-jiq"])
def test_agrees_with_the_paper_engine(policy):
    """Deterministic service at 0.5 λ^max on the paper's main system (n = 8): mean response
    time and mean accuracy within the two runs' combined 99.9 % batch-means intervals."""
    cfg, lam = _config(policy, 0.5)
    ours = simulate(cfg, 300_000, rate_qps=N * lam * 1000.0, seed=21)
    k = int(0.2 * ours.arrival.size)
    mine = batch_means_ci(ours.latency[k:], 20, level=0.95)
    theirs = tad_engine(MAIN, policy, n=N, lam=lam, a_star=A_STAR, n_jobs=300_000, service="det", seed=21)
    tol = 3.2905 / 1.9600 * np.hypot(mine.halfwidth, theirs.ci_halfwidth)
    assert abs(mine.mean - theirs.mean_response) <= tol, (mine, theirs.mean_response, tol)
    assert tol < 0.05 * theirs.mean_response
    acc = batch_means_ci(cfg.zoo.accuracy[ours.model[k:]], 20, level=0.999)
    assert abs(acc.mean - theirs.mean_accuracy) <= acc.halfwidth + 0.02


def test_tadop_keeps_the_target_on_average():
    cfg, lam = _config("tad-op", 0.8)
    res = simulate(cfg, 200_000, rate_qps=N * lam * 1000.0, seed=3)
    assert cfg.zoo.accuracy[res.model].mean() >= A_STAR - 0.05


def test_rjiq_configuration_errors():
    zoo, workers = tad_system(MAIN, 4)
    kw = dict(workers=4, slo_ms=100.0, a_star=A_STAR, worker_models=workers)
    with pytest.raises(ConfigError, match=r"^class_p = None: policy 'r-jiq' needs it"):
        ServingConfig(zoo, policy="r-jiq", **kw)
    with pytest.raises(ConfigError, match=r"^class_p = .*: must be 4 probabilities"):
        ServingConfig(zoo, policy="r-jiq", class_p=(0.5, 0.5), **kw)
    with pytest.raises(ConfigError, match=r"^class_p = .*: only policy 'r-jiq' takes it"):
        ServingConfig(zoo, policy="tad-op", class_p=(0.25,) * 4, **kw)
    with pytest.raises(ConfigError, match=r"^routing = 'tad-op'"):
        ServingConfig(zoo, policy="tad", routing="tad-op", **kw)
