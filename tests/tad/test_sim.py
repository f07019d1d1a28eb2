"""The fast engine (``sim``) against the simpy reference, closed forms and the spec's numbers.

Job counts and tolerances. Spec §5/§8 give tolerances "about 3σ" for single runs of 1e5–1e6 jobs.
The numba engine runs 5–8 million jobs/s, so every stochastic test below uses **at least** the
spec's job count (often more) and keeps the spec's tolerance; no tolerance is widened. Where a
comment quotes a standard error (SE), it is the 95 % batch-means half-width ``ci_halfwidth`` /
1.96 measured on the stated seed, and each test also asserts that half-width, so a tolerance is
never hiding inside the noise. Seeds are fixed; all numbers are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.tad import bound
from infsched.tad.model import EXAMPLE_1_2, MAIN, SystemParams
from infsched.tad.policies import POLICY_NAMES, TAD, TADOP, JIQFast, RandomRouting
from infsched.tad.reference import simulate_reference
from infsched.tad.sim import (
    Phase,
    md1_random_routing_latency,
    mm1_random_routing_latency,
    simulate,
    simulate_phases,
)


def lam_of(a_star, rho):
    return rho * bound.lambda_max(MAIN, a_star)


def T_lp(a_star, rho):
    return bound.lp_lower_bound(MAIN, a_star, lam_of(a_star, rho)).T


# ============================================================================ engine == reference

# Deterministic service: the Lindley engine consumes the reference's random numbers, job by job.
EQUIV_CASES = [(name, "det", 76.0, 0.7) for name in POLICY_NAMES] + [
    ("tad", "det", 75.1, 0.9),            # exact Δ in tenths
    ("tad-op", "det", 75.1, 0.9),
    ("tad", "det", 76 + 1 / 3, 0.9),      # no decimal scale: float Δ with tolerance
    ("tad-op", "det", 78.0, 0.9),         # a shuffle pair ranks first
    (TADOP(76, lenient=True), "det", 76.0, 0.9),
]


def _case_id(x):
    return x if isinstance(x, str) else f"{x:g}" if isinstance(x, float) else repr(x)


@pytest.mark.parametrize("policy, service, a_star, rho", EQUIV_CASES, ids=_case_id)
def test_engine_matches_reference_job_by_job(policy, service, a_star, rho):
    """Deterministic service: same seed → the same random numbers → identical per-job routing
    and response times (exponential service: see test_exp_engine_agrees_with_reference).

    n = 8, 3000 jobs; the engine runs in chunks of 700 jobs so its state crosses chunk edges.
    """
    lam = lam_of(a_star, rho)
    kw = dict(lam=lam, a_star=a_star if isinstance(policy, str) else None, n_jobs=3000,
              service=service, seed=11, warmup=0.2)
    fast = simulate(MAIN, policy, 8, record=True, chunk=700, **kw)
    ref = simulate_reference(MAIN, policy, 8, **kw)
    np.testing.assert_array_equal(fast.classes, ref.classes)
    np.testing.assert_allclose(fast.arrivals, ref.arrivals, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.departures, ref.departures, rtol=0, atol=1e-9)
    assert fast.n_jobs == ref.n_jobs
    assert fast.mean_response == pytest.approx(ref.mean_response, abs=1e-9)
    assert fast.mean_accuracy == pytest.approx(ref.mean_accuracy, abs=1e-9)
    assert fast.final_delta == pytest.approx(ref.final_delta, abs=1e-6)
    assert fast.min_delta == pytest.approx(ref.min_delta, abs=1e-6)
    # the case must exercise queueing: some jobs wait
    assert np.any(fast.responses > 0) and fast.mean_response > 0


def test_engine_statistics_do_not_depend_on_chunking_or_recording():
    kw = dict(rho=0.8, a_star=76, n_jobs=50_000, seed=3)
    for service in ("exp", "det"):
        a = simulate(MAIN, "tad-op", 64, service=service, **kw)
        b = simulate(MAIN, "tad-op", 64, service=service, chunk=4096, **kw)
        assert a.mean_response == b.mean_response and a.final_delta == b.final_delta
        c = simulate(MAIN, "tad-op", 64, service=service, **{**kw, "seed": 4})
        assert c.mean_response != a.mean_response
    # det: recording changes nothing; exp: a recorded run draws holding times, in any block size
    a = simulate(MAIN, "tad-op", 64, service="det", **kw)
    b = simulate(MAIN, "tad-op", 64, service="det", chunk=4096, record=True, **kw)
    assert a.mean_response == b.mean_response and a.final_delta == b.final_delta
    a = simulate(MAIN, "tad-op", 64, record=True, **kw)
    b = simulate(MAIN, "tad-op", 64, chunk=1000, record=True, **kw)
    assert a.mean_response == b.mean_response
    np.testing.assert_array_equal(a.departures, b.departures)


def test_single_phase_equals_stationary_run():
    lam = lam_of(76, 0.6)
    for service in ("exp", "det"):
        ph = simulate_phases(MAIN, "tad-op", 64, [Phase(300.0, lam, 76.0)], seed=5,
                             service=service)
        st = simulate(MAIN, "tad-op", 64, lam=lam, a_star=76, n_jobs=len(ph.arrivals), seed=5,
                      warmup=0.0, record=True, service=service)
        np.testing.assert_array_equal(ph.arrivals, st.arrivals)
        # the exponential engine keeps departure times in time order; the phase run goes on
        # to the end of the phase, the stationary one stops at the last arrival
        np.testing.assert_array_equal(ph.departures[:len(st.departures)], st.departures)
        assert ph.arrivals[-1] < 300.0 and ph.final_delta == st.final_delta


# ============================================================================ exp engine == reference

def _batch_se(x, nb=20):
    """Mean and batch-means standard error of a per-job series (equal-count batches)."""
    bm = np.array([b.mean() for b in np.array_split(np.asarray(x, float), nb)])
    return float(np.mean(x)), float(bm.std(ddof=1) / np.sqrt(nb))


EXP_CASES = [(EXAMPLE_1_2, name, 52.0, 0.8, 6) for name in POLICY_NAMES] + [
    (MAIN, "tad", 75.1, 0.5, 8),                 # exact Δ in tenths (TAD is unstable at n = 8
    (MAIN, "tad", 76 + 1 / 3, 0.5, 8),           # and ρ ≥ 0.8); float Δ with tolerance
    (MAIN, TADOP(76, lenient=True), 76.0, 0.5, 8),
]


@pytest.mark.parametrize("params, policy, a_star, rho, n", EXP_CASES,
                         ids=lambda x: _case_id(x) if not hasattr(x, "mu") else
                         ("main" if x is MAIN else "ex12"))
def test_exp_engine_agrees_with_reference(params, policy, a_star, rho, n):
    """Exponential service: the Markov engine and the simpy model (which draws every service
    time, as the paper describes) draw different random numbers, so they agree in distribution:
    mean response and mean accuracy within 4 standard errors of their difference (batch means
    of each run, 20 batches; 30 000 jobs for the reference, 300 000 for the engine).
    """
    lam = rho * bound.lambda_max(params, a_star)
    if policy == "random":        # p*(λ) loads a class to exactly 1 here: R-JIQ's p instead
        policy = RandomRouting(bound.rjiq_probs(params, a_star, lam, n))
    kw = dict(lam=lam, a_star=a_star if isinstance(policy, str) else None, seed=13, warmup=0.2)
    fast = simulate(params, policy, n, n_jobs=300_000, record=True, **kw)
    ref = simulate_reference(params, policy, n, n_jobs=30_000, **kw)
    t975 = 2.093                                        # Student t, 19 degrees of freedom
    se_f, se_r = fast.ci_halfwidth / t975, ref.ci_halfwidth / t975
    assert abs(fast.mean_response - ref.mean_response) <= 4 * np.hypot(se_f, se_r), \
        (fast.mean_response, ref.mean_response, se_f, se_r)
    acc = [_batch_se(params.a_arr[r.classes[len(r.classes) // 5:]]) for r in (fast, ref)]
    assert abs(acc[0][0] - acc[1][0]) <= 4 * np.hypot(acc[0][1], acc[1][1]) + 1e-9, acc
    if policy == "tad":
        assert fast.min_delta >= 0 and ref.min_delta >= 0
    assert 0 < se_f < 0.1 * fast.mean_response           # the comparison has power


# ============================================================================ closed forms (S1)

def _jiq_exact_latency(c: int, lam: float, mu: float, L: int) -> float:
    """E[T] of JIQ on c identical exponential servers (an idle server if any, else a uniformly
    random one), from the stationary law of the queue-length chain truncated at L jobs per
    server (arrivals to a full server are dropped; their mass is asserted negligible)."""
    import itertools

    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    states = list(itertools.product(range(L + 1), repeat=c))
    index = {s: i for i, s in enumerate(states)}
    rows, cols, vals = [], [], []
    for s in states:
        i = index[s]
        idle = [k for k in range(c) if s[k] == 0]
        targets = [(idle[0], 1.0)] if idle else [(k, 1.0 / c) for k in range(c)]
        for k, w in targets:
            if s[k] < L:
                t = list(s); t[k] += 1
                rows.append(i); cols.append(index[tuple(t)]); vals.append(c * lam * w)
        for k in range(c):
            if s[k] > 0:
                t = list(s); t[k] -= 1
                rows.append(i); cols.append(index[tuple(t)]); vals.append(mu)
    m = len(states)
    Q = coo_matrix((vals, (rows, cols)), shape=(m, m)).tocsr()
    Q = Q - coo_matrix((np.asarray(Q.sum(axis=1)).ravel(), (range(m), range(m))), shape=(m, m))
    A = Q.T.tolil()
    A[0, :] = 1.0                                        # replace one balance equation by Σπ = 1
    b = np.zeros(m); b[0] = 1.0
    pi = spsolve(A.tocsr(), b)
    N = np.array([sum(s) for s in states])
    full = np.array([max(s) == L for s in states])
    assert pi[full].sum() < 1e-9
    return float(pi @ N) / (c * lam)


def _erlang_c_latency(c: int, lam: float, mu: float) -> float:
    """E[T] of the M/M/c queue with arrival rate cλ (one central FCFS queue)."""
    a = c * lam / mu
    terms = sum(a ** k / math.factorial(k) for k in range(c))
    top = a ** c / math.factorial(c) * c / (c - a)
    return 1 / mu + top / (terms + top) / (c * mu - c * lam)


@pytest.mark.parametrize("c, rho", [(2, 0.7), (3, 0.5), (3, 0.15)])
def test_jiq_matches_its_exact_markov_chain(c, rho):
    """JIQ on c exponential servers of one class against the exact law of its chain (a closed
    form for c = 1 is M/M/1; for c > 1 we solve the truncated chain), within 4 standard errors
    of the run (batch means); and above the M/M/c (Erlang C) latency, which pools the queue.
    At light load (ρ = 0.15) JIQ rarely finds every server busy: E[T] within 2 % of 1/μ.
    """
    params = SystemParams(mu=(1.0,), a=(80.0,), alpha=(1.0,))
    lam = rho
    exact = _jiq_exact_latency(c, lam, 1.0, L=60 if c == 2 else 22)
    res = simulate(params, JIQFast(), c, lam=lam, n_jobs=2_000_000, seed=81)
    se = res.ci_halfwidth / 2.093
    assert abs(res.mean_response - exact) <= 4 * se, (res.mean_response, exact, se)
    assert exact >= _erlang_c_latency(c, lam, 1.0) - 1e-12
    if rho <= 0.15:
        assert 1.0 < exact < 1.02


def test_mm1_single_server():
    """n = 1: any JIQ policy is the M/M/1 queue, E[T] = 1/(μ − λ); within 4 standard errors."""
    params = SystemParams(mu=(1.0,), a=(80.0,), alpha=(1.0,))
    res = simulate(params, JIQFast(), 1, lam=0.6, n_jobs=2_000_000, seed=82)
    se = res.ci_halfwidth / 2.093
    assert abs(res.mean_response - 1 / (1.0 - 0.6)) <= 4 * se
    assert se < 0.02 * 2.5


# ============================================================================ closed forms (S1)

def test_closed_forms():
    p = (1.0, 0.0, 0.0, 0.0)      # class 1 only: M/M/1 with λ/α = 1 and μ = 2
    assert mm1_random_routing_latency(MAIN, p, 0.25) == pytest.approx(1.0)
    assert md1_random_routing_latency(MAIN, p, 0.25) == pytest.approx(0.75)
    # p*(λ) at ρ = 0.7 saturates class 3 exactly (ρ_3 = 1): no finite mean
    lam = lam_of(76, 0.7)
    with pytest.raises(InfeasibleError, match="class 3"):
        mm1_random_routing_latency(MAIN, bound.lp_lower_bound(MAIN, 76, lam).p, lam)


@pytest.mark.parametrize("service, formula, n_jobs", [
    ("exp", mm1_random_routing_latency, 8_000_000),
    ("det", md1_random_routing_latency, 2_000_000),
])
def test_random_routing_matches_queueing_formula(service, formula, n_jobs):
    """S1 / spec §5 test 10: Random-p at n = 64, ρ = 0.7 equals the sum of M/M/1 (M/D/1) queues.

    Deviation from the spec: p*(λ) at ρ = 0.7 > 9/17 puts class 3 at load exactly 1 (see
    test_closed_forms), so we route with p_RJIQ(λ, 64) instead (class loads 0.28/0.66/0.81/0.45).
    Class 4 (mean service 10) and class 3 (load 0.81) make the response very noisy: at 2e6 jobs
    the exp half-width was 1.4 %, so we run 8e6 (half-width ≈ 0.7 %, SE ≈ 0.35 %: 2 % ≈ 6 SE);
    det at 2e6 jobs has half-width ≈ 0.65 %.
    """
    lam = lam_of(76, 0.7)
    p = bound.rjiq_probs(MAIN, 76, lam, 64)
    res = simulate(MAIN, RandomRouting(p), 64, lam=lam, a_star=76, n_jobs=n_jobs,
                   service=service, seed=21)
    target = formula(MAIN, p, lam)
    assert res.ci_halfwidth < 0.01 * target
    assert abs(res.mean_response / target - 1) <= 0.02
    np.testing.assert_allclose(res.class_fractions, p, atol=2e-3)


# ============================================================================ R-JIQ (S2, S3, S5, S10)

@pytest.mark.parametrize("service", ["exp", "det"])
def test_rjiq_converges_for_high_target(service):
    """S2 / test 12: ρ = 0.5, a* = 85, n = 256 within 1 % of T_LP = 3.3333.

    1e6 jobs: half-width 0.4 % (exp) / 0.2 % (det), so 1 % is ≥ 5 SE.
    """
    res = simulate(MAIN, "r-jiq", 256, rho=0.5, a_star=85, n_jobs=1_000_000, service=service,
                   seed=22)
    assert res.ci_halfwidth < 0.005 * 3.3333
    assert abs(res.mean_response / T_lp(85, 0.5) - 1) <= 0.01
    assert T_lp(85, 0.5) == pytest.approx(10 / 3, rel=1e-6)


def test_rjiq_small_n_is_above_bound_and_det_beats_exp():
    """S3 / test 12: n = 16, a* = 85: exp ≈ 3.77, det ≈ 3.59, both > 1.05 LB (exp ≥ 1.08 LB)."""
    exp = simulate(MAIN, "r-jiq", 16, rho=0.5, a_star=85, n_jobs=1_000_000, seed=23)
    det = simulate(MAIN, "r-jiq", 16, rho=0.5, a_star=85, n_jobs=1_000_000, service="det",
                   seed=23)
    lb = T_lp(85, 0.5)
    assert exp.mean_response >= 1.08 * lb and det.mean_response > 1.05 * lb
    assert det.mean_response + 2 * det.ci_halfwidth < exp.mean_response - 2 * exp.ci_halfwidth


def test_rjiq_accuracy_matches_its_routing_vector():
    """Test 11: |accuracy − p_RJIQ·a| ≤ 0.05 at 1e5 jobs."""
    lam = lam_of(76, 0.6)
    res = simulate(MAIN, "r-jiq", 256, lam=lam, a_star=76, n_jobs=100_000, seed=24)
    expect = bound.rjiq_probs(MAIN, 76, lam, 256) @ MAIN.a_arr
    assert abs(res.mean_accuracy - expect) <= 0.05


def test_rjiq_latency_decreases_in_n_towards_zero_wait_prediction():
    """Test 12 / S10 (Fig. 4): a* = 76, ρ = 0.5; decreasing in n (1 % margin); n = 1024 ≈ 0.9515.

    4e5 jobs per n: half-widths 0.3–0.9 %; the n = 1024 point's is ≈ 0.3 %, so 2 % is > 10 SE.
    """
    lam = lam_of(76, 0.5)
    T = [simulate(MAIN, "r-jiq", n, lam=lam, a_star=76, n_jobs=400_000, seed=25).mean_response
         for n in (16, 64, 256, 1024)]
    assert all(b <= a * 1.01 for a, b in zip(T, T[1:]))
    assert abs(T[-1] / 0.9515 - 1) <= 0.02
    assert bound.rjiq_zero_wait_latency(MAIN, 76, lam, 1024) == pytest.approx(0.9515, abs=1e-4)


# ============================================================================ n = 4096 (S4, S5, S6)

@pytest.fixture(scope="module")
def large_n_runs():
    """TAD-OP, R-JIQ and TAD at n = 4096, a* = 76, ρ ∈ {0.3, 0.6, 0.8}: 1e6 jobs each (spec 3e5).

    Half-widths 0.2–0.45 % of the mean, i.e. SE ≤ 0.25 %.
    """
    out = {}
    for rho in (0.3, 0.6, 0.8):
        for pol in ("tad-op", "r-jiq", "tad"):
            out[pol, rho] = simulate(MAIN, pol, 4096, rho=rho, a_star=76, n_jobs=1_000_000,
                                     seed=31)
    return out


@pytest.mark.parametrize("rho, lb", [(0.3, 0.8667), (0.6, 0.8941), (0.8, 0.9456)])
def test_tadop_matches_lp_bound_at_large_n(large_n_runs, rho, lb):
    """S4 / test 13: within −1 % … +1.5 % of T_LP-LB."""
    res = large_n_runs["tad-op", rho]
    T = T_lp(76, rho)
    assert T == pytest.approx(lb, abs=1e-4)
    assert res.ci_halfwidth < 0.005 * T
    assert 0.99 * T <= res.mean_response <= 1.015 * T
    assert res.mean_accuracy >= 76 - 0.02                      # S9


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_rjiq_matches_zero_wait_prediction_at_large_n(large_n_runs, rho):
    """S5: within 2 % of p_RJIQ·μ⁻¹ (0.9173 / 0.9557 / 1.0183)."""
    pred = bound.rjiq_zero_wait_latency(MAIN, 76, lam_of(76, rho), 4096)
    assert abs(large_n_runs["r-jiq", rho].mean_response / pred - 1) <= 0.02


def test_tad_low_load_sticks_to_suboptimal_pair(large_n_runs):
    """S6 / test 14: TAD at ρ = 0.3 within 1 % of v^(2,3) = 1.0222, i.e. ≥ 1.15 T_LP."""
    res = large_n_runs["tad", 0.3]
    assert abs(res.mean_response / 1.022222 - 1) <= 0.01
    assert res.mean_response >= 1.15 * T_lp(76, 0.3)
    np.testing.assert_allclose(res.class_fractions, (0, 0.8, 0.2, 0), atol=0.01)


def test_tad_feasibility_invariant_large_n(large_n_runs):
    """Test 7 / S9: TAD's Δ ≥ 0 after every routing; TAD and TAD-OP accuracy ≥ a* − 0.02."""
    for rho in (0.3, 0.6, 0.8):
        assert large_n_runs["tad", rho].min_delta >= 0
        for pol in ("tad", "tad-op"):
            assert large_n_runs[pol, rho].mean_accuracy >= 76 - 0.02


# ============================================================================ n = 64 (S7, S8)

@pytest.mark.parametrize("a_star", [75.1, 76.0, 78.0])
def test_tadop_is_best_at_small_n(a_star):
    """S7 / test 15 (Fig. 6): n = 64, exp, β ∈ {0.05, 0.15, 0.25, 0.35} (ρ 0.19 … 0.77).

    TAD-OP ≤ 1.03 × min(TAD, R-JIQ) and R-JIQ ≥ 1.08 × TAD-OP. 2e5 jobs (spec 1.3e5), common
    random numbers across policies; SE 0.3–1 % per point, well inside the 3 % / 8 % margins.
    Also S9: TAD Δ ≥ 0, TAD and TAD-OP accuracy ≥ a* − 0.02 at every point.
    """
    for beta in (0.05, 0.15, 0.25, 0.35):
        rho = 1 - 64.0 ** (-beta)
        res = {pol: simulate(MAIN, pol, 64, rho=rho, a_star=a_star, n_jobs=200_000, seed=41)
               for pol in ("tad-op", "tad", "r-jiq")}
        T = {pol: r.mean_response for pol, r in res.items()}
        assert T["tad-op"] <= 1.03 * min(T["tad"], T["r-jiq"]), (rho, T)
        assert T["r-jiq"] >= 1.08 * T["tad-op"], (rho, T)
        assert res["tad"].min_delta >= 0
        for pol in ("tad", "tad-op"):
            assert res[pol].mean_accuracy >= a_star - 0.02, (pol, rho)


def test_tad_unstable_where_tadop_is_not():
    """S8 / test 16: n = 64, a* = 78, β = 0.45 (ρ = 0.846), 1.3e5 jobs.

    TAD > 5 × T_LP (spec observed 16.7 vs 1.235); TAD-OP < 1.2 × T_LP (observed 1.373).
    """
    rho = 1 - 64.0 ** (-0.45)
    T = T_lp(78, rho)
    assert T == pytest.approx(1.2346, abs=1e-3)
    tad = simulate(MAIN, "tad", 64, rho=rho, a_star=78, n_jobs=130_000, seed=42)
    tadop = simulate(MAIN, "tad-op", 64, rho=rho, a_star=78, n_jobs=130_000, seed=42)
    assert tad.mean_response > 5 * T
    assert tadop.mean_response < 1.2 * T
    assert tad.min_delta >= 0 and tad.mean_accuracy >= 78 - 0.02
    assert tadop.mean_accuracy >= 78 - 0.02


# ============================================================================ Little's law

@pytest.mark.parametrize("policy, service", [("tad-op", "exp"), ("jiq-fast", "det")])
def test_littles_law(policy, service):
    """Time-average of N(t) over the measured window ≈ nλ · E[T] within 2 %.

    5e5 jobs at n = 256, ρ = 0.8; both sides come from the same sample path, so they differ
    only by edge effects (jobs straddling the window ends), ≈ 0.1 % here.
    """
    lam = lam_of(76, 0.8)
    res = simulate(MAIN, policy, 256, lam=lam, a_star=76, n_jobs=500_000, service=service,
                   record=True, seed=51)
    t_last = res.arrivals[-1]
    ts = np.linspace(0.2 * t_last, t_last, 200_001)
    N = res.number_in_system(ts)
    assert N.mean() == pytest.approx(256 * lam * res.mean_response, rel=0.02)
    assert N.min() >= 0


# ============================================================================ time-varying (test 18)

def _phases(a_lo, a_hi, r_lo, r_hi, length=200.0):
    lo = Phase(length, lam_of(a_lo, r_lo), a_lo)
    hi = Phase(length, lam_of(a_hi, r_hi), a_hi)
    return [lo, hi, lo]


@pytest.mark.parametrize("figure, spec", [("fig9", (76.0, 76.0, 0.4, 0.5)),
                                          ("fig10", (75.1, 78.0, 0.4, 0.4))])
def test_time_varying_tadop_tracks_bound(figure, spec):
    """Test 18 (Figs. 9–10) at n = 1024, low/high/low phases of 200 time units.

    TAD-OP's average N(t) over the second half of each phase is within 5 % of n·N_LP-LB(λ)
    (we see ≤ 2 %), and the accuracy of the last 1000 arrivals stays within 0.1 of a*(t) from
    2000 arrivals into each phase on. TAD meets a* but sits above the bound (Fig. 11 caption).
    """
    n = 1024
    phases = _phases(*spec)
    starts = np.concatenate([[0.0], np.cumsum([p.duration for p in phases])])
    for policy in ("tad-op", "tad"):
        res = simulate_phases(MAIN, policy, n, phases, seed=61)
        t_acc, acc = res.running_accuracy(MAIN, window=1000)
        ratios = []
        for k, ph in enumerate(phases):
            ts = np.linspace(starts[k] + ph.duration / 2, starts[k + 1], 1001)
            lb = n * bound.lp_lower_bound(MAIN, ph.a_star, ph.lam).N
            ratios.append(res.number_in_system(ts).mean() / lb)
            first = np.searchsorted(res.arrivals, starts[k])
            last = np.searchsorted(res.arrivals, starts[k + 1])
            window = acc[first + 2000 - 999:last - 999]        # acc[j] ends at arrival j + 999
            assert np.all(np.abs(window - ph.a_star) <= 0.1), (policy, k)
        if policy == "tad-op":
            assert all(abs(r - 1) <= 0.05 for r in ratios), ratios
        else:
            assert max(ratios) > 1.05 and res.min_delta >= 0, ratios


def test_phases_carry_delta_across_switches():
    """Δ is not reset at a phase switch; with exact Δ it equals Σ (a_i − a*(t_i)) exactly."""
    phases = _phases(75.1, 78.0, 0.4, 0.4, length=60.0)
    ends = np.cumsum([p.duration for p in phases])
    for policy in ("tad", "tad-op"):
        res = simulate_phases(MAIN, policy, 256, phases, seed=62)
        a_star_t = np.array([p.a_star for p in phases])[np.searchsorted(ends, res.arrivals,
                                                                        side="right")]
        surplus = np.cumsum(MAIN.a_arr[res.classes] - a_star_t)
        assert res.final_delta == pytest.approx(surplus[-1], abs=1e-6)
        assert res.min_delta == pytest.approx(surplus.min(), abs=1e-6)
        assert res.n_jobs == len(res.arrivals) and res.arrivals[-1] < ends[-1]
        if policy == "tad":
            assert res.min_delta >= 0
    assert res.min_delta < 0          # TAD-OP lets Δ go negative; TAD (checked above) does not


# ============================================================================ results and errors

def test_result_helpers():
    res = simulate(MAIN, "tad-op", 64, rho=0.5, a_star=76, n_jobs=5000, seed=71)
    with pytest.raises(ConfigError, match="record=True"):
        res.number_in_system([1.0])
    res = simulate(MAIN, "tad-op", 64, rho=0.5, a_star=76, n_jobs=5000, seed=71, record=True)
    # the exponential run stops at the last arrival: the jobs still in the system remain
    left = len(res.arrivals) - len(res.departures)
    assert res.number_in_system([0.0, res.arrivals[-1] + 1]).tolist() == [0, left]
    t, acc = res.running_accuracy(MAIN, window=100)
    assert len(t) == 5000 - 99
    assert acc[0] == pytest.approx(MAIN.a_arr[res.classes[:100]].mean())
    assert res.class_fractions.sum() == pytest.approx(1.0)
    assert res.n_jobs == 5000 - int(0.2 * 5000)          # exp: the first 20 % of arrivals
    with pytest.raises(ConfigError, match="service='det'"):
        res.responses
    det = simulate(MAIN, "tad-op", 64, rho=0.5, a_star=76, n_jobs=5000, seed=71, record=True,
                   service="det")
    assert det.n_jobs == int(np.sum(det.arrivals >= 0.2 * det.arrivals[-1]))
    assert np.all(det.responses >= 1 / MAIN.mu_arr[det.classes] - 1e-12)


def test_progress_bar_runs(capsys):
    res = simulate(MAIN, "tad", 64, rho=0.5, a_star=76, n_jobs=3000, seed=72, progress=True,
                   chunk=1000)
    assert res.n_jobs > 0


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(policy="jsq"), ConfigError, POLICY_NAMES),
    (dict(service="gamma"), ConfigError, ("'exp'", "'det'")),
    (dict(rho=1.0), InfeasibleError, ("λ^max", "0.708333")),
    (dict(rho=1.3), InfeasibleError, ("λ^max",)),
    (dict(rho=None, lam=0.75), InfeasibleError, ("λ^max", "0.708333")),
    (dict(rho=0.0), ConfigError, ("rho",)),
    (dict(rho=None), ConfigError, ("exactly one",)),
    (dict(lam=0.3), ConfigError, ("exactly one",)),
    (dict(n=6), ConfigError, ("n = 6",)),
    (dict(n=8.0), ConfigError, ("n = 8.0",)),
    (dict(n_jobs=0), ConfigError, ("n_jobs",)),
    (dict(warmup=1.0), ConfigError, ("warmup",)),
    (dict(a_star=None), ConfigError, ("a_star",)),
    (dict(a_star=101), InfeasibleError, ("exceeds",)),
    (dict(policy=TAD(78)), ConfigError, ("a_star", "78")),
])
def test_simulate_rejects_bad_input(kwargs, exc, words):
    args = dict(policy="tad-op", n=64, rho=0.5, a_star=76, n_jobs=1000, service="exp")
    args.update(kwargs)
    policy, n = args.pop("policy"), args.pop("n")
    with pytest.raises(exc) as err:
        simulate(MAIN, policy, n, **args)
    for w in words:
        assert str(w) in str(err.value)


def test_phase_and_reference_errors():
    with pytest.raises(ConfigError, match="duration"):
        Phase(-1.0, 0.3, 76)
    with pytest.raises(ConfigError, match="lam"):
        Phase(10.0, 0.0, 76)
    with pytest.raises(InfeasibleError, match="λ\\^max"):
        simulate_phases(MAIN, "tad", 64, [Phase(10.0, 0.8, 76)])
    with pytest.raises(ConfigError, match="'tad-op'"):
        simulate_phases(MAIN, "tadop", 64, [Phase(10.0, 0.3, 76)])
    with pytest.raises(ConfigError, match="'det'"):
        simulate_reference(MAIN, "tad", 8, lam=0.3, a_star=76, n_jobs=10, service="weibull")


# ===================================================================== engine == reference, phases

PHASE_EQUIV_SPECS = {
    "fig10": (75.1, 78.0, 0.4, 0.4),      # a* 75.1 → 78 → 75.1: exact Δ in tenths
    "fig9": (76.0, 76.0, 0.4, 0.5),       # the load changes, a* does not
    "heavy": (76.0, 78.0, 0.6, 0.9),      # queues at every switch; TAD-OP: shuffle pair first
}


@pytest.mark.parametrize("policy", ["tad", "tad-op"])
@pytest.mark.parametrize("service", ["det"])
@pytest.mark.parametrize("spec, n", [("fig10", 16), ("fig9", 16), ("heavy", 8)])
def test_engine_phases_match_reference_job_by_job(policy, service, spec, n):
    """simulate_phases against the simpy model of §3.4: same arrivals, routing and departures.

    Three phases of 40 time units (about 450–600 jobs); the engine runs in chunks of 300 jobs so
    its state crosses chunk edges as well as phase edges. Δ is non-zero at both switches, so a
    model that reset Δ there (or kept the first phase's table) would route differently.
    At ρ = 0.4 and n = 16 no job queues; the "heavy" case at n = 8 queues at every switch.
    """
    from infsched.tad.reference import simulate_reference_phases

    phases = _phases(*PHASE_EQUIV_SPECS[spec], length=40.0)
    fast = simulate_phases(MAIN, policy, n, phases, service=service, seed=23, chunk=300)
    ref = simulate_reference_phases(MAIN, policy, n, phases, service=service, seed=23)
    assert len(fast.arrivals) == len(ref.arrivals)
    np.testing.assert_array_equal(fast.arrivals, ref.arrivals)
    np.testing.assert_array_equal(fast.classes, ref.classes)
    np.testing.assert_allclose(fast.departures, ref.departures, rtol=0, atol=1e-9)
    assert fast.n_jobs == ref.n_jobs == len(ref.arrivals)
    assert fast.mean_response == pytest.approx(ref.mean_response, abs=1e-9)
    assert fast.ci_halfwidth == pytest.approx(ref.ci_halfwidth, abs=1e-9)
    assert fast.final_delta == pytest.approx(ref.final_delta, abs=1e-6)
    assert fast.min_delta == pytest.approx(ref.min_delta, abs=1e-6)
    # the case is not trivial: jobs in every phase, Δ ≠ 0 when the phase switches
    ends = np.cumsum([p.duration for p in phases])
    phase_of = np.searchsorted(ends, ref.arrivals, side="right")
    assert set(phase_of.tolist()) == {0, 1, 2} and ref.arrivals[-1] < ends[-1]
    if spec == "heavy":               # more jobs than servers: some wait in a queue
        assert ref.number_in_system(ref.arrivals).max() > n
    a_star_t = np.array([p.a_star for p in phases])[phase_of]
    surplus = np.cumsum(MAIN.a_arr[ref.classes] - a_star_t)
    last_before = np.searchsorted(ref.arrivals, ends[:-1]) - 1
    assert np.all(np.abs(surplus[last_before]) > 1e-6), surplus[last_before]


def test_phase_arrivals_follow_the_piecewise_poisson_rate():
    """The engine's time-changed arrivals are the piecewise Poisson process of
    ``infsched.workload.PiecewiseRate``: per-phase counts within 4 Poisson SDs of its means."""
    from infsched.tad.experiments import time_varying_phases
    from infsched.workload import PiecewiseRate

    n = 256
    phases = time_varying_phases("fig9", 150.0)
    starts = np.cumsum([0.0] + [p.duration for p in phases])
    schedule = PiecewiseRate(tuple(starts[:-1]), tuple(n * p.lam for p in phases))
    res = simulate_phases(MAIN, "tad-op", n, phases, seed=5, record=True)
    counts = np.diff(np.searchsorted(res.arrivals, starts))
    for k, count in enumerate(counts):
        mean = schedule.mean_count(starts[k + 1]) - schedule.mean_count(starts[k])
        assert abs(count - mean) <= 4 * np.sqrt(mean), (k, count, mean)
    assert res.arrivals[-1] < starts[-1]
