"""The fast serving simulator of KAIROS (spec §1.5, §2.1, §2.5, §2.7): query-distribution
policies on a heterogeneous configuration, the allowable-throughput bisection, and ORCL.

Semantics (spec §1.5). Queries arrive by a Poisson process of rate λ (QPS); query ``k`` has a
size ``b_k`` and, on an instance of type ``t``, a service time ``S[t, k]`` (ms). Each instance
serves one query at a time, with no preemption, no batching across queries and no dropping. A
query's latency is its wait plus its service; it **meets QoS iff finish − arrival ≤ T_qos**. The
*allowable throughput* of a configuration under a policy is the largest λ at which ≥ 99 % of the
queries meet QoS (spec §1.5; the paper's "p99 latency ≤ T_qos").

Events are processed one at a time in time order; at equal times a completion comes before an
arrival (so a freed instance is seen by the query arriving at that instant), completions in
instance order, and every policy acts right after each event. Instances are ordered by type
(g4dn, c5n, r5n, t3: the configuration vector's order) and then by index, so "first idle" is
"base first, then the cheaper types in type order".

Policies (spec §2.1, §2.5):

- ``"kairos"``: at every event with ≥ 1 pending query and ≥ 1 idle instance, the first
  ``min(m, 2n)`` pending queries (FIFO) are matched to all ``n`` instances by Eqs. 4–8
  (busy instances in the matrix with their predicted remaining time ``r_j``); only pairs whose
  instance is idle are dispatched, the rest stay queued. The assignment is
  ``scipy.optimize.linear_sum_assignment``'s algorithm (Crouse's shortest augmenting path,
  the Jonker–Volgenant variant the paper names) ported line by line to numba
  (:func:`infsched.kairos.lsa.lsa`),
  so it returns scipy's very pairs, ties included; the tests check that on thousands of
  matrices and the simpy reference (:mod:`infsched.kairos.reference`) calls scipy itself.
- ``"fcfs"`` (Ribbon): one central FIFO queue; the head goes to the first idle instance.
- ``"drs"`` (DeepRecSys): a threshold θ; ``b > θ`` waits in a FIFO queue served only by base
  instances, ``b ≤ θ`` in one served only by auxiliary instances. Without auxiliary instances
  every query goes to the base queue.
- ``"clkwrk"`` (Clockwork-like): one FIFO queue per instance; an arriving query joins the
  instance of least predicted completion ``c_j = max(t, E_j) + Σ_queued L̂ + L̂(type j, b)``,
  ``E_j`` the predicted end of the query in service, re-synchronised to its actual start.
- ORCL (:func:`orcl_throughput`): the offline oracle of spec §2.5.

Common random numbers (spec §2.7): one :class:`~infsched.kairos.workload.Workload` per seed,
from which every rate's arrivals and every service model's times are drawn
(:mod:`infsched.kairos.workload`; its names are re-exported here).

Early abort (spec §2.7): a run stops once its violations exceed ``0.01 N``, counting a query
when it starts service with ``finish − arrival > T_qos`` and, before that, as soon as its wait
alone exceeds ``T_qos``. An aborted run is infeasible, and its violation count is a lower bound.

The engines are numba event loops over plain arrays (:mod:`infsched.kairos.engines`); this
module validates, prepares the arrays and calls them. :func:`run_explicit` exposes them on
hand-made instances (the Fig. 5 toy, closed-form checks) and returns per-query traces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infsched.errors import as_float, config_error, one_of, require
from infsched.kairos.batches import LOGNORMAL_MIX, BatchDist
from infsched.kairos.engines import engine_clkwrk, engine_kairos, engine_orcl, engine_queues
from infsched.kairos.lsa import lsa
from infsched.kairos.matching import PENALTIES
from infsched.kairos.model import (
    BASE,
    BATCHES,
    QOS_MS,
    LatencyTable,
    check_config,
    latency_table,
)

# the workload's names are part of this module's API (reference.py and the tests use them)
from infsched.kairos.workload import (
    ARRIVALS,
    SERVICES,
    Workload,
    check_rate as _check_rate,
    make_workload,
    service_arrays,
)
from infsched.limits import warn_long

__all__ = ["POLICIES", "SERVICES", "ARRIVALS", "Workload", "make_workload", "SimResult",
           "Throughput", "simulate", "run_explicit", "allowable_throughput",
           "drs_thresholds", "drs_best_threshold", "orcl_throughput", "service_arrays",
           "crude_bound"]

POLICIES = ("kairos", "fcfs", "drs", "clkwrk")
#: ≥ 99 % of queries must meet QoS (spec §1.5)
MET_SHARE = 0.99
_PENALTY_CODE = {"paper": 0, "upstream": 1}
_lsa = lsa   # the tests' name for the assignment port


# ============================================================================ results

@dataclass(frozen=True, eq=False)
class SimResult:
    """One run. ``violations`` counts queries with latency > ``T_qos`` (a lower bound when the
    run was ``aborted``); ``met_fraction = 1 − violations/n`` (then an upper bound).
    ``start``, ``finish`` (ms, NaN where never started) and ``instance`` (-1 likewise) are the
    per-query trace; ``arrival`` the arrival times."""

    n: int
    violations: int
    aborted: bool
    qos: float
    arrival: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    instance: np.ndarray

    @property
    def met_fraction(self) -> float:
        return 1.0 - self.violations / self.n

    @property
    def feasible(self) -> bool:
        """≥ 99 % of the queries meet QoS (spec §1.5)."""
        return (not self.aborted) and self.violations <= _allowed(self.n)

    @property
    def latency(self) -> np.ndarray:
        return self.finish - self.arrival

    @property
    def met(self) -> np.ndarray:
        """Per query: latency ≤ T_qos (False for queries never served)."""
        with np.errstate(invalid="ignore"):
            return self.latency <= self.qos


@dataclass(frozen=True)
class Throughput:
    """Allowable throughput (QPS) of one configuration and policy (:func:`allowable_throughput`).

    ``hi_feasible``: the bisection's upper end ``1.15 · ub`` already met QoS, so ``throughput``
    is that end and ``ub`` is too low (spec §2.7). ``reason`` says why the value is 0, if it is.
    """

    throughput: float
    iterations: int
    hi_feasible: bool = False
    reason: str = ""


def _allowed(n: int) -> int:
    """Largest violation count with ≥ 99 % met: 100 (n − v) ≥ 99 n ⇔ v ≤ n // 100."""
    return n // 100


# ============================================================================ validation

def _resolve_table(model) -> LatencyTable:
    if isinstance(model, LatencyTable):
        return model
    return latency_table(model)


def _resolve_qos(qos, table: LatencyTable) -> float:
    if qos is None:
        return QOS_MS[table.model]
    try:
        x = as_float(qos)
    except (TypeError, ValueError):
        raise config_error("qos", qos, "must be a number > 0 (ms)") from None
    require(np.isfinite(x) and x > 0, "qos", qos, "must be a finite number > 0 (ms)")
    return x


def _instance_types(config) -> np.ndarray:
    x = check_config(config)
    require(x.sum() >= 1, "config", tuple(x.tolist()), "must hold at least one instance")
    return np.repeat(np.arange(4, dtype=np.int64), x)


def _check_common(policy: str, xi: float, penalty: str) -> None:
    one_of("policy", policy, POLICIES)
    require(np.isfinite(xi) and 0 < xi <= 1, "xi", xi, "must lie in (0, 1]")
    one_of("penalty", penalty, PENALTIES)


def _drs_classes(sizes: np.ndarray, typ: np.ndarray, theta) -> tuple[np.ndarray, np.ndarray]:
    """Query classes (0: base queue, b > θ; 1: aux queue, b ≤ θ) and the class each instance
    serves. Without auxiliary instances every query goes to the base queue."""
    require(theta is not None, "theta", theta, "policy 'drs' needs a batch threshold θ")
    try:
        th = as_float(theta)
    except (TypeError, ValueError):
        raise config_error("theta", theta, "must be a number (batch size)") from None
    require(np.isfinite(th) and th >= 0, "theta", theta, "must be a batch size >= 0")
    serves = (typ != BASE).astype(np.int64)
    if not serves.any():
        return np.zeros(sizes.size, np.int64), serves
    return (sizes <= th).astype(np.int64), serves


# ============================================================================ the core runner

def _run(policy, arr, pred, actual, typ, qos, *, coef=None, xi=0.98, penalty="paper",
         sizes=None, theta=None, early_abort=True, python=False):
    """Dispatch to an engine; ``python=True`` runs the same loops uncompiled (``py_func``)."""
    n = arr.size
    limit = _allowed(n) if early_abort else n
    pick = (lambda f: f.py_func) if python else (lambda f: f)
    if policy == "kairos":
        return pick(engine_kairos)(arr, pred, actual, typ, coef, float(qos), float(xi),
                                    _PENALTY_CODE[penalty], limit)
    if policy == "clkwrk":
        return pick(engine_clkwrk)(arr, pred, actual, typ, float(qos), limit)
    if policy == "fcfs":
        qcls = np.zeros(n, np.int64)
        serves = np.zeros(typ.size, np.int64)
        return pick(engine_queues)(arr, actual, typ, qcls, serves, 1, float(qos), limit)
    qcls, serves = _drs_classes(sizes, typ, theta)
    return pick(engine_queues)(arr, actual, typ, qcls, serves, 2, float(qos), limit)


def run_explicit(arrivals, service, instance_types, qos: float, policy: str = "kairos", *,
                 predicted=None, coefficients=None, xi: float = 0.98,
                 penalty: str = "paper", sizes=None, theta=None,
                 early_abort: bool = False) -> SimResult:
    """Run a policy on an explicit instance: the lower-level entry for toys and closed forms.

    ``arrivals`` (N,) sorted times; ``service`` (n_types, N), the actual service time of each
    query on each type (type 0 is the base type); ``instance_types`` (n,) the type of each
    instance, ordered by type; ``predicted`` the controller's prediction (default: ``service``);
    ``coefficients`` (n_types,) the ``C_j`` per type (KAIROS; default 1); ``sizes`` and
    ``theta`` the query sizes and threshold (DRS). Times in any one unit (ms in the library).
    """
    _check_common(policy, xi, penalty)
    arr = np.ascontiguousarray(arrivals, dtype=float)
    require(arr.ndim == 1 and arr.size >= 1 and np.all(np.isfinite(arr))
            and np.all(np.diff(arr) >= 0), "arrivals", arrivals,
            "must be a non-empty sorted 1-D array of finite times")
    actual = np.ascontiguousarray(service, dtype=float)
    require(actual.ndim == 2 and actual.shape[1] == arr.size and np.all(actual > 0)
            and np.all(np.isfinite(actual)), "service", actual.shape,
            f"must be an (n_types, {arr.size}) array of finite times > 0")
    pred = actual if predicted is None else np.ascontiguousarray(predicted, dtype=float)
    require(pred.shape == actual.shape, "predicted", pred.shape,
            f"must have the shape of service, {actual.shape}")
    typ = np.ascontiguousarray(instance_types, dtype=np.int64)
    require(typ.ndim == 1 and typ.size >= 1 and np.all(typ >= 0)
            and np.all(typ < actual.shape[0]) and np.all(np.diff(typ) >= 0),
            "instance_types", instance_types,
            f"must be a non-empty sorted array of types in 0..{actual.shape[0] - 1}")
    qos = float(qos)
    require(np.isfinite(qos) and qos > 0, "qos", qos, "must be a finite number > 0")
    coef_t = np.ones(actual.shape[0]) if coefficients is None else np.asarray(coefficients, float)
    require(coef_t.shape == (actual.shape[0],), "coefficients", coefficients,
            f"must have one C_j per type ({actual.shape[0]})")
    sz = None if sizes is None else np.asarray(sizes, dtype=float)
    if policy == "drs":
        require(sz is not None and sz.shape == arr.shape, "sizes", sizes,
                "policy 'drs' needs one size per query")
    start, finish, inst, viol, aborted = _run(
        policy, arr, pred, actual, typ, qos, coef=np.ascontiguousarray(coef_t[typ]), xi=xi,
        penalty=penalty, sizes=sz, theta=theta, early_abort=early_abort)
    return SimResult(arr.size, int(viol), bool(aborted), qos, arr, start, finish, inst)


@dataclass(eq=False)
class _Prepared:
    """Everything of one (configuration, model, policy, workload, service) but the rate, so a
    bisection only recomputes the arrivals."""

    policy: str
    workload: Workload
    typ: np.ndarray
    pred: np.ndarray
    actual: np.ndarray
    coef: np.ndarray
    qos: float
    xi: float
    penalty: str
    theta: float | None
    early_abort: bool
    python: bool = False

    def run(self, rate: float) -> SimResult:
        arr = self.workload.arrival_times(rate)
        start, finish, inst, viol, aborted = _run(
            self.policy, arr, self.pred, self.actual, self.typ, self.qos, coef=self.coef,
            xi=self.xi, penalty=self.penalty, sizes=self.workload.batches, theta=self.theta,
            early_abort=self.early_abort, python=self.python)
        return SimResult(arr.size, int(viol), bool(aborted), self.qos, arr, start, finish, inst)

    def feasible(self, rate: float) -> bool:
        return self.run(rate).feasible


def _prepare(config, model, policy, *, workload, n_queries, seed, dist, arrivals, qos, service,
             sigma_rel, xi, penalty, theta, early_abort, python=False) -> _Prepared:
    _check_common(policy, xi, penalty)
    table = _resolve_table(model)
    q = _resolve_qos(qos, table)
    typ = _instance_types(config)
    wl = workload if workload is not None else make_workload(n_queries, seed, dist, arrivals)
    require(isinstance(wl, Workload), "workload", workload, "must be a Workload (make_workload)")
    pred, actual = service_arrays(table, wl, service, sigma_rel)
    coef = np.ascontiguousarray(table.coefficient()[typ])
    if policy == "drs":
        _drs_classes(wl.batches, typ, theta)  # validate θ early
    return _Prepared(policy, wl, typ, pred, actual, coef, q, float(xi), penalty,
                     theta, early_abort, python)


def simulate(config, model, policy: str = "kairos", rate: float = 1.0, *,
             workload: Workload | None = None, n_queries: int = 2000, seed: int = 0,
             dist: BatchDist = LOGNORMAL_MIX, arrivals: str = "exponential",
             qos: float | None = None, service: str = "mean", sigma_rel: float = 0.05,
             xi: float = 0.98, penalty: str = "paper", theta: float | None = None,
             early_abort: bool = True, python: bool = False) -> SimResult:
    """Serve one workload at ``rate`` QPS on configuration ``config`` (4 instance counts) of
    ``model`` (a name of Table 3 or a :class:`LatencyTable`) under ``policy``.

    ``qos`` defaults to Table 3's target; ``theta`` is DRS's threshold; ``xi`` and ``penalty``
    KAIROS's safeguard (Eq. 5) and penalty (Eq. 8 ``"paper"`` or ``"upstream"``).
    ``early_abort`` stops once more than 1 % of the queries have missed QoS (spec §2.7).
    ``python=True`` runs the engines' uncompiled Python (slow; for cross-checks).
    """
    rate = _check_rate(rate)
    prep = _prepare(config, model, policy, workload=workload, n_queries=n_queries, seed=seed,
                    dist=dist, arrivals=arrivals, qos=qos, service=service,
                    sigma_rel=sigma_rel, xi=xi, penalty=penalty, theta=theta,
                    early_abort=early_abort, python=python)
    nq, inst = (workload.n if workload is not None else int(n_queries)), int(np.sum(config))
    warn_long(f"simulating {nq} queries on {inst} instances",  # a lower bound (issue 21)
              nq * (SECONDS_PER_QUERY + SECONDS_PER_QUERY_INSTANCE * inst))
    return prep.run(rate)


#: seconds of one core per simulated query, plus per query and instance: on the fast side of
#: what was measured here (FCFS: 0.28 µs a query on 14 instances, 7 µs on 14,000; KAIROS 5 to 20
#: times more), so that the time a long run is announced to take is a lower bound
SECONDS_PER_QUERY, SECONDS_PER_QUERY_INSTANCE = 2e-7, 4e-10


# ============================================================================ throughput

def _bisect(feasible, ub: float, max_iter: int = 20) -> Throughput:
    """Spec §2.7: bisection on λ ∈ (0, 1.15·ub]; stop when hi − lo ≤ 1 % of hi; return 0 once
    hi < 1 % of ub (without this floor an infeasible configuration never terminates)."""
    hi = 1.15 * ub
    if feasible(hi):
        return Throughput(hi, 1, hi_feasible=True,
                          reason="1.15·ub already meets QoS: the upper bound is too low")
    lo = 0.0
    it = 1
    while it < max_iter and hi - lo > 0.01 * hi:
        if hi < 0.01 * ub:
            return Throughput(0.0, it, reason="infeasible: not even 1 % of ub meets QoS")
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            lo = mid
        else:
            hi = mid
        it += 1
    if lo == 0.0:
        return Throughput(0.0, it, reason="infeasible: no tested rate meets QoS")
    return Throughput(lo, it)


def allowable_throughput(config, model, policy: str = "kairos", *, ub: float,
                         qos: float | None = None, n_queries: int = 2000, seed: int = 0,
                         service: str = "mean", dist: BatchDist = LOGNORMAL_MIX,
                         arrivals: str = "exponential", sigma_rel: float = 0.05,
                         xi: float = 0.98, penalty: str = "paper", theta: float | None = None,
                         workload: Workload | None = None, max_iter: int = 20,
                         python: bool = False) -> Throughput:
    """The largest λ (QPS) at which ≥ 99 % of the queries meet QoS (spec §1.5, §2.7).

    ``ub`` is an upper bound on the answer (QPS; Eq. 15 in the book); the bisection searches
    ``(0, 1.15·ub]`` with common random numbers and early abort. See :class:`Throughput`.
    """
    try:
        ubf = as_float(ub)
    except (TypeError, ValueError):
        raise config_error("ub", ub, "must be a number > 0 (QPS)") from None
    require(np.isfinite(ubf) and ubf > 0, "ub", ub, "must be a finite upper bound > 0 (QPS)")
    require(isinstance(max_iter, (int, np.integer)) and 1 <= max_iter <= 100, "max_iter",
            max_iter, "must be an integer in 1..100")
    prep = _prepare(config, model, policy, workload=workload, n_queries=n_queries, seed=seed,
                    dist=dist, arrivals=arrivals, qos=qos, service=service,
                    sigma_rel=sigma_rel, xi=xi, penalty=penalty, theta=theta,
                    early_abort=True, python=python)
    return _bisect(prep.feasible, ubf, int(max_iter))


def drs_thresholds(config, model, qos: float | None = None) -> list[int]:
    """DRS's candidate thresholds (spec §2.5, the "cheaper equivalent" of the hill-climb):
    {100, 200, …, 1000} ∪ {s_k, s_k − 10 for each auxiliary type present}, where
    ``s_k`` is the smallest size whose mean latency on type k exceeds ``T_qos`` (1000 if none).
    ``s_k − 10``, the largest size type k serves within QoS, is added so the grid also holds
    the threshold that sends no query to an instance where it must miss QoS."""
    table = _resolve_table(model)
    q = _resolve_qos(qos, table)
    x = check_config(config)
    cands = set(range(100, 1001, 100))
    for k in range(1, 4):
        if x[k] > 0:
            over = np.nonzero(table.mean[k] > q)[0]
            s = int(BATCHES[over[0]]) if over.size else 1000
            cands.update({s, max(s - 10, 10)})
    return sorted(cands)


def drs_best_threshold(config, model, *, ub: float, qos: float | None = None,
                       **kwargs) -> tuple[float, int]:
    """DRS on its best static threshold: ``(throughput, θ)``, the maximum of
    :func:`allowable_throughput` over :func:`drs_thresholds` (ties: the smaller θ). Without
    auxiliary instances θ is moot; it returns θ = 0 (everything on the base type)."""
    x = check_config(config)
    if x[1:].sum() == 0:
        return allowable_throughput(x, model, "drs", ub=ub, qos=qos, theta=0,
                                    **kwargs).throughput, 0
    best, best_th = -1.0, 0
    for th in drs_thresholds(x, model, qos):
        q = allowable_throughput(x, model, "drs", ub=ub, qos=qos, theta=th, **kwargs).throughput
        if q > best:
            best, best_th = q, th
    return best, best_th


def orcl_throughput(config, model, *, qos: float | None = None, n_queries: int = 2000,
                    seed: int = 0, dist: BatchDist = LOGNORMAL_MIX,
                    workload: Workload | None = None) -> float:
    """ORCL(x) = N / makespan in QPS (spec §2.5): the offline oracle on the seed's N sizes,
    with mean service times; 0 without a base instance."""
    table = _resolve_table(model)
    q = _resolve_qos(qos, table)
    typ = _instance_types(config)
    if not np.any(typ == BASE):
        return 0.0
    wl = workload if workload is not None else make_workload(n_queries, seed, dist)
    sizes = np.sort(wl.batch_index)
    span = engine_orcl(sizes, np.ascontiguousarray(table.mean), typ, q)
    return 0.0 if not np.isfinite(span) else wl.n * 1000.0 / span


def crude_bound(config, model, dist: BatchDist = LOGNORMAL_MIX) -> float:
    """A crude capacity bound for tests and timing, ``Σ_instances 1000 / E_b[L(type, b)]``
    (QPS); not the paper's Eq. 15."""
    table = _resolve_table(model)
    mean_l = table.mean @ dist.pmf()
    return float(np.sum(check_config(config) * 1000.0 / mean_l))
