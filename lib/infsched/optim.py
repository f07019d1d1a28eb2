"""Thin wrappers over scipy's HiGHS and cvxpy: LPs and MILPs with clear failures.

Every chapter solves its linear programs through these two functions so that

- inputs are validated once (a :class:`~infsched.errors.ConfigError` names the argument),
- an infeasible or unbounded model raises :class:`~infsched.errors.InfeasibleError` whose
  message starts with the model's ``name``,
- any other solver failure raises ``RuntimeError`` carrying the solver's own message.

No simplex or branch-and-bound is written here: the LP goes to
``scipy.optimize.linprog(method="highs")`` (or cvxpy + HiGHS as a cross-check) and the MILP to
``scipy.optimize.milp`` (HiGHS). Conventions follow scipy: minimise ``c @ x`` subject to
``A_ub @ x <= b_ub``, ``A_eq @ x == b_eq`` and ``bounds``; the default bound is ``0 <= x``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from infsched.errors import InfeasibleError, config_error, one_of, require

#: LP backends accepted by :func:`solve_lp`.
LP_BACKENDS = ("highs", "cvxpy")


@dataclass(frozen=True, eq=False)
class LPSolution:
    """An optimal LP point ``x`` and its objective value ``c @ x``."""

    x: np.ndarray
    objective: float


@dataclass(frozen=True, eq=False)
class MILPSolution:
    """A MILP answer.

    ``optimal`` is False when a time limit stopped HiGHS with an incumbent; ``gap`` is then
    HiGHS's relative MIP gap (0 for a proven optimum, up to ``mip_rel_gap`` if one was given).
    ``status`` is ``"optimal"`` or ``"time_limit"``.
    """

    x: np.ndarray
    objective: float
    optimal: bool
    gap: float
    status: str


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------

def _vector(name: str, value: Any, length: int | None = None) -> np.ndarray:
    """A finite 1-D float array, optionally of a given length."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise config_error(name, value, "must be a 1-D array of numbers") from None
    require(arr.ndim == 1, name, value, f"must be 1-D (got shape {arr.shape})")
    if length is not None:
        require(arr.shape[0] == length, name, value,
                f"must have length {length} (got {arr.shape[0]})")
    require(bool(np.all(np.isfinite(arr))), name, value, "must hold finite numbers")
    return arr


def _matrix(name: str, value: Any, n: int) -> np.ndarray | sp.csr_matrix:
    """A finite 2-D matrix with ``n`` columns, dense or scipy.sparse (kept sparse)."""
    if sp.issparse(value):
        mat = sp.csr_matrix(value, dtype=float)
        finite = bool(np.all(np.isfinite(mat.data)))
    else:
        try:
            mat = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise config_error(name, value, "must be a 2-D array of numbers") from None
        if mat.ndim == 1 and n >= 1 and mat.shape[0] == n:
            mat = mat.reshape(1, n)  # one constraint row given as a flat vector
        finite = bool(np.all(np.isfinite(mat)))
    require(mat.ndim == 2, name, f"<array of shape {mat.shape}>", "must be a 2-D matrix")
    require(mat.shape[1] == n, name, f"<matrix of shape {mat.shape}>",
            f"must have {n} columns, one per variable (len(c) = {n})")
    require(finite, name, "<matrix>", "must hold finite numbers")
    return mat


def _constraint_pair(a_name: str, A: Any, b_name: str, b: Any, n: int):
    """Validate ``A x (<=|==) b``; both or neither must be given."""
    if A is None and b is None:
        return None, None
    require(A is not None and b is not None, f"{a_name}/{b_name}", (A is None, b is None),
            f"{a_name} and {b_name} must be given together")
    mat = _matrix(a_name, A, n)
    vec = _vector(b_name, b, mat.shape[0])
    return mat, vec


def _bounds(bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalise scipy-style bounds to (lower, upper) arrays with ±inf for None.

    Accepts None (scipy's default ``0 <= x``), one ``(lo, hi)`` pair for every variable, or a
    sequence of ``n`` pairs.
    """
    if bounds is None:
        return np.zeros(n), np.full(n, np.inf)

    def one(pair: Any) -> tuple[float, float]:
        try:
            lo, hi = pair
        except (TypeError, ValueError):
            raise config_error("bounds", bounds,
                               "must be None, one (lo, hi) pair or a sequence of pairs") from None
        lo_f = -math.inf if lo is None else float(lo)
        hi_f = math.inf if hi is None else float(hi)
        require(not (math.isnan(lo_f) or math.isnan(hi_f)), "bounds", bounds, "must not be NaN")
        require(lo_f <= hi_f, "bounds", bounds, f"need lo <= hi (got {lo_f} > {hi_f})")
        return lo_f, hi_f

    if isinstance(bounds, tuple) and len(bounds) == 2 and all(
            b is None or np.isscalar(b) for b in bounds):
        lo, hi = one(bounds)
        return np.full(n, lo), np.full(n, hi)
    pairs = list(bounds)
    require(len(pairs) == n, "bounds", bounds, f"must hold {n} (lo, hi) pairs, one per variable")
    lohi = np.array([one(p) for p in pairs], dtype=float).reshape(n, 2)
    return lohi[:, 0], lohi[:, 1]


# --------------------------------------------------------------------------------------------
# LP
# --------------------------------------------------------------------------------------------

def _standard_form(c, A_ub, b_ub, A_eq, b_eq, bounds):
    """Validate and convert an LP/MILP's data; ConfigError names the offending argument."""
    c_arr = _vector("c", c)
    n = c_arr.shape[0]
    require(n >= 1, "c", c, "must have at least one entry")
    A_ub_m, b_ub_v = _constraint_pair("A_ub", A_ub, "b_ub", b_ub, n)
    A_eq_m, b_eq_v = _constraint_pair("A_eq", A_eq, "b_eq", b_eq, n)
    lo, hi = _bounds(bounds, n)
    return c_arr, A_ub_m, b_ub_v, A_eq_m, b_eq_v, lo, hi


def solve_lp(c: Sequence[float] | np.ndarray, *, A_ub: Any = None, b_ub: Any = None,
             A_eq: Any = None, b_eq: Any = None, bounds: Any = None,
             backend: str = "highs", name: str = "LP") -> LPSolution:
    """Minimise ``c @ x`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``bounds``.

    ``backend="highs"`` calls ``scipy.optimize.linprog(method="highs")``; ``"cvxpy"`` builds
    the same model in cvxpy and solves it with HiGHS (slower; a cross-check).

    Raises ``InfeasibleError`` (message starts with ``name``) when the LP is infeasible or
    unbounded, ``RuntimeError`` for any other solver failure, ``ConfigError`` for bad input.
    """
    one_of("backend", backend, LP_BACKENDS)
    c_arr, A_ub_m, b_ub_v, A_eq_m, b_eq_v, lo, hi = _standard_form(c, A_ub, b_ub, A_eq, b_eq, bounds)
    if backend == "highs":
        return _lp_highs(c_arr, A_ub_m, b_ub_v, A_eq_m, b_eq_v, lo, hi, name)
    return _lp_cvxpy(c_arr, A_ub_m, b_ub_v, A_eq_m, b_eq_v, lo, hi, name)


def _lp_highs(c, A_ub, b_ub, A_eq, b_eq, lo, hi, name) -> LPSolution:
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                  bounds=list(zip(_none_if_inf(lo), _none_if_inf(hi))), method="highs")
    if res.status == 0:
        return LPSolution(x=np.asarray(res.x, dtype=float), objective=float(res.fun))
    if res.status == 2:
        raise InfeasibleError(f"{name} is infeasible: {res.message}")
    if res.status == 3:
        raise InfeasibleError(f"{name} is unbounded: {res.message}")
    raise RuntimeError(f"{name}: HiGHS failed (status {res.status}): {res.message}")


def _none_if_inf(v: np.ndarray) -> list[float | None]:
    """linprog wants None for an absent bound."""
    return [None if math.isinf(x) else float(x) for x in v]


def _lp_cvxpy(c, A_ub, b_ub, A_eq, b_eq, lo, hi, name) -> LPSolution:
    import cvxpy as cp  # imported lazily: cvxpy is a cross-check, slow to import

    x = cp.Variable(c.shape[0])
    cons = []
    if A_ub is not None:
        cons.append(A_ub @ x <= b_ub)
    if A_eq is not None:
        cons.append(A_eq @ x == b_eq)
    fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)
    if fin_lo.any():
        cons.append(x[np.flatnonzero(fin_lo)] >= lo[fin_lo])
    if fin_hi.any():
        cons.append(x[np.flatnonzero(fin_hi)] <= hi[fin_hi])
    prob = cp.Problem(cp.Minimize(c @ x), cons)
    try:
        prob.solve(solver=cp.HIGHS)
    except cp.error.SolverError as exc:
        raise RuntimeError(f"{name}: cvxpy/HiGHS failed: {exc}") from exc
    status = prob.status
    if status == cp.OPTIMAL:
        return LPSolution(x=np.asarray(x.value, dtype=float), objective=float(prob.value))
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InfeasibleError(f"{name} is infeasible: cvxpy status {status}")
    if status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        raise InfeasibleError(f"{name} is unbounded: cvxpy status {status}")
    raise RuntimeError(f"{name}: cvxpy/HiGHS did not solve it (status {status})")


# --------------------------------------------------------------------------------------------
# MILP
# --------------------------------------------------------------------------------------------

def solve_milp(c: Sequence[float] | np.ndarray, *, A_ub: Any = None, b_ub: Any = None,
               A_eq: Any = None, b_eq: Any = None, bounds: Any = None,
               integrality: Any = None, time_limit: float | None = None,
               node_limit: int | None = None, mip_rel_gap: float | None = None,
               name: str = "MILP") -> MILPSolution:
    """Minimise ``c @ x`` with some variables integer, via ``scipy.optimize.milp`` (HiGHS).

    ``integrality``: None (all continuous), a scalar for every variable, or one entry per
    variable (0 continuous, 1 integer, as in scipy). Matrices may be scipy.sparse.

    When ``time_limit`` (seconds) or ``node_limit`` (branch-and-bound nodes: a count of work, so
    the result does not depend on the machine's load; presolve and the root are not limited)
    stops the search with an incumbent, the incumbent comes back with ``optimal=False`` and
    HiGHS's relative gap; with no incumbent, ``RuntimeError``.
    Infeasible or unbounded models raise ``InfeasibleError``.
    """
    c_arr, A_ub_m, b_ub_v, A_eq_m, b_eq_v, lo, hi = _standard_form(c, A_ub, b_ub, A_eq, b_eq, bounds)
    n = c_arr.shape[0]
    if integrality is None:
        integ = np.zeros(n, dtype=int)
    else:
        integ = np.broadcast_to(np.asarray(integrality), (n,)) if np.ndim(integrality) == 0 \
            else np.asarray(integrality)
        require(integ.shape == (n,), "integrality", integrality,
                f"must be a scalar or have length {n}")
        require(bool(np.all(np.isin(integ, (0, 1, 2, 3)))), "integrality", integrality,
                "entries must be 0 (continuous), 1 (integer), 2 or 3 (semi-), as in scipy")
        integ = integ.astype(int)
    options: dict[str, Any] = {"disp": False}
    if time_limit is not None:
        require(isinstance(time_limit, (int, float)) and time_limit > 0, "time_limit",
                time_limit, "must be a positive number of seconds")
        options["time_limit"] = float(time_limit)
    if node_limit is not None:
        require(isinstance(node_limit, (int, np.integer)) and not isinstance(node_limit, bool)
                and node_limit >= 1, "node_limit", node_limit, "must be a positive integer")
        options["node_limit"] = int(node_limit)
    if mip_rel_gap is not None:
        require(isinstance(mip_rel_gap, (int, float)) and mip_rel_gap >= 0, "mip_rel_gap",
                mip_rel_gap, "must be a non-negative number")
        options["mip_rel_gap"] = float(mip_rel_gap)

    constraints = []
    if A_ub_m is not None:
        constraints.append(LinearConstraint(A_ub_m, -np.inf, b_ub_v))
    if A_eq_m is not None:
        constraints.append(LinearConstraint(A_eq_m, b_eq_v, b_eq_v))
    res = milp(c_arr, integrality=integ, bounds=Bounds(lo, hi), constraints=constraints,
               options=options)
    gap = float(getattr(res, "mip_gap", 0.0) or 0.0)
    if res.status == 0:
        return MILPSolution(x=np.asarray(res.x, dtype=float), objective=float(res.fun),
                            optimal=True, gap=gap, status="optimal")
    if res.status == 1:  # iteration or time limit
        if res.x is None:
            raise RuntimeError(f"{name}: the limit was reached with no feasible solution found "
                               f"({res.message})")
        return MILPSolution(x=np.asarray(res.x, dtype=float), objective=float(res.fun),
                            optimal=False, gap=gap, status="time_limit")
    if res.status == 2:
        raise InfeasibleError(f"{name} is infeasible: {res.message}")
    if res.status == 3:
        raise InfeasibleError(f"{name} is unbounded: {res.message}")
    raise RuntimeError(f"{name}: HiGHS failed (status {res.status}): {res.message}")
