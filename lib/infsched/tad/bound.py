"""The LP lower bound and everything built on it (Sections 3.1, 3.4, 4–6 and App. B).

- :func:`lambda_max`: the accuracy-constrained capacity λ^max (Definition 1, eq. 2);
- :func:`lp_lower_bound`: T_LP-LB(λ) and p*(λ) (Lemma 1, eq. 3), with N = λT (eq. 12) and
  the traffic vector A = λp* (eq. 13);
- :func:`relaxed_lp`, :func:`plateau_end`: Lemma 3 (eqs. 8–9) and λ_1 (eq. 83);
- :func:`routing_tuples`: S*_opt (Definition 2, eqs. 10–11);
- :func:`waterfill`: Algorithm 1, equal to the LP by Theorem 1;
- R-JIQ's mixing (eq. 4), its zero-wait latency and its sensitivity to a wrong λ (Fig. 5);
- the all-idle routing patterns of TAD (Section 4) and TAD-OP (Algorithm 2);
- the paper's worked Examples 1–3.

**Classes are 0-based in code**: the paper's class 1 (fastest) is index 0 and class K (most
accurate) is index K-1. Labels meant for readers (:meth:`RoutingTuple.label`, the ``p1..pK``
columns of :func:`lp_curve`) use the paper's 1-based numbering.

Why one module of some 750 lines: every part after λ^max is a function of the LP's solution.
R-JIQ's mixing and the Fig. 5 tolerance read p*(λ) along the whole load axis from the private
waterfilling path (``_path``, ``_lp_star``) and share its argument checks (``_lam``, ``_n``,
``_rhos``); the all-idle patterns and the worked examples combine the LP, the routing tuples
and waterfilling. Cut along the paper's sections, the pieces would import each other's private
helpers, so the module keeps the paper's order in sections instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pandas as pd

from infsched.errors import InfeasibleError, as_float, config_error, one_of, require
from infsched.optim import solve_lp
from infsched.tad.model import EXAMPLE_1_2, EXAMPLE_3, SystemParams

#: Relative slack with which λ may exceed λ^max and still count as λ^max (float noise).
LAM_REL_TOL = 1e-9
#: Criteria of the Fig. 5 error tolerance.
CRITERIA = ("zero_wait", "stable")


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------

def _lam(lam: float, name: str = "lam") -> float:
    """A finite, non-negative arrival rate."""
    try:
        value = as_float(lam)  # a string is rejected, not converted
    except (TypeError, ValueError):
        raise config_error(name, lam, "must be a number") from None
    require(math.isfinite(value) and value >= 0.0, name, lam,
            "must be a finite, non-negative arrival rate")
    return value


def _n(n: int) -> int:
    """The number of servers: an integer >= 2 (ln n appears in denominators)."""
    require(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 2, "n", n,
            "must be an integer >= 2")
    return int(n)


def _rhos(rhos: Iterable[float] | float) -> np.ndarray:
    """A 1-D array of loads ρ in [0, 1]."""
    try:
        arr = np.atleast_1d(np.asarray(rhos, dtype=float))
    except (TypeError, ValueError):
        raise config_error("rhos", rhos, "must be numbers in [0, 1]") from None
    require(arr.ndim == 1, "rhos", rhos, "must be a 1-D sequence")
    require(bool(np.all(np.isfinite(arr)) and np.all((arr >= 0) & (arr <= 1))), "rhos", rhos,
            "loads ρ = λ/λ^max must lie in [0, 1]")
    return arr


def _above_lam_max(lam: float, lam_max: float, a_star: float) -> InfeasibleError:
    return InfeasibleError(
        f"λ = {lam:.10g} is at or above λ^max = {lam_max:.10g} for a* = {a_star:g}: "
        "no routing meets the accuracy target without overloading a class")


def _clamp_lam(params: SystemParams, a_star: float, lam: float) -> float:
    """λ itself, or λ^max when λ exceeds it by float noise only; InfeasibleError beyond that."""
    lmax = lambda_max(params, a_star)
    if lam > lmax * (1.0 + LAM_REL_TOL):
        raise _above_lam_max(lam, lmax, a_star)
    return min(lam, lmax)


# --------------------------------------------------------------------------------------------
# λ^max (Definition 1, eq. 2)
# --------------------------------------------------------------------------------------------

def lambda_max(params: SystemParams, a_star: float) -> float:
    """λ^max of Definition 1 (eq. 2), in closed form.

    In traffic units x = λp, λ^max = max Σx_k s.t. 0 <= x <= μα and Σ x_k (a_k − a*) >= 0:
    a fractional knapsack. Every class with a_k >= a* is filled (it costs no accuracy and
    adds the budget B = Σ α_kμ_k (a_k − a*)); the classes below a* then spend B in order of
    increasing deficit a* − a_k, because each unit of traffic costs its deficit.
    """
    a_star = params.check_target(a_star)
    cap, a = params.capacity, params.a_arr
    above = a >= a_star
    total = float(cap[above].sum())
    budget = float(np.dot(cap[above], a[above] - a_star))
    # Below-target classes, closest to a* first (a increases with the index, so walk down).
    for k in np.flatnonzero(~above)[::-1]:
        if budget <= 0.0:
            break
        deficit = a_star - a[k]
        x_k = min(float(cap[k]), budget / deficit)
        total += x_k
        budget -= x_k * deficit
    return float(total)


# --------------------------------------------------------------------------------------------
# The LP lower bound (Lemma 1, eq. 3)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class LPBound:
    """The LP of Lemma 1 at one λ: T = T_LP-LB(λ) and its optimiser p = p*(λ)."""

    lam: float
    a_star: float
    T: float
    p: np.ndarray

    @property
    def N(self) -> float:
        """N_LP-LB(λ) = λ T_LP-LB(λ), the normalised mean number in system (eq. 12)."""
        return self.lam * self.T

    @property
    def traffic(self) -> np.ndarray:
        """A_LP-LB(λ) = λ p*(λ), traffic per class (eq. 13)."""
        return self.lam * self.p


def lp_lower_bound(params: SystemParams, a_star: float, lam: float, *,
                   backend: str = "highs") -> LPBound:
    """T_LP-LB(λ) of Lemma 1 (eq. 3), solved with :func:`infsched.optim.solve_lp`.

    Solved in the traffic form x = λp (spec §2.1), which stays well conditioned as λ → 0:
    minimise Σ x_k/μ_k s.t. Σ x = λ, a·x >= a*λ, 0 <= x <= μα; then T = optimum/λ, p = x/λ.
    At λ = 0 the capacity constraint vanishes and the answer is the relaxed LP's (Lemma 3).
    λ within 1e-9 (relative) of λ^max is solved at λ^max(1 − 1e-12) to avoid a false
    "infeasible" from the solver's tolerances.
    """
    a_star = params.check_target(a_star)
    lam = _lam(lam)
    if lam == 0.0:
        v, q = relaxed_lp(params, a_star)
        return LPBound(lam=0.0, a_star=a_star, T=v, p=q)
    lmax = lambda_max(params, a_star)
    if lam > lmax * (1.0 + LAM_REL_TOL):
        raise _above_lam_max(lam, lmax, a_star)
    lam_solve = lmax * (1.0 - 1e-12) if lam >= lmax * (1.0 - LAM_REL_TOL) else lam
    K = params.K
    name = f"LP lower bound (eq. 3) at λ = {lam:g}, a* = {a_star:g}"
    try:
        sol = solve_lp(1.0 / params.mu_arr,
                       A_ub=-params.a_arr.reshape(1, K), b_ub=[-a_star * lam_solve],
                       A_eq=np.ones((1, K)), b_eq=[lam_solve],
                       bounds=[(0.0, float(c)) for c in params.capacity],
                       backend=backend, name=name)
        x = np.clip(sol.x, 0.0, None)
        p = x / lam_solve
        if _routing_ok(params, a_star, lam_solve, p):
            return LPBound(lam=lam, a_star=a_star, T=sol.objective / lam_solve, p=p)
    except InfeasibleError:
        pass
    # at small λ the traffic form's rows (Σx = λ, a·x >= a*λ) fall to the size of the solver's
    # feasibility tolerance (1e-7): it returned a routing 5 % off at λ = 1e-6, a* = 70.5, and
    # "infeasible" at λ = 1e-7. Solve for p = x/λ instead: rows of order 1, capacity bounds μα/λ
    # merely large. Every λ whose traffic-form answer passes the check above keeps it.
    sol = solve_lp(1.0 / params.mu_arr, A_ub=-params.a_arr.reshape(1, K), b_ub=[-a_star],
                   A_eq=np.ones((1, K)), b_eq=[1.0],
                   bounds=[(0.0, float(c) / lam_solve) for c in params.capacity],
                   backend=backend, name=name)
    return LPBound(lam=lam, a_star=a_star, T=sol.objective, p=np.clip(sol.x, 0.0, None))


def _routing_ok(params: SystemParams, a_star: float, lam: float, p: np.ndarray,
                tol: float = 1e-9) -> bool:
    """Whether ``p`` is a routing of eq. 3 to a relative ``tol``: Σp = 1, p·a >= a*, λp <= μα."""
    return bool(abs(p.sum() - 1.0) <= tol and p @ params.a_arr >= a_star * (1.0 - tol)
                and np.all(lam * p <= params.capacity * (1.0 + tol) + tol * lam))


# --------------------------------------------------------------------------------------------
# Lemma 3: the relaxed LP (eqs. 8–9) and the plateau end λ_1 (eq. 83)
# --------------------------------------------------------------------------------------------

def _pair_q(a: np.ndarray, a_star: float, i: int, j: int) -> np.ndarray:
    """q^{(i,j)}: the unique q with support {i, j}, q·1 = 1 and q·a = a* (Section 5.2)."""
    q = np.zeros(a.shape[0])
    q[i] = (a[j] - a_star) / (a[j] - a[i])
    q[j] = (a_star - a[i]) / (a[j] - a[i])
    return q


def relaxed_lp(params: SystemParams, a_star: float) -> tuple[float, np.ndarray]:
    """The relaxed LP of eq. 8 (no capacity constraint): its value v and optimiser q.

    Its optimum is a vertex of {p >= 0, p·1 = 1, p·a >= a*}: a singleton e_i with a_i >= a*
    or a proper pair q^{(i,j)} with a_i < a* < a_j. Lemma 3 (eq. 9) states the answer as the
    cheapest proper pair, or e_i when a_i = a*; we take the minimum over all vertices, which
    is the same whenever no a_i equals a* (the paper's standing assumption) and stays correct
    when one does (e.g. a* = 75 in the main configuration, where the pair (1,3) beats e_2).
    Ties go to the singleton, then to the lexicographically first pair (0-based classes).
    """
    a_star = params.check_target(a_star)
    a, inv_mu = params.a_arr, 1.0 / params.mu_arr
    K = params.K
    best: tuple[float, int, tuple[int, ...], np.ndarray] | None = None
    for i in range(K):
        if a[i] >= a_star:
            cand = (float(inv_mu[i]), 0, (i,), np.eye(K)[i])
            best = cand if best is None or cand[:3] < best[:3] else best
    for i in range(K):
        for j in range(i + 1, K):
            if a[i] < a_star < a[j]:
                q = _pair_q(a, a_star, i, j)
                cand = (float(q @ inv_mu), 1, (i, j), q)
                best = cand if best is None or cand[:3] < best[:3] else best
    assert best is not None  # check_target guarantees a_K >= a*, so e_K is a candidate
    return best[0], best[3].copy()


def _tuple_limit(params: SystemParams, q: np.ndarray) -> float:
    """sup{λ >= 0 : λ q <= μα}: the load a non-negative routing vector q alone can carry."""
    pos = q > 0
    return float(np.min(params.capacity[pos] / q[pos]))


def plateau_end(params: SystemParams, a_star: float) -> float:
    """λ_1 of eq. 83: the largest λ at which the relaxed optimum q^{(i1,j1)} fits, λq <= μα.

    On [0, λ_1] the LP equals the relaxed LP, so T_LP-LB(λ) is flat at v^{(i1,j1)} (App. B).
    """
    _, q = relaxed_lp(params, a_star)
    return _tuple_limit(params, q)


# --------------------------------------------------------------------------------------------
# Routing tuples (Definition 2, eqs. 10–11)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RoutingTuple:
    """A routing tuple (S, q_S, v_S) of Definition 2.

    ``classes`` is the support S (0-based, ascending); ``q`` (length K) satisfies q·1 = 1 and
    q·a = a* (or q = e_i for a singleton); ``v = q·μ^{-1}`` is its cost. ``kind`` is
    ``"singleton"``, ``"proper"`` (a_lo < a* < a_hi, q >= 0) or ``"shuffle"`` (both classes on
    the same side of a*, so q has one negative entry; Section 6).
    """

    classes: tuple[int, ...]
    q: np.ndarray
    v: float
    kind: str

    @property
    def pos(self) -> tuple[int, ...]:
        """Classes with q_k > 0 (0-based); TAD-OP needs an idle server in each."""
        return tuple(int(k) for k in self.classes if self.q[k] > 0)

    @property
    def neg(self) -> tuple[int, ...]:
        """Classes with q_k < 0 (0-based); TAD-OP needs a busy server in each."""
        return tuple(int(k) for k in self.classes if self.q[k] < 0)

    @property
    def lo(self) -> int | None:
        """For a proper pair, the class with a < a* (the faster one); else None."""
        return self.classes[0] if self.kind == "proper" else None

    @property
    def hi(self) -> int | None:
        """For a proper pair, the class with a > a* (the more accurate one); else None."""
        return self.classes[1] if self.kind == "proper" else None

    def label(self) -> str:
        """The paper's 1-based notation: ``"(1,3)"`` for a pair, ``"{3}"`` for a singleton."""
        names = ",".join(str(k + 1) for k in self.classes)
        return "{" + names + "}" if len(self.classes) == 1 else "(" + names + ")"

    def __repr__(self) -> str:
        return f"RoutingTuple({self.label()}, kind={self.kind}, v={self.v:.6g})"


@lru_cache(maxsize=256)
def _tuples_cached(params: SystemParams, a_star: float) -> tuple[RoutingTuple, ...]:
    a, inv_mu = params.a_arr, 1.0 / params.mu_arr
    K = params.K
    out: list[RoutingTuple] = []
    for i in range(K):
        if a[i] >= a_star:
            q = np.eye(K)[i]
            out.append(RoutingTuple((i,), q, float(inv_mu[i]), "singleton"))
    for i in range(K):
        for j in range(i + 1, K):
            q = _pair_q(a, a_star, i, j)
            support = tuple(int(k) for k in np.flatnonzero(q != 0.0))
            if len(support) == 1:
                # a* equals a_i or a_j exactly (spec §2.3): q collapses onto the singleton of
                # that class, which is already in the list with the same v.
                continue
            v = float(q @ inv_mu)
            if v <= 0.0:  # eq. 11 keeps only v > 0; Algorithm 1 never uses the others
                continue
            kind = "proper" if a[i] < a_star < a[j] else "shuffle"
            out.append(RoutingTuple(support, q, v, kind))
    for t in out:
        t.q.flags.writeable = False  # shared through the cache
    # Sorted by cost (eq. 11); exact ties: singletons first, then lexicographic support.
    out.sort(key=lambda t: (t.v, len(t.classes) != 1, t.classes))
    return tuple(out)


def routing_tuples(params: SystemParams, a_star: float) -> list[RoutingTuple]:
    """S*_opt of eq. 11, sorted by v ascending (0-based classes).

    All pairs (i, j), i < j, with v^{(i,j)} > 0, plus the singletons {i} with a_i >= a*.
    If a* equals some a_k, pairs containing k collapse onto {k}; they are merged into that
    singleton (support of q, spec §2.3), so each support appears once.
    """
    a_star = params.check_target(a_star)
    return list(_tuples_cached(params, a_star))


# --------------------------------------------------------------------------------------------
# Waterfilling (Algorithm 1) and its vectorised path
# --------------------------------------------------------------------------------------------

def _max_weight(x: np.ndarray, q: np.ndarray, cap: np.ndarray) -> float:
    """max{w >= 0 : 0 <= x + w q <= μα}: the traffic tuple q can take (Algorithm 1, line w_k).

    Float noise can leave x a hair outside [0, μα]; the result is clipped at 0 as in the
    paper's "if w_k ∉ [0, λ_tr] then clip".
    """
    pos, neg = q > 0, q < 0
    w = math.inf
    if pos.any():
        w = min(w, float(np.min((cap[pos] - x[pos]) / q[pos])))
    if neg.any():
        w = min(w, float(np.min(x[neg] / -q[neg])))
    return max(w, 0.0)


@dataclass(frozen=True, eq=False)
class WaterfillResult:
    """Output of Algorithm 1 at one λ.

    ``weights[k]`` is the traffic given to ``tuples[k]`` (same order); p = Σ w_k q_k / λ,
    N = Σ w_k v_k = N_WF(λ) (eq. 12) and T = N/λ.
    """

    lam: float
    p: np.ndarray
    weights: np.ndarray
    N: float
    T: float
    tuples: list[RoutingTuple]


def waterfill(params: SystemParams, a_star: float, lam: float,
              tuples: list[RoutingTuple] | None = None) -> WaterfillResult:
    """Algorithm 1 (waterfilling): one pass over S*_opt in order of cost, in traffic units.

    Each tuple takes as much of the remaining traffic as keeps 0 <= λp <= μα; the loop stops
    when all of λ is placed. Theorem 1: N_WF(λ) = N_LP-LB(λ) for λ in [0, λ^max].
    At λ = 0 the weights are all zero and p, T are the λ → 0 limit (the relaxed LP, Lemma 3).
    Raises InfeasibleError when λ > λ^max or when the pass cannot place all of λ.
    """
    a_star = params.check_target(a_star)
    lam_in = _lam(lam)
    tuples = routing_tuples(params, a_star) if tuples is None else list(tuples)
    if lam_in == 0.0:
        v, q = relaxed_lp(params, a_star)
        return WaterfillResult(0.0, q, np.zeros(len(tuples)), 0.0, v, tuples)
    lam_eff = _clamp_lam(params, a_star, lam_in)
    cap = params.capacity
    x = np.zeros(params.K)
    weights = np.zeros(len(tuples))
    N, rem = 0.0, lam_eff
    tol = 1e-12 * lam_eff
    for k, t in enumerate(tuples):
        w = min(_max_weight(x, t.q, cap), rem)
        x = np.clip(x + w * t.q, 0.0, cap)  # keep float drift inside the box
        weights[k] = w
        N += w * t.v
        rem -= w
        if rem <= tol:
            break
    if rem > tol:
        raise InfeasibleError(
            f"waterfilling could place only {lam_eff - rem:.10g} of λ = {lam_eff:.10g} "
            f"(a* = {a_star:g}): the routing tuples cannot carry this load")
    return WaterfillResult(lam_in, x / lam_eff, weights, N, N / lam_eff, tuples)


@dataclass(frozen=True, eq=False)
class _Path:
    """Algorithm 1 run with λ = ∞: cumulative traffic breakpoints of the one-pass waterfill.

    The pass at a finite λ is the same pass truncated where the cumulative weight reaches λ
    (``rem`` only ever clips the last weight), so x(λ) and N(λ) are piecewise linear in λ with
    breakpoints ``lams``: on (lams[k], lams[k+1]] they move along tuple k's q and v.
    """

    lams: np.ndarray   # (m+1,) cumulative weights, lams[0] = 0
    X: np.ndarray      # (m+1, K) traffic after each tuple
    Ncum: np.ndarray   # (m+1,) cumulative cost
    Q: np.ndarray      # (m, K) the tuples' q
    V: np.ndarray      # (m,) the tuples' v


@lru_cache(maxsize=256)
def _path(params: SystemParams, a_star: float) -> _Path:
    tuples = _tuples_cached(params, a_star)
    cap = params.capacity
    x = np.zeros(params.K)
    lams, X, Ncum = [0.0], [x.copy()], [0.0]
    for t in tuples:
        w = _max_weight(x, t.q, cap)
        x = np.clip(x + w * t.q, 0.0, cap)
        lams.append(lams[-1] + w)
        X.append(x.copy())
        Ncum.append(Ncum[-1] + w * t.v)
    Q = np.array([t.q for t in tuples]).reshape(len(tuples), params.K)
    V = np.array([t.v for t in tuples])
    path = _Path(np.array(lams), np.array(X), np.array(Ncum), Q, V)
    for arr in (path.lams, path.X, path.Ncum, path.Q, path.V):
        arr.flags.writeable = False
    return path


def _lp_star(params: SystemParams, a_star: float,
             lams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised p*(λ) and T_LP-LB(λ) for an array of λ in [0, λ^max], via the waterfill path.

    Returns (P, T) with P of shape lams.shape + (K,). λ = 0 gives the relaxed LP (Lemma 3).
    """
    a_star = params.check_target(a_star)
    lams = np.asarray(lams, dtype=float)
    flat = lams.ravel()
    lmax = lambda_max(params, a_star)
    if flat.size and float(flat.max()) > lmax * (1.0 + LAM_REL_TOL):
        raise _above_lam_max(float(flat.max()), lmax, a_star)
    path = _path(params, a_star)
    top = float(path.lams[-1])
    if flat.size and float(flat.max()) > top * (1.0 + LAM_REL_TOL):
        # Would contradict Theorem 1 / Lemma 6 (λ_WF^max = λ^max); say so rather than guess.
        raise InfeasibleError(f"waterfilling reaches only λ = {top:.10g} < λ^max = {lmax:.10g} "
                              f"for a* = {a_star:g}")
    L = np.minimum(flat, top)
    seg = np.clip(np.searchsorted(path.lams, L, side="left") - 1, 0, path.V.shape[0] - 1)
    dl = L - path.lams[seg]
    x = path.X[seg] + dl[:, None] * path.Q[seg]
    N = path.Ncum[seg] + dl * path.V[seg]
    P = np.empty_like(x)
    T = np.empty_like(N)
    pos = L > 0
    P[pos] = x[pos] / L[pos, None]
    T[pos] = N[pos] / L[pos]
    if (~pos).any():
        v0, q0 = relaxed_lp(params, a_star)
        P[~pos] = q0
        T[~pos] = v0
    return P.reshape(lams.shape + (params.K,)), T.reshape(lams.shape)


def lp_curve(params: SystemParams, a_star: float, rhos: Iterable[float]) -> pd.DataFrame:
    """T_LP-LB, N_LP-LB = λT, p*(λ) and the accuracy p*·a along loads ρ = λ/λ^max.

    Computed by waterfilling (exact by Theorem 1), so a 1000-point curve costs microseconds.
    Columns: rho, lam, T, N, p1..pK (the paper's 1-based classes), accuracy.
    """
    a_star = params.check_target(a_star)
    rho = _rhos(rhos)
    lam = rho * lambda_max(params, a_star)
    P, T = _lp_star(params, a_star, lam)
    df = pd.DataFrame({"rho": rho, "lam": lam, "T": T, "N": lam * T})
    for k in range(params.K):
        df[f"p{k + 1}"] = P[:, k]
    df["accuracy"] = P @ params.a_arr
    return df


# --------------------------------------------------------------------------------------------
# R-JIQ (Section 3.2, eq. 4; Lemma 2)
# --------------------------------------------------------------------------------------------

def rjiq_beta(rho: float, n: int) -> float:
    """β with ρ = 1 − n^{−β}, i.e. β = −ln(1 − ρ)/ln n (Lemma 2; spec §3.1). ρ = 1 gives ∞."""
    n = _n(n)
    rho = float(_rhos(rho)[0])
    if rho >= 1.0:
        return math.inf
    return -math.log1p(-rho) / math.log(n)


def _gamma(beta: np.ndarray | float) -> np.ndarray | float:
    """γ = ½(½ − β) (Lemma 2), clipped at 0 for β >= ½ where the lemma no longer applies."""
    return np.maximum(0.0, 0.5 * (0.5 - np.asarray(beta, dtype=float)))


def _mix(p_lam: np.ndarray, p_max: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Eq. 4: (1 − w) p*(λ) + w p*(λ^max), with solver-level negatives clipped, renormalised."""
    p = (1.0 - w)[..., None] * p_lam + w[..., None] * p_max
    p = np.clip(p, 0.0, None)
    return p / p.sum(axis=-1, keepdims=True)


def rjiq_probs(params: SystemParams, a_star: float, lam: float, n: int, *,
               beta: float | None = None) -> np.ndarray:
    """p_R-JIQ(λ) of eq. 4 with w = n^{−γ}, γ = max(0, ½(½ − β)).

    β defaults to −ln(1 − λ/λ^max)/ln n (spec §3.1); pass ``beta`` to sweep it directly
    (Figs. 6–8). p*(·) comes from waterfilling, which equals the LP (Theorem 1).
    """
    a_star = params.check_target(a_star)
    lam = _clamp_lam(params, a_star, _lam(lam))
    n = _n(n)
    lmax = lambda_max(params, a_star)
    if beta is None:
        beta = rjiq_beta(min(lam / lmax, 1.0), n)
    else:
        beta = float(beta)
        require(beta >= 0.0 and not math.isnan(beta), "beta", beta, "must be >= 0")
    w = np.asarray(float(n) ** (-float(_gamma(beta))))
    P, _ = _lp_star(params, a_star, np.array([lam, lmax]))
    return _mix(P[0], P[1], w)


def rjiq_zero_wait_latency(params: SystemParams, a_star: float, lam: float, n: int, *,
                           beta: float | None = None) -> float:
    """p_R-JIQ·μ^{-1}: R-JIQ's mean latency if no job ever waits (a lower bound on E[T])."""
    p = rjiq_probs(params, a_star, lam, n, beta=beta)
    return float(p @ (1.0 / params.mu_arr))


# --------------------------------------------------------------------------------------------
# Fig. 5: R-JIQ's tolerance to an underestimated λ (Section 3.4)
# --------------------------------------------------------------------------------------------

def _tolerance_grid(params: SystemParams, a_star: float, n: int, rhos: np.ndarray,
                    criterion: str, step: float, max_error: float) -> np.ndarray:
    """Fig. 5 tolerance at each ρ, all errors ε on the grid evaluated at once (spec §4).

    R-JIQ is configured with λ̂ = (1 − ε)λ: γ̂ comes from λ̂ ("γ also depends on the arrival
    rate") and p̂ = (1 − ŵ)p*(λ̂) + ŵ p*(λ^max). The true traffic λ p̂ then loads class k at
    ρ_k = λ p̂_k/(α_kμ_k). Stable iff max_k ρ_k < 1; zero wait (sub-Halfin–Whitt) iff
    ρ_k <= 1 − (α_k n)^{−1/2} for every class, whose subsystem has α_k n servers.
    Only underestimates are scanned: overestimating λ keeps λ p̂ <= μα.
    """
    require(math.isfinite(step) and step > 0, "step", step, "must be a positive number")
    require(math.isfinite(max_error) and 0 <= max_error < 1, "max_error", max_error,
            "must lie in [0, 1)")
    lmax = lambda_max(params, a_star)
    eps = np.arange(int(math.floor(max_error / step + 1e-9)) + 1) * step
    lam = rhos * lmax                                  # (R,)
    lam_hat = lam[:, None] * (1.0 - eps[None, :])      # (R, E)
    with np.errstate(divide="ignore"):
        beta_hat = -np.log1p(-np.minimum(lam_hat / lmax, 1.0)) / math.log(n)
    w = float(n) ** (-_gamma(beta_hat))
    P_hat, _ = _lp_star(params, a_star, lam_hat)
    P_max, _ = _lp_star(params, a_star, np.array([lmax]))
    p = _mix(P_hat, P_max[0], w)                        # (R, E, K)
    load = lam[:, None, None] * p / params.capacity     # ρ_k, (R, E, K)
    if criterion == "stable":
        ok = np.all(load < 1.0, axis=-1)
    else:
        hw = 1.0 - (params.alpha_arr * n) ** -0.5
        ok = np.all(load <= hw + 1e-12, axis=-1)
    # Largest ε whose every ε' <= ε passes: the length of the leading run of passes.
    run = np.argmin(np.concatenate([ok, np.zeros((ok.shape[0], 1), bool)], axis=1), axis=1)
    return np.where(run > 0, eps[np.maximum(run - 1, 0)], 0.0)


def rjiq_error_tolerance(params: SystemParams, a_star: float, n: int, rho: float, *,
                         criterion: str = "zero_wait", step: float = 0.0025,
                         max_error: float = 0.5) -> float:
    """Fig. 5: the largest relative underestimate ε of λ that R-JIQ tolerates at load ρ.

    The answer is the largest ε on the grid {0, step, 2·step, ..., max_error} such that the
    criterion holds for every ε' <= ε; 0 if it fails even with the true λ, ``max_error`` if it
    never fails. ``criterion``: ``"zero_wait"`` (every subsystem sub-Halfin–Whitt) or
    ``"stable"`` (every subsystem load < 1). See :func:`_tolerance_grid` for the model.
    """
    one_of("criterion", criterion, CRITERIA)
    a_star = params.check_target(a_star)
    n = _n(n)
    return float(_tolerance_grid(params, a_star, n, _rhos(rho), criterion, step, max_error)[0])


def tolerance_curve(params: SystemParams, a_star: float, n: int, rhos: Iterable[float],
                    criterion: str, *, step: float = 0.0025,
                    max_error: float = 0.5) -> np.ndarray:
    """:func:`rjiq_error_tolerance` at every ρ in ``rhos`` (one vectorised evaluation)."""
    one_of("criterion", criterion, CRITERIA)
    a_star = params.check_target(a_star)
    n = _n(n)
    return _tolerance_grid(params, a_star, n, _rhos(rhos), criterion, step, max_error)


def crossing_load(params: SystemParams, a_star: float, n: int, criterion: str,
                  level: float = 0.05, rhos: Iterable[float] | None = None) -> float:
    """ρ_w^5 / ρ_st^5 of Fig. 5: the first load at which an underestimate of ``level`` breaks
    the criterion, i.e. where the tolerance first drops below ``level``.

    "The load where a 5 % error pushes the system outside the sub-Halfin regime" (Section 3.4):
    a tolerance of exactly 5 % still survives a 5 % error, so the crossing is strict. This is
    the reading that reproduces the spec's ρ_st^5 = 0.885 and ρ_w^5(4096) = 0.625; with "<="
    the grid's 0.25 % steps move them to 0.87 and 0.605.
    ``rhos`` defaults to 0.005, 0.010, ..., 0.995. NaN when the tolerance never gets there.
    """
    require(math.isfinite(level) and level > 0, "level", level, "must be a positive error")
    grid = np.round(np.arange(1, 200) * 0.005, 10) if rhos is None else _rhos(rhos)
    tol = tolerance_curve(params, a_star, n, grid, criterion)
    hit = np.flatnonzero(tol < level - 1e-12)
    return float(grid[hit[0]]) if hit.size else math.nan


# --------------------------------------------------------------------------------------------
# All-idle routing patterns of TAD (Section 4) and TAD-OP (Algorithm 2)
# --------------------------------------------------------------------------------------------

def _exact(x: float) -> Fraction:
    """The decimal a user typed (75.1 → 751/10), so Δ never drifts (spec §3.0)."""
    return Fraction(repr(float(x)))


def _check_steps(steps: int) -> int:
    require(isinstance(steps, (int, np.integer)) and steps >= 1, "steps", steps,
            "must be a positive integer")
    return int(steps)


def tad_zero_load_pattern(params: SystemParams, a_star: float, steps: int = 10_000) -> np.ndarray:
    """Fractions of jobs per class when TAD routes with every class idle (Section 4).

    With idle servers everywhere TAD reduces to the Δ recursion: route to the fastest class
    with Δ + a_k − a* >= 0, then Δ += a_k − a*. Exact rational arithmetic keeps membership
    of that set from flipping on float noise (e.g. a* = 75.1).
    """
    a_star = params.check_target(a_star)
    steps = _check_steps(steps)
    a = [_exact(x) for x in params.a]
    target = _exact(a_star)
    counts = np.zeros(params.K)
    delta = Fraction(0)
    for _ in range(steps):
        i = next(k for k in range(params.K) if delta + a[k] - target >= 0)  # a_K >= a*
        counts[i] += 1
        delta += a[i] - target
    return counts / steps


def tadop_zero_load_pattern(params: SystemParams, a_star: float,
                            steps: int = 10_000) -> np.ndarray:
    """Fractions of jobs per class when TAD-OP (Algorithm 2) routes with every class idle.

    A tuple is routable when each class with q_k > 0 has an idle server and each class with
    q_k < 0 a busy one; with every server idle, shuffle pairs are never routable, so the first
    routable tuple is the first singleton or proper pair of S*_opt, i.e. the relaxed optimum.
    A proper pair goes to lo if Δ > 0 else hi (Δ = 0 → hi, as written); a singleton to its class.
    """
    a_star = params.check_target(a_star)
    steps = _check_steps(steps)
    t = next(t for t in routing_tuples(params, a_star) if not t.neg)  # singletons always exist
    a = [_exact(x) for x in params.a]
    target = _exact(a_star)
    counts = np.zeros(params.K)
    delta = Fraction(0)
    for _ in range(steps):
        if t.kind == "proper":
            i = t.lo if delta > 0 else t.hi
        else:
            i = t.pos[0]
        counts[i] += 1
        delta += a[i] - target
    return counts / steps


# --------------------------------------------------------------------------------------------
# Worked examples (Sections 3.4, 4 and 6; spec §4.12)
# --------------------------------------------------------------------------------------------

def example_1() -> dict:
    """Example 1 (Section 3.4): a 1.25 % underestimate of λ overloads class 3.

    μ = (1, 0.5, 0.25), a = (40, 50, 100), α = 1/3, a* = 52, λ = 0.8λ^max, λ̂ = 0.79λ^max.
    Routing by p*(λ̂) sends λ p̂_3 = 0.084388 to class 3, above its capacity α_3μ_3 = 1/12
    (paper: 0.0843 > 0.0833). p* is used directly, without R-JIQ's mixing.
    """
    params, a_star = EXAMPLE_1_2, 52.0
    lmax = lambda_max(params, a_star)
    lam, lam_hat = 0.8 * lmax, 0.79 * lmax
    p_hat = lp_lower_bound(params, a_star, lam_hat).p
    traffic3 = float(lam * p_hat[2])
    cap3 = float(params.capacity[2])
    return {"a_star": a_star, "lam_max": lmax, "lam": lam, "lam_hat": lam_hat, "p_hat": p_hat,
            "traffic_class3": traffic3, "capacity_class3": cap3, "overloaded": traffic3 > cap3}


def example_2() -> dict:
    """Example 2 (Section 4): TAD's round robin on (1,2) vs the optimal pair (1,3).

    Same system, a* = 45. At low load TAD alternates classes 1 and 2 (E[T] = 1.5); one job in
    12 to class 3 and the rest to class 1 meets a* with E[T] = 15/12 = 1.25, 16.67 % better.
    """
    params, a_star = EXAMPLE_1_2, 45.0
    pattern = tad_zero_load_pattern(params, a_star)
    tad_latency = float(pattern @ (1.0 / params.mu_arr))
    v, q = relaxed_lp(params, a_star)
    pair = tuple(int(k) for k in np.flatnonzero(q > 0))
    return {"a_star": a_star, "lam_max": lambda_max(params, a_star), "tad_pattern": pattern,
            "tad_latency": tad_latency, "optimal_pair": "(" + ",".join(str(k + 1) for k in pair) + ")",
            "optimal_q": q, "optimal_pair_latency": v,
            "improvement": (tad_latency - v) / tad_latency}


def example_3() -> dict:
    """Example 3 (Section 6): a shuffle pair is needed to reach λ^max.

    μ = (1, 0.5, 0.25), a = (40, 50, 100), α = (0.025, 0.95, 0.025), a* = 52. The pair (1,3)
    alone carries λ <= 0.03125 and (2,3) alone λ <= 0.15625 (the paper prints 0.0625 and 0.25:
    arithmetic errata, spec §9.13). Waterfilling fills (1,3), skips (2,3) (class 3 is full)
    and moves traffic from class 1 to class 2 with the shuffle pair (1,2) up to λ^max.
    """
    params, a_star = EXAMPLE_3, 52.0
    a = params.a_arr
    lmax = lambda_max(params, a_star)
    at_max = lp_lower_bound(params, a_star, lmax)
    wf = waterfill(params, a_star, lmax)
    T_at = {lam: lp_lower_bound(params, a_star, lam).T
            for lam in (0.03125, 0.05, 0.0625, 0.1, lmax)}
    return {"a_star": a_star, "lam_max": lmax, "p_at_lam_max": at_max.p,
            "T_at_lam_max": at_max.T,
            "pair13_limit": _tuple_limit(params, _pair_q(a, a_star, 0, 2)),
            "pair23_limit": _tuple_limit(params, _pair_q(a, a_star, 1, 2)),
            "tuples": [t.label() for t in wf.tuples], "weights_at_lam_max": wf.weights,
            "T_at": T_at}
