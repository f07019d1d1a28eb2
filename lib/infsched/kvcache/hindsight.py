"""The hindsight-optimal schedule: the integer program of Section 3 and its LP relaxation.

Variables ``x[i, t] ∈ {0, 1}``: request ``i`` starts at round ``t``. Minimise
``Σ_i Σ_t t·x[i, t] + Σ_i (o_i − a_i)`` (objective 1) subject to one start per request (2) and,
at every round ``τ``, ``Σ_{i, k < τ ≤ k + o_i} (s_i + τ − k)·x[i, k] ≤ M`` (3).

The paper's horizon ``Σ_i (a_i + o_i)`` makes the model ``n`` times too long. Any feasible
schedule bounds the optimum: with ``U`` its latency, every optimal schedule has
``c_i − a_i ≤ U − Σ_{j≠i} o_j``, so ``p_i ≤ a_i + W`` with ``W = U − Σ_j o_j`` (the total waiting
time of that schedule). We take MC-SF's schedule, give each request the window
``[a_i, a_i + W]`` and end the horizon at ``max_i(a_i + W + o_i)``: the model stays exact and is
far smaller (spec §2.2). The matrices are built with ``scipy.sparse`` and solved by HiGHS through
:func:`infsched.optim.solve_milp` with a time limit; a result says whether the optimum was
certified, and with what gap if not.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from infsched.errors import require
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.optim import solve_lp, solve_milp

__all__ = ["HindsightModel", "HindsightResult", "build_model", "solve_hindsight", "lp_bound"]


@dataclass(frozen=True, eq=False)
class HindsightModel:
    """The sparse program: variable ``v`` is request ``var_request[v]`` starting at
    ``var_start[v]``; ``cost`` is objective (1) without its constant ``offset``."""

    inst: Instance
    var_request: np.ndarray
    var_start: np.ndarray
    cost: np.ndarray
    offset: float
    A_eq: sp.csr_matrix
    A_mem: sp.csr_matrix
    window: int
    horizon: int

    @property
    def n_vars(self) -> int:
        return int(self.var_request.size)

    def starts(self, x: np.ndarray) -> np.ndarray:
        """Start rounds from a 0/1 solution (the largest entry per request, so a solver's
        ``0.9999…`` reads as 1)."""
        p = np.full(self.inst.n, -1, dtype=np.int64)
        best = np.full(self.inst.n, -np.inf)
        for v in np.argsort(x):                      # ascending: the largest written last
            i = self.var_request[v]
            if x[v] >= best[i]:
                best[i], p[i] = x[v], self.var_start[v]
        return p


@dataclass(frozen=True)
class HindsightResult:
    """``objective``: the best TEL found (the optimum when ``certified``), ``starts`` its schedule,
    ``lower_bound`` HiGHS's bound (equal to ``objective`` when certified), ``gap`` the relative gap,
    ``seconds`` wall time, ``n_vars`` the model size."""

    objective: float
    starts: np.ndarray
    certified: bool
    lower_bound: float
    gap: float
    seconds: float
    n_vars: int


def build_model(inst: Instance, upper_starts: np.ndarray | None = None) -> HindsightModel:
    """Objective (1) and constraints (2)–(3) over the windows of a feasible schedule
    (``upper_starts``; MC-SF's when omitted)."""
    if upper_starts is None:
        upper_starts = mc_sf(inst)
    upper = check_schedule(inst, upper_starts).require()
    a, s, o = inst.arrival, inst.prompt, inst.output
    W = int(round(upper.tel - o.sum()))
    horizon = int((a + W + o).max())
    width = W + 1
    var_request = np.repeat(np.arange(inst.n), width)
    var_start = (a[:, None] + np.arange(width)[None, :]).ravel()
    n_vars = var_request.size
    A_eq = sp.csr_matrix((np.ones(n_vars), (var_request, np.arange(n_vars))),
                         shape=(inst.n, n_vars))
    # constraint (3): variable v adds s + (τ − k) at rounds τ = k + 1 .. k + o
    per = o[var_request]
    rows = np.repeat(var_start, per) + _ramps(per)
    cols = np.repeat(np.arange(n_vars), per)
    vals = np.repeat(s[var_request], per) + _ramps(per)
    A_mem = sp.csr_matrix((vals.astype(float), (rows - 1, cols)), shape=(horizon, n_vars))
    return HindsightModel(inst, var_request, var_start, var_start.astype(float),
                          float(np.sum(o - a)), A_eq, A_mem, W, horizon)


def _ramps(lengths: np.ndarray) -> np.ndarray:
    """``1..L`` for each length ``L``, concatenated."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total) - starts + 1


@contextlib.contextmanager
def _quiet_stdout():
    """HiGHS's MIP solver prints some diagnostics from C whatever its log settings
    ("HighsMipSolverData::transformNewIntegerFeasibleSolution ..."); they would flood a chapter's
    build log, so file descriptor 1 points at /dev/null while it runs."""
    fd = 1
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def solve_hindsight(inst: Instance, *, time_limit: float = 20.0) -> HindsightResult:
    """The hindsight optimum by HiGHS, stopped after ``time_limit`` seconds.

    Uncertified results keep the better of HiGHS's incumbent and MC-SF's schedule (so the
    objective never exceeds TEL(MC-SF)) with a lower bound beside it: HiGHS's, or the LP
    relaxation's where HiGHS stopped without a positive one. Every schedule returned has passed
    :func:`~infsched.kvcache.model.check_schedule`.
    """
    require(isinstance(time_limit, (int, float)) and time_limit > 0, "time_limit", time_limit,
            "must be a positive number of seconds")
    t0 = time.perf_counter()
    upper_starts = mc_sf(inst)
    model = build_model(inst, upper_starts)
    upper_tel = check_schedule(inst, upper_starts).tel
    try:
        with _quiet_stdout():
            sol = solve_milp(model.cost, A_ub=model.A_mem, b_ub=np.full(model.horizon, float(inst.M)),
                             A_eq=model.A_eq, b_eq=np.ones(inst.n), bounds=(0, 1),
                             integrality=1, time_limit=float(time_limit), name="hindsight IP")
    except RuntimeError:                              # the limit hit before any incumbent
        bound = lp_bound(inst, model)
        return HindsightResult(upper_tel, upper_starts, False, bound,
                               (upper_tel - bound) / upper_tel, time.perf_counter() - t0,
                               model.n_vars)
    starts = model.starts(sol.x)
    tel = check_schedule(inst, starts).require().tel
    lower = tel if sol.optimal else tel * (1.0 - sol.gap)
    if not sol.optimal and not 0.0 < sol.gap < 1.0:
        # stopped before HiGHS had a dual bound above zero (a gap of 100 %, or none reported, as
        # on the paper-sized programs at a minute): the LP relaxation's bound instead
        lower = lp_bound(inst, model)
    if not sol.optimal and upper_tel < tel:
        starts, tel = upper_starts, upper_tel
    return HindsightResult(tel, starts, bool(sol.optimal), float(lower),
                           0.0 if sol.optimal else (tel - lower) / tel,
                           time.perf_counter() - t0, model.n_vars)


def lp_bound(inst: Instance, model: HindsightModel | None = None) -> float:
    """The LP relaxation of the windowed program: a lower bound on the optimum (the optimal
    schedule lies in the windows, so it is feasible for the relaxation)."""
    model = build_model(inst) if model is None else model
    sol = solve_lp(model.cost, A_ub=model.A_mem, b_ub=np.full(model.horizon, float(inst.M)),
                   A_eq=model.A_eq, b_eq=np.ones(inst.n), bounds=(0, 1), name="hindsight LP")
    return float(sol.objective + model.offset)
