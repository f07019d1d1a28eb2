"""The jump-chain fast path (``markov.run_jump_chain``: exponential service, no recorded
times).

``simulate(..., service="exp")`` without ``record`` runs the jump chain of the queue-length
Markov chain with incremental rates, counted single-job servers and reused uniforms; with
``record=True`` it runs the timed chain (``markov.run_timed``), which draws every holding
time. The two draw different numbers, so they are held to the same answer in distribution,
and the fast path to the simpy reference and to closed forms (M/M/1, M/M/c at light load,
JIQ's exact chain at light load, sums of M/M/1 queues under random routing, where servers with
several jobs are the rule). Tolerances are 4 standard errors of the difference (batch means,
20 batches, Student t with 19 degrees of freedom); every test also asserts that the comparison
has power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.tad import bound
from infsched.tad.model import EXAMPLE_1_2, MAIN, SystemParams
from infsched.tad.policies import JIQFast, RandomRouting
from infsched.tad.reference import simulate_reference
from infsched.tad.sim import mm1_random_routing_latency, simulate

T975 = 2.093            # Student t, 19 degrees of freedom (20 batches)
POLICIES = ("tad", "tad-op", "r-jiq", "jiq-fast", "jiq-accurate")


def _se(res) -> float:
    return res.ci_halfwidth / T975


def _erlang_c_latency(c: int, lam: float, mu: float) -> float:
    """E[T] of the M/M/c queue with arrival rate cλ (one central FCFS queue)."""
    a = c * lam / mu
    terms = sum(a ** k / math.factorial(k) for k in range(c))
    top = a ** c / math.factorial(c) * c / (c - a)
    return 1 / mu + top / (terms + top) / (c * mu - c * lam)


@pytest.mark.parametrize("policy", POLICIES)
def test_chain_agrees_with_reference(policy):
    """Small system (Examples 1-2, n = 6, ρ = 0.8: servers often hold several jobs): the fast
    path and the simpy model agree on mean response and mean accuracy within 4 SE."""
    lam = 0.8 * bound.lambda_max(EXAMPLE_1_2, 52.0)
    kw = dict(lam=lam, a_star=52.0, seed=17, warmup=0.2)
    fast = simulate(EXAMPLE_1_2, policy, 6, n_jobs=1_000_000, **kw)
    ref = simulate_reference(EXAMPLE_1_2, policy, 6, n_jobs=30_000, **kw)
    assert abs(fast.mean_response - ref.mean_response) <= 4 * np.hypot(_se(fast), _se(ref)), \
        (fast.mean_response, ref.mean_response, _se(fast), _se(ref))
    acc = EXAMPLE_1_2.a_arr[ref.classes[len(ref.classes) // 5:]]
    bm = np.array([b.mean() for b in np.array_split(acc, 20)])
    se_acc = bm.std(ddof=1) / np.sqrt(20)
    assert abs(fast.mean_accuracy - acc.mean()) <= 4 * se_acc + 1e-9, \
        (fast.mean_accuracy, acc.mean(), se_acc)
    assert 0 < _se(fast) < 0.05 * fast.mean_response


@pytest.mark.parametrize("policy", ("tad", "tad-op", "r-jiq", "jiq-fast"))
def test_chain_agrees_with_timed_chain(policy):
    """The main system at n = 64, ρ = 0.8: the jump chain (expected holding times) and the timed
    chain (drawn holding times, ``record=True``) agree within 4 SE, and so do the accuracies."""
    lam = 0.8 * bound.lambda_max(MAIN, 76.0)
    kw = dict(lam=lam, a_star=76.0, n_jobs=1_000_000, warmup=0.2)
    fast = simulate(MAIN, policy, 64, seed=31, **kw)
    timed = simulate(MAIN, policy, 64, seed=32, record=True, **kw)
    assert abs(fast.mean_response - timed.mean_response) <= 4 * np.hypot(_se(fast), _se(timed))
    assert abs(fast.mean_accuracy - timed.mean_accuracy) <= 0.05
    assert 0 < _se(fast) < 0.02 * fast.mean_response


def test_chain_mm1():
    """n = 1 (one class, one server): the M/M/1 queue, E[T] = 1/(μ − λ)."""
    params = SystemParams(mu=(1.0,), a=(80.0,), alpha=(1.0,))
    res = simulate(params, JIQFast(), 1, lam=0.7, n_jobs=4_000_000, seed=41)
    assert abs(res.mean_response - 1 / 0.3) <= 4 * _se(res)
    assert _se(res) < 0.01 / 0.3


def _jiq_exact_latency(c: int, lam: float, mu: float, L: int) -> float:
    """E[T] of JIQ on c identical exponential servers from the stationary law of its chain.
    Servers are exchangeable, so a state is the sorted tuple of queue lengths (truncated at L
    jobs per server; arrivals to a full server are dropped and their mass asserted small)."""
    import itertools

    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    states = list(itertools.combinations_with_replacement(range(L + 1), c))
    index = {s: i for i, s in enumerate(states)}
    rows, cols, vals = [], [], []

    def move(s, k, step):
        t = list(s)
        t[k] += step
        return tuple(sorted(t))

    for s in states:
        i = index[s]
        targets = [(0, 1.0)] if s[0] == 0 else [(k, 1.0 / c) for k in range(c)]
        for k, w in targets:
            if s[k] < L:
                rows.append(i); cols.append(index[move(s, k, 1)]); vals.append(c * lam * w)
        for k in range(c):
            if s[k] > 0:
                rows.append(i); cols.append(index[move(s, k, -1)]); vals.append(mu)
    m = len(states)
    Q = coo_matrix((vals, (rows, cols)), shape=(m, m)).tocsr()
    Q = Q - coo_matrix((np.asarray(Q.sum(axis=1)).ravel(), (range(m), range(m))), shape=(m, m))
    A = Q.T.tolil()
    A[0, :] = 1.0                                        # replace one balance equation by Σπ = 1
    rhs = np.zeros(m)
    rhs[0] = 1.0
    pi = spsolve(A.tocsr(), rhs)
    N = np.array([sum(s) for s in states])
    full = np.array([max(s) == L for s in states])
    assert pi[full].sum() < 1e-6          # moves E[T] by ~1e-7 here: far below the runs' SE
    return float(pi @ N) / (c * lam)


@pytest.mark.parametrize("c, rho, L", [(8, 0.3, 6), (4, 0.5, 14)])
def test_chain_jiq_light_load_against_its_chain_and_mmc(c, rho, L):
    """JIQ on c identical servers at light load. The engine lies within 4 SE of the exact
    stationary law of JIQ's chain. M/M/c (Erlang C, one pooled queue) is a lower bound, and at
    light load JIQ exceeds it only by what the rare all-busy arrivals wait: at most the
    Erlang C chance of waiting times one mean service (a waiting JIQ job queues behind one
    server), a bound checked on the exact value and on the run."""
    params = SystemParams(mu=(1.0,), a=(80.0,), alpha=(1.0,))
    res = simulate(params, JIQFast(), c, lam=rho, n_jobs=4_000_000, seed=43 + c)
    exact = _jiq_exact_latency(c, rho, 1.0, L)
    mmc = _erlang_c_latency(c, rho, 1.0)
    p_wait = (mmc - 1.0) * c * (1.0 - rho)               # Erlang C: E[W] = P(wait)/(cμ(1−ρ))
    assert abs(res.mean_response - exact) <= 4 * _se(res), (res.mean_response, exact, _se(res))
    assert mmc <= exact <= mmc + 2 * p_wait
    assert mmc - 4 * _se(res) <= res.mean_response
    assert _se(res) < 0.25 * (exact - 1.0)               # the run sees JIQ's waiting


def test_chain_random_routing_is_a_sum_of_mm1_queues():
    """Random-p never looks for an idle server: every class is c_k independent M/M/1 queues, and
    servers holding several jobs (the stored ones) are common. n = 64, ρ = 0.6, p of R-JIQ."""
    lam = 0.6 * bound.lambda_max(MAIN, 76.0)
    p = bound.rjiq_probs(MAIN, 76.0, lam, 64)
    res = simulate(MAIN, RandomRouting(p), 64, lam=lam, a_star=76.0, n_jobs=8_000_000, seed=47)
    target = mm1_random_routing_latency(MAIN, p, lam)
    assert abs(res.mean_response - target) <= 4 * _se(res), (res.mean_response, target, _se(res))
    assert _se(res) < 0.01 * target
    np.testing.assert_allclose(res.class_fractions, p, atol=2e-3)


@pytest.mark.parametrize("policy", ("r-jiq", "tad", "jiq-fast"))
def test_chain_does_not_depend_on_block_size(policy):
    """The uniform in hand and the batch sums are carried across kernel calls: any block size
    gives the same numbers (R-JIQ reuses the residual of its class draw as well)."""
    kw = dict(rho=0.8, a_star=76.0, n_jobs=60_000, seed=5)
    a = simulate(MAIN, policy, 64, **kw)
    for chunk in (8, 1000, 4096):
        b = simulate(MAIN, policy, 64, chunk=chunk, **kw)
        assert (a.mean_response, a.final_delta, a.min_delta) == \
               (b.mean_response, b.final_delta, b.min_delta)
        np.testing.assert_array_equal(a.class_fractions, b.class_fractions)
