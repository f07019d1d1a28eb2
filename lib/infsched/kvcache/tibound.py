"""A strengthened time-indexed lower bound on the hindsight optimum: columns per (request, start
round) carrying the memory ramp, with three families of valid inequalities, solved by generating
columns and rows in rounds.

**The model** (Section 3, integer program (1)–(3)). ``x[i, k] = 1`` when request ``i`` starts at
round ``k``; it then holds ``d_i(τ) = s_i + τ − k`` tokens at the rounds ``τ = k + 1 … k + o_i``
and completes at ``c_i = k + o_i``, costing ``c_i − a_i`` (objective 1). One start per request
(2), memory at most ``M`` at every round (3). Every optimal schedule starts request ``i`` in the
window ``[a_i, a_i + W]``, ``W`` the total waiting time of any feasible schedule
(:func:`~infsched.kvcache.hindsight.window_of`), so the columns ``(i, k)`` with ``k`` in those
windows hold an optimal schedule's incidence vector. Every inequality below is satisfied by the
incidence vector of *every* feasible schedule, so the LP over all the window's columns with all
the rows is a relaxation of the windowed program, and its value (or any valid dual bound of it)
is a lower bound on OPT. Write ``P_i = s_i + o_i`` (request ``i``'s peak) and, for a request
running at ``τ``, ``r_i(τ) = c_i − τ ≥ 0`` (rounds left).

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
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance, check_schedule

__all__ = ["TIBoundResult", "clique_members", "row_activity", "ti_bound"]


@dataclass(frozen=True)
class TIBoundResult:
    """``bound``: the best Lagrangian value over the rounds (a lower bound on OPT);
    ``history``: the bound after each round; ``lp_value``: the last RMP value (not a bound unless
    ``converged``); ``converged``: no column priced out and no row was violated at the last
    round (``bound`` is then the LP optimum over all columns and rows, up to tolerance);
    ``rounds``, ``columns``, ``cuts``: work done; ``window``: ``W``; ``cpu``: the process's CPU
    seconds after each round (for information: nothing depends on it)."""

    bound: float
    history: list = field(default_factory=list)
    lp_value: float = math.nan
    converged: bool = False
    rounds: int = 0
    columns: int = 0
    cuts: int = 0
    window: int = 0
    cpu: list = field(default_factory=list)


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
    re-solve starts from the last basis. Rows: ``n`` assignment rows (= 1), ``H`` memory rows
    (1b, ≤ M), ``H`` exclusive rows (1a, ≤ 1), then the clique rows (≤ q − 1)."""

    def __init__(self, inst: Instance, H: int, e: np.ndarray, simplex_iters: int):
        import highspy

        self.inst, self.H, self.e = inst, H, e
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
        self.n_rows = n
        self.ci = np.zeros(0, np.int64)
        self.ck = np.zeros(0, np.int64)
        self.cuts: list[tuple[int, int, int]] = []
        self.have: set[tuple[int, int]] = set()
        self.cut_row = np.zeros(0, np.int64)

    def add_columns(self, ci: np.ndarray, ck: np.ndarray) -> int:
        inst, H, e = self.inst, self.H, self.e
        keep = [t for t in zip(ci.tolist(), ck.tolist()) if t not in self.have]
        if not keep:
            return 0
        self.have.update(keep)
        ci = np.array([t[0] for t in keep], np.int64)
        ck = np.array([t[1] for t in keep], np.int64)
        for rows, ub in ((self.mem_row, float(inst.M)), (self.exc_row, 1.0)):
            need = np.zeros(H + 1, bool)
            for i, k in zip(ci.tolist(), ck.tolist()):
                need[k + 1:k + inst.output[i] + 1] = True
            new = np.flatnonzero(need & (rows < 0))
            if new.size:
                self.h.addRows(new.size, np.full(new.size, -self.inf), np.full(new.size, ub), 0,
                               np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0))
                rows[new] = self.n_rows + np.arange(new.size)
                self.n_rows += new.size
        starts, idx, val = [], [], []
        nnz = 0
        cut_arr = np.array(self.cuts, np.int64).reshape(-1, 3)
        for i, k in zip(ci.tolist(), ck.tolist()):
            s, o, P, ei = int(inst.prompt[i]), int(inst.output[i]), int(inst.prompt[i] + inst.output[i]), int(e[i])
            j = np.arange(1, o + 1)
            w = np.where(j > ei, P, s + j)
            rows = [np.array([i]), self.mem_row[k + j], self.exc_row[k + j[j > ei]]]
            vals = [np.ones(1), w.astype(float), np.ones(int((j > ei).sum()))]
            if cut_arr.size:
                mem = np.array([bool(clique_members(inst, np.array([i]), np.array([k]), t, q, t2)[0])
                                for t, q, t2 in cut_arr[(cut_arr[:, 0] > k) & (cut_arr[:, 0] <= k + o)]],
                               dtype=bool)
                near = np.flatnonzero((cut_arr[:, 0] > k) & (cut_arr[:, 0] <= k + o))
                hit = near[mem] if mem.size else near[:0]
                rows.append(self.cut_row[hit])
                vals.append(np.ones(hit.size))
            r = np.concatenate(rows).astype(np.int32)
            starts.append(nnz)
            idx.append(r)
            val.append(np.concatenate(vals))
            nnz += r.size
        cost = (ck + inst.output[ci] - inst.arrival[ci]).astype(float)
        self.h.addCols(ci.size, cost, np.zeros(ci.size), np.full(ci.size, np.inf), nnz,
                       np.array(starts, np.int32), np.concatenate(idx), np.concatenate(val))
        self.ci = np.concatenate([self.ci, ci])
        self.ck = np.concatenate([self.ck, ck])
        return ci.size

    def add_cuts(self, cuts: list[tuple[int, int, int]]) -> None:
        for tau, q, t2 in cuts:
            mem = np.flatnonzero(clique_members(self.inst, self.ci, self.ck, tau, q, t2))
            self.h.addRow(-self.inf, float(q - 1), mem.size, mem.astype(np.int32), np.ones(mem.size))
            self.cuts.append((tau, q, t2))
            self.cut_row = np.append(self.cut_row, self.n_rows)
            self.n_rows += 1

    def solve(self):
        self.h.run()
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)
        y = np.asarray(sol.row_dual)
        # multipliers >= 0 of the <= rows (HiGHS's duals of binding <= rows are <= 0 when
        # minimising), per round for the memory and exclusive rows, per cut for the cliques
        mult = lambda rows: np.where(rows >= 0, np.maximum(-y[np.maximum(rows, 0)], 0.0), 0.0)
        return (float(self.h.getInfo().objective_function_value), x, y[: self.inst.n],
                (mult(self.mem_row[1:]), mult(self.exc_row[1:]), mult(self.cut_row)))


def _lagrangian(inst: Instance, W: int, H: int, e: np.ndarray, mu: np.ndarray, lam: np.ndarray,
                cuts: list, nu: np.ndarray) -> tuple[float, np.ndarray]:
    """``L(μ, λ, ν)`` and the priced column costs ``g[i, w]`` (start ``a_i + w``), every column
    of every window (module docstring)."""
    a, s, o = inst.arrival, inst.prompt, inst.output
    P = s + o
    tau = np.arange(H + 1)
    m0 = np.concatenate([[0.0], mu])                 # μ_τ for τ = 0..H (μ_0 = 0)
    l0 = np.concatenate([[0.0], lam])
    S0, S1, R0 = np.cumsum(m0), np.cumsum(tau * m0), np.cumsum(l0)
    k = a[:, None] + np.arange(W + 1)[None, :]        # n × (W + 1) start rounds
    km = k + e[:, None]
    ko = k + o[:, None]
    g = (ko - a[:, None]).astype(float)
    g += (s[:, None] - k) * (S0[km] - S0[k]) + (S1[km] - S1[k])
    g += P[:, None] * (S0[ko] - S0[km]) + (R0[ko] - R0[km])
    if cuts:
        # a clique row holds, for request i, the starts k in an interval (its two conditions
        # are linear in k); add ν to those by a difference array per request
        diff = np.zeros((inst.n, W + 2))
        for (t, q, t2), v in zip(cuts, nu):
            if v <= 0:
                continue
            q1 = 2 * (q - 1)
            lo = np.maximum.reduce([t - o, (t2 - 2 * s - 2 * q * o + q1 * t) // q1 + 1, a])
            hi = np.minimum.reduce([np.full(inst.n, t - 1), -((2 * inst.M - t2 - q1 * (s + t)) // q1) - 1,
                                    a + W])
            ok = np.flatnonzero(hi >= lo)
            np.add.at(diff, (ok, lo[ok] - a[ok]), v)
            np.add.at(diff, (ok, hi[ok] - a[ok] + 1), -v)
        g += np.cumsum(diff, axis=1)[:, : W + 1]
    rhs = inst.M * mu.sum() + lam.sum() + sum((q - 1) * v for (_, q, _), v in zip(cuts, nu))
    return float(g.min(axis=1).sum() - rhs), g


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


def ti_bound(inst: Instance, upper_starts=None, *, rounds: int = 60, qs=(2, 3),
             cols_per_request: int = 3, max_cuts: int = 30, simplex_iters: int = 200_000,
             smoothing: float = 0.8) -> TIBoundResult:
    """The strengthened time-indexed lower bound of the module docstring.

    ``upper_starts``: a feasible schedule (its waiting time gives the window, its columns seed
    the master); MC-SF's improved by the local search when omitted. Each of at most ``rounds``
    rounds solves the master, evaluates the Lagrangian bound, then adds up to
    ``cols_per_request`` negatively priced columns per request and up to ``max_cuts`` violated
    clique rows of the ranks ``qs``; it stops early when neither is left (converged).
    """
    require(isinstance(inst, Instance), "inst", type(inst).__name__, "must be an Instance")
    for name, v, lo in (("rounds", rounds, 1), ("cols_per_request", cols_per_request, 1),
                        ("max_cuts", max_cuts, 0), ("simplex_iters", simplex_iters, 1)):
        require(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo, name, v,
                f"must be an integer >= {lo}")
    require(all(isinstance(q, int) and q >= 2 for q in qs), "qs", qs,
            "must be integers >= 2 (ranks of the clique rows)")
    if upper_starts is None:
        from infsched.kvcache.improve import improve_schedule
        from infsched.kvcache.policies import mc_sf

        upper_starts, _ = improve_schedule(inst, mc_sf(inst))
    from infsched.kvcache.hindsight import window_of

    upper_starts = np.asarray(upper_starts, dtype=np.int64)
    upper = check_schedule(inst, upper_starts).require().tel
    W = window_of(inst, upper_starts)
    H = int((inst.arrival + W + inst.output).max())
    e = _exclusive_offset(inst)
    master = _Master(inst, H, e, simplex_iters)
    master.add_columns(np.arange(inst.n), upper_starts)
    best, history, converged, lp = -math.inf, [], False, math.nan
    n = inst.n
    center = None                                   # multipliers of the best L so far
    cpu, cpu0 = [], time.process_time()
    for _ in range(rounds):
        lp, x, y, cur = master.solve()
        L, g = _lagrangian(inst, W, H, e, *cur[:2], master.cuts, cur[2])
        trial_points = [(L, cur, g)]
        if center is not None and smoothing > 0:
            # Wentges smoothing: price also at a point between the best multipliers so far and
            # the master's (any multipliers >= 0 give a valid L), which damps the oscillation of
            # the master's duals; its argmin columns join the master
            c_nu = np.concatenate([center[2], np.zeros(cur[2].size - center[2].size)])
            sm = tuple(smoothing * c + (1 - smoothing) * v for c, v in
                       zip((center[0], center[1], c_nu), cur))
            Ls, gs = _lagrangian(inst, W, H, e, *sm[:2], master.cuts, sm[2])
            trial_points.append((Ls, sm, gs))
        for Lp, pt, _g in trial_points:
            if Lp > best:
                best, center = Lp, pt
        if center is None:
            center = cur
        best = min(best, upper)
        history.append(best)
        cpu.append(time.process_time() - cpu0)
        cuts = _separate(inst, master.ci, master.ck, x, qs, max_cuts, set(master.cuts),
                         1e-6) if max_cuts else []
        pi = np.asarray(y[:n])
        rc = g - pi[:, None]
        new_i, new_k = [], []
        for i in range(n):
            neg = np.flatnonzero(rc[i] < -1e-6)
            if neg.size:
                pick = neg[np.argsort(rc[i, neg], kind="stable")[:cols_per_request]]
                new_i += [i] * pick.size
                new_k += (inst.arrival[i] + pick).tolist()
        negative = bool(new_i)
        if len(trial_points) > 1:
            gs = trial_points[1][2]
            new_i += list(range(n))
            new_k += (inst.arrival + gs.argmin(axis=1)).tolist()
        if new_i:
            master.add_columns(np.array(new_i, np.int64), np.array(new_k, np.int64))
        if cuts:
            master.add_cuts(cuts)
        if not negative and not cuts:
            converged = True
            break
    return TIBoundResult(float(best), history, float(lp), converged, len(history),
                         int(master.ci.size), len(master.cuts), W, cpu)
