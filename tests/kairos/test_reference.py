"""The fast engine (``sim``) against the simpy reference (``reference``), and both against
closed forms.

Engine ≡ reference: the same seed gives the same arrays (``make_workload``,
``service_arrays``), so the two must agree query by query, exactly: same instance, same start,
same finish. The reference's KAIROS calls scipy's ``linear_sum_assignment``; the engine's calls
its numba port, so these cases also check the port inside the loop.

Closed forms (single runs, fixed seeds). Tolerances come from the spread of 20 seeds measured
while writing the tests: M/D/1 at ρ = 0.7 with 10⁶ queries has a relative std of the mean wait of
about 0.6 %, so 3 % is 5σ; M/M/3 at ρ = 0.8 with 10⁶ queries about 1.2 %, so 6 % is 5σ.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsched.kairos import reference as ref, sim

CONFIGS = [(1, 0, 13, 0), (2, 1, 3, 2), (1, 2, 0, 4), (3, 0, 0, 0)]


def _same(a: sim.SimResult, b: sim.SimResult) -> None:
    np.testing.assert_array_equal(a.instance, b.instance)
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.finish, b.finish)
    assert a.violations == b.violations


@pytest.mark.parametrize("model", ["rm2", "mtwnd"])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("policy", sim.POLICIES)
@pytest.mark.parametrize("service", ["mean", "gauss"])
def test_engine_equals_reference_query_by_query(model, config, policy, service):
    ub = sim.crude_bound(config, model)
    for load in (0.5, 0.95):
        kw = dict(n_queries=200, seed=11, service=service,
                  theta=300 if policy == "drs" else None)
        a = sim.simulate(config, model, policy, load * ub, early_abort=False, **kw)
        b = ref.simulate_reference(config, model, policy, load * ub, **kw)
        _same(a, b)


@pytest.mark.parametrize("policy", sim.POLICIES)
def test_engine_equals_reference_other_options(policy):
    """Empirical service, upstream penalty, integer-ms arrivals, another model."""
    cfg = (2, 0, 8, 1)
    ub = sim.crude_bound(cfg, "dien")
    th = 200 if policy == "drs" else None
    for kw in (dict(service="empirical"), dict(penalty="upstream"),
               dict(arrivals="upstream_int_poisson", n_queries=300)):
        kw = dict(dict(n_queries=200, seed=5, theta=th), **kw)
        a = sim.simulate(cfg, "dien", policy, 0.9 * ub, early_abort=False, **kw)
        b = ref.simulate_reference(cfg, "dien", policy, 0.9 * ub, **kw)
        _same(a, b)


def test_engine_equals_reference_kairos_under_load():
    """2000 queries near capacity: queues longer than the 2n window, many busy matches."""
    cfg = (1, 0, 13, 0)
    rate = 1.05 * sim.crude_bound(cfg, "rm2")
    a = sim.simulate(cfg, "rm2", "kairos", rate, early_abort=False)
    b = ref.simulate_reference(cfg, "rm2", "kairos", rate, n_queries=2000)
    _same(a, b)
    assert np.max(a.start - a.arrival) > 100      # queries did wait behind busy instances


def test_reference_fig5_toy():
    arr = np.array([0.0, 0.0, 3.0, 3.0])
    svc = np.array([[2.0, 4.0, 2.0, 2.0], [3.0, 9.0, 3.0, 3.0]])
    k = ref.run_explicit_reference(arr, svc, [0, 1], 7.0, "kairos", coefficients=[1, 4 / 9])
    f = ref.run_explicit_reference(arr, svc, [0, 1], 7.0, "fcfs")
    assert k.met.sum() == 4 and f.met.sum() == 3
    for policy in ("kairos", "fcfs", "clkwrk"):
        _same(sim.run_explicit(arr, svc, [0, 1], 7.0, policy, coefficients=[1, 4 / 9]),
              ref.run_explicit_reference(arr, svc, [0, 1], 7.0, policy,
                                         coefficients=[1, 4 / 9]))


# --------------------------------------------------------------------------- closed forms

def _poisson(rate: float, n: int, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, n))


@pytest.mark.parametrize("policy", ["fcfs", "kairos", "clkwrk"])
def test_md1_mean_wait_pollaczek_khinchine(policy):
    """One instance, constant service D = 1: W_q = ρ D / (2 (1 − ρ)) (P–K for M/D/1).

    With one instance every policy is work-conserving with all service times equal, so the mean
    wait is the FIFO one whatever the order (KAIROS's matching breaks its cost ties between the
    two queries of its window in scipy's order, not FIFO)."""
    rho, n = 0.7, (1_000_000 if policy != "kairos" else 200_000)
    arr = _poisson(rho, n, seed=1)
    r = sim.run_explicit(arr, np.ones((1, n)), [0], 1e12, policy)
    wq = np.mean(r.start - arr)
    tol = 0.03 if policy != "kairos" else 0.07     # 200k queries: std ≈ 1.4 %, 5σ
    assert wq == pytest.approx(rho / (2 * (1 - rho)), rel=tol)


def test_mmc_mean_wait_erlang_c():
    """Three identical instances, exponential service (μ = 1), FCFS: W_q = C(c, A) / (cμ − λ)."""
    c, rho, n = 3, 0.8, 1_000_000
    lam = c * rho
    a = lam
    tail = a**c / math.factorial(c) / (1 - rho)
    erlang_c = tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    arr = _poisson(lam, n, seed=2)
    svc = np.random.default_rng(3).exponential(1.0, (1, n))
    r = sim.run_explicit(arr, svc, [0] * c, 1e12, "fcfs")
    assert np.mean(r.start - arr) == pytest.approx(erlang_c / (c - lam), rel=0.06)


def test_littles_law_via_pasta():
    """M/D/1: the mean number in system seen by arrivals (PASTA: the time average) equals
    λ · E[T] (Little). With one FIFO server finishes are sorted, so the count is a search."""
    rho, n = 0.7, 500_000
    arr = _poisson(rho, n, seed=4)
    r = sim.run_explicit(arr, np.ones((1, n)), [0], 1e12, "fcfs")
    in_system = np.arange(n) - np.searchsorted(r.finish, arr, side="right")
    assert in_system.mean() == pytest.approx(rho * np.mean(r.finish - arr), rel=0.03)
    # and P–K for the mean number: L = ρ + ρ² / (2 (1 − ρ))
    assert in_system.mean() == pytest.approx(rho + rho**2 / (2 * (1 - rho)), rel=0.03)
