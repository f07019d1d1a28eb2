"""infsched.tad.bound against the spec's acceptance numbers (§8 A1–A17) and checks (§5).

Classes are 0-based in code; the paper's class k is index k-1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.optim import solve_lp
from infsched.tad.bound import (
    LPBound,
    crossing_load,
    example_1,
    example_2,
    example_3,
    lambda_max,
    lp_curve,
    lp_lower_bound,
    plateau_end,
    relaxed_lp,
    rjiq_beta,
    rjiq_error_tolerance,
    rjiq_probs,
    rjiq_zero_wait_latency,
    routing_tuples,
    tad_zero_load_pattern,
    tadop_zero_load_pattern,
    tolerance_curve,
    waterfill,
)
from infsched.tad.model import EXAMPLE_1_2, EXAMPLE_3, MAIN, SystemParams

REL = 1e-5       # spec §8 default tolerance for analytic numbers
THM1 = 1e-9      # Theorem 1: waterfilling == LP, relative


def T_lp(a_star: float, rho: float, params: SystemParams = MAIN) -> float:
    return lp_lower_bound(params, a_star, rho * lambda_max(params, a_star)).T


def random_params(rng: np.random.Generator) -> tuple[SystemParams, float]:
    """A generic instance (spec §5 test 4): μ decreasing, a increasing, α ~ Dirichlet."""
    K = int(rng.integers(2, 7))
    mu = np.sort(rng.uniform(0.05, 3.0, K))[::-1]
    a = np.sort(rng.uniform(40.0, 100.0, K))
    alpha = rng.dirichlet(np.ones(K))
    alpha[-1] = 1.0 - alpha[:-1].sum()
    params = SystemParams(mu=tuple(mu), a=tuple(a), alpha=tuple(alpha))
    return params, float(rng.uniform(a[0] - 5.0, a[-1]))


# ------------------------------------------------------------------------------------------
# §8 acceptance numbers
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("a_star, expected", [
    (72, 1.0), (74, 1.0), (74.25, 1.0),                                   # A1
    (75.1, 0.833333), (76, 0.708333), (78, 0.53125), (80, 0.35),          # A2
    (85, 0.1), (90, 0.05), (100, 0.025),
])
def test_A1_A2_lambda_max(a_star, expected):
    assert lambda_max(MAIN, a_star) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("a_star", [75.1, 76, 77, 78, 78.5])
def test_lambda_max_closed_form_in_main_range(a_star):
    assert lambda_max(MAIN, a_star) == pytest.approx(4.25 / (a_star - 70), rel=1e-12)


@pytest.mark.parametrize("a_star, expected", [
    (72, 0.622222), (74, 0.744444), (75.1, 0.811667), (76, 0.866667), (78, 0.988889),
    (85, 3.333333)])
def test_A3_plateau_value(a_star, expected):
    for rho in (0.0, 0.01, 0.3):
        assert T_lp(a_star, rho) == pytest.approx(expected, rel=REL)
    assert relaxed_lp(MAIN, a_star)[0] == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("a_star, at_08, at_09", [
    (72, 0.694444, 0.740741), (75.1, 0.87875, 0.987222), (76, 0.945588, 1.073203),
    (78, 1.185882, 1.285229)])
def test_A4_A5_T_at_high_load(a_star, at_08, at_09):
    assert T_lp(a_star, 0.8) == pytest.approx(at_08, rel=REL)
    assert T_lp(a_star, 0.9) == pytest.approx(at_09, rel=1e-4)


@pytest.mark.parametrize("a_star, expected", [
    (72, 1.0), (75.1, 1.1), (76, 41 / 34), (78, 49 / 34), (80, 12 / 7)])
def test_A6_T_at_lambda_max(a_star, expected):
    assert T_lp(a_star, 1.0) == pytest.approx(expected, rel=REL)
    assert waterfill(MAIN, a_star, lambda_max(MAIN, a_star)).T == pytest.approx(expected,
                                                                                 rel=1e-12)


@pytest.mark.parametrize("a_star, rho_end", [
    (75.1, 9 / 17), (76, 9 / 17), (78, 9 / 17), (72, 0.625), (74, 0.5625)])
def test_A7_lemma3_plateau_end(a_star, rho_end):
    lmax = lambda_max(MAIN, a_star)
    lam1 = plateau_end(MAIN, a_star)
    assert lam1 / lmax == pytest.approx(rho_end, rel=1e-9)
    v, q = relaxed_lp(MAIN, a_star)
    # On the plateau the LP is the relaxed LP (eq. 84) ...
    for lam in np.linspace(0.05, 1.0, 6) * lam1:
        bound = lp_lower_bound(MAIN, a_star, lam)
        assert bound.T == pytest.approx(v, rel=1e-9)
        np.testing.assert_allclose(bound.p, q, atol=1e-9)
    # ... and strictly above it just after λ_1.
    assert lp_lower_bound(MAIN, a_star, lam1 * 1.02).T > v * (1 + 1e-6)


def test_A8_p_star_at_76():
    p = lp_lower_bound(MAIN, 76, 0.8 * lambda_max(MAIN, 76)).p
    np.testing.assert_allclose(p, [0.1971, 0.4059, 0.3971, 0.0], atol=1e-4)


def test_A9_accuracy_lower_bound_rises_at_72():
    df = lp_curve(MAIN, 72, [0.5, 0.78, 0.9, 1.0])
    assert df["accuracy"].tolist() == pytest.approx([72.0, 72.0, 73.056, 74.25], rel=REL)
    p_lp = lp_lower_bound(MAIN, 72, 0.9).p
    assert float(p_lp @ MAIN.a_arr) == pytest.approx(73.056, rel=REL)


def test_A10_example_1():
    ex = example_1()
    assert ex["lam_max"] == pytest.approx(5 / 9, rel=1e-12)
    np.testing.assert_allclose(ex["p_hat"], [0.74937, 0.06076, 0.18987], atol=1e-5)
    assert ex["traffic_class3"] == pytest.approx(0.084388, rel=REL)
    assert ex["capacity_class3"] == pytest.approx(1 / 12, rel=1e-12)
    assert ex["overloaded"] and round(ex["traffic_class3"], 4) == 0.0844 > 0.0833


def test_A11_example_2():
    ex = example_2()
    assert ex["tad_latency"] == pytest.approx(1.5, rel=1e-12)
    np.testing.assert_allclose(ex["tad_pattern"], [0.5, 0.5, 0.0])       # round robin on (1,2)
    assert ex["optimal_pair"] == "(1,3)"
    assert ex["optimal_pair_latency"] == pytest.approx(1.25, rel=1e-12)
    np.testing.assert_allclose(ex["optimal_q"], [11 / 12, 0, 1 / 12], atol=1e-12)
    assert ex["improvement"] == pytest.approx(0.1667, abs=5e-5)
    assert ex["lam_max"] == pytest.approx(0.58333, rel=REL)


def test_A12_example_3_and_errata():
    ex = example_3()
    assert ex["lam_max"] == pytest.approx(0.15625, rel=REL)
    np.testing.assert_allclose(ex["p_at_lam_max"], [0.0, 0.96, 0.04], atol=1e-9)
    assert ex["T_at_lam_max"] == pytest.approx(2.08, rel=REL)
    # The paper's 0.0625 and 0.25 are arithmetic errors (spec §9.13).
    assert ex["pair13_limit"] == pytest.approx(0.03125, rel=1e-12)
    assert ex["pair23_limit"] == pytest.approx(0.15625, rel=1e-12)
    assert ex["tuples"][:3] == ["(1,3)", "(2,3)", "(1,2)"]
    np.testing.assert_allclose(ex["weights_at_lam_max"][:3], [0.03125, 0.0, 0.125], atol=1e-12)
    expected_T = {0.03125: 1.6, 0.05: 1.825, 0.0625: 1.9, 0.1: 2.0125}
    for lam, T in expected_T.items():
        assert ex["T_at"][lam] == pytest.approx(T, rel=REL)


@pytest.mark.parametrize("a_star, expected", [
    (72, 0.7), (75.1, 1.002222), (76, 1.022222), (78, 1.066667)])
def test_A14_tad_zero_load_latency(a_star, expected):
    p = tad_zero_load_pattern(MAIN, a_star)
    assert float(p @ (1 / MAIN.mu_arr)) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("n, expected", [(64, 1.0363), (256, 0.9866), (1024, 0.9515),
                                         (4096, 0.9266)])
def test_A15_rjiq_zero_wait_latency(n, expected):
    lam = 0.5 * lambda_max(MAIN, 76)
    assert rjiq_zero_wait_latency(MAIN, 76, lam, n) == pytest.approx(expected, abs=5e-5)


def test_rjiq_mixing_weight_at_half_load():
    # ρ = 0.5: β = ln2/ln n, so w = n^{-γ} = √2 n^{-1/4} and the zero-wait latency is the
    # w-mixture of T_LP(λ) and T_LP(λ^max) (spec §3.1).
    lmax = lambda_max(MAIN, 76)
    for n in (16, 64, 256):
        w = math.sqrt(2) * n ** -0.25
        mix = (1 - w) * T_lp(76, 0.5) + w * T_lp(76, 1.0)
        assert rjiq_zero_wait_latency(MAIN, 76, 0.5 * lmax, n) == pytest.approx(mix, rel=1e-9)


def test_A16_fig5_crossings():
    rho_w = crossing_load(MAIN, 76, 128, "zero_wait")
    rho_st = crossing_load(MAIN, 76, 4096, "stable")
    assert 0.53 <= rho_w <= 0.57 and rho_w == pytest.approx(0.55, abs=0.02)
    assert 0.87 <= rho_st <= 0.90 and rho_st == pytest.approx(0.885, abs=0.015)
    # Small systems never destabilise under a 5 % error (spec §4, Fig. 5 results).
    assert math.isnan(crossing_load(MAIN, 76, 256, "stable"))


@pytest.mark.parametrize("n, criterion, expected", [
    (64, "zero_wait", 0.52), (256, "zero_wait", 0.575), (512, "zero_wait", 0.63),
    (4096, "zero_wait", 0.625), (512, "stable", 0.995), (1024, "stable", 0.97),
    (4096, "stable", 0.885)])
def test_fig5_crossings_match_spec_grid_values(n, criterion, expected):
    """Spec §4 Fig. 5 [computed] values on the 0.005 ρ grid; a* ∈ {75.1, 76, 78} agree."""
    for a_star in (75.1, 76, 78):
        assert crossing_load(MAIN, a_star, n, criterion) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("a_star, rho, expected", [
    (76, 0.4, 1005.8), (76, 0.5, 1257.2),       # Fig. 9 low / high
    (75.1, 0.4, 1108.2), (78, 0.4, 860.7)])     # Fig. 10 low / high
def test_A17_fig9_10_levels(a_star, rho, expected):
    bound = lp_lower_bound(MAIN, a_star, rho * lambda_max(MAIN, a_star))
    assert 4096 * bound.N == pytest.approx(expected, abs=0.05)


# ------------------------------------------------------------------------------------------
# §5 checks
# ------------------------------------------------------------------------------------------

def test_lambda_max_equals_lp_and_lemma4_bounds():
    """§5.1: the knapsack closed form equals the LP of eq. 2; Lemma 4(1) bounds."""
    rng = np.random.default_rng(20240501)
    for _ in range(60):
        params, a_star = random_params(rng)
        cap, a = params.capacity, params.a_arr
        lp = solve_lp(-np.ones(params.K), A_ub=-(a - a_star).reshape(1, -1), b_ub=[0.0],
                      bounds=[(0.0, c) for c in cap])
        lmax = lambda_max(params, a_star)
        assert lmax == pytest.approx(-lp.objective, rel=1e-9)
        assert cap[a >= a_star].sum() * (1 - 1e-12) <= lmax <= cap.sum() * (1 + 1e-12)


@pytest.mark.parametrize("a_star", [72, 75.1, 76, 78, 85])
def test_T_nondecreasing_N_convex(a_star):
    """§5.2 and Lemma 4(3–4): T non-decreasing, N = λT convex and non-decreasing."""
    lams = np.linspace(0.0, 1.0, 81) * lambda_max(MAIN, a_star)
    T = np.array([lp_lower_bound(MAIN, a_star, lam).T for lam in lams])
    N = lams * T
    assert np.all(np.diff(T) >= -1e-9)
    assert np.all(np.diff(N) >= -1e-12)
    assert np.all(np.diff(N, 2) >= -1e-9)
    if plateau_end(MAIN, a_star) < lams[-1] * (1 - 1e-9):
        # T leaves its plateau, so N must bend upwards somewhere.
        assert np.diff(N, 2).max() > 1e-6
    else:
        # a* = 85: the relaxed optimum (3,4) carries all of λ^max; T is flat (Lemma 3).
        np.testing.assert_allclose(T, T[0], rtol=1e-9)


@pytest.mark.parametrize("a_star", [72, 76, 78, 85])
def test_lp_infeasible_above_lambda_max(a_star):
    lmax = lambda_max(MAIN, a_star)
    # 1e-4 over: HiGHS's absolute feasibility tolerance (1e-7) hides a 1e-6 relative excess
    # when the binding capacity is small (α_4μ_4 = 0.025 at a* = 85).
    lam = lmax * (1 + 1e-4)
    K = MAIN.K
    with pytest.raises(InfeasibleError, match="infeasible"):   # the raw LP, not the pre-check
        solve_lp(1 / MAIN.mu_arr, A_ub=-MAIN.a_arr.reshape(1, K), b_ub=[-a_star * lam],
                 A_eq=np.ones((1, K)), b_eq=[lam], bounds=[(0, c) for c in MAIN.capacity])
    with pytest.raises(InfeasibleError, match=r"at or above λ\^max"):
        lp_lower_bound(MAIN, a_star, 1.01 * lmax)
    with pytest.raises(InfeasibleError):
        waterfill(MAIN, a_star, 1.01 * lmax)
    with pytest.raises(InfeasibleError):
        rjiq_probs(MAIN, a_star, 1.01 * lmax, 64)
    # At λ^max itself (and float noise above it) the LP answers.
    assert lp_lower_bound(MAIN, a_star, lmax * (1 + 1e-12)).T > 0


def test_relaxed_lp_equals_eq8():
    """Lemma 3 / eq. 8: the closed form equals the capacity-free LP, degenerate a* included."""
    rng = np.random.default_rng(7)
    cases = [random_params(rng) for _ in range(40)]
    cases += [(MAIN, 75.0), (MAIN, 80.0), (MAIN, 60.0), (EXAMPLE_1_2, 45.0)]
    for params, a_star in cases:
        v, q = relaxed_lp(params, a_star)
        lp = solve_lp(1 / params.mu_arr, A_ub=-params.a_arr.reshape(1, -1), b_ub=[-a_star],
                      A_eq=np.ones((1, params.K)), b_eq=[1.0])
        assert v == pytest.approx(lp.objective, rel=1e-9)
        assert q.sum() == pytest.approx(1.0) and q @ params.a_arr >= a_star - 1e-9
        assert q.min() >= 0
    # a* = a_2 = 75 exactly: the pair (1,3) (0.8056) beats the singleton e_2 (1.0).
    assert relaxed_lp(MAIN, 75.0)[0] == pytest.approx(0.25 + 0.5 / 0.9, rel=1e-12)


ROUTING_76 = [  # spec §2.3 table, 1-based labels
    ("(1,3)", (0.4, 0, 0.6, 0), 0.866667, "proper"),
    ("(2,3)", (0, 0.8, 0.2, 0), 1.022222, "proper"),
    ("(1,2)", (-0.2, 1.2, 0, 0), 1.1, "shuffle"),
    ("{3}", (0, 0, 1, 0), 1.111111, "singleton"),
    ("(2,4)", (0, 0.96, 0, 0.04), 1.36, "proper"),
    ("(1,4)", (0.8, 0, 0, 0.2), 2.4, "proper"),
    ("{4}", (0, 0, 0, 1), 10.0, "singleton"),
]


def test_routing_tuples_table_at_76():
    tuples = routing_tuples(MAIN, 76)
    assert [t.label() for t in tuples] == [row[0] for row in ROUTING_76]   # (3,4) dropped
    for t, (_, q, v, kind) in zip(tuples, ROUTING_76):
        np.testing.assert_allclose(t.q, q, atol=1e-12)
        assert t.v == pytest.approx(v, rel=REL)
        assert t.kind == kind
        assert t.q.sum() == pytest.approx(1.0)
        if kind != "singleton":
            assert t.q @ MAIN.a_arr == pytest.approx(76.0)
    first, shuffle = tuples[0], tuples[2]
    assert first.classes == (0, 2) and (first.lo, first.hi) == (0, 2)
    assert first.pos == (0, 2) and first.neg == ()
    assert shuffle.pos == (1,) and shuffle.neg == (0,) and shuffle.lo is None


@pytest.mark.parametrize("a_star, label, q, v", [
    (78, "(3,4)", (0, 0, 1.1, -0.1), 0.222222),
    (74, "(2,4)", (0, 1.04, 0, -0.04), 0.64)])
def test_shuffle_pair_can_rank_first(a_star, label, q, v):
    t = routing_tuples(MAIN, a_star)[0]
    assert (t.label(), t.kind) == (label, "shuffle")
    np.testing.assert_allclose(t.q, q, atol=1e-12)
    assert t.v == pytest.approx(v, rel=REL)


def test_degenerate_target_uses_support():
    """a* = a_3 = 80: pairs through class 3 collapse onto {3}; each support appears once."""
    tuples = routing_tuples(MAIN, 80)
    supports = [t.classes for t in tuples]
    assert len(supports) == len(set(supports))
    assert (2,) in supports and all(t.q[2] == 0 or t.classes == (2,) for t in tuples)
    for rho in (0.2, 0.7, 1.0):
        lam = rho * lambda_max(MAIN, 80)
        assert waterfill(MAIN, 80, lam).T == pytest.approx(lp_lower_bound(MAIN, 80, lam).T,
                                                           rel=THM1)


def _assert_waterfill_matches_lp(params, a_star, lam):
    wf = waterfill(params, a_star, lam)
    lp = lp_lower_bound(params, a_star, lam)
    assert wf.T == pytest.approx(lp.T, rel=THM1), (params, a_star, lam)
    assert wf.N == pytest.approx(lp.N, rel=THM1, abs=1e-15)
    # The waterfilling p is feasible for the LP (§5 test 4).
    cap = params.capacity
    assert np.all(lam * wf.p <= cap + 1e-12)
    assert np.all(wf.p >= -1e-12)
    assert wf.p.sum() == pytest.approx(1.0, abs=1e-12)
    assert wf.p @ params.a_arr >= a_star - 1e-9
    assert wf.weights.sum() == pytest.approx(lam, rel=1e-12, abs=1e-15)
    return wf


@pytest.mark.parametrize("params, a_star", [
    (MAIN, 72), (MAIN, 74), (MAIN, 75.1), (MAIN, 76), (MAIN, 78), (MAIN, 85),
    (EXAMPLE_1_2, 52), (EXAMPLE_1_2, 45), (EXAMPLE_3, 52)])
def test_A13_theorem1_waterfill_equals_lp_on_grid(params, a_star):
    lmax = lambda_max(params, a_star)
    for rho in np.linspace(0.0, 1.0, 100):
        _assert_waterfill_matches_lp(params, a_star, rho * lmax)
    # The vectorised path used for curves agrees with the one-pass loop.
    rhos = np.linspace(0.0, 1.0, 37)
    df = lp_curve(params, a_star, rhos)
    loop = [waterfill(params, a_star, r * lmax) for r in rhos]
    np.testing.assert_allclose(df["T"], [w.T for w in loop], rtol=1e-12)
    np.testing.assert_allclose(df[[f"p{k + 1}" for k in range(params.K)]].to_numpy(),
                               [w.p for w in loop], atol=1e-12)


def test_A13_theorem1_random_instances():
    rng = np.random.default_rng(12345)
    worst = 0.0
    for _ in range(300):
        params, a_star = random_params(rng)
        lam = rng.uniform(0.01, 0.999) * lambda_max(params, a_star)
        wf = _assert_waterfill_matches_lp(params, a_star, lam)
        worst = max(worst, abs(wf.T / lp_lower_bound(params, a_star, lam).T - 1))
    assert worst <= THM1


@pytest.mark.parametrize("a_star", [72, 76, 78, 85])
def test_lemma5_slopes_are_routing_tuples(a_star):
    """Lemma 5: the right derivative of A(λ) = λp*(λ) (from the LP) is some tuple's q."""
    tuples = routing_tuples(MAIN, a_star)
    lmax = lambda_max(MAIN, a_star)
    wf = waterfill(MAIN, a_star, lmax)
    edges = np.concatenate([[0.0], np.cumsum(wf.weights)])
    h = 1e-7
    checked = 0
    for k in range(len(tuples)):
        if wf.weights[k] < 1e-3:
            continue
        lam = 0.5 * (edges[k] + edges[k + 1])     # mid-segment: away from breakpoints
        b0, b1 = lp_lower_bound(MAIN, a_star, lam), lp_lower_bound(MAIN, a_star, lam + h)
        slope = (b1.traffic - b0.traffic) / h
        dist = [np.abs(slope - u.q).max() for u in tuples]
        best = int(np.argmin(dist))
        assert dist[best] <= 1e-5
        assert best == k                          # the tuple waterfilling uses there
        assert (b1.N - b0.N) / h == pytest.approx(tuples[best].v, abs=1e-5)
        checked += 1
    # Every a* but 85 (one segment, the plateau) uses at least two tuples up to λ^max.
    assert checked >= (1 if a_star == 85 else 2)


@pytest.mark.parametrize("a_star", [72, 76, 78, 85])
@pytest.mark.parametrize("n", [16, 64, 1024, 4096])
def test_lemma2_deterministic_parts(a_star, n):
    """Lemma 2: p_RJIQ·a >= a*, and each subsystem load <= 1 − n^{−(γ+β)} (eqs. 28–33)."""
    lmax = lambda_max(MAIN, a_star)
    for rho in (0.0, 0.05, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0):
        lam = rho * lmax
        p = rjiq_probs(MAIN, a_star, lam, n)
        assert p.min() >= 0 and p.sum() == pytest.approx(1.0, abs=1e-12)
        assert p @ MAIN.a_arr >= a_star - 1e-9
        beta = rjiq_beta(rho, n)
        gamma = max(0.0, 0.5 * (0.5 - beta))
        bound = 1 - n ** -(gamma + beta) if math.isfinite(beta) else 1.0
        assert (lam * p / MAIN.capacity).max() <= bound + 1e-12


def test_rjiq_beta():
    assert rjiq_beta(0.5, 4) == pytest.approx(0.5)
    assert 1 - 64 ** -rjiq_beta(0.7, 64) == pytest.approx(0.7)
    assert rjiq_beta(1.0, 64) == math.inf
    # An explicit β overrides the one implied by λ (the Figs. 6–8 sweep parameter).
    lam = 0.5 * lambda_max(MAIN, 76)
    assert not np.allclose(rjiq_probs(MAIN, 76, lam, 64, beta=0.1), rjiq_probs(MAIN, 76, lam, 64))


@pytest.mark.parametrize("params, a_star, expected", [
    (EXAMPLE_1_2, 45, (0.5, 0.5, 0.0)),
    (MAIN, 76, (0, 0.8, 0.2, 0)),
    (MAIN, 78, (0, 0.4, 0.6, 0)),
    (MAIN, 72, (0.6, 0.4, 0, 0)),
    (MAIN, 75.1, (0, 0.98, 0.02, 0)),
])
def test_tad_zero_load_pattern(params, a_star, expected):
    """§5 test 8: TAD's all-idle Δ recursion settles on a (generally sub-optimal) pair."""
    np.testing.assert_allclose(tad_zero_load_pattern(params, a_star), expected, atol=1e-12)


@pytest.mark.parametrize("a_star", [72, 75.1, 76, 78, 85, 60])
def test_tadop_zero_load_pattern_is_lp_optimal(a_star):
    p = tadop_zero_load_pattern(MAIN, a_star)
    np.testing.assert_allclose(p, relaxed_lp(MAIN, a_star)[1], atol=1e-3)
    if a_star == 76:
        np.testing.assert_allclose(p, [0.4, 0, 0.6, 0], atol=1e-12)


def test_tolerance_curves():
    rhos = np.linspace(0.05, 0.95, 19)
    zw = tolerance_curve(MAIN, 76, 4096, rhos, "zero_wait")
    st = tolerance_curve(MAIN, 76, 4096, rhos, "stable")
    assert np.all(st >= zw)                 # zero wait implies stability
    assert zw[0] > 0.2 and st[-1] < 0.05    # tolerant at low load, fragile near λ^max
    assert rjiq_error_tolerance(MAIN, 76, 4096, rhos[3], criterion="stable") == st[3]
    assert np.all(np.isclose(zw / 0.0025, np.round(zw / 0.0025)))   # on the 0.25 % grid


# ------------------------------------------------------------------------------------------
# Error paths
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda: lambda_max(MAIN, 101),
    lambda: lp_lower_bound(MAIN, 101, 0.01),
    lambda: routing_tuples(MAIN, 101),
    lambda: waterfill(MAIN, 101, 0.01),
    lambda: relaxed_lp(MAIN, 101),
    lambda: tad_zero_load_pattern(MAIN, 101),
])
def test_target_above_best_model(fn):
    with pytest.raises(InfeasibleError, match="exceeds the most accurate model"):
        fn()


@pytest.mark.parametrize("lam", [-0.1, math.nan, math.inf])
def test_bad_lambda(lam):
    with pytest.raises(ConfigError, match="lam"):
        lp_lower_bound(MAIN, 76, lam)
    with pytest.raises(ConfigError, match="lam"):
        waterfill(MAIN, 76, lam)


def test_unknown_criterion_and_bad_n():
    with pytest.raises(ConfigError, match="criterion"):
        rjiq_error_tolerance(MAIN, 76, 128, 0.5, criterion="fast")
    with pytest.raises(ConfigError, match="criterion"):
        crossing_load(MAIN, 76, 128, "wait")
    with pytest.raises(ConfigError, match="n"):
        rjiq_probs(MAIN, 76, 0.1, 1)
    with pytest.raises(ConfigError, match="rhos"):
        lp_curve(MAIN, 76, [0.5, 1.2])


def test_lp_bound_object_and_cvxpy_cross_check():
    lam = 0.6 * lambda_max(MAIN, 76)
    b = lp_lower_bound(MAIN, 76, lam)
    assert isinstance(b, LPBound)
    assert b.N == pytest.approx(lam * b.T) and np.allclose(b.traffic, lam * b.p)
    c = lp_lower_bound(MAIN, 76, lam, backend="cvxpy")
    assert c.T == pytest.approx(b.T, rel=1e-7)
    zero = lp_lower_bound(MAIN, 76, 0.0)
    assert zero.T == pytest.approx(0.866667, rel=REL) and zero.N == 0.0
