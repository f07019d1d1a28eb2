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

Two solvers sit behind :func:`solve_hindsight`: HiGHS on this program (``solver="highs"``, exact
on small instances, stopped by a node or time limit) and CP-SAT on the same model written with a
cumulative constraint (``solver="cpsat"``, :mod:`infsched.kvcache.cpsat`, stopped by deterministic
work), which reaches the paper's sizes. Either way the result carries the best schedule found,
checked by :func:`~infsched.kvcache.model.check_schedule`, and the best of several lower bounds:
the solver's own, the LP relaxation (:func:`lp_bound`) and the area bound of
:func:`infsched.kvcache.bounds.volume_bound`.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from infsched.errors import one_of, require
from infsched.kvcache.bounds import volume_bound
from infsched.kvcache.improve import improve_schedule
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.optim import solve_lp, solve_milp

__all__ = ["SOLVERS", "HindsightModel", "HindsightResult", "build_model", "solve_hindsight",
           "lp_bound", "window_of"]

#: the solvers :func:`solve_hindsight` can use ("local": the local search alone, no exact solver)
SOLVERS = ("highs", "cpsat", "local")
#: with ``lp="auto"`` the LP relaxation is solved when the windowed program has at most this many
#: variables (a rule on the instance, not on time: about a second of HiGHS here)
LP_AUTO_VARS = 50_000


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
    """``objective``: the best TEL found (the optimum when ``certified``), ``starts`` its schedule
    (checked), ``lower_bound`` the best lower bound on the optimum (equal to ``objective`` when
    certified), ``gap`` ``(objective − lower_bound) / objective``, ``seconds`` wall time (for
    information only: no result depends on it unless a ``time_limit`` was given), ``n_vars`` the
    windowed program's size; ``solver``, ``bounds`` (every lower bound computed, by source),
    ``bound_source`` (the one that is best), ``work`` (CP-SAT's deterministic time, or NaN) and
    ``cpu_seconds`` (the CP-SAT process's CPU time, or NaN), ``hint_objective`` (TEL of the
    schedule the solver started from: MC-SF's, improved by local search)."""

    objective: float
    starts: np.ndarray
    certified: bool
    lower_bound: float
    gap: float
    seconds: float
    n_vars: int
    solver: str = "highs"
    bounds: dict = field(default_factory=dict)
    bound_source: str = ""
    work: float = math.nan
    cpu_seconds: float = math.nan
    hint_objective: float = math.nan


def window_of(inst: Instance, upper_starts: np.ndarray) -> int:
    """``W``: the total waiting time of the feasible schedule ``upper_starts``; every optimal
    schedule starts each request within ``W`` rounds of its arrival (module docstring)."""
    upper = check_schedule(inst, upper_starts).require()
    return int(round(upper.tel - inst.output.sum()))


def build_model(inst: Instance, upper_starts: np.ndarray | None = None) -> HindsightModel:
    """Objective (1) and constraints (2)–(3) over the windows of a feasible schedule
    (``upper_starts``; MC-SF's when omitted)."""
    if upper_starts is None:
        upper_starts = mc_sf(inst)
    a, s, o = inst.arrival, inst.prompt, inst.output
    W = window_of(inst, upper_starts)
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


def solve_hindsight(inst: Instance, *, solver: str = "highs", time_limit: float | None = None,
                    node_limit: int | None = None, effort: float = 1.0, workers: int = 1,
                    seed: int = 0, portfolio_share: float = 0.2, local_search: int = 20_000,
                    lp: bool | str = "auto") -> HindsightResult:
    """The hindsight optimum, or the best schedule and lower bound within a budget.

    ``solver="highs"``: HiGHS on the windowed program, stopped after ``node_limit`` nodes (a
    count of work, so the answer does not depend on the machine's load) or ``time_limit``
    seconds (wall clock: for benchmarks, never for a number a test or verdict reads); with
    neither it runs until the optimum is proven. ``solver="cpsat"``: CP-SAT with ``effort``
    units of deterministic time, ``workers`` interleaved workers and ``seed``, the first
    ``portfolio_share`` of it on CP-SAT's full portfolio (which proves small optima) and the rest
    on large-neighbourhood search (which improves large schedules; ``0`` for LNS alone), in a
    separate process (:mod:`infsched.kvcache.cpsat` says what this guarantees).

    Before either solver, :func:`~infsched.kvcache.improve.improve_schedule` searches MC-SF's
    schedule's neighbourhood for up to ``local_search`` schedules (0: not at all); the best
    schedule so far (``hint_objective``) gives both the solver's hint and the window of the
    program. Every result keeps the better of the solver's schedule and that one (so the
    objective never exceeds TEL(MC-SF)), checked by
    :func:`~infsched.kvcache.model.check_schedule`. The lower
    bound is the best of the solver's, the area bound and, with ``lp=True`` (or ``"auto"`` on
    programs of at most :data:`LP_AUTO_VARS` variables), the LP relaxation. ``certified`` means
    the best schedule meets that bound (after rounding it up: TEL is an integer).
    """
    one_of("solver", solver, SOLVERS)
    if time_limit is not None:
        require(isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool)
                and math.isfinite(time_limit) and time_limit > 0, "time_limit", time_limit,
                "must be a positive number of seconds (or None)")
    if node_limit is not None:
        require(isinstance(node_limit, (int, np.integer)) and not isinstance(node_limit, bool)
                and node_limit >= 1, "node_limit", node_limit, "must be a positive integer (or None)")
    require(isinstance(effort, (int, float)) and not isinstance(effort, bool)
            and math.isfinite(effort) and effort > 0, "effort", effort,
            "must be a positive number of CP-SAT deterministic-time units")
    require(isinstance(workers, (int, np.integer)) and not isinstance(workers, bool)
            and 1 <= workers <= 64, "workers", workers, "must be an integer in [1, 64]")
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0,
            "seed", seed, "must be an integer >= 0")
    require(isinstance(portfolio_share, (int, float)) and not isinstance(portfolio_share, bool)
            and 0 <= portfolio_share <= 1, "portfolio_share", portfolio_share,
            "must be a number in [0, 1]")
    require(lp in (True, False, "auto"), "lp", lp, "must be True, False or 'auto'")
    require(isinstance(local_search, (int, np.integer)) and not isinstance(local_search, bool)
            and local_search >= 0, "local_search", local_search,
            "must be an integer >= 0 (schedules the local search may build)")
    if solver != "highs":
        require(time_limit is None and node_limit is None, "time_limit/node_limit",
                (time_limit, node_limit), "apply to solver='highs' only")
    t0 = time.perf_counter()
    upper_starts = mc_sf(inst)
    if local_search:
        upper_starts, _ = improve_schedule(inst, upper_starts, max_evals=int(local_search))
    upper_tel = check_schedule(inst, upper_starts).require().tel
    W = window_of(inst, upper_starts)
    n_vars = int(inst.n * (W + 1))
    model = build_model(inst, upper_starts) if solver == "highs" else None
    bounds = {"area": volume_bound(inst)}
    work = cpu = math.nan
    if solver == "highs":
        starts, status, solver_bound = _solve_highs(inst, model, time_limit, node_limit)
    elif solver == "local":
        starts, status, solver_bound = upper_starts, "stopped", None
    else:
        out = _run_cpsat(a=inst.arrival, s=inst.prompt, o=inst.output, M=inst.M,
                         hint=upper_starts, window=W, effort=float(effort), workers=int(workers),
                         seed=int(seed), share_prove=float(portfolio_share))
        starts, status, work = out["starts"], out["status"].lower(), out["work"]
        cpu = out["cpu_seconds"]
        solver_bound = out["bound"] + float(np.sum(inst.output - inst.arrival))
    if starts is None:
        starts, tel = upper_starts, upper_tel
    else:
        tel = check_schedule(inst, starts).require().tel
        if tel > upper_tel:
            starts, tel = upper_starts, upper_tel
    if status == "optimal":
        bounds[solver] = tel
    elif solver_bound is not None and math.isfinite(solver_bound):
        bounds[solver] = float(solver_bound)
    if lp is True or (lp == "auto" and n_vars <= LP_AUTO_VARS and status != "optimal"):
        bounds["lp"] = lp_bound(inst, model if model is not None else build_model(inst, upper_starts))
    source = max(bounds, key=bounds.get)
    lower = min(bounds[source], tel)
    certified = math.ceil(lower - 1e-6) >= tel
    return HindsightResult(float(tel), np.asarray(starts), bool(certified), float(lower),
                           0.0 if certified else (tel - lower) / tel,
                           time.perf_counter() - t0, n_vars, solver, bounds, source, work, cpu,
                           float(upper_tel))


def _solve_highs(inst: Instance, model: HindsightModel, time_limit, node_limit):
    """HiGHS on the windowed program: (starts or None, "optimal"/"stopped", bound or None)."""
    try:
        with _quiet_stdout():
            sol = solve_milp(model.cost, A_ub=model.A_mem, b_ub=np.full(model.horizon, float(inst.M)),
                             A_eq=model.A_eq, b_eq=np.ones(inst.n), bounds=(0, 1),
                             integrality=1, time_limit=time_limit, node_limit=node_limit,
                             name="hindsight IP")
    except RuntimeError:                              # the limit hit before any incumbent
        return None, "stopped", None
    starts = model.starts(sol.x)
    if sol.optimal:
        return starts, "optimal", None
    # HiGHS's dual bound from its incumbent and gap; none when it stopped before a bound above
    # zero (a gap of 100 %, or none reported, as on paper-size programs)
    bound = (sol.objective + model.offset) * (1.0 - sol.gap) if 0.0 < sol.gap < 1.0 else None
    return starts, "stopped", bound


class _CpsatProcess:
    """CP-SAT in one long-lived child process (``python -m infsched.kvcache.cpsat``): OR-Tools
    and highspy cannot be loaded together, and the calling process may hold highspy (through
    cvxpy) now or later. Requests and results are pickled over the child's stdin and stdout; the
    child exits when its stdin closes, so it never outlives its parent. A plain subprocess rather
    than ``multiprocessing``, so that scripts without a ``__main__`` guard work too."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        lib = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [lib] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        return subprocess.Popen([sys.executable, "-m", "infsched.kvcache.cpsat"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def call(self, kw: dict) -> dict:
        with self.lock:
            for attempt in (0, 1):
                if self.proc is None or self.proc.poll() is not None:
                    self.proc = self._start()
                try:
                    pickle.dump(kw, self.proc.stdin)
                    self.proc.stdin.flush()
                    kind, value = pickle.load(self.proc.stdout)
                    break
                except (BrokenPipeError, EOFError):     # the child died (killed, out of memory)
                    self.proc = None
                    if attempt:
                        raise RuntimeError("the CP-SAT process died twice in a row") from None
        if kind == "error":
            raise RuntimeError(f"CP-SAT failed: {value}")
        return value


_CPSAT = _CpsatProcess()


def _run_cpsat(**kw) -> dict:
    return _CPSAT.call(kw)


def lp_bound(inst: Instance, model: HindsightModel | None = None) -> float:
    """The LP relaxation of the windowed program: a lower bound on the optimum (the optimal
    schedule lies in the windows, so it is feasible for the relaxation)."""
    model = build_model(inst) if model is None else model
    sol = solve_lp(model.cost, A_ub=model.A_mem, b_ub=np.full(model.horizon, float(inst.M)),
                   A_eq=model.A_eq, b_eq=np.ones(inst.n), bounds=(0, 1), name="hindsight LP")
    return float(sol.objective + model.offset)
