"""infsched.kairos.search: §5.2 selection, Algorithm 1 (KAIROS+) and the Fig. 2/11 baselines
(spec §2.3, §2.4, §2.6, §4 claims 9 and 11)."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kairos import experiments as ex, search
from infsched.kairos.bound import BoundProfile, upper_bound
from infsched.kairos.model import MODELS, PRICES, configurations, homogeneous
from infsched.kairos.search import (
    Objective,
    bayes_opt_search,
    genetic_search,
    kairos_plus,
    random_search,
    rank_order,
    select_config,
    simulated_annealing,
)

X25 = configurations(2.5)


def _table(seed: int = 0, monotone: bool = True) -> tuple[dict, np.ndarray]:
    """A synthetic throughput table on X_2.5 and an upper bound ≥ it.

    Monotone: a concave increasing function of the instance counts with an interaction term, so
    the argmax is an interior trade-off, not simply the costliest config. The UB adds a random
    non-negative slack, so its ranking differs from f's."""
    rng = np.random.default_rng(seed)
    w = np.array([40.0, 21.0, 9.0, 8.0]) * rng.uniform(0.9, 1.1, 4)
    x = X25.astype(float)
    f = np.sqrt(x @ w) * 10 + 3.0 * np.minimum(x[:, 0], x[:, 2]) + 1e-6 * (x @ [1, 2, 3, 4])
    if not monotone:
        f = f * rng.uniform(0.6, 1.0, len(f))
    ub = f + rng.uniform(0.0, 0.15, len(f)) * f
    return {tuple(c): v for c, v in zip(X25.tolist(), f)}, ub


def _argmax(table: dict) -> tuple:
    return max(table, key=table.get)


# --- §5.2 selection and the top-10 lists (claim 9, spec §6.1) --------------------------------

PICKS = {"ncf": ((1, 0, 13, 0), "top-1"), "rm2": ((1, 0, 13, 0), "top-1"),
         "wnd": ((1, 0, 13, 0), "top-1"), "mtwnd": ((2, 0, 8, 1), "distance"),
         "dien": ((2, 0, 9, 0), "top-1")}

TOP10 = {
    "rm2": [((1, 0, 13, 0), 144.2), ((1, 0, 12, 1), 138.9), ((1, 0, 12, 0), 134.3),
            ((1, 0, 11, 2), 133.6), ((1, 0, 11, 1), 129.0), ((1, 1, 10, 0), 125.0),
            ((1, 0, 11, 0), 124.3), ((1, 0, 10, 2), 123.6), ((1, 1, 9, 1), 119.7),
            ((2, 0, 9, 0), 119.5)],
    "dien": [((2, 0, 9, 0), 733.0), ((2, 0, 8, 1), 705.8), ((2, 0, 7, 2), 678.6),
             ((2, 0, 8, 0), 675.0), ((3, 0, 6, 0), 664.6), ((2, 0, 6, 3), 651.5),
             ((2, 0, 7, 1), 647.8), ((3, 0, 5, 1), 637.4), ((2, 0, 5, 4), 624.3),
             ((2, 0, 6, 2), 620.7)],
    "mtwnd": [((2, 0, 9, 0), 1061.3), ((1, 1, 10, 0), 1035.8), ((2, 0, 8, 1), 1021.6),
              ((1, 1, 9, 1), 997.7), ((3, 0, 6, 0), 986.5), ((2, 0, 7, 2), 981.8),
              ((2, 0, 8, 0), 980.6), ((1, 1, 8, 2), 959.7), ((1, 1, 9, 0), 958.4),
              ((3, 0, 5, 1), 946.7)],
    "wnd": [((1, 0, 13, 0), 1555.9), ((1, 0, 12, 1), 1506.5), ((1, 0, 11, 2), 1457.1),
            ((1, 0, 12, 0), 1455.1), ((1, 0, 11, 1), 1405.8), ((2, 0, 9, 0), 1399.1),
            ((1, 1, 10, 0), 1356.4), ((1, 0, 10, 2), 1356.4), ((1, 0, 11, 0), 1354.4),
            ((2, 0, 8, 1), 1349.7)],
}


@pytest.mark.parametrize("model", MODELS)
def test_selection_picks(model):
    ub = upper_bound(BoundProfile.from_upstream(model), X25).value
    assert select_config(X25, ub) == PICKS[model]


@pytest.mark.parametrize("model", sorted(TOP10))
def test_top10_lists(model):
    ub = upper_bound(BoundProfile.from_upstream(model), X25).value
    order = rank_order(X25, ub)[:10]
    got = [(tuple(X25[i].tolist()), round(float(ub[i]), 1)) for i in order]
    assert got == TOP10[model]


def test_rank_ties_are_lexicographic():
    X = np.array([[2, 0, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [1, 1, 0, 0]])
    assert rank_order(X, [5.0, 5.0, 7.0, 5.0]).tolist() == [2, 1, 3, 0]


def test_distance_rule_on_a_toy_set():
    # top-3 base counts differ -> the member nearest to the others in the top-k wins
    X = np.array([[1, 0, 0, 0], [2, 0, 0, 0], [3, 0, 0, 0], [2, 0, 1, 0]])
    pick, rule = select_config(X, [10.0, 9.0, 8.0, 7.0], top_k=4)
    assert rule == "distance" and pick == (2, 0, 0, 0)


# --- Algorithm 1 (claim 11) --------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_kairos_plus_exact_on_monotone_table(seed):
    table, ub = _table(seed)
    res = kairos_plus(X25, ub, table, optimum=_argmax(table))
    assert res.best_config == _argmax(table) and res.best_value == table[_argmax(table)]
    assert res.found and 1 <= res.found_at <= res.evaluations < len(X25)
    # no sub-configuration of an evaluated configuration is evaluated afterwards
    tr = np.array(res.trace)
    for i in range(len(tr)):
        assert not np.any(np.all(tr[i + 1:] <= tr[i], axis=1))
    # evaluation order follows the UB ranking
    pos = {tuple(X25[j].tolist()): r for r, j in enumerate(rank_order(X25, ub))}
    assert [pos[t] for t in res.trace] == sorted(pos[t] for t in res.trace)


def test_kairos_plus_with_f_equal_to_ub_needs_one_evaluation():
    ub = upper_bound(BoundProfile.from_upstream("rm2"), X25).value
    res = kairos_plus(X25, ub, ub)                  # f given as an array aligned with X25
    assert res.evaluations == 1 and res.best_config == (1, 0, 13, 0)


def test_kairos_plus_reports_a_missed_optimum():
    """A non-monotone f whose optimum is a sub-configuration of the top-UB config: pruned."""
    table, ub = _table(0)
    top = tuple(X25[rank_order(X25, ub)[0]].tolist())
    sub = (top[0], top[1], top[2] - 1, top[3])
    table = dict(table)
    table[sub] = ub.max() * 0.999
    ub = ub.copy()
    ub[[tuple(c) for c in X25.tolist()].index(sub)] = ub.max() * 0.9995
    res = kairos_plus(X25, ub, table, optimum=sub)
    assert not res.found and res.best_value < table[sub]


def test_objective_caches_and_counts():
    calls = []

    def f(x):
        calls.append(x)
        return float(sum(x))

    obj = Objective(f)
    assert obj((1, 0, 2, 0)) == 3.0 and obj(np.array([1, 0, 2, 0])) == 3.0
    obj.peek((2, 0, 0, 0))
    assert obj.evaluations == 1 and len(calls) == 2
    # a shared Objective keeps its cache across searches, but each search counts from zero
    table, ub = _table(0)
    shared = Objective(lambda x: (calls.append(x), table[x])[1])
    n0 = len(calls)
    a = kairos_plus(X25, ub, shared)
    b = kairos_plus(X25, ub, shared)
    assert a.evaluations == b.evaluations == len(calls) - n0 and shared.evaluations == 0
    with pytest.raises(ConfigError, match="table"):
        Objective({(1, 0, 0, 0): 1.0})((2, 0, 0, 0))


# --- Fig. 11 baselines ----------------------------------------------------------------------

SEARCHERS = {
    "rand": lambda f, seed, **kw: random_search(X25, f, seed=seed, **kw),
    "gene": lambda f, seed, **kw: genetic_search(X25, f, seed=seed, **kw),
    "bo": lambda f, seed, **kw: bayes_opt_search(X25, f, seed=seed, **kw),
    "bo-fit": lambda f, seed, **kw: bayes_opt_search(X25, f, seed=seed, length_scale="fit",
                                                     **kw),
}


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_baselines_find_the_optimum_and_are_reproducible(name):
    table, _ = _table(1)
    search = SEARCHERS[name]
    res = search(table, 3)
    assert res.found and res.best_config == _argmax(table)
    assert res.found_at == res.evaluations <= len(X25)   # stops right at the optimum
    again = search(table, 3)
    assert again.trace == res.trace
    traces = {tuple(search(table, s).trace) for s in range(4)}
    assert len(traces) > 1                               # the seed matters
    tr = np.array(res.trace)                             # same sub-config pruning
    for i in range(len(tr)):
        assert not np.any(np.all(tr[i + 1:] <= tr[i], axis=1))


@pytest.mark.parametrize("name", ["rand", "gene", "bo"])
def test_baselines_terminate_on_non_monotone_tables(name):
    table, _ = _table(2, monotone=False)
    for seed in range(3):
        res = SEARCHERS[name](table, seed)
        assert res.evaluations <= len(X25)
        assert res.found == (res.best_value == max(table.values()))


def test_genetic_search_on_a_tiny_space():
    """Population larger than the space, and children that are always pruned: must end."""
    X = configurations(1.0)
    table = {tuple(c): float(c @ [5, 3, 2, 1]) for c in X}
    res = genetic_search(X, table, seed=0, budget=1.0, population=8)
    assert res.found and res.evaluations <= len(X)


def test_bad_hyperparameters_raise():
    table, _ = _table(0)
    with pytest.raises(ConfigError, match="population"):
        genetic_search(X25, table, population=1)
    with pytest.raises(ConfigError, match="length_scale"):
        bayes_opt_search(X25, table, length_scale=-1.0)
    with pytest.raises(ConfigError, match="ub"):
        kairos_plus(X25, np.ones(3), table)


# --- Fig. 2 simulated annealing ---------------------------------------------------------

def test_simulated_annealing_walk():
    table, _ = _table(4)
    res = simulated_annealing(table, seed=5, min_qps=100.0)
    assert 1 < len(res.steps) <= 51
    u, scale = homogeneous(2.5)
    assert res.homogeneous_value == pytest.approx(table[tuple(u.tolist())] * scale)
    for st in res.steps:
        x = np.array(st.config)
        assert x[0] >= 1 and x @ PRICES <= 2.5 + 1e-9 and st.value >= 100.0
    assert res.best_value == max(st.value for st in res.steps)
    again = simulated_annealing(table, seed=5, min_qps=100.0)
    assert again.steps == res.steps
    # a cold walk (tiny T0) never accepts a worse neighbour
    cold = simulated_annealing(table, seed=1, t0=1e-9)
    accepted = [st.value for st in cold.steps if st.accepted]
    assert accepted == sorted(accepted)


def test_bo_without_the_stop_rule_extends_the_fig11_search():
    """Fig. 12's Bayesian optimisation (no stop at the known optimum) evaluates the same
    configurations as Fig. 11's, in the same order, until Fig. 11's stops, then goes on."""
    from infsched.kairos import search_cost
    from infsched.kairos.ranking import configs_of

    t = ex.exhaustive("rm2", "default", variant="_gauss")
    X = configs_of(t)
    v = t["fcfs"].to_numpy(float)
    longer = 0
    for seed in range(5):
        stopped = list(search.bayes_opt_search(X, search.Objective(v, X), seed=seed).values)
        going = search_cost.bo_evaluations(X, v, seed=seed, evaluations=20)
        assert going[:min(20, len(stopped))] == stopped[:20]
        assert len(going) == 20
        longer += len(stopped) < 20
    assert longer > 0        # the comparison above covers evaluations past Fig. 11's stop


def test_fig12_evaluated_keeps_the_best_after_a_search_ends():
    from infsched.kairos import search_cost

    t = ex.exhaustive("rm2", "default", variant="_gauss")
    e = search_cost.fig12_evaluated(t, seeds=2, evaluations=20)
    kp = e[e["scheme"] == "KAIROS+"].sort_values("evaluation")
    done = kp[~kp["searching"]]
    assert len(done) > 0 and (done["throughput"] == kp["throughput"].max()).all()
    k = e[e["scheme"] == "KAIROS"]["throughput"]
    assert k.nunique() == 1 and len(k) == 20
