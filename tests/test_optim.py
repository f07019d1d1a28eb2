"""infsched.optim: LP/MILP wrappers give known optima and fail clearly."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from infsched.errors import ConfigError, InfeasibleError
from infsched.optim import LPSolution, MILPSolution, solve_lp, solve_milp

# max x + 2y  s.t.  x + y <= 4,  x + 3y <= 6,  0 <= x <= 3,  y >= 0   ->  (3, 1), value 5
LP = dict(c=[-1.0, -2.0], A_ub=[[1.0, 1.0], [1.0, 3.0]], b_ub=[4.0, 6.0],
          bounds=[(0, 3), (0, None)])


@pytest.mark.parametrize("backend", ["highs", "cvxpy"])
def test_small_lp_known_optimum(backend):
    sol = solve_lp(LP["c"], A_ub=LP["A_ub"], b_ub=LP["b_ub"], bounds=LP["bounds"],
                   backend=backend)
    assert isinstance(sol, LPSolution)
    assert sol.objective == pytest.approx(-5.0, abs=1e-7)
    np.testing.assert_allclose(sol.x, [3.0, 1.0], atol=1e-7)


def test_backends_agree_with_equalities_and_default_bounds():
    # min x0 + 2 x1 + 4 x2  s.t.  x0 + x1 + x2 = 1,  x0 - x2 <= 0.2, default x >= 0
    kw = dict(A_ub=[[1.0, 0.0, -1.0]], b_ub=[0.2], A_eq=[[1.0, 1.0, 1.0]], b_eq=[1.0])
    a = solve_lp([1.0, 2.0, 4.0], backend="highs", **kw)
    b = solve_lp([1.0, 2.0, 4.0], backend="cvxpy", **kw)
    assert a.objective == pytest.approx(b.objective, abs=1e-7)
    np.testing.assert_allclose(a.x, b.x, atol=1e-7)
    # The cheapest split keeps x0 - x2 = 0.2 with x1 as large as needed: x = (0.2, 0.8, 0).
    np.testing.assert_allclose(a.x, [0.2, 0.8, 0.0], atol=1e-9)


@pytest.mark.parametrize("backend", ["highs", "cvxpy"])
def test_infeasible_lp_names_the_model(backend):
    with pytest.raises(InfeasibleError, match="my toy LP is infeasible"):
        solve_lp([1.0], A_ub=[[1.0]], b_ub=[-1.0], backend=backend, name="my toy LP")


@pytest.mark.parametrize("backend", ["highs", "cvxpy"])
def test_unbounded_lp(backend):
    with pytest.raises(InfeasibleError, match="unbounded"):
        solve_lp([-1.0], bounds=[(0, None)], backend=backend)


def test_bad_backend_lists_the_allowed_ones():
    with pytest.raises(ConfigError, match="highs"):
        solve_lp([1.0], backend="simplex")


@pytest.mark.parametrize("kwargs, argname", [
    (dict(A_ub=[[1.0, 1.0, 1.0]], b_ub=[1.0]), "A_ub"),     # wrong number of columns
    (dict(A_ub=[[1.0, 1.0]], b_ub=[1.0, 2.0]), "b_ub"),     # wrong length
    (dict(A_eq=[[1.0, 1.0]]), "A_eq"),                      # b_eq missing
    (dict(bounds=[(0, 1)]), "bounds"),                      # one pair for two variables
    (dict(bounds=[(2, 1), (0, 1)]), "bounds"),              # lo > hi
])
def test_shapes_are_validated(kwargs, argname):
    with pytest.raises(ConfigError, match=argname):
        solve_lp([1.0, 1.0], **kwargs)


def test_nonfinite_cost_rejected():
    with pytest.raises(ConfigError, match="c"):
        solve_lp([1.0, np.nan])


# 0/1 knapsack: values (10, 13, 7, 8), weights (5, 6, 3, 4), capacity 10.
# Best is items 2 and 4 (value 21); the LP relaxation would reach 22, so integrality matters.
VALUES = np.array([10.0, 13.0, 7.0, 8.0])
WEIGHTS = np.array([[5.0, 6.0, 3.0, 4.0]])


@pytest.mark.parametrize("sparse", [False, True])
def test_knapsack_milp(sparse):
    A = sp.csr_matrix(WEIGHTS) if sparse else WEIGHTS
    sol = solve_milp(-VALUES, A_ub=A, b_ub=[10.0], bounds=(0, 1), integrality=1)
    assert isinstance(sol, MILPSolution)
    assert sol.optimal and sol.status == "optimal"
    assert sol.objective == pytest.approx(-21.0, abs=1e-9)
    np.testing.assert_allclose(sol.x, [0, 1, 0, 1], atol=1e-9)
    relaxed = solve_lp(-VALUES, A_ub=WEIGHTS, b_ub=[10.0], bounds=(0, 1))
    assert relaxed.objective == pytest.approx(-22.0, abs=1e-9)


def test_infeasible_milp():
    with pytest.raises(InfeasibleError, match="knap is infeasible"):
        solve_milp(-VALUES, A_eq=WEIGHTS, b_eq=[1.0], bounds=(0, 1), integrality=1,
                   name="knap")


def test_milp_argument_checks():
    with pytest.raises(ConfigError, match="time_limit"):
        solve_milp(-VALUES, bounds=(0, 1), time_limit=-1.0)
    with pytest.raises(ConfigError, match="integrality"):
        solve_milp(-VALUES, bounds=(0, 1), integrality=[1, 1])
