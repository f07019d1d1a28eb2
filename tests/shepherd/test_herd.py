"""HERD (spec §2.1, §5 claims 10–11, §7 A20): the toy instance, the literal ILP's degeneracy,
memory and affinity constraints, the time-limit fallback and the K = 200 scale check."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.shepherd import herd
from infsched.shepherd.model import ModelSet, model_set
from infsched.shepherd.theory import affinity

TOY_N = [6.0, 6.0, 3.0, 3.0]


def _partition(assign):
    """The plan's groups as a set of frozensets of needs' indices (labels ignored)."""
    groups = {}
    for i, g in enumerate(assign):
        groups.setdefault(int(g), set()).add(i)
    return {frozenset(s) for s in groups.values()}


def _needs_partition(assign, n=TOY_N):
    """The plan's groups as sorted tuples of needs: {6,3}|{6,3} whichever 6 goes where."""
    groups = {}
    for i, g in enumerate(assign):
        groups.setdefault(int(g), []).append(n[i])
    return sorted(tuple(sorted(v)) for v in groups.values())


# ---------------------------------------------------------------------------- step 1 and 2

def test_stream_throughput_nexus_rule():
    models = model_set("cv16")
    T = herd.stream_throughput(models, 250.0)
    k = models.names.index("RS269")
    b = int((125 - 74.20) // 4.37)                       # ⌊(L/2 - β)/α⌋ = 11
    assert T[k] == pytest.approx(1000 * b / (4.37 * b + 74.20))
    rn18 = models.names.index("RN18")
    assert T[rn18] == pytest.approx(1000 * 128 / (0.22 * 128 + 3.74))  # capped at 128
    # at 150 ms RS269's batch of one (78.57 ms) no longer fits twice: unservable, T = 0
    assert herd.stream_throughput(models, 150.0)[k] == 0.0


def test_aggregate_a_million_streams():
    rng = np.random.default_rng(0)
    S, K = 1_000_000, 1000
    m = np.arange(S) % K
    r = rng.lognormal(0, 2.4, S)
    agg = herd.aggregate(m, r, K)  # its speed is benchmarked, not asserted here
    assert agg.shape == (K,)
    assert agg.sum() == pytest.approx(r.sum())
    assert agg[7] == pytest.approx(r[7::K].sum())
    with pytest.raises(ConfigError, match="stream_models"):
        herd.aggregate(np.array([0, 5]), np.array([1.0, 1.0]), 3)


# ---------------------------------------------------------------------------- HERD toy

@pytest.mark.parametrize("shortcut", [True, False])
def test_toy_herd_l_optimum(shortcut):
    plan = herd.herd_l(TOY_N, 24, 12, lpt_shortcut=shortcut)
    assert plan.t == pytest.approx(4 / 3)
    assert plan.status == "optimal" and plan.gap <= 1e-9
    assert _needs_partition(plan.assign) == [(3.0, 6.0), (3.0, 6.0)]           # {6,3} | {6,3}
    assert list(plan.sizes) == [12, 12]
    assert np.allclose(plan.burst_tolerance, 4 / 3)
    if not shortcut:
        assert plan.milp_t == pytest.approx(4 / 3)
    # the other partition is worse under HERD-L
    assert herd.herd_l_objective(TOY_N, [12, 12], [0, 0, 1, 1]) == pytest.approx(1.0)
    assert plan.lpt_t == pytest.approx(4 / 3)


def test_toy_variable_sizes():
    plan = herd.herd_l(TOY_N, 24, 12, variable_sizes=True)
    assert plan.t == pytest.approx(4 / 3)
    assert plan.status == "optimal"
    assert plan.sizes.sum() <= 24 and plan.sizes.max() <= 12


def test_literal_ilp_is_degenerate():
    """Eq. 2 as written [recon] scores both partitions 2 = Ḡ / max n_i: it cannot tell a
    balanced plan from an unbalanced one (spec §2.1, degeneracy)."""
    good = herd.herd_literal(TOY_N, 24, 12, fixed_assign=[0, 1, 0, 1])
    bad = herd.herd_literal(TOY_N, 24, 12, fixed_assign=[0, 0, 1, 1])
    free = herd.herd_literal(TOY_N, 24, 12)
    assert good.t == pytest.approx(2.0)
    assert bad.t == pytest.approx(2.0)
    assert free.t == pytest.approx(2.0)
    assert herd.literal_objective(TOY_N, [12, 12], [0, 0, 0, 0]) == pytest.approx(2.0)


def test_memory_constraint_binding():
    # model-stream 0 fills a GPU's memory: it must sit alone, so {6} | {6, 3, 3} and t = 1
    mem_k = [5.0, 1.0, 1.0, 1.0]
    for variable in (False, True):
        plan = herd.herd_l(TOY_N, 24, 12, mem=5.0, mem_k=mem_k, variable_sizes=variable)
        used = np.bincount(plan.assign, weights=mem_k, minlength=plan.sizes.size)
        assert np.all(used <= 5.0)
        assert _partition(plan.assign) == {frozenset({0}), frozenset({1, 2, 3})}
        assert plan.t == pytest.approx(1.0)
    with pytest.raises(InfeasibleError, match="memory"):
        herd.herd_l(TOY_N, 24, 12, mem=4.0, mem_k=mem_k)


def test_affinity_constraint_binding():
    # sets {6, 6} and {3, 3}: the balanced plan is forbidden, t = 1
    plan = herd.herd_l(TOY_N, 24, 12, affinity_sets=[[0, 1], [2, 3]])
    assert _partition(plan.assign) == {frozenset({0, 1}), frozenset({2, 3})}
    assert plan.t == pytest.approx(1.0)
    # three sets on two groups: infeasible
    with pytest.raises(InfeasibleError):
        herd.herd_l(TOY_N, 24, 12, affinity_sets=[[0], [1], [2, 3]])
    with pytest.raises(ConfigError, match="affinity_sets"):
        herd.herd_l(TOY_N, 24, 12, affinity_sets=[[0, 1], [1, 2, 3]])


def test_affinity_sets_partition():
    models = model_set("cv16")
    assert herd.affinity_sets(models, float("inf")) == [list(range(models.n))]
    A = affinity(models)
    sym = np.maximum(A, A.T)
    for K_bar in (1.5, 3.0, 10.0):
        sets = herd.affinity_sets(models, K_bar)
        assert sorted(k for s in sets for k in s) == list(range(models.n))
        for s in sets:
            assert sym[np.ix_(s, s)].max() <= K_bar
    assert len(herd.affinity_sets(models, 1.0)) == models.n     # all profiles differ
    same = ModelSet(("a", "b"), np.array([1.0, 1.0]), np.array([2.0, 2.0]), np.array([1, 1]))
    assert herd.affinity_sets(same, 1.0) == [[0, 1]]


def test_lpt_and_best_sizes():
    assign, t = herd.lpt(TOY_N, [12, 12])
    assert t == pytest.approx(4 / 3)
    sizes = herd.best_sizes([9.0, 3.0, 0.0], 24, 12)
    assert sizes.tolist() == [12, 11, 1]


def test_herd_l_validation():
    with pytest.raises(ConfigError, match="G_bar"):
        herd.herd_l(TOY_N, 24, 30)
    with pytest.raises(ConfigError, match="n"):
        herd.herd_l([-1.0, 2.0], 24, 12)
    with pytest.raises(ConfigError, match="mem"):
        herd.herd_l(TOY_N, 24, 12, mem=5.0)


# ---------------------------------------------------------------------------- scale

def _lognormal_needs(K, seed, load=0.7):
    n = np.random.default_rng(seed).lognormal(0.0, 1.0, K)
    return n * (load * K / n.sum())


def test_a20_k200_ten_groups():
    """A20: K = 200 model-streams, J = 10, N = K, Ḡ = N/10, total need 0.7 N. Wall time is
    reported by the chapter, not asserted here."""
    K = 200
    n = _lognormal_needs(K, seed=0)
    # limited by nodes, not seconds: the same plan and status on a busy machine
    plan = herd.herd_l(n, K, K // 10, time_limit=None, node_limit=20_000, mip_rel_gap=0.01,
                       lpt_shortcut=False)
    assert plan.sizes.tolist() == [20] * 10
    assert plan.status == "optimal" and plan.gap <= 0.01
    assert plan.milp_t >= 0.99 * plan.lpt_t               # the MILP alone is within 1% of LPT
    assert plan.t >= plan.lpt_t * (1 - 1e-12)            # never worse than LPT
    assert plan.t <= plan.bound * (1 + 1e-12)
    assert plan.bound <= 1 / 0.7 + 1e-9                    # Σ size / Σ n


def test_time_limit_returns_a_plan():
    """A solve stopped by its time limit still returns its best plan, with the gap."""
    K = 400
    n = _lognormal_needs(K, seed=3)
    plan = herd.herd_l(n, K, K // 10, time_limit=0.3, mip_rel_gap=0.0, lpt_shortcut=False)
    assert plan.status in ("optimal", "time_limit")
    assert plan.t >= plan.lpt_t * (1 - 1e-12)
    assert 0 <= plan.gap < 0.05
    assert plan.solve_seconds < 5
    # so short that HiGHS finds nothing: LPT comes back, flagged, with its gap
    for variable in (False, True):
        quick = herd.herd_l(n, K, K // 10, time_limit=0.001, mip_rel_gap=0.0,
                            variable_sizes=variable, lpt_shortcut=False)
        assert quick.status == "time_limit"
        assert quick.source in ("lpt", "milp")
        assert quick.t >= quick.lpt_t * (1 - 1e-12)
        assert 0 <= quick.gap < 0.05


def test_variable_sizes_at_least_fixed():
    n = _lognormal_needs(30, seed=1, load=0.8)
    fixed = herd.herd_l(n, 30, 12, lpt_shortcut=False)  # sizes 12, 12, 6
    var = herd.herd_l(n, 30, 12, variable_sizes=True, lpt_shortcut=False)
    assert fixed.sizes.tolist() == [12, 12, 6]
    assert var.t >= fixed.t * (1 - 0.02)
    assert var.sizes.sum() <= 30 and var.sizes.max() <= 12


def test_table5_point_small():
    row = herd.table5_point(50, seed=0)
    assert row["streams"] == 50_000
    assert row["t"] >= row["lpt_t"] * (1 - 1e-12)
    assert row["status"] == "optimal" and row["gap"] <= 0.01
    again = herd.table5_point(50, seed=0)   # node-limited: the same plan whatever the load
    assert (again["t"], again["gap"], again["source"]) == (row["t"], row["gap"], row["source"])


def test_node_limit_arguments():
    n = _lognormal_needs(20, seed=0)
    with pytest.raises(ConfigError, match="node_limit = 0"):
        herd.herd_l(n, 20, 10, node_limit=0)
    with pytest.raises(ConfigError, match="node_limit = 5: applies to fixed sizes only"):
        herd.herd_l(n, 20, 10, node_limit=5, variable_sizes=True)
    with pytest.raises(ConfigError, match="time_limit = -1"):
        herd.herd_l(n, 20, 10, time_limit=-1)


def test_lpt_shortcut_certifies_with_the_lp_bound():
    """A plan whose LPT is within mip_rel_gap of Σ size / Σ n needs no MILP."""
    n = _lognormal_needs(200, seed=0)
    plan = herd.herd_l(n, 200, 20)
    assert plan.source == "lpt" and plan.status == "optimal"
    assert plan.gap <= 0.01 and plan.t == plan.lpt_t
