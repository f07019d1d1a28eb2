"""Fast simulator: the per-arrival Lindley engine of spec §6.2, compiled with numba.

Every server serves its queue FCFS, so a job's completion time is fixed the moment it is routed:
``free_at[s] = max(t, free_at[s]) + S``. There are no departure events. Per class the dispatcher
keeps a LIFO stack of idle servers (the paper's tokens); the busy servers sit in one min-heap keyed
by the time they empty, with lazy deletion: a busy server that is given another job keeps its old
(smaller) heap key, and when that key is popped it is pushed back with its new ``free_at``. So the
heap holds one entry per busy server (memory O(n)), and tokens come back in the order the servers
empty, exactly as in the simpy reference (:mod:`infsched.tad.reference`).

Randomness (DESIGN.md): four ``numpy.random.Generator`` streams spawned from one
``SeedSequence(seed)`` and drawn in chunks of ``CHUNK`` jobs by :func:`job_streams`: unit
exponential inter-arrival times, unit exponential service draws (scaled by 1/μ_i once the class is
chosen; unused but still drawn for deterministic service), one policy uniform and one server
uniform per job. The simpy reference consumes the same numbers in the same order, so both give
the same per-job response times.

Warm-up: jobs arriving before ``warmup × (last arrival time)`` are simulated but not measured.
Spec §6.2 suggests max(50 time units, 20 %); we keep a pure fraction (default 0.2) so that the
cut scales with the run; the last arrival time is found by a first pass over the arrival stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from infsched.des import heap_push, heap_sift_down
from infsched.errors import ConfigError, InfeasibleError, config_error, one_of, require
from infsched.tad.model import SystemParams
from infsched.tad.policies import (
    POLICY_NAMES,
    Policy,
    PolicyTable,
    accuracy_scale,
    make_policy,
    policy_target,
)

#: Jobs per chunk of pre-drawn random numbers (bounded memory for paper-scale runs).
CHUNK = 1 << 18
#: Batches for the batch-means confidence interval of the mean response time.
N_BATCHES = 20
SERVICES = ("exp", "det")

_RANDOM, _JIQ_FAST, _JIQ_ACCURATE, _R_JIQ, _TAD, _TADOP = range(6)


# ============================================================================ random streams

def job_streams(seed, n_jobs: int | None, chunk: int = CHUNK):
    """Yield chunks ``(e_arr, e_srv, u_pol, u_srv)`` of the four per-job random streams.

    Four generators are spawned from ``SeedSequence(seed)``: unit exponential inter-arrival
    draws, unit exponential service draws, the policy's uniform and the server uniform. Chunks
    hold ``chunk`` jobs (the last one fewer); ``n_jobs=None`` yields forever. Used by both the
    numba engine and the simpy reference, so they see the same numbers.
    """
    g_arr, g_srv, g_pol, g_sv = (np.random.Generator(np.random.PCG64(s))
                                 for s in np.random.SeedSequence(seed).spawn(4))
    done = 0
    while n_jobs is None or done < n_jobs:
        m = chunk if n_jobs is None else min(chunk, n_jobs - done)
        yield (g_arr.standard_exponential(m), g_srv.standard_exponential(m),
               g_pol.random(m), g_sv.random(m))
        done += m


def _arrival_draws(seed, n_jobs: int, chunk: int = CHUNK):
    """Only the inter-arrival stream of :func:`job_streams` (same numbers, same chunks)."""
    g_arr = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(4)[0]))
    done = 0
    while done < n_jobs:
        m = min(chunk, n_jobs - done)
        yield g_arr.standard_exponential(m)
        done += m


@njit(cache=True)
def _arrivals_const(t, e, inv_rate, out):
    """out[j] = arrival times t + Σ e·inv_rate, added one at a time (as simpy's clock does)."""
    for j in range(e.shape[0]):
        t = t + e[j] * inv_rate
        out[j] = t
    return t


@njit(cache=True)
def _arrivals_phases(t, p, e, rates, inv_rates, ends, out):
    """Arrival times of a Poisson process with piecewise-constant rate (exact time change).

    A unit-exponential draw is spent at rate ``rates[p]`` until the phase ends; what is left
    carries into the next phase. Returns (t, p, m): m arrivals fall before ``ends[-1]``.
    Within a phase the arithmetic is that of :func:`_arrivals_const` (t + e·(1/rate)).
    """
    P = rates.shape[0]
    for j in range(e.shape[0]):
        rem = e[j]
        while True:
            dt = rem * inv_rates[p]
            if t + dt < ends[p] or p == P - 1:
                t = t + dt
                break
            rem -= (ends[p] - t) * rates[p]
            t = ends[p]
            p += 1
        if t >= ends[P - 1]:
            return t, p, j
        out[j] = t
    return t, p, e.shape[0]


# ============================================================================ the engine

@njit(cache=True)
def _run_chunk(arr_t, e_srv, u_pol, u_srv, m,
               # system
               inv_mu, det, sizes, starts, cls_of, n_total,
               # state (mutated)
               free_at, stk, stn, ht, hs, istate, delta, mind,
               # policy tables, one row per phase
               code, jiq, lenient, cum_p, pos, neg, proper, lo, hi, pick, ntup, d, ntol, ptol,
               ph_end,
               # measurement
               t_cut, bscale, nb, bsum, bcnt, counts,
               record, rec_dep, rec_cls):
    K = inv_mu.shape[0]
    hn = istate[0]
    p = istate[1]
    P = ph_end.shape[0]
    dl = delta[0]
    md = mind[0]
    for j in range(m):
        t = arr_t[j]
        while p < P - 1 and t >= ph_end[p]:
            p += 1
        # 1. refresh idles: servers that emptied by t hand their token back, in order of f
        if jiq:
            while hn > 0 and ht[0] <= t:
                f = ht[0]
                s = hs[0]
                fs = free_at[s]
                if fs == f:
                    hn -= 1
                    if hn > 0:
                        heap_sift_down(ht, hs, hn, ht[hn], hs[hn])
                    k = cls_of[s]
                    stk[starts[k] + stn[k]] = s
                    stn[k] += 1
                else:   # stale key: the server got more work; re-key it
                    heap_sift_down(ht, hs, hn, fs, s)
        # 2. choose a class
        u = u_pol[j]
        i = -1
        if code == _R_JIQ or code == _RANDOM:
            i = K - 1
            for k in range(K - 1):
                if u < cum_p[p, k]:
                    i = k
                    break
        elif code == _TADOP:
            for tt in range(ntup[p]):
                if proper[p, tt]:
                    l = lo[p, tt]
                    h = hi[p, tt]
                    sel = l if dl > ptol else h
                    if lenient:
                        ok = stn[sel] > 0
                    else:
                        ok = stn[l] > 0 and stn[h] > 0
                    if ok:
                        i = sel
                        break
                else:
                    ok = True
                    for k in range(K):
                        if pos[p, tt, k] and stn[k] == 0:
                            ok = False
                            break
                        if neg[p, tt, k] and stn[k] == sizes[k]:
                            ok = False
                            break
                    if ok:
                        i = pick[p, tt]
                        break
            if i < 0:
                for k in range(K - 1, -1, -1):
                    if stn[k] > 0:
                        i = k
                        break
            if i < 0:
                i = min(int(u * K), K - 1)
        elif code == _TAD:
            first = -1
            for k in range(K):
                if dl + d[p, k] >= ntol:
                    if first < 0:
                        first = k
                    if stn[k] > 0:
                        i = k
                        break
            if i < 0:
                if first < 0:
                    i = K - 1
                else:
                    # I = {k : Δ + d_k ≥ 0}: count it fully, then take the uniform pick
                    nallowed = 0
                    for k in range(K):
                        if dl + d[p, k] >= ntol:
                            nallowed += 1
                    r = min(int(u * nallowed), nallowed - 1)
                    for k in range(K):
                        if dl + d[p, k] >= ntol:
                            if r == 0:
                                i = k
                                break
                            r -= 1
        else:   # JIQ baselines
            if code == _JIQ_FAST:
                for k in range(K):
                    if stn[k] > 0:
                        i = k
                        break
            else:
                for k in range(K - 1, -1, -1):
                    if stn[k] > 0:
                        i = k
                        break
            if i < 0:
                x = min(int(u * n_total), n_total - 1)
                c = 0
                i = K - 1
                for k in range(K):
                    c += sizes[k]
                    if x < c:
                        i = k
                        break
        # 3. place the job
        S = inv_mu[i] if det else e_srv[j] * inv_mu[i]
        if jiq and stn[i] > 0:
            stn[i] -= 1
            s = stk[starts[i] + stn[i]]
            fnew = t + S
            free_at[s] = fnew
            hn = heap_push(ht, hs, hn, fnew, s)
        else:
            s = starts[i] + min(int(u_srv[j] * sizes[i]), sizes[i] - 1)
            fs = free_at[s]
            st = fs if fs > t else t
            fnew = st + S
            free_at[s] = fnew
        # 4. book-keeping
        dl += d[p, i]
        if dl < md:
            md = dl
        if t >= t_cut:
            resp = fnew - t
            b = int((t - t_cut) * bscale)
            if b >= nb:
                b = nb - 1
            bsum[b] += resp
            bcnt[b] += 1
            counts[i] += 1
        if record:
            rec_dep[j] = fnew
            rec_cls[j] = i
    istate[0] = hn
    istate[1] = p
    delta[0] = dl
    mind[0] = md


class _Engine:
    """State of one run carried across chunks (all arrays mutated in place by the kernel)."""

    def __init__(self, params: SystemParams, n: int, tables: list[PolicyTable], ph_end, service):
        sizes = params.class_sizes(n)
        self.sizes = sizes
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.cls_of = np.repeat(np.arange(params.K, dtype=np.int64), sizes)
        self.n = int(n)
        self.inv_mu = 1.0 / params.mu_arr
        self.det = service == "det"
        self.free_at = np.zeros(n)
        # initial idle stacks: class k holds starts[k]+n_k-1 ... starts[k]; pop gives starts[k]
        self.stk = np.concatenate([np.arange(st + nk - 1, st - 1, -1)
                                   for st, nk in zip(self.starts, sizes)]).astype(np.int64)
        self.stn = sizes.astype(np.int64).copy()
        self.ht = np.zeros(n)
        self.hs = np.zeros(n, np.int64)
        self.istate = np.zeros(2, np.int64)
        t0 = tables[0]
        exact = all(tb.exact for tb in tables)
        ddt = np.int64 if exact else np.float64
        self.scale = t0.scale if exact else 1.0
        self.delta = np.zeros(1, ddt)
        self.mind = np.full(1, np.iinfo(np.int64).max if exact else np.inf, ddt)
        self.ntol = np.zeros(1, ddt)[0] if exact else np.float64(-1e-9)
        self.ptol = np.zeros(1, ddt)[0] if exact else np.float64(1e-9)
        if len({tb.code for tb in tables}) != 1:
            raise ConfigError("all phases must use the same policy")
        self.code = t0.code
        self.jiq = bool(t0.jiq)
        self.lenient = bool(t0.lenient)
        P, K = len(tables), params.K
        T = max(1, max(tb.n_tuples for tb in tables))
        self.cum_p = np.stack([tb.cum_p for tb in tables])
        self.pos = np.zeros((P, T, K), np.bool_)
        self.neg = np.zeros((P, T, K), np.bool_)
        self.proper = np.zeros((P, T), np.bool_)
        self.lo = np.zeros((P, T), np.int64)
        self.hi = np.zeros((P, T), np.int64)
        self.pick = np.zeros((P, T), np.int64)
        self.ntup = np.array([tb.n_tuples for tb in tables], np.int64)
        for q, tb in enumerate(tables):
            nt = tb.n_tuples
            self.pos[q, :nt], self.neg[q, :nt] = tb.pos, tb.neg
            self.proper[q, :nt], self.lo[q, :nt] = tb.proper, tb.lo
            self.hi[q, :nt], self.pick[q, :nt] = tb.hi, tb.pick
        self.d = np.stack([np.asarray(tb.d, ddt) if exact else np.asarray(tb.d, float) / tb.scale
                           for tb in tables])
        self.has_target = all(tb.has_target for tb in tables)
        self.ph_end = np.asarray(ph_end, float)
        self.counts = np.zeros(K, np.int64)
        self.bsum = np.zeros(N_BATCHES)
        self.bcnt = np.zeros(N_BATCHES, np.int64)

    def run(self, arr_t, e_srv, u_pol, u_srv, m, t_cut, bscale, record, rec_dep, rec_cls):
        _run_chunk(arr_t, e_srv, u_pol, u_srv, m,
                   self.inv_mu, self.det, self.sizes, self.starts, self.cls_of, self.n,
                   self.free_at, self.stk, self.stn, self.ht, self.hs, self.istate,
                   self.delta, self.mind,
                   self.code, self.jiq, self.lenient, self.cum_p, self.pos, self.neg,
                   self.proper, self.lo, self.hi, self.pick, self.ntup, self.d,
                   self.ntol, self.ptol, self.ph_end,
                   t_cut, bscale, N_BATCHES, self.bsum, self.bcnt, self.counts,
                   record, rec_dep, rec_cls)

    def delta_points(self, value) -> float:
        if not self.has_target:
            return float("nan")
        return float(value) / self.scale


# ============================================================================ results

@dataclass(frozen=True)
class Phase:
    """One piece of a piecewise-constant schedule: ``duration`` time units at load λ and target a*."""

    duration: float
    lam: float
    a_star: float

    def __post_init__(self):
        for name in ("duration", "lam", "a_star"):
            v = getattr(self, name)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise config_error(name, v, "must be a number") from None
            require(math.isfinite(v), name, v, "must be finite")
            object.__setattr__(self, name, v)
        require(self.duration > 0, "duration", self.duration, "must be positive")
        require(self.lam > 0, "lam", self.lam, "must be positive")


@dataclass
class SimResult:
    """What one simulation run measured (jobs arriving after the warm-up cut).

    ``final_delta`` and ``min_delta`` are the accuracy surplus Δ = Σ (a_i − a*) over all routed
    jobs since time 0, at the end and its minimum after any routing, in accuracy points (NaN when
    the run has no target a*). ``ci_halfwidth`` is the 95 % batch-means half-width of the mean
    response over ``N_BATCHES`` equal-time batches. ``arrivals``, ``departures`` and ``classes``
    hold every job, warm-up included, when the run was made with ``record=True``.
    """

    mean_response: float
    mean_accuracy: float
    class_fractions: np.ndarray
    n_jobs: int
    final_delta: float
    min_delta: float
    ci_halfwidth: float
    arrivals: np.ndarray | None = None
    departures: np.ndarray | None = None
    classes: np.ndarray | None = None
    _sorted_dep: np.ndarray | None = field(default=None, repr=False)

    def _need_record(self):
        if self.arrivals is None or self.departures is None or self.classes is None:
            raise ConfigError("this result holds no per-job data: simulate with record=True")

    @property
    def responses(self) -> np.ndarray:
        """Per-job response times (record=True), in arrival order."""
        self._need_record()
        return self.departures - self.arrivals

    def number_in_system(self, times) -> np.ndarray:
        """N(t) = #arrivals ≤ t − #departures ≤ t at each time (record=True)."""
        self._need_record()
        if self._sorted_dep is None:
            self._sorted_dep = np.sort(self.departures)
        times = np.asarray(times, float)
        return (np.searchsorted(self.arrivals, times, side="right")
                - np.searchsorted(self._sorted_dep, times, side="right")).astype(np.int64)

    def running_accuracy(self, params: SystemParams, window: int = 1000):
        """(times, acc): mean accuracy of the last ``window`` arriving jobs, at each arrival."""
        self._need_record()
        require(isinstance(window, (int, np.integer)) and window >= 1, "window", window,
                "must be a positive integer")
        acc = params.a_arr[self.classes]
        if len(acc) < window:
            return self.arrivals[:0], acc[:0]
        c = np.concatenate([[0.0], np.cumsum(acc)])
        return self.arrivals[window - 1:], (c[window:] - c[:-window]) / window


def _t975(df: int) -> float:
    try:
        from scipy.stats import t as student_t
        return float(student_t.ppf(0.975, df))
    except ImportError:   # pragma: no cover
        return 1.96


def _result(eng: _Engine, params: SystemParams, record_arrays) -> SimResult:
    n_meas = int(eng.counts.sum())
    if n_meas == 0:
        raise ConfigError("no job arrived after the warm-up cut: raise n_jobs or lower warmup")
    total = float(eng.bsum.sum())
    mean = total / n_meas
    ok = eng.bcnt > 0
    bm = eng.bsum[ok] / eng.bcnt[ok]
    ci = float(_t975(len(bm) - 1) * bm.std(ddof=1) / math.sqrt(len(bm))) if len(bm) >= 2 else math.nan
    frac = eng.counts / n_meas
    arrivals, departures, classes = record_arrays
    return SimResult(mean_response=mean, mean_accuracy=float(frac @ params.a_arr),
                     class_fractions=frac, n_jobs=n_meas,
                     final_delta=eng.delta_points(eng.delta[0]),
                     min_delta=eng.delta_points(eng.mind[0]),
                     ci_halfwidth=ci, arrivals=arrivals, departures=departures, classes=classes)


# ============================================================================ validation

def _check_int(name, value, low=1):
    require(isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
            and value >= low, name, value, f"must be an integer ≥ {low}")
    return int(value)


def _lambda_max(params: SystemParams, a_star: float | None) -> float:
    if a_star is None:
        return float(params.capacity.sum())
    from infsched.tad import bound
    return float(bound.lambda_max(params, a_star))


def _check_lam(params, a_star, lam) -> float:
    try:
        lam = float(lam)
    except (TypeError, ValueError):
        raise config_error("lam", lam, "must be a number") from None
    require(math.isfinite(lam) and lam > 0, "lam", lam, "must be a positive arrival rate")
    lmax = _lambda_max(params, a_star)
    if lam >= lmax:
        what = f"a* = {a_star:g}" if a_star is not None else "no accuracy target"
        raise InfeasibleError(f"lam = {lam:g} is at or above λ^max = {lmax:.6g} ({what}): "
                              "no policy can be stable there; use lam < λ^max (rho < 1)")
    return lam


def _resolve(params, policy, n, rho, lam, a_star):
    """Validate the common arguments; return (policy, a_star, lam)."""
    if a_star is not None:
        a_star = params.check_target(a_star)
    if isinstance(policy, str):
        if policy not in POLICY_NAMES:
            raise config_error("policy", policy,
                               "must be one of " + ", ".join(map(repr, POLICY_NAMES)))
        require(a_star is not None, "a_star", a_star,
                f"is needed to build policy {policy!r} by name")
    else:
        own = policy_target(policy)
        if own is not None:
            if a_star is not None and abs(own - a_star) > 1e-12:
                raise config_error("a_star", a_star,
                                   f"must match the policy's own target {own:g} (or be None)")
            a_star = params.check_target(own)
        require(hasattr(policy, "table"), "policy", policy,
                "must be a policy object or one of " + ", ".join(map(repr, POLICY_NAMES)))
    if (rho is None) == (lam is None):
        raise ConfigError(f"give exactly one of rho and lam (rho = {rho!r}, lam = {lam!r})")
    if rho is not None:
        try:
            rho = float(rho)
        except (TypeError, ValueError):
            raise config_error("rho", rho, "must be a number in (0, 1)") from None
        require(a_star is not None, "a_star", a_star, "is needed to turn rho into lam")
        lmax = _lambda_max(params, a_star)
        require(math.isfinite(rho) and rho > 0, "rho", rho, "must be in (0, 1)")
        if rho >= 1:
            raise InfeasibleError(f"rho = {rho:g} ≥ 1: the load must stay below λ^max = "
                                  f"{lmax:.6g} (a* = {a_star:g}); rho must be in (0, 1)")
        lam = rho * lmax
    lam = _check_lam(params, a_star, lam)
    if isinstance(policy, str):
        policy = make_policy(policy, params, a_star, lam, n)
    return policy, a_star, lam


# ============================================================================ public API

def check_run_args(params: SystemParams, service, n, n_jobs, warmup):
    """Validate the arguments every simulator shares; returns them normalised."""
    service = one_of("service", service, SERVICES)
    n = _check_int("n", n)
    params.class_sizes(n)
    n_jobs = _check_int("n_jobs", n_jobs)
    try:
        warmup = float(warmup)
    except (TypeError, ValueError):
        raise config_error("warmup", warmup, "must be a fraction in [0, 1)") from None
    require(0.0 <= warmup < 1.0, "warmup", warmup, "must be a fraction in [0, 1)")
    return service, n, n_jobs, warmup


def simulate(params: SystemParams, policy: Policy | str, n: int, *, rho: float | None = None,
             lam: float | None = None, a_star: float | None = None, n_jobs: int,
             service: str = "exp", seed=0, warmup: float = 0.2, record: bool = False,
             progress: bool = False, chunk: int = CHUNK) -> SimResult:
    """Simulate ``n_jobs`` arrivals of the n-server system under a policy (spec §6.2).

    Give exactly one of ``rho`` (relative to λ^max(a*)) and ``lam``. A policy given by name is
    built with :func:`~infsched.tad.policies.make_policy` for (a*, λ, n). ``service`` is "exp"
    or "det". Jobs arriving before ``warmup × (last arrival time)`` are not measured.
    """
    service, n, n_jobs, warmup = check_run_args(params, service, n, n_jobs, warmup)
    chunk = _check_int("chunk", chunk)
    policy, a_star, lam = _resolve(params, policy, n, rho, lam, a_star)
    table = policy.table(params, a_star=a_star)
    eng = _Engine(params, n, [table], [math.inf], service)

    inv_rate = 1.0 / (n * lam)
    # first pass over the arrival stream: the last arrival time fixes the warm-up cut
    t_last = 0.0
    buf = np.empty(min(chunk, n_jobs))
    for e in _arrival_draws(seed, n_jobs, chunk):
        t_last = _arrivals_const(t_last, e, inv_rate, buf[:len(e)])
    t_cut = warmup * t_last
    bscale = N_BATCHES / (t_last - t_cut) if t_last > t_cut else 0.0

    rec = (np.empty(n_jobs), np.empty(n_jobs), np.empty(n_jobs, np.int8)) if record else None
    dummy_f, dummy_c = np.empty(0), np.empty(0, np.int8)
    bar = _progress(progress, n_jobs)
    t, done = 0.0, 0
    for e_arr, e_srv, u_pol, u_srv in job_streams(seed, n_jobs, chunk):
        m = len(e_arr)
        t = _arrivals_const(t, e_arr, inv_rate, buf[:m])
        if record:
            rec[0][done:done + m] = buf[:m]
        eng.run(buf, e_srv, u_pol, u_srv, m, t_cut, bscale, record,
                rec[1][done:done + m] if record else dummy_f,
                rec[2][done:done + m] if record else dummy_c)
        done += m
        if bar is not None:
            bar.update(m)
    if bar is not None:
        bar.close()
    return _result(eng, params, rec if record else (None, None, None))


def phase_plan(params: SystemParams, policy_name: str, n: int, phases, service: str):
    """Validate a phase schedule and build it: what every phase-driven simulator shares.

    Returns ``(service, n, policies, tables, ends, rates, inv_rates)``: per phase the policy
    (rebuilt for its λ and a*) and its table, all tables on one Δ scale so that Δ carries over;
    the phase end times (cumulative durations), and the total arrival rates n·λ_k and 1/(n·λ_k).
    """
    service = one_of("service", service, SERVICES)
    n = _check_int("n", n)
    params.class_sizes(n)
    if policy_name not in POLICY_NAMES:
        raise config_error("policy_name", policy_name,
                           "must be one of " + ", ".join(map(repr, POLICY_NAMES)))
    phases = list(phases)
    require(len(phases) >= 1 and all(isinstance(p, Phase) for p in phases), "phases", phases,
            "must be a non-empty list of Phase")
    for ph in phases:
        params.check_target(ph.a_star)
        _check_lam(params, ph.a_star, ph.lam)
    scale = accuracy_scale(list(params.a) + [ph.a_star for ph in phases])
    policies = [make_policy(policy_name, params, ph.a_star, ph.lam, n) for ph in phases]
    tables = [pol.table(params, a_star=ph.a_star, scale=scale)
              for pol, ph in zip(policies, phases)]
    ends = np.cumsum([ph.duration for ph in phases])
    rates = np.array([n * ph.lam for ph in phases])
    inv_rates = np.array([1.0 / (n * ph.lam) for ph in phases])
    return service, n, policies, tables, ends, rates, inv_rates


def simulate_phases(params: SystemParams, policy_name: str, n: int, phases: list[Phase], *,
                    service: str = "exp", seed=0, record: bool = True,
                    progress: bool = False, chunk: int = CHUNK) -> SimResult:
    """Time-varying load and target (Section 7.2, spec §3.4): one run through ``phases``.

    Phase k lasts ``duration`` time units with arrival rate n·λ_k and target a*_k; the policy is
    rebuilt per phase (TAD switches a*, TAD-OP its tuple list) and Δ carries across phases (with
    exact Δ, all phases share one integer scale). No warm-up: every arrival before the end of the
    last phase is measured; the batch CI then mixes phases and is only indicative.
    """
    service, n, _, tables, ends, rates, inv_rates = phase_plan(params, policy_name, n, phases,
                                                               service)
    chunk = _check_int("chunk", chunk)
    eng = _Engine(params, n, tables, ends, service)
    horizon = float(ends[-1])
    bscale = N_BATCHES / horizon

    buf = np.empty(chunk)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    dummy_f, dummy_c = np.empty(0), np.empty(0, np.int8)
    bar = _progress(progress, None)
    t, p = 0.0, 0
    for e_arr, e_srv, u_pol, u_srv in job_streams(seed, None, chunk):
        t, p, m = _arrivals_phases(t, p, e_arr, rates, inv_rates, ends, buf)
        if m > 0:
            dep = np.empty(m) if record else dummy_f
            cls = np.empty(m, np.int8) if record else dummy_c
            eng.run(buf, e_srv, u_pol, u_srv, m, 0.0, bscale, record, dep, cls)
            if record:
                parts.append((buf[:m].copy(), dep, cls))
            if bar is not None:
                bar.update(m)
        if m < len(e_arr):
            break
    if bar is not None:
        bar.close()
    rec = (None, None, None)
    if record:
        rec = tuple(np.concatenate([pt[i] for pt in parts]) if parts else np.empty(0)
                    for i in range(3))
    return _result(eng, params, rec)


def _progress(progress: bool, total):
    if not progress:
        return None
    from tqdm import tqdm  # a text bar: ipywidgets is not a dependency
    return tqdm(total=total, unit="job", unit_scale=True, desc="infsched.tad")


# ============================================================================ closed forms

def _random_routing_loads(params: SystemParams, p, lam: float) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(p, float)
    require(p.shape == (params.K,), "p", p, f"must have one entry per class (K = {params.K})")
    rho_k = lam * p / params.capacity
    used = p > 0
    if np.any(rho_k[used] >= 1):
        k = int(np.argmax(np.where(used, rho_k, 0)))
        raise InfeasibleError(f"random routing overloads class {k + 1}: λp_k/(α_kμ_k) = "
                              f"{rho_k[k]:.4g} ≥ 1")
    return p, rho_k


def mm1_random_routing_latency(params: SystemParams, p, lam: float) -> float:
    """E[T] of Random-p with exponential service: Σ_k p_k / (μ_k − λp_k/α_k) (spec §3.5)."""
    p, rho_k = _random_routing_loads(params, p, lam)
    mu = params.mu_arr
    used = p > 0
    return float(np.sum(p[used] / (mu[used] * (1.0 - rho_k[used]))))


def md1_random_routing_latency(params: SystemParams, p, lam: float) -> float:
    """E[T] of Random-p with deterministic service: Σ_k p_k (1/μ_k + ρ_k / (2μ_k(1 − ρ_k)))."""
    p, rho_k = _random_routing_loads(params, p, lam)
    mu = params.mu_arr
    used = p > 0
    r = rho_k[used]
    return float(np.sum(p[used] * (1.0 / mu[used] + r / (2.0 * mu[used] * (1.0 - r)))))
