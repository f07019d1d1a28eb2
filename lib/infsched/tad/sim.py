"""Fast simulators of the n-server system (spec §6): the public face of the TAD engines.

:func:`simulate` runs ``n_jobs`` arrivals at a constant load and target; :func:`simulate_phases`
runs a piecewise-constant schedule of loads and targets (Section 7.2); both return a
:class:`SimResult`. They check their arguments here (a ``ConfigError`` naming the parameter, an
``InfeasibleError`` at or above λ^max) and hand the run to one of three compiled kernels:

- exponential service, no recorded times (the book's runs): the jump chain of the queue-length
  Markov chain, :func:`infsched.tad.markov.run_jump_chain`;
- exponential service with ``record=True``, or through phases: the same chain with its holding
  times drawn, :func:`infsched.tad.markov.run_timed`;
- deterministic service: the per-arrival Lindley engine of spec §6.2,
  :func:`infsched.tad.lindley.run_det`, which agrees job by job with the simpy reference
  (:mod:`infsched.tad.reference`).

The policies' choice of a class, shared by the three, is in :mod:`infsched.tad.choice`; the
random streams and arrival times in :mod:`infsched.tad.streams`; the state a run carries across
kernel calls in :mod:`infsched.tad.engine`. The closed forms of random routing (M/M/1 and M/D/1
sums, spec §3.5) that the tests hold the engines to end this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from infsched.errors import ConfigError, InfeasibleError, as_float, config_error, one_of, require
from infsched.limits import check_memory, warn_long
from infsched.tad.engine import N_BATCHES, Engine
from infsched.tad.markov import MAX_COARSEN, RESYNC  # noqa: F401  (re-exported)
from infsched.tad.model import SystemParams
from infsched.tad.policies import (
    POLICY_NAMES,
    Policy,
    accuracy_scale,
    make_policy,
    policy_target,
)
from infsched.tad.streams import (  # noqa: F401  (job_streams, CHUNK, BLOCK: re-exported)
    BLOCK,
    CHUNK,
    EventDraws,
    arrival_draws,
    arrivals_const,
    arrivals_phases,
    job_streams,
)

# the names the simpy reference (infsched.tad.reference) imports from here
_arrivals_const, _arrivals_phases = arrivals_const, arrivals_phases

SERVICES = ("exp", "det")


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
    response over ``N_BATCHES`` batches (equal time for the Lindley engine and for phases,
    equal numbers of arrivals for the Markov engine). ``arrivals``, ``departures`` and
    ``classes`` hold every job, warm-up included, when the run was made with ``record=True``.
    With deterministic service ``departures[j]`` is job j's departure; with exponential service
    (the Markov engine) ``departures`` holds the departure times in time order, not matched to
    jobs (``departures_per_job`` is False), which is all :meth:`number_in_system` needs.
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
    departures_per_job: bool = True
    _sorted_dep: np.ndarray | None = field(default=None, repr=False)

    def _need_record(self):
        if self.arrivals is None or self.departures is None or self.classes is None:
            raise ConfigError("this result holds no per-job data: simulate with record=True")

    @property
    def responses(self) -> np.ndarray:
        """Per-job response times (record=True, deterministic service), in arrival order."""
        self._need_record()
        if not self.departures_per_job:
            raise ConfigError("per-job response times need service='det': the exponential "
                              "engine does not track which job leaves (use mean_response)")
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


def _result(eng: Engine, params: SystemParams, record_arrays) -> SimResult:
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
                     ci_halfwidth=ci, arrivals=arrivals, departures=departures, classes=classes,
                     departures_per_job=bool(eng.det))


# ============================================================================ validation

#: the engine's arrays per server (free_at, stk, fq_t, fq_s, q: 8 bytes each), for the memory check
BYTES_PER_SERVER = 40
#: jobs per second of one core, on the fast side of what was measured here (5 M/s on a busy
#: machine), so that the time a long run is announced to take is a lower bound
JOBS_PER_SECOND = 1e7


#: the fewest arrivals a run must measure after its warm-up: one per batch of its 95 % interval
#: (a run of one measured job has no time in system to average: its mean response read 0.0)
MIN_MEASURED = N_BATCHES


def _check_seed(seed):
    """The seed of a run: a non-negative integer (``SeedSequence`` takes no other), or a
    ``SeedSequence``."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_))
            and seed >= 0, "seed", seed, "must be a non-negative integer")
    return seed


def _check_measured(n_jobs: int, warmup: float) -> None:
    """Refuse a run too short to measure anything (see :data:`MIN_MEASURED`)."""
    measured = n_jobs - int(warmup * n_jobs)
    require(measured >= MIN_MEASURED, "n_jobs", n_jobs,
            f"too short to measure: with warmup = {warmup:g}, {measured} arrival(s) would be measured "
            f"and at least {MIN_MEASURED} are needed (one per batch of the 95 % interval); use "
            f"n_jobs >= {math.ceil(MIN_MEASURED / (1.0 - warmup))}")


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
        lam = as_float(lam)
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
            rho = as_float(rho)
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
    check_memory("n", n, BYTES_PER_SERVER * n, f"the state of {n} servers")
    params.class_sizes(n)
    n_jobs = _check_int("n_jobs", n_jobs)
    warn_long(f"simulating n_jobs = {n_jobs} arrivals", n_jobs / JOBS_PER_SECOND)
    try:
        warmup = as_float(warmup)
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
    seed = _check_seed(seed)
    policy, a_star, lam = _resolve(params, policy, n, rho, lam, a_star)
    _check_measured(n_jobs, warmup)
    table = policy.table(params, a_star=a_star)
    eng = Engine(params, n, [table], [math.inf], service)
    bar = _progress(progress, n_jobs)
    if not eng.det:
        # the Markov engine: warm-up = the first warmup × n_jobs arrivals; holding times are
        # drawn only when the times are recorded
        draws = EventDraws(seed, _block(chunk), timed=record)
        if record:
            rec = _rec_buffers(record, min(_block(chunk), n_jobs))
            recorded = eng.run_exp(draws, np.array([n * lam]), n_jobs, int(warmup * n_jobs),
                                   False, 0.0, record, rec, bar)
        else:
            eng.run_chain(draws, n * lam, n_jobs, int(warmup * n_jobs), bar)
            recorded = (None, None, None)
        if bar is not None:
            bar.close()
        return _result(eng, params, recorded)

    inv_rate = 1.0 / (n * lam)
    # first pass over the arrival stream: the last arrival time fixes the warm-up cut
    t_last = 0.0
    buf = np.empty(min(chunk, n_jobs))
    for e in arrival_draws(seed, n_jobs, chunk):
        t_last = arrivals_const(t_last, e, inv_rate, buf[:len(e)])
    t_cut = warmup * t_last
    bscale = N_BATCHES / (t_last - t_cut) if t_last > t_cut else 0.0

    rec = (np.empty(n_jobs), np.empty(n_jobs), np.empty(n_jobs, np.int8)) if record else None
    dummy_f, dummy_c = np.empty(0), np.empty(0, np.int8)
    t, done = 0.0, 0
    for e_arr, _, u_pol, u_srv in job_streams(seed, n_jobs, chunk, draw_service=False):
        m = len(e_arr)
        t = arrivals_const(t, e_arr, inv_rate, buf[:m])
        if record:
            rec[0][done:done + m] = buf[:m]
        eng.run_det(buf, u_pol, u_srv, m, t_cut, bscale, record,
                    rec[1][done:done + m] if record else dummy_f,
                    rec[2][done:done + m] if record else dummy_c)
        done += m
        if bar is not None:
            bar.update(m)
    if bar is not None:
        bar.close()
    return _result(eng, params, rec if record else (None, None, None))


def _block(chunk: int) -> int:
    """Draws per block of the Markov engine: ``chunk``, at most :data:`BLOCK`, at least 8."""
    return max(8, min(int(chunk), BLOCK))


def _rec_buffers(record: bool, size: int):
    if record:
        return np.empty(size), np.empty(size, np.int8), np.empty(size)
    return np.empty(0), np.empty(0, np.int8), np.empty(0)


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
    seed = _check_seed(seed)
    eng = Engine(params, n, tables, ends, service)
    horizon = float(ends[-1])
    bscale = N_BATCHES / horizon
    bar = _progress(progress, None)
    if not eng.det:
        draws = EventDraws(seed, _block(chunk), timed=True)
        rec = _rec_buffers(record, _block(chunk))
        recorded = eng.run_exp(draws, rates, np.iinfo(np.int64).max, 0, True, bscale, record,
                               rec, bar)
        if bar is not None:
            bar.close()
        return _result(eng, params, recorded)

    buf = np.empty(chunk)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    dummy_f, dummy_c = np.empty(0), np.empty(0, np.int8)
    t, p = 0.0, 0
    for e_arr, _, u_pol, u_srv in job_streams(seed, None, chunk, draw_service=False):
        t, p, m = arrivals_phases(t, p, e_arr, rates, inv_rates, ends, buf)
        if m > 0:
            dep = np.empty(m) if record else dummy_f
            cls = np.empty(m, np.int8) if record else dummy_c
            eng.run_det(buf, u_pol, u_srv, m, 0.0, bscale, record, dep, cls)
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
