"""simpy reference model of the n-server system: slow, but it reads like the paper.

Arrivals are one simpy process; each server is a ``simpy.Resource(capacity=1)`` whose request
queue is the server's FCFS queue. The dispatcher keeps the paper's tokens: one LIFO stack of idle
servers per class; a server hands its token back when its last job leaves. On each arrival it asks
``policy.choose(idle_counts, busy_counts, Δ, u)`` for a class, sends the job to an idle server of
that class if there is one (else to a uniformly random server of the class) and updates Δ.

It draws every service time, as the paper describes, from :func:`infsched.tad.sim.job_streams`.
With deterministic service the fast (Lindley) engine consumes the very same numbers, so on the
same seed both give the same per-job response times; with exponential service the fast engine is
a Markov chain over queue lengths that draws other numbers, and the two are held to the same
answer in distribution (``tests/tad/test_sim.py``). Use it on small instances only (tens of
thousands of jobs).

Time-varying load and target (spec §3.4, :func:`simulate_reference_phases`): arrivals follow the
piecewise-constant rate by the engine's own exact time change
(:func:`infsched.tad.sim._arrivals_phases`), and a schedule process hands the dispatcher the next
phase's policy table at each boundary; Δ carries over.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from infsched.des import timeout_at
from infsched.errors import ConfigError
from infsched.tad.model import SystemParams
from infsched.tad.policies import Policy, PolicyTable
from infsched.tad.sim import (
    CHUNK,
    N_BATCHES,
    Phase,
    SimResult,
    _arrivals_const,
    _arrivals_phases,
    _check_int,
    _check_measured,
    _check_seed,
    _resolve,
    _t975,
    check_run_args,
    job_streams,
    phase_plan,
)


class Dispatcher:
    """Tokens of idle servers per class, and the accuracy surplus Δ (in the table's units)."""

    def __init__(self, params: SystemParams, n: int, policy: Policy, table):
        self.sizes = [int(x) for x in params.class_sizes(n)]
        self.starts = [sum(self.sizes[:k]) for k in range(params.K)]
        self.class_of = [k for k, nk in enumerate(self.sizes) for _ in range(nk)]
        # LIFO stacks; initially class k's stack pops its lowest-numbered server first
        self.idle = [list(range(st + nk - 1, st - 1, -1))
                     for st, nk in zip(self.starts, self.sizes)]
        self.jobs_at = [0] * n
        self.policy = policy
        self.table = table
        self.delta = 0 if table.exact else 0.0
        self.min_delta = math.inf

    def route(self, u: float, v: float) -> tuple[int, int]:
        """Pick (class, server) for an arriving job and update Δ."""
        idle_counts = [len(st) for st in self.idle]
        busy_counts = [nk - c for nk, c in zip(self.sizes, idle_counts)]
        i = self.policy.choose(idle_counts, busy_counts, self.delta, u, self.table)
        nk = self.sizes[i]
        if self.table.jiq and self.idle[i]:
            server = self.idle[i].pop()                 # a token: an idle class-i server
        else:
            server = self.starts[i] + min(int(v * nk), nk - 1)
            if server in self.idle[i]:                  # random routing may hit an idle server
                self.idle[i].remove(server)
        self.jobs_at[server] += 1
        self.delta += self.table.d[i]
        self.min_delta = min(self.min_delta, self.delta)
        return i, server

    def switch(self, policy: Policy, table: PolicyTable) -> None:
        """A phase boundary: route by the new phase's table from now on; Δ is kept, not reset."""
        self.policy = policy
        self.table = table

    def leave(self, server: int) -> None:
        self.jobs_at[server] -= 1
        if self.jobs_at[server] == 0:                   # the server empties: token back
            self.idle[self.class_of[server]].append(server)


def _run(params: SystemParams, n: int, policies: list[Policy], tables: list[PolicyTable],
         switch_at, arrivals: np.ndarray, e_srv, u_pol, u_srv, det: bool):
    """The simpy system fed with given arrival times; returns (departures, classes, dispatcher).

    Phase k + 1 (``policies[k + 1]``, ``tables[k + 1]``) starts at time ``switch_at[k]``.
    """
    n_jobs = len(arrivals)
    e_srv, u_pol, u_srv = (np.asarray(x).tolist() for x in (e_srv, u_pol, u_srv))
    arr = arrivals.tolist()
    inv_mu = (1.0 / params.mu_arr).tolist()

    env = simpy.Environment()
    servers = [simpy.Resource(env, capacity=1) for _ in range(n)]
    disp = Dispatcher(params, n, policies[0], tables[0])
    departures = np.empty(n_jobs)
    classes = np.empty(n_jobs, np.int8)

    def job(j: int, server: int, service_time: float):
        with servers[server].request() as req:
            yield req                                   # FCFS: wait for the jobs ahead
            yield env.timeout(service_time)
        departures[j] = env.now
        disp.leave(server)

    def source():
        for j in range(n_jobs):
            yield timeout_at(env, arr[j])             # the next arrival
            i, server = disp.route(u_pol[j], u_srv[j])
            classes[j] = i
            env.process(job(j, server, inv_mu[i] if det else e_srv[j] * inv_mu[i]))

    def schedule():
        for policy, table, t in zip(policies[1:], tables[1:], switch_at):
            yield timeout_at(env, float(t))           # a phase boundary
            disp.switch(policy, table)

    env.process(schedule())      # started first: at a tie the switch precedes the arrival
    env.process(source())
    env.run()
    return departures, classes, disp


def _measured(params: SystemParams, table: PolicyTable, arrivals, departures, classes, disp,
              t_cut: float, bscale: float) -> SimResult:
    """The engine's measurement: jobs arriving at or after ``t_cut``, batches of width 1/bscale."""
    keep = arrivals >= t_cut
    if not keep.any():
        raise ConfigError("no job arrived after the warm-up cut: raise n_jobs or lower warmup")
    resp = (departures - arrivals)[keep]
    b = np.minimum(((arrivals[keep] - t_cut) * bscale).astype(np.int64), N_BATCHES - 1)
    bsum = np.bincount(b, weights=resp, minlength=N_BATCHES)
    bcnt = np.bincount(b, minlength=N_BATCHES)
    bm = bsum[bcnt > 0] / bcnt[bcnt > 0]
    ci = float(_t975(len(bm) - 1) * bm.std(ddof=1) / math.sqrt(len(bm))) if len(bm) >= 2 else math.nan
    frac = np.bincount(classes[keep], minlength=params.K) / keep.sum()
    to_points = (lambda x: float(x) / table.scale) if table.has_target else (lambda x: math.nan)
    return SimResult(mean_response=float(resp.mean()), mean_accuracy=float(frac @ params.a_arr),
                     class_fractions=frac, n_jobs=int(keep.sum()),
                     final_delta=to_points(disp.delta), min_delta=to_points(disp.min_delta),
                     ci_halfwidth=ci, arrivals=arrivals, departures=departures, classes=classes)


def simulate_reference(params: SystemParams, policy: Policy | str, n: int, *, lam: float,
                       n_jobs: int, service: str = "exp", seed=0, warmup: float = 0.2,
                       a_star: float | None = None, chunk: int = CHUNK) -> SimResult:
    """The simpy model of the system; same inputs and random numbers as ``sim.simulate``.

    Always records per-job arrivals, departures and classes.
    """
    service, n, n_jobs, warmup = check_run_args(params, service, n, n_jobs, warmup)
    seed = _check_seed(seed)
    policy, a_star, lam = _resolve(params, policy, n, None, lam, a_star)
    _check_measured(n_jobs, warmup)
    table = policy.table(params, a_star=a_star)

    e_arr, e_srv, u_pol, u_srv = (np.concatenate(parts)
                                  for parts in zip(*job_streams(seed, n_jobs, chunk)))
    arrivals = np.empty(n_jobs)                         # Poisson arrivals, rate nλ
    _arrivals_const(0.0, e_arr, 1.0 / (n * lam), arrivals)
    departures, classes, disp = _run(params, n, [policy], [table], [], arrivals,
                                     e_srv, u_pol, u_srv, service == "det")

    # measurement, as in the engine: jobs arriving at or after warmup × (last arrival time)
    t_last = float(arrivals[-1])
    t_cut = warmup * t_last
    bscale = N_BATCHES / (t_last - t_cut) if t_last > t_cut else 0.0
    return _measured(params, table, arrivals, departures, classes, disp, t_cut, bscale)


def simulate_reference_phases(params: SystemParams, policy_name: str, n: int,
                              phases: list[Phase], *, service: str = "exp", seed=0,
                              chunk: int = CHUNK) -> SimResult:
    """The simpy model under a time-varying load and target; same inputs as ``sim.simulate_phases``.

    Phase k lasts ``duration`` time units with arrival rate n·λ_k and target a*_k; at each
    boundary the dispatcher switches to that phase's policy table (TAD: its a*, TAD-OP: its tuple
    list) and keeps Δ. Arrivals are those of the engine's time change of the same unit-exponential
    stream, up to the end of the last phase; all are measured (no warm-up) and recorded.
    """
    service, n, policies, tables, ends, rates, inv_rates = phase_plan(params, policy_name, n,
                                                                      phases, service)
    chunk = _check_int("chunk", chunk)
    seed = _check_seed(seed)

    # the engine's arrival construction, chunk by chunk, until an arrival falls past the end
    parts = []
    t, p = 0.0, 0
    for e_arr, e_srv, u_pol, u_srv in job_streams(seed, None, chunk):
        buf = np.empty(len(e_arr))
        t, p, m = _arrivals_phases(t, p, e_arr, rates, inv_rates, ends, buf)
        parts.append((buf[:m], e_srv[:m], u_pol[:m], u_srv[:m]))
        if m < len(e_arr):
            break
    arrivals, e_srv, u_pol, u_srv = (np.concatenate(x) for x in zip(*parts))
    departures, classes, disp = _run(params, n, policies, tables, ends[:-1], arrivals,
                                     e_srv, u_pol, u_srv, service == "det")
    return _measured(params, tables[0], arrivals, departures, classes, disp,
                     0.0, N_BATCHES / float(ends[-1]))
