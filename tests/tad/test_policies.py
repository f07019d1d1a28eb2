"""Policies of spec §3: every tie-break of ``choose``, exact Δ, tables, construction and errors.

Deterministic: these drive ``policy.choose`` directly (spec §5 tests 7 and 8 use the all-idle
recursion), so each assertion is exact. Classes are 0-based (the paper's class 1 is 0).
"""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.tad import bound
from infsched.tad.model import EXAMPLE_1_2, MAIN
from infsched.tad.policies import (
    POLICY_NAMES,
    RJIQ,
    TAD,
    TADOP,
    JIQAccurate,
    JIQFast,
    RandomRouting,
    accuracy_scale,
    make_policy,
)

ALL_IDLE = ([4, 4, 4, 4], [0, 0, 0, 0])
NONE_IDLE = ([0, 0, 0, 0], [4, 4, 4, 4])


def all_idle_fractions(policy, params, steps=10_000):
    """Route ``steps`` jobs with every server idle (zero load); return class fractions and Δ's."""
    tab = policy.table(params)
    K = params.K
    idle, busy = [1] * K, [0] * K
    delta, counts, deltas = 0 if tab.exact else 0.0, np.zeros(K), []
    for _ in range(steps):
        i = policy.choose(idle, busy, delta, 0.5, tab)
        counts[i] += 1
        delta += tab.d[i]
        deltas.append(delta / tab.scale)
    return counts / steps, np.array(deltas)


# ----------------------------------------------------------------------------- exact Δ

def test_accuracy_scale_finds_smallest_power_of_ten():
    assert accuracy_scale([70, 75, 80, 100, 76]) == 1
    assert accuracy_scale([70, 75, 80, 100, 75.1]) == 10
    assert accuracy_scale([70, 75.25, 80, 100, 75.1]) == 100
    assert accuracy_scale([70, 75, 80, 100, 1 / 3]) is None      # → float Δ with tolerance


def test_tad_table_is_exact_integer_for_75_1_and_float_otherwise():
    tab = TAD(75.1).table(MAIN)
    assert tab.exact and tab.scale == 10 and tab.d.dtype == np.int64
    assert list(tab.d) == [-51, -1, 49, 249]
    tab = TAD(76 + 1 / 3).table(MAIN)
    assert not tab.exact and tab.d.dtype == np.float64


# ----------------------------------------------------------------------------- TAD (§3.2)

def test_tad_prefers_fastest_idle_class_in_allowed_set():
    pol = TAD(76)
    tab = pol.table(MAIN)
    # Δ = 0: I = {k : a_k ≥ 76} = {2, 3}; class 0 is idle but not allowed
    assert pol.choose([1, 1, 1, 1], [3, 3, 3, 3], 0, 0.0, tab) == 2
    assert pol.choose([1, 1, 0, 1], [3, 3, 4, 3], 0, 0.0, tab) == 3
    # Δ = 6: a_0 − a* = −6 → class 0 allowed (Δ + a_k − a* ≥ 0 includes equality)
    assert pol.choose([1, 1, 1, 1], [3, 3, 3, 3], 6, 0.0, tab) == 0
    assert pol.choose([1, 1, 1, 1], [3, 3, 3, 3], 5, 0.0, tab) == 1


def test_tad_no_idle_is_uniform_over_allowed_set():
    pol = TAD(76)
    tab = pol.table(MAIN)
    # Δ = 1: I = {1, 2, 3}; u splits [0, 1) into thirds
    picks = [pol.choose(*NONE_IDLE, 1, u, tab) for u in (0.0, 0.34, 0.67, 0.999999)]
    assert picks == [1, 2, 3, 3]
    # Δ = 0: I = {2, 3}
    assert [pol.choose(*NONE_IDLE, 0, u, tab) for u in (0.49, 0.5)] == [2, 3]


@pytest.mark.parametrize("params, a_star, expected, latency", [
    (MAIN, 76.0, (0, 0.8, 0.2, 0), 1.022222),
    (MAIN, 78.0, (0, 0.4, 0.6, 0), 1.066667),
    (MAIN, 72.0, (0.6, 0.4, 0, 0), 0.7),
    (MAIN, 75.1, (0, 0.98, 0.02, 0), 1.002222),    # 49:1, only with exact Δ (spec §3.0)
    (EXAMPLE_1_2, 45.0, (0.5, 0.5, 0), 1.5),        # Example 2: round robin
])
def test_tad_zero_load_pattern(params, a_star, expected, latency):
    """Spec §5 test 8 and A14: the all-idle Δ recursion settles on a (sub-optimal) pair."""
    frac, deltas = all_idle_fractions(TAD(a_star), params)
    np.testing.assert_allclose(frac, expected, atol=1e-3)
    assert frac @ (1 / params.mu_arr) == pytest.approx(latency, abs=2e-3)
    assert deltas.min() >= 0                                     # spec §5 test 7


def test_tad_float_delta_would_break_the_pattern():
    """Why Δ is exact (spec §3.0): a float Δ drifts and flips membership of I.

    At a* = 75.7 the all-idle recursion should alternate classes 1 and 2 (0-based) in a 43:7
    pattern (q^(2,3) = (0, 0.86, 0.14, 0)). The naive float recursion picks differently at some
    steps; the exact table reproduces the pattern exactly.
    """
    a = np.array(MAIN.a)
    delta, naive = 0.0, []
    for _ in range(10_000):
        i = next(k for k in range(4) if delta + a[k] - 75.7 >= 0)   # all idle: min(I)
        naive.append(i)
        delta += a[i] - 75.7
    pol = TAD(75.7)
    tab = pol.table(MAIN)
    D, exact = 0, []
    for _ in range(10_000):
        i = pol.choose([1] * 4, [0] * 4, D, 0.5, tab)
        exact.append(i)
        D += tab.d[i]
        assert D >= 0
    assert np.sum(np.array(naive) != np.array(exact)) > 0
    np.testing.assert_array_equal(np.bincount(exact, minlength=4), [0, 8600, 1400, 0])


# ----------------------------------------------------------------------------- TAD-OP (§3.3)

def test_tadop_zero_load_is_lp_optimal_pair():
    frac, _ = all_idle_fractions(TADOP(76), MAIN)
    np.testing.assert_allclose(frac, (0.4, 0, 0.6, 0), atol=1e-3)


def test_tadop_proper_pair_side_by_delta_sign():
    pol = TADOP(76)
    tab = pol.table(MAIN)
    assert pol.choose(*ALL_IDLE, 1, 0.5, tab) == 0        # Δ > 0 → lo of (1,3)
    assert pol.choose(*ALL_IDLE, 0, 0.5, tab) == 2        # Δ = 0 → hi (as written)
    assert pol.choose(*ALL_IDLE, -3, 0.5, tab) == 2


def test_tadop_routability_and_fallbacks():
    pol = TADOP(76)
    tab = pol.table(MAIN)
    # (1,3) and (2,3) need class 2 idle; shuffle (1,2) needs class 1 idle and class 0 busy
    assert pol.choose([1, 1, 0, 0], [3, 3, 4, 4], 5, 0.5, tab) == 1
    # class 0 all idle (no busy server) → shuffle (1,2) not routable; (2,4) needs 1 and 3 idle
    assert pol.choose([4, 1, 0, 1], [0, 3, 4, 3], 5, 0.5, tab) == 1
    assert pol.choose([4, 1, 0, 1], [0, 3, 4, 3], 0, 0.5, tab) == 3
    # only class 0 idle: no routable tuple → most accurate idle class
    assert pol.choose([1, 0, 0, 0], [3, 4, 4, 4], 5, 0.5, tab) == 0
    # no idle server: uniform over {0..K-1}
    assert [pol.choose(*NONE_IDLE, 0, u, tab) for u in (0.0, 0.26, 0.51, 0.99)] == [0, 1, 2, 3]


def test_tadop_lenient_differs_from_faithful():
    faithful, lenient = TADOP(76), TADOP(76, lenient=True)
    state = ([1, 1, 0, 0], [3, 3, 4, 4], 5, 0.5)
    assert faithful.choose(*state, faithful.table(MAIN)) == 1    # (1,3) needs class 2 idle too
    assert lenient.choose(*state, lenient.table(MAIN)) == 0      # lo of (1,3) is idle: enough


def test_tadop_table_follows_sorted_tuples():
    tab = TADOP(78).table(MAIN)
    tuples = bound.routing_tuples(MAIN, 78)
    assert tab.n_tuples == len(tuples)
    # a* = 78 starts with the shuffle pair (3,4), q = (0, 0, 1.1, −0.1)
    assert not tab.proper[0] and tab.pick[0] == 2 and list(tab.neg[0]) == [False, False, False, True]
    for t, tup in enumerate(tuples):
        assert tab.proper[t] == (tup.kind == "proper")
        assert tuple(np.flatnonzero(tab.pos[t])) == tup.pos
        if tup.kind == "proper":
            assert (tab.lo[t], tab.hi[t]) == (tup.lo, tup.hi)


# ----------------------------------------------------------------------------- baselines

def test_jiq_baselines():
    fast, acc = JIQFast(), JIQAccurate()
    assert fast.choose([0, 2, 1, 0], [4, 2, 3, 4], 0, 0.5) == 1
    assert acc.choose([0, 2, 1, 0], [4, 2, 3, 4], 0, 0.5) == 2
    # no idle server: a uniformly random server among all n, i.e. class ∝ n_k (not uniform class)
    sizes_idle, sizes_busy = [0, 0, 0], [1, 3, 6]
    picks = [fast.choose(sizes_idle, sizes_busy, 0, u) for u in (0.05, 0.15, 0.35, 0.45, 0.95)]
    assert picks == [0, 1, 1, 2, 2]
    assert acc.choose(sizes_idle, sizes_busy, 0, 0.05) == 0


def test_rjiq_and_random_are_categorical():
    p = (0.1, 0.2, 0.3, 0.4)
    for pol in (RJIQ(p), RandomRouting(p)):
        picks = [pol.choose(*ALL_IDLE, 0, u) for u in (0.05, 0.15, 0.35, 0.65, 0.999)]
        assert picks == [0, 1, 2, 3, 3]
    tab = RJIQ(p).table(MAIN)
    np.testing.assert_allclose(tab.cum_p[:3], (0.1, 0.3, 0.6))
    assert tab.jiq and not RandomRouting(p).table(MAIN).jiq


def test_rjiq_for_load_uses_bound():
    lam = 0.5 * bound.lambda_max(MAIN, 76)
    pol = RJIQ.for_load(MAIN, 76, lam, 256)
    np.testing.assert_allclose(pol.p, bound.rjiq_probs(MAIN, 76, lam, 256))
    assert np.dot(pol.p, MAIN.a) >= 76 - 1e-9


# ----------------------------------------------------------------------------- construction

def test_make_policy_builds_every_name():
    lam = 0.5 * bound.lambda_max(MAIN, 76)
    kinds = {name: type(make_policy(name, MAIN, 76, lam, 64)) for name in POLICY_NAMES}
    assert kinds == {"random": RandomRouting, "jiq-fast": JIQFast, "jiq-accurate": JIQAccurate,
                     "r-jiq": RJIQ, "tad": TAD, "tad-op": TADOP}
    rnd = make_policy("random", MAIN, 76, lam, 64)
    np.testing.assert_allclose(rnd.p, bound.lp_lower_bound(MAIN, 76, lam).p, atol=1e-12)


def test_make_policy_unknown_name_lists_choices():
    with pytest.raises(ConfigError) as err:
        make_policy("jsq", MAIN, 76, 0.3, 64)
    for name in POLICY_NAMES:
        assert repr(name) in str(err.value)


@pytest.mark.parametrize("build", [
    lambda: RandomRouting((0.5, 0.6)),
    lambda: RandomRouting((1.5, -0.5)),
    lambda: RJIQ("abc"),
    lambda: TAD("high"),
    lambda: TAD(float("nan")),
    lambda: TADOP(76, lenient="yes"),
])
def test_invalid_policies_raise_config_error(build):
    with pytest.raises(ConfigError):
        build()


def test_table_checks_against_system():
    with pytest.raises(InfeasibleError, match="exceeds the most accurate"):
        TAD(101).table(MAIN)
    with pytest.raises(ConfigError, match="one entry per class"):
        RJIQ((0.5, 0.5)).table(MAIN)
    with pytest.raises(ConfigError, match="table"):
        TAD(76).choose(*ALL_IDLE, 0, 0.5)
