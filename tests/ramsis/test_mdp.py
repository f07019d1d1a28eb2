"""Policy generation (value iteration) and the expected accuracy/violation of §5.1.

Spec §7: T4 (degenerate cases), T5 (monotonicity within the spec's tolerances) and the
solver checks of §2.7 (relative value iteration gives the artifact's 100-sweep policy).
The [prototype] numbers of spec §6 (Fig. 7, Fig. 10) were computed independently by the spec's
author from the artifact's profiles; we hold the expectation to them at 0.01 points, the
precision they were quoted with.
"""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.profiles import load_profile
from infsched.ramsis import mdp
from infsched.ramsis.model import MDPConfig, capacity_qps, slack_grid


@pytest.fixture(scope="module")
def image():
    return load_profile("ramsis-image").pareto_front()


@pytest.fixture(scope="module")
def text():
    return load_profile("ramsis-text")


def solve(profile, load, K=60, slo=150.0, d=20, **kw):
    return mdp.solve(profile, MDPConfig(slo, K, load, d=d, **kw))


def test_low_load_runs_most_accurate_model_meeting_slo(image):
    """T4/A8: at 400 QPS, K = 60, SLO 150 every batch is one query and efficientnet_v2_s
    (117.2 ms, the most accurate model under 150 ms) is chosen: expected accuracy 84.228."""
    s = solve(image, 400.0)
    assert image.models[s.model[1, -1]] == "efficientnet_v2_s"
    assert s.expected_accuracy == pytest.approx(84.228, abs=0.01)
    assert s.expected_violation < 1e-6


def test_single_model_policy_is_trivial(image):
    one = image.subset(["mobilenet_v3_large"])
    s = solve(one, 2000.0)
    assert np.all(s.model[1:] == 0)


@pytest.mark.parametrize("load, d, acc, viol", [
    (1200.0, 20, 78.40, 0.0), (2000.0, 20, 74.65, 0.35), (3200.0, 20, 61.17, 0.52),
    (1200.0, 100, 78.69, None), (3200.0, 100, 63.93, 0.80),
])
def test_expectation_matches_spec_prototype(image, load, d, acc, viol):
    """Spec §6 Fig. 7 / Fig. 10 [prototype] expectations (K = 60, SLO 150)."""
    s = solve(image, load, d=d)
    assert s.expected_accuracy == pytest.approx(acc, abs=0.01)
    if viol is not None:
        assert 100 * s.expected_violation == pytest.approx(viol, abs=0.01)


def test_near_peak_the_overflow_state_dominates(image):
    """Spec §6 Fig. 7 [prototype]: at 3600 QPS, just below the 3,811 QPS that the fastest model
    can carry within the SLO, the expectation predicts ~93 % violations at D = 20 (the
    overestimate the paper describes: the overflow state counts every query as late)."""
    s = solve(image, 3600.0)
    assert 100 * s.expected_violation == pytest.approx(93.2, abs=0.5)
    assert s.expected_accuracy == pytest.approx(57.972, abs=1e-6)


def test_relative_value_iteration_gives_the_artifact_policy(image):
    """§2.7: iterating to convergence and the artifact's 100 undiscounted sweeps agree."""
    for load in (1600.0, 2800.0):
        cfg = MDPConfig(150.0, 60, load, d=20)
        a = mdp.solve(image, cfg)
        b = mdp.solve(image, cfg, horizon=100)
        assert a.converged and a.iterations < 100
        assert np.array_equal(a.model, b.model)


def test_expected_accuracy_is_monotone(image):
    """T5: non-increasing in λ (fixed K), non-decreasing in K (fixed λ), within 0.2 points."""
    loads = [800.0, 1600.0, 2400.0, 3200.0]
    by_load = [solve(image, x).expected_accuracy for x in loads]
    assert all(b <= a + 0.2 for a, b in zip(by_load, by_load[1:]))
    by_k = [solve(image, 2400.0, K=k).expected_accuracy for k in (40, 60, 80, 100)]
    assert all(b >= a - 0.2 for a, b in zip(by_k, by_k[1:]))
    assert by_k[-1] > by_k[0] + 1.0     # and the effect is real, not flat


def test_expected_accuracy_grows_with_d(image):
    """T5: non-decreasing in D (2 → 10 → 100) within 0.3 points."""
    accs = [solve(image, 1200.0, d=d).expected_accuracy for d in (2, 10, 100)]
    assert accs[1] >= accs[0] - 0.3 and accs[2] >= accs[1] - 0.3


def test_md_grid_holds_every_latency_under_the_slo(image):
    cfg = MDPConfig(150.0, 60, 2000.0, discretisation="md")
    grid = slack_grid(image, cfg)
    lat = image.latency_table(32)
    assert grid[0] == 0.0 and grid[-1] == 150.0
    assert set(np.round(lat[lat < 150.0], 9)) <= set(np.round(grid, 9))
    s = mdp.solve(image, cfg)
    assert 70.0 < s.expected_accuracy < 85.0


def test_text_task_policy(text):
    s = solve(text, 2000.0, K=20, slo=200.0)
    assert 74.0 < s.expected_accuracy <= 84.56
    assert s.expected_violation < 0.01


def test_policy_is_greedy_on_its_q_values(image):
    m = mdp.WorkerMDP(image, MDPConfig(150.0, 60, 2400.0, d=20))
    s = mdp.solve(image, m)
    Q = m.q_values(s.values)
    act = np.where(s.satisfied[1:].ravel(), s.model[1:].ravel(), m.valid.shape[1] - 1)
    assert np.all(Q[np.arange(m.S - 1), act] >= Q[:-1].max(axis=1) - 1e-12)
    P = m.transition_matrix(np.argmax(Q, axis=1))
    assert np.allclose(P.sum(axis=1), 1.0) and np.allclose(s.stationary @ P, s.stationary, atol=1e-9)


# ------------------------------------------------------------------------------- errors

def test_slo_below_fastest_model(image):
    with pytest.raises(ConfigError, match=r"slo_ms = 20: below the fastest model's batch-1 latency "
                                          r"\(shufflenet_v2_x0_5, 21.9"):
        solve(image, 400.0, slo=20.0)


def test_load_the_pool_cannot_serve(image):
    cap = capacity_qps(image, 40)
    best = max(b / image.latency(0, b) for b in range(1, 33))   # shufflenet's best batch
    assert cap == pytest.approx(40 * best * 1000, rel=1e-12) and 2900 < cap < 3100
    with pytest.raises(InfeasibleError, match=r"load_qps = 4000 exceeds what workers = 40 can serve"):
        solve(image, 4000.0, K=40)


def test_unknown_and_empty_model_sets(image):
    with pytest.raises(ConfigError, match="resnet9000"):
        image.subset(["resnet9000"])
    with pytest.raises(ConfigError):
        image.subset([])


@pytest.mark.parametrize("field, value", [("slo_ms", -1), ("workers", 0), ("load_qps", float("nan")),
                                          ("d", 0), ("discretisation", "exact"), ("batching", "greedy")])
def test_config_validation(field, value):
    kw = dict(slo_ms=150.0, workers=60, load_qps=1000.0)
    kw[field] = value
    with pytest.raises(ConfigError, match=field):
        MDPConfig(**kw)


def test_non_convergence_is_reported(image):
    with pytest.raises(mdp.ConvergenceError, match="did not converge in max_iter = 3"):
        mdp.solve(image, MDPConfig(150.0, 60, 2800.0, d=20), max_iter=3)
