"""Dispatching policies of the paper (Sections 3–5, spec §3) and two baselines.

Every policy picks a server **class** on arrival; the simulator then sends the job to an idle
server of that class if there is one (a LIFO stack of idle servers), else to a uniformly random
server of the class (spec §3.0). Random routing (:class:`RandomRouting`) is the exception: it
ignores idleness and always picks a uniformly random server of the drawn class (spec §3.5).

Each policy has two faces:

- ``choose(idle_counts, busy_counts, delta, u, table=None) -> int``: a pure-Python rule that
  reads like the paper, used by the simpy reference model (:mod:`infsched.tad.reference`).
  ``u`` is the one uniform in [0, 1) that the policy may spend on its random choice; ``delta``
  is the accuracy surplus Δ in the units of ``table`` (see below). TAD and TAD-OP need the
  compiled ``table`` (they depend on the system's accuracies); the others ignore it.
- ``table(params, ...) -> PolicyTable``: the same rule compiled into numeric arrays for the numba
  engine (:mod:`infsched.tad.sim`).

Exact Δ (spec §3.0, §3.2). With a* = 75.1 a floating-point Δ drifts (Δ + a_2 − a* = −1e-14 instead
of 0) and flips TAD's allowed set. :func:`accuracy_scale` finds the smallest d ≤ 6 such that every
a_k·10^d and a*·10^d is an integer; Δ is then an exact integer in units of 10^-d. If there is no
such d, Δ is a float and the tests "Δ + a_k − a* ≥ 0" and "Δ > 0" are made with a tolerance of
1e-9 (``PolicyTable.exact`` says which). Classes are 0-based in code (class 1 of the paper is 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from infsched.errors import ConfigError, config_error, require
from infsched.tad.model import SystemParams

#: Policy names accepted by :func:`make_policy` (and by ``simulate(..., policy=<name>)``).
POLICY_NAMES = ("random", "jiq-fast", "jiq-accurate", "r-jiq", "tad", "tad-op")

# Policy codes understood by the numba engine.
RANDOM, JIQ_FAST, JIQ_ACCURATE, R_JIQ, TAD_CODE, TADOP_CODE = range(6)

#: Float fallback tolerance for the Δ tests when Δ cannot be held as an exact integer.
DELTA_TOL = 1e-9
_MAX_DIGITS = 6
_MAX_SCALED = 1e12   # keep |a·10^d| small enough that Δ (Σ over 4e8 jobs) fits in int64


# ----------------------------------------------------------------------------- exact Δ units

def accuracy_scale(values: Sequence[float]) -> int | None:
    """Smallest 10^d (d ≤ 6) making every value an integer within 1e-9; None if there is none."""
    vals = [float(v) for v in values]
    for d in range(_MAX_DIGITS + 1):
        s = 10 ** d
        ok = True
        for v in vals:
            x = v * s
            if abs(x) > _MAX_SCALED or abs(x - round(x)) > 1e-9 * max(1.0, abs(x)):
                ok = False
                break
        if ok:
            return s
    return None


def _scaled_deltas(params: SystemParams, a_star: float, scale: int | None) -> np.ndarray:
    """a_k − a* in Δ units: int64 multiples of 1/scale, or float64 when scale is None."""
    if scale is None:
        return params.a_arr - float(a_star)
    a_int = np.array([round(a * scale) for a in params.a], dtype=np.int64)
    return a_int - np.int64(round(float(a_star) * scale))


# ----------------------------------------------------------------------------- compiled form

@dataclass(frozen=True)
class PolicyTable:
    """A policy compiled for the numba engine (one per phase of a run).

    ``code`` selects the rule; ``cum_p`` is the cumulative class distribution (random, R-JIQ);
    ``pos``/``neg`` (T × K booleans), ``proper``, ``lo``, ``hi`` and ``pick`` describe TAD-OP's
    sorted routing tuples (``pick`` is the class with q_k > 0 of a singleton or shuffle pair);
    ``d`` holds the accuracy deltas a_k − a* in Δ units (int64 when ``exact``, else float64) and
    ``scale`` converts Δ units back to accuracy points (Δ_points = Δ / scale).
    """

    code: int
    K: int
    cum_p: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    proper: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pick: np.ndarray
    d: np.ndarray
    scale: float
    exact: bool
    jiq: bool = True
    lenient: bool = False
    has_target: bool = True

    @property
    def n_tuples(self) -> int:
        return int(self.proper.shape[0])


def _table(params: SystemParams, code: int, a_star: float | None, scale: int | None | str,
           *, p=None, tuples=None, jiq=True, lenient=False) -> PolicyTable:
    K = params.K
    has_target = a_star is not None
    if scale == "auto":
        scale = accuracy_scale(list(params.a) + ([a_star] if has_target else []))
    d = _scaled_deltas(params, a_star, scale) if has_target else (
        np.zeros(K, np.int64) if scale is not None else np.zeros(K))
    cum_p = np.ones(K)
    if p is not None:
        require(len(p) == K, "p", tuple(p), f"must have one entry per class (K = {K})")
        cum_p = np.cumsum(np.asarray(p, float))
        cum_p[-1] = 1.0 + 1e-12   # a draw u < 1 always lands in a class
    T = len(tuples) if tuples else 0
    pos = np.zeros((T, K), bool)
    neg = np.zeros((T, K), bool)
    proper = np.zeros(T, bool)
    lo = np.full(T, -1, np.int64)
    hi = np.full(T, -1, np.int64)
    pick = np.full(T, -1, np.int64)
    for t, tup in enumerate(tuples or ()):
        pos[t], neg[t] = tup.pos_mask, tup.neg_mask
        proper[t] = tup.proper
        lo[t], hi[t], pick[t] = tup.lo, tup.hi, tup.pick
    return PolicyTable(code=code, K=K, cum_p=cum_p, pos=pos, neg=neg, proper=proper, lo=lo,
                       hi=hi, pick=pick, d=d, scale=float(scale) if scale is not None else 1.0,
                       exact=scale is not None, jiq=jiq, lenient=lenient, has_target=has_target)


@dataclass(frozen=True)
class _Tuple:
    """One routing tuple of S*_opt as TAD-OP uses it (0-based classes)."""

    pos_mask: tuple[bool, ...]
    neg_mask: tuple[bool, ...]
    proper: bool
    lo: int
    hi: int
    pick: int


def tadop_tuples(params: SystemParams, a_star: float) -> list[_Tuple]:
    """S*_opt (sorted by v, from :func:`infsched.tad.bound.routing_tuples`) as routing rules.

    pos = {k : q_k > 0}, neg = {k : q_k < 0}; a proper pair has lo (a < a*) and hi (a > a*);
    a singleton or shuffle pair routes to its one class with q_k > 0 (``pick``).
    """
    from infsched.tad import bound

    out = []
    a = params.a
    for tup in bound.routing_tuples(params, a_star):
        q = np.asarray(tup.q, float)
        pos = tuple(bool(x > 0) for x in q)
        neg = tuple(bool(x < 0) for x in q)
        proper = tup.kind == "proper"
        if proper:
            i, j = sorted(tup.classes)
            lo, hi = (i, j) if a[i] < a[j] else (j, i)
            out.append(_Tuple(pos, neg, True, lo, hi, -1))
        else:
            picks = [k for k in range(params.K) if pos[k]]
            if len(picks) != 1:
                raise ConfigError(f"routing tuple {tup.classes} has {len(picks)} positive "
                                  "entries; a singleton or shuffle pair must have exactly one")
            out.append(_Tuple(pos, neg, False, -1, -1, picks[0]))
    return out


# ----------------------------------------------------------------------------- helpers

def _check_counts(idle_counts, busy_counts) -> tuple[list[int], list[int]]:
    idle = [int(x) for x in idle_counts]
    busy = [int(x) for x in busy_counts]
    if len(idle) != len(busy):
        raise config_error("busy_counts", busy_counts, "must have the same length as idle_counts")
    return idle, busy


def _uniform_index(u: float, m: int) -> int:
    """floor(u·m) for u in [0, 1), guarded against rounding up to m (same rule as the engine)."""
    return min(int(u * m), m - 1)


def _jiq_no_idle_class(sizes: list[int], u: float) -> int:
    """Class of a uniformly random server among all n (JIQ baselines with no idle server)."""
    x = _uniform_index(u, sum(sizes))
    c = 0
    for k, nk in enumerate(sizes):
        c += nk
        if x < c:
            return k
    return len(sizes) - 1


def _categorical(cum_p: np.ndarray, u: float) -> int:
    K = len(cum_p)
    for k in range(K - 1):
        if u < cum_p[k]:
            return k
    return K - 1


def _prob_vector(name: str, p) -> tuple[float, ...]:
    try:
        arr = np.asarray(p, dtype=float).ravel()
    except (TypeError, ValueError):
        raise config_error(name, p, "must be a sequence of probabilities") from None
    require(arr.size >= 1 and np.all(np.isfinite(arr)), name, p, "must be finite probabilities")
    require(np.all(arr >= -1e-9), name, p, "probabilities must be non-negative")
    require(abs(arr.sum() - 1.0) <= 1e-6, name, p, f"must sum to 1 (sums to {arr.sum():.9g})")
    arr = np.clip(arr, 0.0, None)
    arr = arr / arr.sum()
    return tuple(float(x) for x in arr)


def _finite_target(a_star) -> float:
    try:
        val = float(a_star)
    except (TypeError, ValueError):
        raise config_error("a_star", a_star, "must be a number") from None
    require(math.isfinite(val), "a_star", a_star, "must be a finite number")
    return val


def _need_table(policy, table):
    if table is None:
        raise ConfigError(f"{type(policy).__name__}.choose needs table=policy.table(params): "
                          "the rule depends on the system's accuracies")
    return table


# ----------------------------------------------------------------------------- policies

@dataclass(frozen=True)
class RandomRouting:
    """Random-p (spec §3.5): class ~ p, then a uniformly random server of it; no JIQ.

    Each class-k server is an M/M/1 (or M/D/1) queue with rate λp_k/α_k: the simulator's check.
    """

    p: tuple[float, ...]
    name = "random"

    def __post_init__(self):
        object.__setattr__(self, "p", _prob_vector("p", self.p))

    def choose(self, idle_counts, busy_counts, delta, u, table=None) -> int:
        return _categorical(np.cumsum(self.p), u)

    def table(self, params: SystemParams, a_star: float | None = None, scale="auto") -> PolicyTable:
        return _table(params, RANDOM, a_star, scale, p=self.p, jiq=False)


@dataclass(frozen=True)
class JIQFast:
    """JIQ-fast / JFIQ (spec §3.5): the fastest class with an idle server, else a random server."""

    name = "jiq-fast"

    def choose(self, idle_counts, busy_counts, delta, u, table=None) -> int:
        idle, busy = _check_counts(idle_counts, busy_counts)
        for k, c in enumerate(idle):
            if c > 0:
                return k
        return _jiq_no_idle_class([i + b for i, b in zip(idle, busy)], u)

    def table(self, params: SystemParams, a_star: float | None = None, scale="auto") -> PolicyTable:
        return _table(params, JIQ_FAST, a_star, scale)


@dataclass(frozen=True)
class JIQAccurate:
    """JIQ-accurate (spec §3.5): the most accurate class with an idle server, else a random server."""

    name = "jiq-accurate"

    def choose(self, idle_counts, busy_counts, delta, u, table=None) -> int:
        idle, busy = _check_counts(idle_counts, busy_counts)
        for k in range(len(idle) - 1, -1, -1):
            if idle[k] > 0:
                return k
        return _jiq_no_idle_class([i + b for i, b in zip(idle, busy)], u)

    def table(self, params: SystemParams, a_star: float | None = None, scale="auto") -> PolicyTable:
        return _table(params, JIQ_ACCURATE, a_star, scale)


@dataclass(frozen=True)
class RJIQ:
    """R-JIQ (Section 3.2, eq. 4): class i ~ Categorical(p_RJIQ), then JIQ inside class i."""

    p: tuple[float, ...]
    name = "r-jiq"

    def __post_init__(self):
        object.__setattr__(self, "p", _prob_vector("p", self.p))

    @classmethod
    def for_load(cls, params: SystemParams, a_star: float, lam: float, n: int,
                 beta: float | None = None) -> RJIQ:
        """R-JIQ tuned to load λ on n servers: p_RJIQ = (1 − w)p*(λ) + w p*(λ^max), w = n^-γ."""
        from infsched.tad import bound

        return cls(tuple(bound.rjiq_probs(params, a_star, lam, n, beta=beta)))

    def choose(self, idle_counts, busy_counts, delta, u, table=None) -> int:
        return _categorical(np.cumsum(self.p), u)

    def table(self, params: SystemParams, a_star: float | None = None, scale="auto") -> PolicyTable:
        return _table(params, R_JIQ, a_star, scale, p=self.p)


@dataclass(frozen=True)
class TAD:
    """Track-the-Accuracy-Difference (Section 4, spec §3.2); needs no λ.

    I = {k : Δ + a_k − a* ≥ 0}; the fastest class of I with an idle server, else a class drawn
    uniformly from I; then Δ += a_i − a*. Δ ≥ 0 after every arrival.
    """

    a_star: float
    name = "tad"

    def __post_init__(self):
        object.__setattr__(self, "a_star", _finite_target(self.a_star))

    def choose(self, idle_counts, busy_counts, delta, u, table=None) -> int:
        tab = _need_table(self, table)
        idle, _ = _check_counts(idle_counts, busy_counts)
        ntol = 0 if tab.exact else -DELTA_TOL
        allowed = [k for k in range(tab.K) if delta + tab.d[k] >= ntol]
        if not allowed:   # impossible while Δ ≥ 0 and a_K ≥ a*; kept for safety
            return tab.K - 1
        for k in allowed:
            if idle[k] > 0:
                return k
        return allowed[_uniform_index(u, len(allowed))]

    def table(self, params: SystemParams, a_star: float | None = None, scale="auto") -> PolicyTable:
        params.check_target(self.a_star)
        return _table(params, TAD_CODE, self.a_star, scale)


@dataclass(frozen=True)
class TADOP:
    """TAD-OP (Algorithm 2, spec §3.3); needs no λ.

    Walk S*_opt by ascending v and take the first routable tuple: every q_k > 0 class has an idle
    server and every q_k < 0 class a busy one. A singleton or shuffle pair routes to its q_k > 0
    class; a proper pair to lo (a < a*) if Δ > 0 else hi. With no routable tuple, the most
    accurate class with an idle server; with no idle server at all, a class uniform in {1..K}.
    ``lenient=True`` asks a proper pair for an idle server only in the class Δ selects.
    """

    a_star: float
    lenient: bool = False
    name = "tad-op"

    def __post_init__(self):
        object.__setattr__(self, "a_star", _finite_target(self.a_star))
        require(isinstance(self.lenient, (bool, np.bool_)), "lenient", self.lenient,
                "must be True or False")

    def choose(self, idle_counts, busy_counts, delta, u, table=None) -> int:
        tab = _need_table(self, table)
        idle, busy = _check_counts(idle_counts, busy_counts)
        K = tab.K
        ptol = 0 if tab.exact else DELTA_TOL
        for t in range(tab.n_tuples):
            if tab.proper[t]:
                lo, hi = int(tab.lo[t]), int(tab.hi[t])
                i = lo if delta > ptol else hi   # Δ == 0 → hi, as written
                routable = idle[i] > 0 if tab.lenient else (idle[lo] > 0 and idle[hi] > 0)
            else:
                i = int(tab.pick[t])
                routable = all((not tab.pos[t, k] or idle[k] > 0) and
                               (not tab.neg[t, k] or busy[k] > 0) for k in range(K))
            if routable:
                return i
        for k in range(K - 1, -1, -1):    # "for k ← K:1": the most accurate idle class
            if idle[k] > 0:
                return k
        return _uniform_index(u, K)       # no idle server at all

    def table(self, params: SystemParams, a_star: float | None = None, scale="auto") -> PolicyTable:
        params.check_target(self.a_star)
        return _table(params, TADOP_CODE, self.a_star, scale,
                      tuples=tadop_tuples(params, self.a_star), lenient=bool(self.lenient))


Policy = RandomRouting | JIQFast | JIQAccurate | RJIQ | TAD | TADOP


def make_policy(name: str, params: SystemParams, a_star: float, lam: float, n: int) -> Policy:
    """Build a policy by name for the given system, target a*, load λ and size n.

    "random" routes with p*(λ) of the LP (the simulator check of spec §3.5); "r-jiq" uses
    p_RJIQ(λ, n); "tad" and "tad-op" need only a*; the JIQ baselines need nothing.
    Beware: past the low-load plateau p*(λ) fills some class to capacity (load exactly 1), so
    "random" is then critically loaded; give ``RandomRouting(p)`` an explicit p there.
    """
    if name not in POLICY_NAMES:
        raise config_error("policy", name, "must be one of " + ", ".join(map(repr, POLICY_NAMES)))
    if name == "jiq-fast":
        return JIQFast()
    if name == "jiq-accurate":
        return JIQAccurate()
    if name == "tad":
        return TAD(a_star)
    if name == "tad-op":
        return TADOP(a_star)
    from infsched.tad import bound

    if name == "random":
        return RandomRouting(tuple(np.asarray(bound.lp_lower_bound(params, a_star, lam).p)))
    return RJIQ.for_load(params, a_star, lam, n)


def policy_target(policy: Policy) -> float | None:
    """The accuracy target a policy carries itself (TAD, TAD-OP), else None."""
    return getattr(policy, "a_star", None)
