"""A strengthened time-indexed lower bound on the hindsight optimum: columns per (request, start
round) carrying the memory ramp, with three families of valid inequalities, solved by generating
columns and rows in rounds.

**The model** (Section 3, integer program (1)–(3)). ``x[i, k] = 1`` when request ``i`` starts at
round ``k``; it then holds ``d_i(τ) = s_i + τ − k`` tokens at the rounds ``τ = k + 1 … k + o_i``
and completes at ``c_i = k + o_i``, costing ``c_i − a_i`` (objective 1). One start per request
(2), memory at most ``M`` at every round (3). Every optimal schedule starts request ``i`` in the
window ``[a_i, a_i + W]``, ``W`` the total waiting time of any feasible schedule
(:func:`~infsched.kvcache.hindsight.window_of`), and finishes by round
``H* = max_j a_j + Σ_j o_j`` (the lemma below), so the columns ``(i, k)`` with
``a_i ≤ k ≤ min(a_i + W, H* − o_i)`` hold an optimal schedule's incidence vector. Every inequality below is satisfied by the
incidence vector of *every* feasible schedule, so the LP over all the window's columns with all
the rows is a relaxation of the windowed program, and its value (or any valid dual bound of it)
is a lower bound on OPT. Write ``P_i = s_i + o_i`` (request ``i``'s peak) and, for a request
running at ``τ``, ``r_i(τ) = c_i − τ ≥ 0`` (rounds left).

**Lemma (no idle round).** In an optimal schedule every round ``τ`` with
``max_j a_j < τ ≤ max_j c_j`` holds some request, so ``max_j c_j ≤ max_j a_j + Σ_j o_j`` (each
request holds memory at ``o_j`` rounds). *Proof.* If no request holds memory at such a ``τ``, let
``S`` be the requests started at ``τ`` or later (not empty: the last to complete does not hold
memory at ``τ ≤`` its completion, so it starts at ``τ`` or later). The others complete before
``τ``. Every ``j ∈ S`` has ``p_j ≥ τ > a_j``, so starting all of ``S`` one round earlier respects
the arrivals; at each round ``t ≥ τ`` their memory is what it was at ``t + 1`` and nothing else
runs, so (3) still holds, and the total latency drops by ``|S|``: not optimal. ∎ (For Arrival
Model 1, ``H*`` is about a tenth of ``W``.)

**Lemma (growth).** If requests ``S`` all run at round ``τ`` and ``ρ = min_{j∈S} r_j(τ)``, then
``Σ_{j∈S} d_j(τ) + |S|·ρ ≤ M``. *Proof.* At round ``τ + ρ ≤ c_j`` every ``j ∈ S`` still runs
(one completing at ``τ + ρ`` holds its memory at that round: it holds memory at ``p_j + 1 … c_j``)
and holds ``d_j(τ) + ρ`` tokens; constraint (3) at round ``τ + ρ`` bounds their sum by ``M``. ∎

**Family 1, the exclusive phase.** Let ``m_i = min_{j≠i} P_j``. Column ``(i, k)`` is *exclusive*
at a round ``τ`` it runs at when ``d_i(τ) + m_i > M``. *Claim:* in any feasible schedule, if ``i``
is exclusive at ``τ``, no other request running at ``τ`` completes before ``c_i``. *Proof.* A
``j ≠ i`` that completes at ``c_j ∈ [τ, c_i]`` holds ``P_j`` at round ``c_j``, at which ``i`` runs
(``p_i < τ ≤ c_j ≤ c_i``) holding ``d_i(c_j) ≥ d_i(τ)``; so ``P_j + d_i(τ) ≤ M``, against
``d_i(τ) > M − m_i ≥ M − P_j``. ∎ Two consequences, both rows of the LP at every round ``τ``:

- *(1a) at most one request is exclusive*: ``Σ_{(i,k) exclusive at τ} x[i, k] ≤ 1``: two exclusive
  requests running at ``τ`` would each complete strictly after the other.
- *(1b) the exclusive request is charged its peak*: ``Σ_{(i,k) runs at τ} w_{ik}(τ) x[i, k] ≤ M``
  with ``w = P_i`` where ``(i, k)`` is exclusive at ``τ`` and ``w = d_i(τ)`` elsewhere. With no
  exclusive request it is (3). With ``i`` exclusive (only one, by 1a), every other request ``j``
  running at ``τ`` still runs at ``c_i`` (the claim) holding at least ``d_j(τ)``, and ``i`` holds
  ``P_i``, so (3) at round ``c_i`` gives ``P_i + Σ_j d_j(τ) ≤ M``. It replaces (3), which it
  dominates (``P_i ≥ d_i(τ)``).

**Families 2 and 3, time cliques and triples** (rank ``q = 2`` and ``q = 3``; any ``q ≥ 2`` is
valid). For a round ``τ`` and a threshold ``θ`` let ``S_q(τ, θ)`` be the columns running at ``τ``
with ``d + q·r > θ`` and ``(q − 1)·d > M − θ`` (``d, r`` at ``τ``). Then
``Σ_{(i,k) ∈ S_q(τ, θ)} x[i, k] ≤ q − 1``. *Proof.* Columns of one request are never both chosen
(2), so in a schedule the chosen members are distinct requests all running at ``τ``. If ``q`` of
them ran, let ``j*`` be one with the fewest rounds left, ``ρ = r_{j*}``: ``d_{j*} + qρ > θ`` and
the other ``q − 1`` hold ``Σ d > M − θ``, so ``Σ d + qρ > M``, against the growth lemma. ∎ For
``q = 2`` the members pairwise violate ``d_k + d_l + 2·min(r_k, r_l) ≤ M`` (a clique of the
conflict graph at ``τ``: at most one runs); for ``q = 3`` every triple violates the lemma. ``θ``
is kept as ``θ2 = 2θ`` (an integer), which reaches every distinct set: ``d`` and ``r`` are
integers, so only the half-integers between consecutive values matter.

**Column and row generation, and why each round is a valid bound.** The restricted master LP
(RMP) holds some columns (first the best known schedule's, so it is always feasible) and some
rows of families 2–3 (rows 1a–1b at every round some column of the RMP runs at). Its value is *not*
a lower bound: columns outside it may lower it. Every round instead evaluates the Lagrangian
dual function at the RMP's row duals: with ``μ ≥ 0`` on the memory rows (1b), ``λ ≥ 0`` on the
exclusive rows (1a) and ``ν ≥ 0`` on the clique rows,

    ``L(μ, λ, ν) = Σ_i min_{k ∈ window_i} (c_{ik} + Σ_rows mult·coef_{ik}) − M·Σ μ − Σ λ − Σ (q − 1) ν``,

where the ``min`` prices *every* column of the window (vectorised, by prefix sums over rounds).
For any multipliers ``≥ 0`` and any feasible schedule ``x``, ``Σ c x ≥ Σ c x + Σ mult·(Ax − b)``
(each row holds, ``A x ≤ b``) ``≥ L`` (each request picks one column of its window, each at least
the min), so ``L ≤`` OPT whatever the duals are (Lagrangian relaxation; equivalently the RMP
value plus each request's most negative reduced cost, Farley's bound). When no column prices
out negative it equals the LP value over all columns. The bound returned is the best ``L``
over the rounds. Work is limited by counts only: rounds, columns and rows added per round, and
HiGHS's simplex iterations per solve (duals from an unfinished solve still give a valid ``L``).
A last, column-only phase ("polish") adds no rows and deletes none: with the rows fixed, column
generation converges to the LP value over every column and those rows, a relaxation of the full
LP (fewer rows), so that value, which ``L`` then reaches, is a lower bound too.

**Keeping the master small and its duals steady** (none of it touches validity, which rests on
``L`` alone): a clique, memory or exclusive row whose dual has been zero with its slack basic for
``prune`` rounds running is deleted, and so is a column (not the seed schedule's) that has been
nonbasic with a positive reduced cost for ``prune`` rounds; either comes back if separation or
pricing asks for it again (a deleted memory or exclusive row when the master's solution exceeds
its right side at that round; new columns do not bring it back). A deleted row's multiplier is
0 in ``L``, which stays valid. Convergence still means the LP optimum over every column and row:
the master's solution then satisfies every row, deleted or not, and its duals, 0 on the deleted
rows, price no column out, so the pair is optimal for the whole LP. (On a paper-size trial of
Arrival Model 1 after 150 rounds, 87 of the master's 555 memory rows and none of its 555 exclusive
rows had a nonzero dual, and the memory rows held half the master's nonzeros.) Deleting basic
slacks and nonbasic columns leaves HiGHS's basis valid, so every re-solve is warm. New columns
keep the last basis primal feasible, so they are solved with the primal simplex, and new rows
keep it dual feasible, so they are solved with the dual simplex (two warm solves a round instead
of one solve from a basis that is neither). Pricing also runs at the
smoothed multipliers ``α·(best so far) + (1 − α)·(master's)`` (Wentges' smoothing), which damps
the oscillation of the time-indexed duals; its columns join the master and its ``L`` counts.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance, check_schedule

__all__ = ["TIBoundResult", "clique_members", "horizon_cap", "row_activity", "ti_bound"]


@dataclass(frozen=True)
class TIBoundResult:
    """``bound``: the best Lagrangian value over the rounds (a lower bound on OPT);
    ``history``: the bound after each round; ``lp_value``: the last RMP value (not a bound unless
    ``converged``); ``converged``: no column priced out and no row was violated at the last
    round (``bound`` is then the LP optimum over all columns and rows, up to tolerance);
    ``rounds``, ``columns``, ``cuts``: work done (columns and clique rows in the master at the
    end); ``window``: ``W``; ``cpu``: the process's CPU seconds after each round and
    ``profile``: CPU seconds by step (both for information: nothing depends on them);
    ``mean_start``: each request's start averaged over the last master solution (an order for
    list scheduling); ``clique_rows``: the clique rows ``(τ, q, θ2)`` in the master at the end;
    ``polished``: the column-only phase ended with no column priced out (``bound`` is then the LP
    optimum over every column and the master's rows, up to tolerance)."""

    bound: float
    history: list = field(default_factory=list)
    lp_value: float = math.nan
    converged: bool = False
    rounds: int = 0
    columns: int = 0
    cuts: int = 0
    window: int = 0
    cpu: list = field(default_factory=list)
    profile: dict = field(default_factory=dict)
    mean_start: np.ndarray | None = None
    clique_rows: list = field(default_factory=list)
    polished: bool = False


def horizon_cap(inst: Instance) -> int:
    """``H* = max_j a_j + Σ_j o_j``: every optimal schedule completes every request by ``H*``
    (the no-idle-round lemma of the module docstring)."""
    return int(inst.arrival.max() + inst.output.sum())


def _exclusive_offset(inst: Instance) -> np.ndarray:
    """``e_i``: column ``(i, k)`` is exclusive at its rounds ``k + j`` with ``j > e_i``
    (``s_i + j + m_i > M``), clipped to ``[0, o_i]``; no exclusive phase when ``n = 1``."""
    P = inst.prompt + inst.output
    if inst.n == 1:
        return inst.output.copy()
    order = np.sort(P)
    m = np.where(P == order[0], order[1], order[0])      # min over the others
    return np.clip(inst.M - inst.prompt - m, 0, inst.output).astype(np.int64)


def clique_members(inst: Instance, ci: np.ndarray, ck: np.ndarray, tau: int, q: int,
                   theta2: int) -> np.ndarray:
    """Whether each column ``(ci, ck)`` belongs to ``S_q(τ, θ2/2)`` (module docstring)."""
    s, o, M = inst.prompt[ci], inst.output[ci], inst.M
    run = (ck < tau) & (tau <= ck + o)
    d = s + tau - ck
    r = ck + o - tau
    return run & (2 * (d + q * r) > theta2) & (2 * (q - 1) * d > 2 * M - theta2)


def _cut_intervals(inst: Instance, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For clique rows ``cuts`` (``C × 3``: τ, q, θ2), the starts ``lo[c, i] ≤ k ≤ hi[c, i]``
    of request ``i``'s columns in row ``c`` (:func:`clique_members`' three conditions are each
    an interval of ``k``: running at τ, ``2(d + q r) > θ2`` and ``2(q − 1)d > 2M − θ2`` with
    ``d = s + τ − k``, ``r = k + o − τ``)."""
    s, o = inst.prompt[None, :], inst.output[None, :]
    t, q, t2 = cuts[:, 0:1], cuts[:, 1:2], cuts[:, 2:3]
    q1 = 2 * (q - 1)
    lo = np.maximum(t - o, (t2 - 2 * s - 2 * q * o + q1 * t) // q1 + 1)
    hi = np.minimum(t - 1, -((2 * inst.M - t2 - q1 * (s + t)) // q1) - 1)
    return lo, hi


def row_activity(inst: Instance, starts, qs=(2, 3)) -> dict:
    """The left sides of every row family for a schedule's incidence vector, maximised over
    rounds (and thresholds): ``memory`` (1b, to compare with ``M``), ``exclusive`` (1a, with 1)
    and ``clique_q`` (with ``q − 1``). Used to test that no row cuts off a feasible schedule."""
    p = np.asarray(starts, dtype=np.int64)
    e = _exclusive_offset(inst)
    s, o = inst.prompt, inst.output
    H = int((p + o).max())
    out = {"memory": 0, "exclusive": 0, **{f"clique_{q}": 0 for q in qs}}
    idx = np.arange(inst.n)
    for tau in range(1, H + 1):
        run = (p < tau) & (tau <= p + o)
        if not run.any():
            continue
        j = tau - p
        excl = run & (j > e)
        w = np.where(excl, s + o, s + j)
        out["memory"] = max(out["memory"], int(w[run].sum()))
        out["exclusive"] = max(out["exclusive"], int(excl.sum()))
        d, r = s + j, p + o - tau
        for q in qs:
            cand = np.concatenate([2 * (d + q * r) - 1, 2 * inst.M - 2 * (q - 1) * d + 1])[
                np.concatenate([run, run])]
            for t2 in cand:
                cnt = int(clique_members(inst, idx, p, tau, q, int(t2)).sum())
                out[f"clique_{q}"] = max(out[f"clique_{q}"], cnt)
    return out


class _Master:
    """The restricted master LP in HiGHS (highspy, in process), kept between rounds so each
    re-solve starts from the last basis. Rows: ``n`` assignment rows (= 1), memory rows (1b,
    ≤ M) and exclusive rows (1a, ≤ 1) for the rounds some column runs at, then the clique rows
    (≤ q − 1). Every clique row ever added keeps its index in ``cuts`` (its row is ``-1`` while
    pruned), so multipliers indexed by it stay comparable across rounds."""

    def __init__(self, inst: Instance, H: int, e: np.ndarray, simplex_iters: int):
        import highspy

        self.inst, self.H, self.e = inst, H, e
        self.kBasic = highspy.HighsBasisStatus.kBasic
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        self.h.setOptionValue("simplex_iteration_limit", int(simplex_iters))
        self.h.setOptionValue("presolve", "off")
        self.inf = highspy.kHighsInf
        n = inst.n
        self.h.addRows(n, np.ones(n), np.ones(n), 0, np.zeros(1, np.int32), np.zeros(0, np.int32),
                       np.zeros(0))
        # memory (1b) and exclusive (1a) rows are created for a round when a column first runs
        # at it: rows no column touches hold trivially, and empty rows slow every simplex pass
        self.mem_row = np.full(H + 1, -1, np.int64)
        self.exc_row = np.full(H + 1, -1, np.int64)
        # a pruned memory or exclusive row is not re-created by new columns, only by separation
        # (separate_base), like a clique row; its age counts rounds idle, as for the cuts
        self.mem_gone = np.zeros(H + 1, bool)
        self.exc_gone = np.zeros(H + 1, bool)
        self.mem_age = np.zeros(H + 1, np.int64)
        self.exc_age = np.zeros(H + 1, np.int64)
        self.n_rows = n
        self.ci = np.zeros(0, np.int64)
        self.ck = np.zeros(0, np.int64)
        self.seed = np.zeros(0, bool)
        self.col_age = np.zeros(0, np.int64)
        self.have: set[tuple[int, int]] = set()
        self.cuts: list[tuple[int, int, int]] = []
        self.cut_index: dict[tuple[int, int, int], int] = {}
        self.cut_row = np.zeros(0, np.int64)
        self.cut_age = np.zeros(0, np.int64)
        self.iters = 0

    @property
    def active_cuts(self) -> set:
        return {self.cuts[j] for j in np.flatnonzero(self.cut_row >= 0)}

    def add_columns(self, ci: np.ndarray, ck: np.ndarray, seed: bool = False) -> int:
        inst, e = self.inst, self.e
        keep = list(dict.fromkeys(t for t in zip(ci.tolist(), ck.tolist()) if t not in self.have))
        if not keep:
            return 0
        self.have.update(keep)
        ci = np.array([t[0] for t in keep], np.int64)
        ck = np.array([t[1] for t in keep], np.int64)
        o = inst.output[ci]
        # one entry per (new column, round it runs at): τ = k + j, j = 1..o
        rep = np.repeat(np.arange(ci.size), o)
        j = np.arange(rep.size) - np.repeat(np.cumsum(o) - o, o) + 1
        tau = ck[rep] + j
        for rows, gone, ub in ((self.mem_row, self.mem_gone, float(inst.M)),
                               (self.exc_row, self.exc_gone, 1.0)):
            new = np.unique(tau[(rows[tau] < 0) & ~gone[tau]])
            if new.size:
                self.h.addRows(new.size, np.full(new.size, -self.inf), np.full(new.size, ub), 0,
                               np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0))
                rows[new] = self.n_rows + np.arange(new.size)
                self.n_rows += new.size
        ii = ci[rep]
        excl = j > e[ii]
        w = np.where(excl, inst.prompt[ii] + inst.output[ii], inst.prompt[ii] + j)
        on_m = self.mem_row[tau] >= 0
        on_e = excl & (self.exc_row[tau] >= 0)
        r_idx = [ci, self.mem_row[tau[on_m]], self.exc_row[tau[on_e]]]
        c_idx = [np.arange(ci.size), rep[on_m], rep[on_e]]
        vals = [np.ones(ci.size), w[on_m].astype(float), np.ones(int(on_e.sum()))]
        live = np.flatnonzero(self.cut_row >= 0)
        if live.size:
            lo, hi = _cut_intervals(inst, np.array([self.cuts[c] for c in live], np.int64))
            cc, jj = np.nonzero((lo[:, ci] <= ck[None, :]) & (ck[None, :] <= hi[:, ci]))
            r_idx.append(self.cut_row[live[cc]])
            c_idx.append(jj)
            vals.append(np.ones(cc.size))
        r_all, c_all, v_all = (np.concatenate(x) for x in (r_idx, c_idx, vals))
        order = np.lexsort((r_all, c_all))
        r_all, c_all, v_all = r_all[order], c_all[order], v_all[order]
        starts = np.searchsorted(c_all, np.arange(ci.size)).astype(np.int32)
        cost = (ck + o - inst.arrival[ci]).astype(float)
        self.h.addCols(ci.size, cost, np.zeros(ci.size), np.full(ci.size, np.inf), r_all.size,
                       starts, r_all.astype(np.int32), v_all)
        self.ci = np.concatenate([self.ci, ci])
        self.ck = np.concatenate([self.ck, ck])
        self.seed = np.concatenate([self.seed, np.full(ci.size, seed)])
        self.col_age = np.concatenate([self.col_age, np.zeros(ci.size, np.int64)])
        return ci.size

    def _loads(self, x: np.ndarray, tol: float):
        """Per round, the left sides of the memory (1b) and exclusive (1a) rows at ``x``."""
        inst, e = self.inst, self.e
        sup = np.flatnonzero(x > tol)
        ci, ck, xv = self.ci[sup], self.ck[sup], x[sup]
        o = inst.output[ci]
        rep = np.repeat(np.arange(sup.size), o)
        j = np.arange(rep.size) - np.repeat(np.cumsum(o) - o, o) + 1
        tau = ck[rep] + j
        excl = j > e[ci[rep]]
        w = np.where(excl, inst.prompt[ci[rep]] + o[rep], inst.prompt[ci[rep]] + j)
        L = self.H + 1
        return (np.bincount(tau, w * xv[rep], L), np.bincount(tau[excl], xv[rep][excl], L))

    def separate_base(self, x: np.ndarray, tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
        """The rounds whose pruned memory / exclusive row ``x`` violates."""
        if not (self.mem_gone.any() or self.exc_gone.any()):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        mem, exc = self._loads(x, tol)
        return (np.flatnonzero(self.mem_gone & (mem > self.inst.M + tol * self.inst.M)),
                np.flatnonzero(self.exc_gone & (exc > 1 + tol)))

    def add_base_rows(self, mem_taus: np.ndarray, exc_taus: np.ndarray) -> None:
        """Re-create pruned memory and exclusive rows at these rounds, over every column of
        the master."""
        inst, e = self.inst, self.e
        s, o = inst.prompt[self.ci], inst.output[self.ci]
        for taus, rows, gone, age, ub, is_mem in (
                (mem_taus, self.mem_row, self.mem_gone, self.mem_age, float(inst.M), True),
                (exc_taus, self.exc_row, self.exc_gone, self.exc_age, 1.0, False)):
            if not len(taus):
                continue
            starts, idx, val = [0], [], []
            for t in taus.tolist():
                j = t - self.ck
                run = (j >= 1) & (j <= o)
                ex = run & (j > e[self.ci])
                if is_mem:
                    cols = np.flatnonzero(run)
                    v = np.where(ex, s + o, s + j)[cols]
                else:
                    cols = np.flatnonzero(ex)
                    v = np.ones(cols.size)
                idx.append(cols)
                val.append(v.astype(float))
                starts.append(starts[-1] + cols.size)
            k = len(taus)
            ii, vv = np.concatenate(idx), np.concatenate(val)
            self.h.addRows(k, np.full(k, -self.inf), np.full(k, ub), ii.size,
                           np.array(starts[:-1], np.int32), ii.astype(np.int32), vv)
            rows[taus] = self.n_rows + np.arange(k)
            gone[taus] = False
            age[taus] = 0
            self.n_rows += k

    def add_cuts(self, cuts: list[tuple[int, int, int]]) -> None:
        if not cuts:
            return
        arr = np.array(cuts, np.int64)
        lo, hi = _cut_intervals(self.inst, arr)
        mem = (lo[:, self.ci] <= self.ck[None, :]) & (self.ck[None, :] <= hi[:, self.ci])
        rr, cc = np.nonzero(mem)
        starts = np.searchsorted(rr, np.arange(len(cuts))).astype(np.int32)
        self.h.addRows(len(cuts), np.full(len(cuts), -self.inf), (arr[:, 1] - 1).astype(float),
                       rr.size, starts, cc.astype(np.int32), np.ones(rr.size))
        for c in cuts:
            if c not in self.cut_index:
                self.cut_index[c] = len(self.cuts)
                self.cuts.append(c)
                self.cut_row = np.append(self.cut_row, -1)
                self.cut_age = np.append(self.cut_age, 0)
            g = self.cut_index[c]
            self.cut_row[g] = self.n_rows
            self.cut_age[g] = 0
            self.n_rows += 1

    def prune(self, age: int, row_dual: np.ndarray, col_dual: np.ndarray,
              base: bool = True) -> tuple[int, int]:
        """Age the clique rows, and with ``base`` the memory and exclusive rows (zero dual,
        basic slack), and the columns (nonbasic, positive reduced cost, not the seed's) of the
        last solve; delete those ``age`` rounds old."""
        basis = self.h.getBasis()
        # (each access to ``row_status`` copies the whole vector: read it once)
        row_status = np.array([s == self.kBasic for s in basis.row_status], bool)
        dead_base = []
        if base:
            for rows, gone, ages in ((self.mem_row, self.mem_gone, self.mem_age),
                                     (self.exc_row, self.exc_gone, self.exc_age)):
                taus = np.flatnonzero(rows >= 0)
                r = rows[taus]
                idle_b = row_status[r] & (np.abs(row_dual[r]) <= 1e-12)
                ages[taus] = np.where(idle_b, ages[taus] + 1, 0)
                drop = taus[ages[taus] >= age]
                dead_base.append(rows[drop])
                rows[drop] = -1
                gone[drop] = True
                ages[drop] = 0
        live = np.flatnonzero(self.cut_row >= 0)
        rows = self.cut_row[live]
        rbasic = row_status[rows]
        idle = rbasic & (np.abs(row_dual[rows]) <= 1e-12)
        self.cut_age[live] = np.where(idle, self.cut_age[live] + 1, 0)
        drop_rows = live[self.cut_age[live] >= age]
        cbasic = np.array([s == self.kBasic for s in basis.col_status], bool)
        idle_c = ~cbasic & (col_dual > 1e-9) & ~self.seed
        self.col_age = np.where(idle_c, self.col_age + 1, 0)
        drop_cols = np.flatnonzero(self.col_age >= age)
        dead = np.sort(np.concatenate([self.cut_row[drop_rows], *dead_base]))
        if dead.size:
            self.h.deleteRows(dead.size, dead.astype(np.int32))
            self.cut_row[drop_rows] = -1
            self.cut_age[drop_rows] = 0
            for arr in (self.mem_row, self.exc_row, self.cut_row):
                ok = arr >= 0
                arr[ok] -= np.searchsorted(dead, arr[ok])
            self.n_rows -= dead.size
        if drop_cols.size:
            self.h.deleteCols(drop_cols.size, drop_cols.astype(np.int32))
            self.have.difference_update(zip(self.ci[drop_cols].tolist(),
                                            self.ck[drop_cols].tolist()))
            keep = np.ones(self.ci.size, bool)
            keep[drop_cols] = False
            self.ci, self.ck = self.ci[keep], self.ck[keep]
            self.seed, self.col_age = self.seed[keep], self.col_age[keep]
        return int(drop_rows.size), int(drop_cols.size)

    def solve(self, strategy: int = 1):
        """Re-solve from the last basis (``strategy``: HiGHS's ``simplex_strategy``, 1 dual,
        4 primal)."""
        self.h.setOptionValue("simplex_strategy", int(strategy))
        self.h.run()
        self.iters += int(self.h.getInfo().simplex_iteration_count)

    def state(self):
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)
        y = np.asarray(sol.row_dual)
        # multipliers >= 0 of the <= rows (HiGHS's duals of binding <= rows are <= 0 when
        # minimising), per round for the memory and exclusive rows, per cut for the cliques
        def mult(rows):
            return np.where(rows >= 0, np.maximum(-y[np.maximum(rows, 0)], 0.0), 0.0)
        return (float(self.h.getInfo().objective_function_value), x, y,
                np.asarray(sol.col_dual),
                (mult(self.mem_row[1:]), mult(self.exc_row[1:]), mult(self.cut_row)))


def _lagrangian(inst: Instance, W: int, H: int, e: np.ndarray, mu: np.ndarray, lam: np.ndarray,
                cuts: list, nu: np.ndarray, last: np.ndarray | None = None,
                iv: tuple | None = None) -> tuple[float, np.ndarray]:
    """``L(μ, λ, ν)`` and the priced column costs ``g[i, w]`` (start ``a_i + w``), every column
    of every window (module docstring); ``last[i]``: request ``i``'s last start (``a_i + W``
    when omitted), ``g = +∞`` after it; ``iv``: :func:`_cut_intervals` of ``cuts`` if known."""
    a, s, o = inst.arrival, inst.prompt, inst.output
    last = a + W if last is None else np.asarray(last, np.int64)
    P = s + o
    tau = np.arange(H + 1)
    m0 = np.concatenate([[0.0], mu])                 # μ_τ for τ = 0..H (μ_0 = 0)
    l0 = np.concatenate([[0.0], lam])
    S0, S1, R0 = np.cumsum(m0), np.cumsum(tau * m0), np.cumsum(l0)
    k = np.minimum(a[:, None] + np.arange(W + 1)[None, :], last[:, None])   # n × (W + 1) starts
    km = k + e[:, None]
    ko = k + o[:, None]
    g = (ko - a[:, None]).astype(float)
    g += (s[:, None] - k) * (S0[km] - S0[k]) + (S1[km] - S1[k])
    g += P[:, None] * (S0[ko] - S0[km]) + (R0[ko] - R0[km])
    nu = np.asarray(nu, float)
    on = np.flatnonzero(nu > 0)
    if on.size:
        # a clique row holds, for request i, the starts k in an interval (_cut_intervals): add ν
        # to those by one difference array over all rows at once
        lo, hi = (_cut_intervals(inst, np.array([cuts[c] for c in on], np.int64).reshape(-1, 3))
                  if iv is None else (iv[0][on], iv[1][on]))
        lo, hi = np.maximum(lo, a[None, :]), np.minimum(hi, last[None, :])
        cc, ii = np.nonzero(hi >= lo)
        v = nu[on][cc]
        width = W + 2
        flat = np.concatenate([ii * width + lo[cc, ii] - a[ii], ii * width + hi[cc, ii] - a[ii] + 1])
        diff = np.bincount(flat, np.concatenate([v, -v]), minlength=inst.n * width)
        g += np.cumsum(diff.reshape(inst.n, width), axis=1)[:, : W + 1]
    g[np.arange(W + 1)[None, :] > (last - a)[:, None]] = np.inf
    q1 = np.array([c[1] - 1 for c in cuts], float)
    rhs = inst.M * mu.sum() + lam.sum() + (float(q1[on] @ nu[on]) if on.size else 0.0)
    return float(g.min(axis=1).sum() - rhs), g


class _Ascent:
    """Projected subgradient ascent on ``L(μ, λ, ν)`` from the best multipliers so far (any
    multipliers ``≥ 0`` give a valid bound, so it only has to find better ones). At the
    Lagrangian minimiser (one start ``k_i`` per request) a supergradient of ``L`` is each row's
    left side minus its right side: the charged memory ``Σ w_i(τ)`` minus ``M`` per round, the
    exclusive count minus 1, the clique count minus ``q − 1``. Polyak's step towards the upper
    bound, ``t = θ (U − L) / ‖s‖²``, with ``θ`` halved after ``patience`` steps without a better
    ``L`` (kept between calls, doubled at each call up to 1, so that it adapts to each round's
    new start point)."""

    def __init__(self, inst: Instance, Wp: int, H: int, e: np.ndarray, last: np.ndarray,
                 upper: float, theta: float = 0.1, patience: int = 5):
        self.inst, self.Wp, self.H, self.e, self.last = inst, Wp, H, e, last
        self.upper, self.theta, self.patience = upper, theta, patience
        self.lo = np.zeros((0, inst.n), np.int64)
        self.hi = np.zeros((0, inst.n), np.int64)
        self.q1 = np.zeros(0)

    def intervals(self, cuts: list):
        if len(cuts) > self.lo.shape[0]:
            lo, hi = _cut_intervals(self.inst, np.array(cuts[self.lo.shape[0]:], np.int64))
            self.lo, self.hi = np.vstack([self.lo, lo]), np.vstack([self.hi, hi])
            self.q1 = np.array([c[1] - 1 for c in cuts], float)
        return self.lo, self.hi

    def slopes(self, k: np.ndarray, C: int):
        """The rows' left sides minus right sides at the starts ``k`` (one per request)."""
        inst, H, e = self.inst, self.H, self.e
        s, o = inst.prompt, inst.output
        L = H + 2
        b1, b2, b3 = k + 1, k + e + 1, k + o + 1       # ramp on [b1, b2), peak on [b2, b3)
        P = (s + o).astype(float)
        c0 = (np.bincount(b1, s - k, L) - np.bincount(b2, s - k, L)
              + np.bincount(b2, P, L) - np.bincount(b3, P, L))
        c1 = np.bincount(b1, None, L) - np.bincount(b2, None, L)
        ex = np.bincount(b2, None, L) - np.bincount(b3, None, L)
        tau = np.arange(L)
        mem = (np.cumsum(c0) + tau * np.cumsum(c1))[1:H + 1] - inst.M
        exc = np.cumsum(ex)[1:H + 1] - 1
        cnt = ((self.lo[:C] <= k[None, :]) & (k[None, :] <= self.hi[:C])).sum(axis=1) - self.q1[:C]
        return mem, exc, cnt

    def run(self, cuts: list, point: tuple, L0: float, steps: int):
        """Up to ``steps`` steps from ``point``; returns the best ``(L, point)`` met."""
        inst = self.inst
        self.theta = min(1.0, 2 * self.theta)
        lo, hi = self.intervals(cuts)
        C = len(cuts)
        mu, lam, nu = (np.array(v, float) for v in point)
        nu = np.concatenate([nu, np.zeros(C - nu.size)])
        best, best_pt, stall = L0, (mu, lam, nu), 0
        L = L0
        for _ in range(steps):
            L, g = _lagrangian(inst, self.Wp, self.H, self.e, mu, lam, cuts, nu, self.last,
                               (lo, hi))
            if L > best + 1e-9:
                best, best_pt, stall = L, (mu.copy(), lam.copy(), nu.copy()), 0
            else:
                stall += 1
                if stall >= self.patience:
                    self.theta, stall = self.theta / 2, 0
                    mu, lam, nu = (v.copy() for v in best_pt)
                    continue
            k = inst.arrival + g.argmin(axis=1)
            sg = self.slopes(k, C)
            # project the direction: a multiplier at 0 whose row is slack stays at 0
            sg = [np.where((v <= 0) & (d < 0), 0.0, d) for v, d in zip((mu, lam, nu), sg)]
            norm2 = sum(float(d @ d) for d in sg)
            if norm2 <= 0 or self.upper <= L:
                break
            t = self.theta * (self.upper - L) / norm2
            mu, lam, nu = (np.maximum(v + t * d, 0.0) for v, d in zip((mu, lam, nu), sg))
        return best, best_pt


def _separate(inst: Instance, ci, ck, x, qs, max_cuts: int, have: set, tol: float) -> list:
    """The most violated clique row per (round, rank) over the support of ``x``, at most
    ``max_cuts`` in all, most violated first."""
    sup = np.flatnonzero(x > tol)
    if not sup.size:
        return []
    i, k, xv = ci[sup], ck[sup], x[sup]
    o, s = inst.output[i], inst.prompt[i]
    # one entry per (support column, round it runs at)
    rep = np.repeat(np.arange(sup.size), o)
    off = np.arange(rep.size) - np.repeat(np.cumsum(o) - o, o) + 1
    T = k[rep] + off
    d = s[rep] + off
    r = o[rep] - off
    X = xv[rep]
    order = np.argsort(T, kind="stable")
    T, d, r, X = T[order], d[order], r[order], X[order]
    bounds = np.flatnonzero(np.diff(np.concatenate([[-1], T, [T.max() + 1]])))
    found = []
    for b0, b1 in itertools.pairwise(bounds):
        if X[b0:b1].sum() <= 1 + tol:                 # no rank-q row can be violated
            continue
        tt = int(T[b0])
        dd, rr, xx = d[b0:b1], r[b0:b1], X[b0:b1]
        for q in qs:
            if xx.sum() <= q - 1 + tol:
                continue
            cand = np.unique(np.concatenate([2 * (dd + q * rr) - 1, 2 * inst.M - 2 * (q - 1) * dd + 1]))
            mem = ((2 * (dd + q * rr))[None, :] > cand[:, None]) & \
                  ((2 * (q - 1) * dd)[None, :] > 2 * inst.M - cand[:, None])
            viol = mem.astype(float) @ xx - (q - 1)
            best = int(np.argmax(viol))
            if viol[best] > tol and (tt, q, int(cand[best])) not in have:
                found.append((float(viol[best]), (tt, q, int(cand[best]))))
    found.sort(key=lambda t: -t[0])
    return [c for _, c in found[:max_cuts]]


def _pick(rc: np.ndarray, per: int, spread: bool, negative: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``per`` columns of negative reduced cost per request (rows of ``rc``; with
    ``negative=False`` of any finite cost): the most negative, or with ``spread`` the most
    negative local minima over the start first (columns one round apart are nearly the same
    column)."""
    if per == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    n = rc.shape[0]
    score = rc
    if spread:
        left = np.concatenate([np.full((n, 1), np.inf), rc[:, :-1]], axis=1)
        right = np.concatenate([rc[:, 1:], np.full((n, 1), np.inf)], axis=1)
        local = (rc <= left) & (rc < right)
        # local minima first (shifted below every other column), then the rest
        fin = np.isfinite(rc)
        score = np.where(local & fin, rc - (np.abs(rc[fin]).max() + 1.0), rc)
    per = min(per, rc.shape[1])
    top = np.argpartition(score, per - 1, axis=1)[:, :per]
    ii = np.repeat(np.arange(n), per)
    kk = top.ravel()
    ok = rc[ii, kk] < -1e-6 if negative else np.isfinite(rc[ii, kk])
    return ii[ok], kk[ok]


def ti_bound(inst: Instance, upper_starts=None, *, rounds: int = 60, qs=(2, 3),
             cols_per_request: int = 3, max_cuts: int = 100, simplex_iters: int = 200_000,
             smoothing: float = 0.8, prune: int = 3, two_phase: bool = False,
             spread: bool = False, cap: bool = True,
             ascent: int = 0, smooth_cols: int = 1, full: bool = False,
             prune_base: bool = True, polish: int = 30,
             cpu_limit: float | None = None) -> TIBoundResult:
    """The strengthened time-indexed lower bound of the module docstring.

    ``upper_starts``: a feasible schedule (its waiting time gives the window, its columns seed
    the master); MC-SF's improved by the local search when omitted. Each of at most ``rounds``
    rounds evaluates the Lagrangian bound at the master's duals (and at the smoothed ones,
    ``smoothing`` = α, 0 for none), then adds up to ``cols_per_request`` negatively priced
    columns per request (local minima over the start first with ``spread``) and up to
    ``max_cuts`` violated clique rows of the ranks ``qs``, and re-solves; it stops early when
    neither is left (converged). ``prune``: delete rows and columns idle that many rounds (0:
    never; on six paper-size Fig. 2 trials, 3 gave a bound 0.2-7 % higher after 20 CPU s than
    0, from about twice the rounds, and on four of them 6 columns per request instead of 3, a
    smoothing of 0.9 instead of 0.8, 60 rows a round instead of 30 or ``two_phase`` moved it by
    2 % or less, either way, all without the polish below); ``two_phase``: primal simplex after new columns, dual after new rows (else one dual
    solve after both); ``cap``: windows end at the no-idle horizon ``H*`` (else at ``a_i + W``);
    ``ascent``: subgradient steps a round from the best multipliers (:class:`_Ascent`);
    ``smooth_cols``: columns per request priced at the smoothed multipliers (with
    ``cols_per_request=0`` only those, the master's own when they do not price out);
    ``full``: start the master with every column of every window (then only rows are generated).
    ``prune_base``: ``prune`` deletes idle memory and exclusive rows too (else clique rows
    only): on six paper-size Fig. 2 trials a simplex iteration cost 8-29 % less and the bracket
    after 20 CPU s was 0.1-0.8 % narrower on all six.
    ``polish``: after the ``rounds``, at most that many column-only rounds (no rows added or
    deleted, primal simplex), stopping when no column prices out (``polished``). Columns lag the
    rows: on a paper-size Model 2 trial (n = 60) after 180 rounds of 30 rows, the schedule over
    ``L`` was 1.164 and over the master's LP value 1.151; about 10 column-only rounds (0.4 CPU s)
    met them at 1.159, the LP value over every column. With that, the rounds can add rows faster:
    100 rows a round for 100 rounds, then the polish, gave a median bracket 1.144 at 14 CPU s on
    five such trials, against 1.160 at 18 s for 200 rounds of 30 rows and no polish
    (``benchmarks/README.md``).
    ``cpu_limit``: for studies of speed only, also stop after the first round that ends past
    that many CPU seconds (the result then depends on the machine; the book and the tests limit
    by ``rounds``).
    """
    require(isinstance(inst, Instance), "inst", type(inst).__name__, "must be an Instance")
    for name, v, lo in (("rounds", rounds, 1), ("cols_per_request", cols_per_request, 0),
                        ("smooth_cols", smooth_cols, 0),
                        ("max_cuts", max_cuts, 0), ("simplex_iters", simplex_iters, 1),
                        ("prune", prune, 0), ("ascent", ascent, 0), ("polish", polish, 0)):
        require(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo, name, v,
                f"must be an integer >= {lo}")
    require(all(isinstance(q, int) and q >= 2 for q in qs), "qs", qs,
            "must be integers >= 2 (ranks of the clique rows)")
    require(isinstance(smoothing, (int, float)) and 0 <= smoothing < 1, "smoothing", smoothing,
            "must be a number in [0, 1)")
    if upper_starts is None:
        from infsched.kvcache.improve import improve_schedule
        from infsched.kvcache.policies import mc_sf

        upper_starts, _ = improve_schedule(inst, mc_sf(inst))
    from infsched.kvcache.hindsight import window_of

    upper_starts = np.asarray(upper_starts, dtype=np.int64)
    upper = check_schedule(inst, upper_starts).require().tel
    W = window_of(inst, upper_starts)
    a, o, n = inst.arrival, inst.output, inst.n
    last = a + W
    if cap:
        last = np.minimum(last, horizon_cap(inst) - o)
    Wp = int((last - a).max())
    # the master's rounds also cover the seed schedule, which may end after H*
    H = int(max((last + o).max(), (upper_starts + o).max()))
    e = _exclusive_offset(inst)
    prof = dict.fromkeys(("lp", "price", "separate", "build", "prune", "ascent"), 0.0)
    asc = _Ascent(inst, Wp, H, e, last, upper) if ascent else None
    clock = time.process_time
    cpu0 = clock()
    master = _Master(inst, H, e, simplex_iters)
    master.add_columns(np.arange(n), upper_starts, seed=True)
    if full:
        width = last - a + 1
        ii = np.repeat(np.arange(n), width)
        master.add_columns(ii, a[ii] + np.arange(ii.size) - np.repeat(np.cumsum(width) - width, width))
    t = clock()
    master.solve(1)
    prof["lp"] += clock() - t
    best, history, converged, polished, lp = -math.inf, [], False, False, math.nan
    center = None                                   # multipliers of the best L so far
    cpu = []
    for rnd in range(rounds + polish):
        polishing = rnd >= rounds
        t = clock()
        lp, x, y, dj, cur = master.state()
        L, g = _lagrangian(inst, Wp, H, e, *cur[:2], master.cuts, cur[2], last)
        trial_points = [(L, cur, g)]
        if center is not None and smoothing > 0:
            # Wentges smoothing: price also at a point between the best multipliers so far and
            # the master's (any multipliers >= 0 give a valid L), which damps the oscillation of
            # the master's duals; its argmin columns join the master
            c_nu = np.concatenate([center[2], np.zeros(cur[2].size - center[2].size)])
            sm = tuple(smoothing * c + (1 - smoothing) * v for c, v in
                       zip((center[0], center[1], c_nu), cur))
            Ls, gs = _lagrangian(inst, Wp, H, e, *sm[:2], master.cuts, sm[2], last)
            trial_points.append((Ls, sm, gs))
        for Lp, pt, _g in trial_points:
            if Lp > best:
                best, center = Lp, pt
        if center is None:
            center = cur
        if asc is not None:
            t1 = clock()
            La, pa = asc.run(master.cuts, center, best, ascent)
            if La > best:
                best, center = La, pa
            prof["ascent"] += clock() - t1
        # a valid bound exceeds the seed schedule's latency only by rounding: more is a bug,
        # never to be hidden by clipping
        if best > upper + 1e-6 * max(1.0, upper):
            raise RuntimeError(f"ti_bound: bound {best} above a feasible schedule's {upper}")
        best = min(best, upper)
        history.append(best)
        rc = g - y[:n, None]
        negative = bool(rc.min() < -1e-6)
        new_i, new_k = _pick(rc, cols_per_request, spread)
        if len(trial_points) > 1:
            si, sk = _pick(trial_points[1][2], smooth_cols, spread, negative=False)
            if not cols_per_request and negative and not (rc[si, sk] < -1e-6).any():
                # mispricing: the smoothed point's columns do not improve the master, so take
                # the master's own (the stabilisation literature's fallback)
                si, sk = _pick(rc, max(smooth_cols, 1), spread)
            new_i, new_k = np.concatenate([new_i, si]), np.concatenate([new_k, sk])
        elif not cols_per_request:
            new_i, new_k = _pick(rc, max(smooth_cols, 1), spread)
        prof["price"] += clock() - t
        if polishing:
            # the column-only phase: no rows come or go, so the master's rows are fixed and L
            # rises to the LP value over every column and those rows (a relaxation of the whole
            # LP, so no higher than it) once no column prices out
            if not negative:
                polished = True
                cpu.append(clock() - cpu0)
                break
            t = clock()
            master.add_columns(new_i, a[new_i] + new_k)
            prof["build"] += clock() - t
            t = clock()
            master.solve(4)                         # new columns only: the basis stays primal feasible
            prof["lp"] += clock() - t
            cpu.append(clock() - cpu0)
            continue
        t = clock()
        # (two-phase rounds separate after the primal re-solve instead, when columns come in)
        cuts = _separate(inst, master.ci, master.ck, x, qs, max_cuts, master.active_cuts,
                         1e-6) if max_cuts and not (two_phase and negative) else []
        base = master.separate_base(x)
        prof["separate"] += clock() - t
        if not negative and not cuts and not any(b.size for b in base):
            converged = True
            cpu.append(clock() - cpu0)
            break
        if prune:
            t = clock()
            master.prune(prune, y, dj, base=prune_base)
            prof["prune"] += clock() - t
        t = clock()
        master.add_base_rows(*base)
        added = master.add_columns(new_i, a[new_i] + new_k)
        prof["build"] += clock() - t
        if two_phase:
            if added:
                t = clock()
                master.solve(4)
                prof["lp"] += clock() - t
            if negative and max_cuts:
                t = clock()
                x = np.asarray(master.h.getSolution().col_value)
                cuts = _separate(inst, master.ci, master.ck, x, qs, max_cuts,
                                 master.active_cuts, 1e-6)
                prof["separate"] += clock() - t
            t = clock()
            master.add_cuts(cuts)
            prof["build"] += clock() - t
            if cuts or any(b.size for b in base):     # new rows: a dual re-solve
                t = clock()
                master.solve(1)
                prof["lp"] += clock() - t
        else:
            t = clock()
            master.add_cuts(cuts)
            prof["build"] += clock() - t
            t = clock()
            master.solve(1)
            prof["lp"] += clock() - t
        cpu.append(clock() - cpu0)
        if cpu_limit is not None and cpu[-1] > cpu_limit:
            break
    prof["simplex_iterations"] = master.iters
    x = np.asarray(master.h.getSolution().col_value)
    mean_start = np.bincount(master.ci, x * master.ck, n) / np.maximum(np.bincount(master.ci, x, n),
                                                                       1e-12)
    return TIBoundResult(float(best), history, float(lp), converged, len(history),
                         int(master.ci.size), int((master.cut_row >= 0).sum()), W, cpu, prof,
                         mean_start, sorted(master.active_cuts), polished)
