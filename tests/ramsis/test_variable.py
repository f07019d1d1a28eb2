"""Variable batching (paper §4.3.2, spec §2.9): the b < n transition rows, the MDP, the solver.

(a) the b < n row against a simulation of the central Poisson stream and round robin, conditioned
on the state (spec §7 T2's setting: K = 5, λ = 0.1/ms, SLO 150, D = 10; total variation ≤ 0.01 at
2·10^5 samples); the row against a literal sum (binomial order statistics, term-by-term Poisson);
(b) every row is a distribution; (c) restricted to b = n the MDP is maximal batching's;
(d) on the image Pareto models (K = 60, SLO 150, D = 10) variable batching is at least as good as
maximal and runs through the simulator; (e) error paths.
"""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.profiles import load_profile
from infsched.ramsis import kernel as kern, mdp, sim, variable as var
from infsched.ramsis.model import MDPConfig
from infsched.ramsis.policy import PolicyTable
from infsched.workload import poisson_arrivals

K5, LAM, SLO, N = 5, 0.1, 150.0, 32
GRID10 = np.linspace(0.0, SLO, 11)


@pytest.fixture(scope="module")
def image():
    return load_profile("ramsis-image").pareto_front()


def cfg(load, d=10, batching="variable", K=60, **kw):
    return MDPConfig(SLO, K, load, d=d, batching=batching, **kw)


@pytest.fixture(scope="module")
def solved(image):
    """Maximal and variable policies at a few loads (K = 60, SLO 150, D = 10)."""
    return {load: (mdp.solve(image, cfg(load, batching="max")), mdp.solve(image, cfg(load)))
            for load in (1200.0, 2000.0, 2800.0, 3200.0)}


# ------------------------------------------------------------------ (a) rows vs Monte-Carlo

def sampled_row(n, j, b, tau, samples, rng, K=K5, lam=LAM, grid=GRID10, G=80, chunk=100_000):
    """The law of the next state, simulated. The head query arrives at time 0; the central stream
    continues as a Poisson process (exponential gaps), and central arrival i goes to this worker
    iff i ≡ 0 (mod K). Keep the runs where the worker received exactly n − 1 more queries by the
    decision at T_A = SLO − T_j (the state's conditioning, Eq. 2's interval A); serve the first b;
    the new head is central arrival bK; count the worker's arrivals during τ."""
    J = grid.size
    T_A = SLO - grid[j]
    parts, got = [], 0
    while got < samples:
        t = np.cumsum(rng.exponential(1.0 / lam, size=(chunk, G)), axis=1)
        assert np.all(t[:, -1] > T_A + tau)                 # G gaps always cover the window
        k_A = (t <= T_A).sum(axis=1)
        t = t[(k_A >= (n - 1) * K) & (k_A <= n * K - 1)]
        slack = SLO - (T_A + tau - t[:, b * K - 1])
        jp = np.clip(np.searchsorted(grid, slack, side="right") - 1, 0, J - 1)
        own = t[:, K - 1::K]
        c = ((own > T_A) & (own <= T_A + tau)).sum(axis=1)
        n_new = n - b + c
        parts.append(np.where(n_new > N, N * J, (n_new - 1) * J + jp))
        got += t.shape[0]
    idx = np.concatenate(parts)[:samples]
    return np.bincount(idx, minlength=N * J + 1) / samples


@pytest.mark.parametrize("n, j, b, tau", [(2, 6, 1, 40.0), (3, 4, 1, 120.0), (3, 4, 2, 40.0),
                                          (3, 4, 2, 120.0), (4, 2, 3, 40.0), (4, 2, 1, 120.0)])
def test_row_matches_monte_carlo(n, j, b, tau):
    """T_A from 30 to 120 ms; τ > T_j included (negative slack lumps into j' = 0)."""
    emp = sampled_row(n, j, b, tau, 200_000, np.random.default_rng(100 * n + 10 * j + b))
    row = var.transition_row(LAM, K5, N, GRID10, SLO, n, j, b, tau)
    assert 0.5 * np.abs(emp - row).sum() <= 0.01


def test_monte_carlo_tells_neighbouring_batches_apart():
    """The comparison has power: serving b = 1 is far (in TV) from the law for b = 2."""
    emp = sampled_row(3, 4, 1, 40.0, 200_000, np.random.default_rng(5))
    other = var.transition_row(LAM, K5, N, GRID10, SLO, 3, 4, 2, 40.0)
    assert 0.5 * np.abs(emp - other).sum() > 0.3


@pytest.mark.parametrize("K, Nn, D, lam", [(1, 3, 4, 0.02), (2, 4, 5, 0.05), (3, 4, 5, 0.05),
                                           (3, 3, 3, 0.3)])
def test_row_equals_literal_sum(K, Nn, D, lam):
    """The vectorised rows (incomplete beta, Poisson tails) equal the oracle's binomial and
    term-by-term sums, T_A = 0 (j = D) included; b = n is the maximal kernel."""
    grid = np.linspace(0.0, SLO, D + 1)
    worst = 0.0
    for tau in (15.0, 75.0, 149.0, 230.0):
        for n in range(1, Nn + 1):
            for j in range(grid.size):
                for b in range(1, n + 1):
                    fast = var.transition_row(lam, K, Nn, grid, SLO, n, j, b, tau)
                    slow = var.brute_force_row(lam, K, Nn, grid, SLO, n, j, b, tau)
                    worst = max(worst, float(np.abs(fast - slow).max()))
    assert worst < 1e-12


def test_full_slack_head_is_deterministic():
    """T_A = 0: the queue arrived at once (phase 0), so the new head keeps slack SLO − τ."""
    row = var.transition_row(LAM, K5, N, GRID10, SLO, 3, 10, 1, 40.0)
    J = GRID10.size
    jp = int(np.searchsorted(GRID10, SLO - 40.0, side="right") - 1)
    heads = row[: N * J].reshape(N, J).sum(axis=0)
    assert heads[jp] == pytest.approx(1.0 - row[-1], abs=1e-15)


def test_arrival_law_is_the_maximal_kernels_marginal():
    """P(c | a, τ) in closed form equals Kernel.empty and Kernel.state summed over j'."""
    for tau in (20.0, 90.0, 400.0):
        k = kern.transition_kernel(LAM, K5, N, GRID10, SLO, tau)
        pmf, sf = var.arrival_law(LAM, K5, N, tau)
        assert np.allclose(pmf[:, 0], k.empty, atol=1e-13)
        assert np.allclose(pmf[:, 1:], k.state.sum(axis=2), atol=1e-13)
        assert np.allclose(sf[:, N], k.overflow, atol=1e-12)
        assert np.allclose(pmf.sum(axis=1) + sf[:, N], 1.0, atol=1e-14)


# --------------------------------------------------------------------- (b) distributions

def random_policy(m: var.VariableMDP, rng) -> np.ndarray:
    """A valid action per state, biased towards b < n where there is one."""
    out = np.empty(m.S, dtype=np.int64)
    for s in range(m.S):
        cols = np.flatnonzero(m.valid[s])
        pairs = cols[cols > m.M]
        out[s] = rng.choice(pairs if pairs.size and rng.random() < 0.7 else cols)
    return out


@pytest.mark.parametrize("load, d, disc", [(2000.0, 10, "fld"), (3200.0, 20, "fld"),
                                           (2400.0, 10, "md")])
def test_rows_are_distributions(image, load, d, disc):
    m = var.VariableMDP(image, cfg(load, d=d, discretisation=disc))
    assert m.pair_state.size > 0 and m.width <= 27              # ≤ 27 (m, b ≤ 31) under 150 ms
    for _, _, carry, _ in m._blocks:                            # the arrival law of each (τ, a, n − b)
        assert np.abs(np.asarray(carry.sum(axis=1)).ravel() - 1.0).max() < 1e-13
    e = m.edges                                                 # edges inside (0, 1), in order
    assert np.all((e.u > 0) & (e.u < 1)) and np.all((e.I0 >= 0) & (e.I0 <= 1)) and e.t0.min() >= 0
    P = m.transition_matrix(random_policy(m, np.random.default_rng(1)))
    assert P.min() >= -1e-15 and np.abs(P.sum(axis=1) - 1.0).max() < 1e-11


def test_dense_matrix_and_rows_agree():
    """Two constructions of the chain: the matrix (factor by factor, compiled) and
    transition_row per state (small K, N, D; a policy using every kind of action)."""
    prof = load_profile("ramsis-image").pareto_front().subset(
        ["shufflenet_v2_x0_5", "mobilenet_v3_large", "efficientnet_b0"])
    c = MDPConfig(SLO, 3, 150.0, d=5, n_max=6, batching="variable")
    m = var.VariableMDP(prof, c)
    rng = np.random.default_rng(2)
    act = random_policy(m, rng)
    P = m.transition_matrix(act)
    model, batch, _ = m.decode(act)
    lat = prof.latency_table(c.n_max)
    for s in range(m.S - 1):
        n, j = int(m.n_of[s]), int(m.j_of[s])
        row = var.transition_row(c.lam, 3, c.n_max, m.grid, SLO, n, j, int(batch[s]),
                                 float(lat[model[s], batch[s] - 1]))
        assert np.allclose(P[s], row, atol=1e-13)


# ------------------------------------------------------- (c) b = n only is maximal batching

@pytest.mark.parametrize("load, d", [(1200.0, 10), (2800.0, 10), (2000.0, 20), (3600.0, 10)])
def test_restricted_to_full_batches_is_maximal_batching(image, load, d):
    full = mdp.solve(image, cfg(load, d=d, batching="max"))
    m = var.VariableMDP(image, cfg(load, d=d), batch_sizes="max")
    assert m.pair_state.size == 0
    restricted = mdp.solve(image, m)
    assert np.array_equal(restricted.model, full.model)
    assert np.array_equal(restricted.batch, full.batch)
    assert np.array_equal(restricted.satisfied, full.satisfied)
    assert restricted.gain == pytest.approx(full.gain, abs=1e-9)
    assert restricted.expected_accuracy == pytest.approx(full.expected_accuracy, abs=1e-8)
    assert restricted.expected_violation == pytest.approx(full.expected_violation, abs=1e-10)
    assert restricted.full_batch_fraction == pytest.approx(1.0, abs=1e-12)
    # the b = n columns are WorkerMDP's Q-values, bit for bit
    V = np.random.default_rng(0).random(m.S)
    Qb = m.base.q_values(V)
    Qv = m.q_values(V)
    assert np.array_equal(Qv[:, : m.M], Qb[:, : m.M])


def test_policy_iteration_agrees_with_relative_value_iteration(image):
    m = var.VariableMDP(image, cfg(2000.0))
    h, g, _ = m.policy_iteration()
    V = np.zeros(m.S)
    for _ in range(2000):
        Vn = m.q_values(V).max(axis=1)
        d = Vn - V
        V = Vn - Vn[m.grid.size - 1]
        if d.max() - d.min() < 1e-11:
            break
    assert 0.5 * (d.max() + d.min()) == pytest.approx(g, abs=1e-10)
    assert np.array_equal(np.argmax(m.q_values(V), axis=1), np.argmax(m.q_values(h), axis=1))
    # the artifact's 100 undiscounted sweeps also run on this MDP
    s100 = mdp.solve(image, m, horizon=100)
    assert s100.iterations == 100 and np.isfinite(s100.expected_accuracy)


# ------------------------------------------------- (d) image profile, K = 60, SLO 150, D = 10

def test_variable_is_at_least_as_good_as_maximal(solved):
    """Its actions contain maximal batching's, so the optimal gain (reward per decision) cannot
    be lower; the §5.1 accuracy per satisfied query stays within 0.1 points, the violation
    estimate no higher. Most decisions still serve the whole queue (the paper: ~80 %)."""
    for load, (full, varb) in solved.items():
        assert varb.gain >= full.gain - 1e-9, load
        assert varb.expected_accuracy >= full.expected_accuracy - 0.1, load
        assert varb.expected_violation <= full.expected_violation + 1e-9, load
        assert 0.9 <= varb.full_batch_fraction <= 1.0, load
        assert full.full_batch_fraction == 1.0
    # and it does split batches somewhere: in the policy, and in the stationary law near capacity
    assert any(np.any(v.batch[1:] < np.arange(1, N + 1)[:, None]) for _, v in solved.values())
    assert solved[3200.0][1].full_batch_fraction < 0.99


def test_solution_tables_hold_the_chosen_batch(solved, image):
    _, s = solved[3200.0]
    lat = image.latency_table(N)
    n = np.broadcast_to(np.arange(N + 1)[:, None], s.batch.shape)
    assert np.all((s.batch[1:] >= 1) & (s.batch[1:] <= n[1:]))
    part = (s.batch < n) & (n > 0)
    assert part.any()
    assert np.all(s.satisfied[part])                              # b < n only when on time
    j = np.broadcast_to(np.arange(s.grid.size)[None, :], s.batch.shape)
    assert np.all(lat[s.model[part], s.batch[part] - 1] <= s.grid[j[part]] + 1e-9)


def test_pow2_batch_sizes(image):
    m = var.VariableMDP(image, cfg(3200.0), batch_sizes="pow2")
    assert set(np.unique(m.pair_batch)) <= {1, 2, 4, 8, 16}
    s = mdp.solve(image, m)
    n = np.arange(N + 1)[:, None]
    part = (s.batch < n) & (n > 0)
    assert set(np.unique(s.batch[part])) <= {1, 2, 4, 8, 16}


def test_literal_fallback_rule_traps_long_queues(image):
    """Without the late flush (§4.3.1 read literally) a long queue can only be served in small
    on-time batches: at 3200 QPS the expectation predicts most queries late."""
    literal = mdp.solve(image, var.VariableMDP(image, cfg(3200.0), late_flush=False))
    assert literal.expected_violation > 0.5


def _table(s: mdp.Solution, load: float) -> PolicyTable:
    return PolicyTable(slo_ms=SLO, workers=60, grid_ms=s.grid, loads_qps=[load],
                       model=s.model[None], batch=s.batch[None], fallback=0,
                       expected_accuracy=[s.expected_accuracy],
                       expected_violation=[s.expected_violation])


def test_variable_policy_runs_in_the_simulator(solved, image):
    """The simulators serve the first ``batch[p, n, j]`` queries: a variable policy runs as is.
    Simulated accuracy is at least the expectation (a lower bound, spec T6) and matches maximal
    batching's within 0.3 points."""
    load = 2000.0
    arr = poisson_arrivals(load / 1000.0, horizon=60_000.0, rng=np.random.default_rng(11))
    full, varb = solved[load]
    r_var = sim.simulate_ramsis(image, _table(varb, load), arr, slo_ms=SLO, workers=60,
                                load_qps=load)
    r_max = sim.simulate_ramsis(image, _table(full, load), arr, slo_ms=SLO, workers=60,
                                load_qps=load)
    assert r_var.served == arr.size and r_var.violation_rate < 0.01
    assert -0.5 <= r_var.accuracy - varb.expected_accuracy <= 3.0
    assert r_var.accuracy >= r_max.accuracy - 0.3


# ------------------------------------------------------------------------- (e) errors

def test_worker_mdp_refuses_variable_config(image):
    with pytest.raises(ConfigError, match=r"cfg.batching = 'variable'.*VariableMDP"):
        mdp.WorkerMDP(image, cfg(2000.0))


@pytest.mark.parametrize("kw, match", [(dict(batch_sizes="odd"), "batch_sizes"),
                                       (dict(tail=-1.0), "tail"),
                                       (dict(tail=0.1), "tail"),
                                       (dict(late_flush="yes"), "late_flush"),
                                       (dict(max_gib=0), "max_gib"),
                                       (dict(max_gib=1e-4), r"needs about .* GiB")])
def test_bad_options(image, kw, match):
    with pytest.raises(ConfigError, match=match):
        var.VariableMDP(image, cfg(2000.0), **kw)


def test_bad_config_and_infeasible_load(image):
    with pytest.raises(ConfigError, match="cfg"):
        var.VariableMDP(image, {"slo_ms": 150})
    with pytest.raises(ConfigError, match="batching"):
        MDPConfig(SLO, 60, 2000.0, batching="some")
    with pytest.raises(InfeasibleError, match="load_qps = 4000 exceeds"):
        mdp.solve(image, cfg(4000.0, K=40))
    with pytest.raises(ConfigError, match="slo_ms = 20"):
        mdp.solve(image, MDPConfig(20.0, 60, 400.0, batching="variable"))


def test_bad_action_and_row_arguments(image):
    m = var.VariableMDP(image, cfg(2000.0))
    bad = np.zeros(m.S, dtype=np.int64)
    bad[-1] = m.valid.shape[1] - 1                                 # overflow: flush only
    with pytest.raises(ConfigError, match="action"):
        m.decode(bad)
    with pytest.raises(ConfigError, match="action"):
        m.transition_matrix(np.zeros(m.S - 1, dtype=np.int64))
    with pytest.raises(ConfigError, match=r"\(n, j, b\)"):
        var.transition_row(LAM, K5, N, GRID10, SLO, 3, 4, 4, 40.0)


def test_policy_iteration_round_limit(image):
    m = var.VariableMDP(image, cfg(2800.0))
    with pytest.raises(mdp.ConvergenceError, match="max_iter = 1"):
        m.policy_iteration(max_iter=1)
