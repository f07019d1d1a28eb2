"""The factorised transition kernel against Eq. 2 summed literally and against Monte-Carlo.

Spec §7: T1 (normalisation), T2 (kernel vs sampled round-robin arrivals, total variation
≤ 0.01 with 2·10^5 samples), T3 (Eq. 2 ≡ factorised form to 1e-10 for K ≤ 3, N ≤ 4, D ≤ 5).
"""

from __future__ import annotations

import numpy as np
import pytest

from infsched.ramsis import kernel as kern


@pytest.mark.parametrize("K, N, D, lam", [(1, 3, 4, 0.02), (2, 4, 5, 0.05), (3, 4, 5, 0.05),
                                          (3, 2, 3, 0.3)])
def test_factorised_kernel_equals_eq2_brute_force(K, N, D, lam):
    slo = 150.0
    grid = np.linspace(0.0, slo, D + 1)
    phase = kern.phase_law(lam, K, N, grid, slo)
    worst = 0.0
    for tau in (15.0, 75.0, 149.0, 150.0, 230.0):  # below, across and beyond the SLO
        dense = kern.transition_kernel(lam, K, N, grid, slo, tau).dense()
        for n in range(1, N + 1):
            for j in range(grid.size):
                brute = kern.brute_force_row(lam, K, N, grid, slo, n, j, tau)
                fact = phase[n - 1, j][::-1] @ dense        # a = K - r
                worst = max(worst, float(np.abs(brute - fact).max()))
    assert worst < 1e-10


@pytest.mark.parametrize("K, lam, D", [(1, 0.5, 10), (5, 0.1, 10), (60, 2.0, 100), (100, 4.0, 20)])
def test_kernel_and_phase_law_are_distributions(K, lam, D):
    slo, N = 150.0, 32
    grid = np.linspace(0.0, slo, D + 1)
    phase = kern.phase_law(lam, K, N, grid, slo)
    assert np.all(phase >= 0) and np.allclose(phase.sum(axis=2), 1.0, atol=1e-12)
    for tau in (5.0, 80.0, 150.0, 427.9):
        k = kern.transition_kernel(lam, K, N, grid, slo, tau)
        dense = k.dense()
        assert dense.min() >= -1e-12
        assert np.abs(dense.sum(axis=1) - 1.0).max() < 1e-9
        # Eq. 3's residual equals the direct tail P[C >= a + N K] of the central count
        from scipy.stats import poisson
        a = np.arange(1, K + 1)
        assert np.allclose(k.overflow, poisson.sf(a + N * K - 1, lam * tau), atol=1e-9)


def test_phase_law_at_full_slack_is_phase_zero():
    """A lone query with slack SLO has just arrived: the worker's round-robin phase is 0."""
    grid = np.linspace(0.0, 150.0, 11)
    phase = kern.phase_law(0.2, 4, 3, grid, 150.0)
    assert phase[0, -1, 0] == 1.0


@pytest.mark.parametrize("tau", [40.0, 120.0])
def test_kernel_matches_monte_carlo(tau):
    """T2: K = 5, λ = 0.1/ms, SLO 150, D = 10. Given that the worker's next query is the a-th
    central arrival after the decision, sample the central Poisson stream over τ and read off
    n' and the bucket of the first new query's slack. Total variation ≤ 0.01 at 2·10^5 samples."""
    K, lam, slo, N, samples = 5, 0.1, 150.0, 32, 200_000
    grid = np.linspace(0.0, slo, 11)
    k = kern.transition_kernel(lam, K, N, grid, slo, tau)
    J = grid.size
    rng = np.random.default_rng(7)
    for a in (1, 3, 5):
        C = rng.poisson(lam * tau, samples)
        n_new = np.where(C >= a, (C - a) // K + 1, 0)
        # the a-th of C uniform arrival times on [0, τ] is τ · Beta(a, C − a + 1)
        t1 = tau * rng.beta(a, np.maximum(C - a + 1, 1))
        slack = slo - tau + t1
        j = np.clip(np.searchsorted(grid, slack, side="right") - 1, 0, J - 1)
        idx = np.where(n_new == 0, J - 1, np.where(n_new > N, N * J, (n_new - 1) * J + j))
        emp = np.bincount(idx, minlength=N * J + 1) / samples
        tv = 0.5 * np.abs(emp - k.dense()[a - 1]).sum()
        assert tv <= 0.01, (a, tv)


def test_edge_times_cover_the_service_interval():
    grid = np.linspace(0.0, 150.0, 6)
    t_lo, t_hi = kern.edge_times(grid, 150.0, 100.0)
    assert t_lo[0] == 0.0 and t_hi[-1] == 100.0
    assert np.all(t_hi >= t_lo) and np.allclose(t_lo[1:], t_hi[:-1])
