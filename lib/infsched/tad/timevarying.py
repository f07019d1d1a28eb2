"""The streaming time-varying run of Section 7.2 (Figs. 9–10): no record per query.

The paper runs n = 2^12 servers "until 3×10^5 units of time, taking samples at every 10^3-th
unit", plotting the number of queries in the system N(t) and "the running average accuracy of
the last 10^3 queries entering the system". At n = 4096 that is about 3.7×10^8 queries a run.
:func:`infsched.tad.sim.simulate_phases` keeps every arrival and departure time (what
``number_in_system`` and ``running_accuracy`` read afterwards), 32 bytes a query; this run keeps
only what the figures read, so its memory does not grow with its length:

- at every sample time t_k: N(t_k) (arrivals ≤ t_k minus departures ≤ t_k, the convention of
  :meth:`~infsched.tad.sim.SimResult.number_in_system`) and the mean accuracy of the last
  ``window`` arrivals at or before t_k (a ring buffer of their classes and a count per class:
  exact, no running float sum to drift); NaN while fewer than ``window`` have arrived;
- per interval (t_{k−1}, t_k]: ∫N(t)dt, the arrivals and the sum of their accuracies, from
  which any phase's time-average of N and mean accuracy follow exactly.

The chain is that of :func:`infsched.tad.markov.run_timed` (exponential service, holding times
drawn), event for event: the same draws from :class:`~infsched.tad.streams.EventDraws`, in the
same order, the same routing (:func:`~infsched.tad.choice.choose_class`), the same server slots.
So with the same seed a streaming run and a recording one pass through the same states, and
``tests/tad/test_timevarying.py`` holds their N(t_k) and running accuracies equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from infsched.errors import require
from infsched.tad.choice import choose_class
from infsched.tad.engine import Engine
from infsched.tad.markov import cumulative_rates, departing_class
from infsched.tad.model import SystemParams
from infsched.tad.streams import CHUNK, EventDraws

#: the paper's sampling step and running-accuracy window (Sec. 7.2)
PAPER_SAMPLE_EVERY = 1_000.0
PAPER_WINDOW = 1_000


@njit(cache=True, _nrt=False)
def _take_samples(ts, ks, S, until, inclusive, N, t, area, asum, ja, W, K, wcnt, acc,
                  s_n, s_area, s_asum, s_acc):
    """Record every sample time before ``until`` (at it too when ``inclusive``): N(t_k), the
    interval's integral of N and summed accuracy (both restarted at each sample), and the running
    accuracy of the last ``W`` arrivals (NaN until ``W`` have arrived). N is constant meanwhile.
    Returns the next sample index, the time, and the running integral and accuracy sum."""
    while ks < S and (ts[ks] < until or (inclusive and ts[ks] == until)):
        area += N * (ts[ks] - t)
        t = ts[ks]
        s_n[ks] = N
        s_area[ks] = area
        s_asum[ks] = asum
        if ja >= W:
            sa = 0.0
            for k in range(K):
                sa += wcnt[k] * acc[k]
            s_acc[ks] = sa / W
        else:
            s_acc[ks] = np.nan
        area = 0.0
        asum = 0.0
        ks += 1
    return ks, t, area, asum


@njit(cache=True, _nrt=False)
def run_timed_stream(ubuf, ebuf,
                     # system
                     mu, inv_mu, sizes, starts, n_total, acc,
                     # state (mutated): as run_timed, plus the window's ring and class counts
                     q, stn, cr, ist, fst, delta, mind, ring, wcnt,
                     # policy tables, one row per phase; arrival rate per phase
                     code, jiq, lenient, cum_p, pos, neg, proper, lo, hi, pick, ntup, d,
                     ntol, ptol, ph_end, rates,
                     # sample times and what is kept per sample / per interval
                     ts, s_n, s_acc, s_area, s_arr, s_asum, counts):
    """Advance the chain of :func:`~infsched.tad.markov.run_timed` (same draws, same states)
    until the end of the last phase or a used-up block of draws, measuring at the sample times
    ``ts`` (see the module doc) instead of recording every event.

    ist: [N, phase, iu, ie, arrivals, ring position, next sample, finished];
    fst: [t, ∫N dt since the last sample, Σ accuracy of its arrivals].
    """
    K = mu.shape[0]
    P = ph_end.shape[0]
    S = ts.shape[0]
    W = ring.shape[0]
    N = ist[0]
    p = ist[1]
    iu = ist[2]
    ie = ist[3]
    ja = ist[4]
    rp = ist[5]
    ks = ist[6]
    t = fst[0]
    area = fst[1]
    asum = fst[2]
    dl = delta[0]
    md = mind[0]
    lam_tot = rates[p]
    nu = ubuf.shape[0] - 3
    ne = ebuf.shape[0]
    while True:
        if iu >= nu or ie >= ne:
            break
        R = cumulative_rates(lam_tot, mu, sizes, stn, cr)
        dt = ebuf[ie] / R
        ie += 1
        t_next = t + dt
        at_end = t_next >= ph_end[p]
        if at_end:
            t_next = ph_end[p]
        # samples before the next event (or the phase end): N is constant on [t, t_next); an
        # event exactly at a sample time counts at it (≤), as in number_in_system
        # tested here, not only in the helper: a sample falls before one event in millions, and
        # calling the helper (18 arguments, not inlined) at every event made the loop 1.5x slower
        if ks < S and ts[ks] < t_next:
            ks, t, area, asum = _take_samples(ts, ks, S, t_next, False, N, t, area, asum, ja, W,
                                              K, wcnt, acc, s_n, s_area, s_asum, s_acc)
        area += N * (t_next - t)
        t = t_next
        if at_end:
            # a phase ends first: by memorylessness the race restarts at the boundary
            if p == P - 1:
                ist[7] = 1
                break
            p += 1
            lam_tot = rates[p]
            continue
        x = ubuf[iu] * R
        iu += 1
        if x < lam_tot or N == 0:
            # an arrival
            i, used = choose_class(code, lenient, p, dl, stn, sizes, n_total, cum_p, d, ntol,
                                   ptol, pos, neg, proper, lo, hi, pick, ntup, ubuf, iu)
            iu += used
            st0 = starts[i]
            busy = sizes[i] - stn[i]
            if jiq and stn[i] > 0:
                q[st0 + busy] = 1
                stn[i] -= 1
            else:
                r = min(int(ubuf[iu] * sizes[i]), sizes[i] - 1)
                iu += 1
                if r < busy:
                    q[st0 + r] += 1
                else:       # an idle server: all idle servers of a class are alike
                    q[st0 + busy] = 1
                    stn[i] -= 1
            N += 1
            dl += d[p, i]
            md = min(md, dl)
            counts[i] += 1
            if ks < S:
                s_arr[ks] += 1
            asum += acc[i]
            if ja >= W:
                wcnt[ring[rp]] -= 1
            ring[rp] = i
            wcnt[i] += 1
            rp += 1
            if rp == W:
                rp = 0
            ja += 1
        else:
            # a departure from a busy server: the class whose share of R holds x, then a slot
            k = departing_class(x, cr)
            lo_k = cr[k - 1] if k > 0 else lam_tot
            busy = sizes[k] - stn[k]
            st0 = starts[k]
            s = st0 + min(int((x - lo_k) * inv_mu[k]), busy - 1)
            q[s] -= 1
            if q[s] == 0:
                last = st0 + busy - 1
                q[s] = q[last]
                q[last] = 0
                stn[k] += 1
            N -= 1
    if ist[7]:
        # the samples at the end of the last phase (no event there: N is what it was)
        ks, t, area, asum = _take_samples(ts, ks, S, t, True, N, t, area, asum, ja, W, K,
                                          wcnt, acc, s_n, s_area, s_asum, s_acc)
    ist[0] = N
    ist[1] = p
    ist[2] = iu
    ist[3] = ie
    ist[4] = ja
    ist[5] = rp
    ist[6] = ks
    fst[0] = t
    fst[1] = area
    fst[2] = asum
    delta[0] = dl
    mind[0] = md


@dataclass
class StreamResult:
    """What one streaming run measured, per sample time ``t`` (see the module doc).

    ``n_in_system[k]`` is N(t_k); ``accuracy[k]`` the mean accuracy of the last ``window``
    arrivals at t_k (NaN before ``window`` arrivals); ``area[k]``, ``arrivals[k]`` and
    ``accuracy_sum[k]`` cover the interval (t_{k−1}, t_k] (t_{−1} = 0). ``final_delta`` and
    ``min_delta`` are Δ in accuracy points, as in :class:`~infsched.tad.sim.SimResult`;
    ``class_counts`` the arrivals routed to each class over the whole run.
    """

    t: np.ndarray
    n_in_system: np.ndarray
    accuracy: np.ndarray
    area: np.ndarray
    arrivals: np.ndarray
    accuracy_sum: np.ndarray
    window: int
    final_delta: float
    min_delta: float
    class_counts: np.ndarray

    @property
    def n_jobs(self) -> int:
        return int(self.arrivals.sum())

    def time_average(self, t0: float, t1: float) -> float:
        """The time-average of N(t) over (t0, t1], both sample times (exact: Σ ∫N dt / (t1 − t0))."""
        sel = self._between(t0, t1)
        return float(self.area[sel].sum() / (t1 - t0))

    def mean_accuracy(self, t0: float, t1: float) -> float:
        """The mean accuracy of the queries arriving in (t0, t1], both sample times."""
        sel = self._between(t0, t1)
        return float(self.accuracy_sum[sel].sum() / self.arrivals[sel].sum())

    def _between(self, t0: float, t1: float) -> np.ndarray:
        grid = np.concatenate([[0.0], self.t])
        for name, v in (("t0", t0), ("t1", t1)):
            require(bool(np.isclose(grid, v, rtol=0, atol=1e-9 * max(1.0, grid[-1])).any()),
                    name, v, "must be 0 or a sample time of the run")
        require(t1 > t0, "t1", t1, f"must be after t0 = {t0:g}")
        return (self.t > t0 + 1e-9 * grid[-1]) & (self.t <= t1 + 1e-9 * grid[-1])


def sample_times(horizon: float, sample_every: float) -> np.ndarray:
    """t_k = k · ``sample_every``, k = 1 … horizon / sample_every (which must be a whole number)."""
    require(math.isfinite(sample_every) and sample_every > 0, "sample_every", sample_every,
            "must be a positive time")
    m = horizon / sample_every
    require(abs(m - round(m)) < 1e-9 * max(1.0, m) and round(m) >= 1, "sample_every",
            sample_every, f"must divide the run's length {horizon:g} into a whole number of samples")
    return np.arange(1, round(m) + 1) * float(sample_every)


def simulate_phases_stream(params: SystemParams, policy_name: str, n: int, phases, *,
                           sample_every: float = PAPER_SAMPLE_EVERY,
                           window: int = PAPER_WINDOW, seed=0, chunk: int = CHUNK) -> StreamResult:
    """Time-varying load and target (Section 7.2, spec §3.4), streaming: one run through
    ``phases`` with exponential service, measured at every ``sample_every`` time units.

    The run is that of ``simulate_phases(params, policy_name, n, phases, seed=seed)`` (same
    draws, same states; Δ carries across phases); only what Figs. 9–10 read is kept (module
    doc), so memory is O(n + window + samples) whatever the run's length.
    """
    from infsched.tad.sim import _block, _check_int, _check_seed, phase_plan

    _, n, _, tables, ends, rates, _ = phase_plan(params, policy_name, n, phases, "exp")
    window = _check_int("window", window)
    chunk = _check_int("chunk", chunk)
    seed = _check_seed(seed)
    try:
        sample_every = float(sample_every)
    except (TypeError, ValueError):
        require(False, "sample_every", sample_every, "must be a positive time")
    ts = sample_times(float(ends[-1]), sample_every)
    eng = Engine(params, n, tables, ends, "exp")
    draws = EventDraws(seed, _block(chunk), timed=True)
    S = len(ts)
    s_n = np.zeros(S, np.int64)
    s_acc = np.full(S, np.nan)
    s_area = np.zeros(S)
    s_arr = np.zeros(S, np.int64)
    s_asum = np.zeros(S)
    ring = np.zeros(window, np.int64)
    wcnt = np.zeros(params.K, np.int64)
    fst = np.zeros(3)
    ist = eng.istate
    acc = params.a_arr.astype(float)
    while True:
        run_timed_stream(draws.u, draws.e, eng.mu, eng.inv_mu, eng.sizes, eng.starts, eng.n, acc,
                         eng.q, eng.stn, eng.cr, ist, fst, eng.delta, eng.mind, ring, wcnt,
                         eng.code, eng.jiq, eng.lenient, eng.cum_p, eng.pos, eng.neg,
                         eng.proper, eng.lo, eng.hi, eng.pick, eng.ntup, eng.d, eng.ntol,
                         eng.ptol, eng.ph_end, rates, ts, s_n, s_acc, s_area, s_arr, s_asum,
                         eng.counts)
        if ist[7]:
            break
        draws.refill(int(ist[2]), int(ist[3]))
        ist[2] = ist[3] = 0
    return StreamResult(t=ts, n_in_system=s_n, accuracy=s_acc, area=s_area, arrivals=s_arr,
                        accuracy_sum=s_asum, window=window,
                        final_delta=eng.delta_points(eng.delta[0]),
                        min_delta=eng.delta_points(eng.mind[0]),
                        class_counts=eng.counts.copy())
