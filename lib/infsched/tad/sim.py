"""Fast simulators of the n-server system (spec §6), compiled with numba: one per service law.

**Exponential service: a Markov chain over queue lengths.** With exponential service the state
that matters is the number of jobs at each server, and the next event is drawn in O(1) by
competing exponentials: arrivals at rate nλ, and a departure from each busy class-k server at
rate μ_k, so the next event comes after Exp(R), R = nλ + Σ_k μ_k·busy_k, and is an arrival with
probability nλ/R, else a departure from a uniformly chosen busy server of class k with
probability μ_k·busy_k/R (one uniform picks both the event and the server). Servers of one class
are exchangeable, so each class keeps its queue lengths in slots, the busy servers first: an
idle server is the first idle slot, and a server that empties swaps with the last busy slot
(O(1), no heap). The mean response time is Little's law over the measured window:
∫N(t)dt / (arrivals in it). The warm-up is the first ``warmup × n_jobs`` arrivals.

Without ``record`` a stationary run does not even draw the holding times: the sequence of states
(the jump chain) does not depend on them, and ∫N dt is estimated by Σ N/R, the expected holding
time of each state (discrete-time conversion, Fox & Glynn 1990; same mean, smaller variance).
That stationary, untimed case runs in :func:`_run_chain`, which trims each event to what it
needs (rates updated only when a server starts or stops being busy, single-job servers counted
rather than stored, the uniform that chose an arrival reused for the next event); see its
docstring. With ``record=True`` (or through phases) holding times are drawn and every arrival and
departure time is kept; per-job response times are then not known (the chain does not track
which job leaves), so ``SimResult.responses`` needs deterministic service.

**Deterministic service: the per-arrival Lindley engine of spec §6.2.** Every server serves its
queue FCFS, so a job's completion time is fixed the moment it is routed:
``free_at[s] = max(t, free_at[s]) + S``. Per class the dispatcher keeps a LIFO stack of idle
servers (the paper's tokens). A server hands its token back when it empties; with one service
time per class, class-k services end in the order they start, so each class keeps a FIFO of
(end of the current service, server) and there is no heap: at an arrival, the services that
ended by then are popped in order, and a server with more work starts its next job (pushed at
the back). Tokens come back in the order the servers empty, exactly as in the simpy reference
(:mod:`infsched.tad.reference`), which consumes the same random numbers: the two agree job by job.

Randomness (DESIGN.md): ``numpy.random.Generator`` streams spawned from one
``SeedSequence(seed)``, drawn in blocks (same seed, same numbers, whatever the block size). The
Markov engine uses two streams: unit exponential holding times and uniforms (one per event, one
for the policy and one for a random server when the policy or the routing needs them). The
Lindley engine uses :func:`job_streams`: per job a unit exponential inter-arrival time, a policy
uniform and a server uniform (and a service stream that deterministic service does not draw).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from infsched.errors import ConfigError, InfeasibleError, config_error, one_of, require, as_float
from infsched.limits import check_memory, warn_long
from infsched.tad.model import SystemParams
from infsched.tad.policies import (
    POLICY_NAMES,
    Policy,
    PolicyTable,
    accuracy_scale,
    make_policy,
    policy_target,
)

#: Jobs per block of pre-drawn random numbers (Lindley engine); draws per block (Markov engine).
CHUNK = 1 << 18
#: Block of uniforms / holding times the Markov engine draws at a time (fits in the L2 cache).
BLOCK = 1 << 14
#: Batches for the batch-means confidence interval of the mean response.
N_BATCHES = 20
SERVICES = ("exp", "det")

_RANDOM, _JIQ_FAST, _JIQ_ACCURATE, _R_JIQ, _TAD, _TADOP = range(6)


# ============================================================================ random streams

def job_streams(seed, n_jobs: int | None, chunk: int = CHUNK, draw_service: bool = True):
    """Yield chunks ``(e_arr, e_srv, u_pol, u_srv)`` of the four per-job random streams.

    Four generators are spawned from ``SeedSequence(seed)``: unit exponential inter-arrival
    draws, unit exponential service draws, the policy's uniform and the server uniform. Chunks
    hold ``chunk`` jobs (the last one fewer); ``n_jobs=None`` yields forever. With
    ``draw_service=False`` the service stream is not drawn (``e_srv`` is None; the other three
    are unchanged). Used by the Lindley engine and the simpy reference, so they see the same
    numbers.
    """
    g_arr, g_srv, g_pol, g_sv = (np.random.Generator(np.random.PCG64(s))
                                 for s in np.random.SeedSequence(seed).spawn(4))
    done = 0
    while n_jobs is None or done < n_jobs:
        m = chunk if n_jobs is None else min(chunk, n_jobs - done)
        yield (g_arr.standard_exponential(m),
               g_srv.standard_exponential(m) if draw_service else None,
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


class _Draws:
    """The Markov engine's two streams, in blocks: ``u`` uniforms and ``e`` unit exponentials.

    The engine consumes a block from index ``iu`` / ``ie`` on; :meth:`refill` keeps the unused
    tail in order and draws the rest, so the numbers consumed do not depend on the block size.
    """

    def __init__(self, seed, block: int, timed: bool):
        # children 4 and 5 of the run's SeedSequence (job_streams uses children 0-3)
        g_u, g_e = (np.random.Generator(np.random.PCG64(s))
                    for s in np.random.SeedSequence(seed).spawn(6)[4:])
        self.g_u, self.g_e, self.timed = g_u, g_e, timed
        self.u = g_u.random(block)
        self.e = g_e.standard_exponential(block) if timed else np.zeros(1)

    def refill(self, iu: int, ie: int):
        u = self.u
        rest = u.shape[0] - iu
        u[:rest] = u[iu:]
        self.g_u.random(out=u[rest:])
        if self.timed:
            e = self.e
            rest = e.shape[0] - ie
            e[:rest] = e[ie:]
            self.g_e.standard_exponential(out=e[rest:])


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


# ============================================================================ Lindley engine (det)

@njit(cache=True)
def _run_det(arr_t, u_pol, u_srv, m,
             # system
             inv_mu, sizes, starts, n_total,
             # state (mutated)
             free_at, stk, stn, fq_t, fq_s, fq_head, fq_cnt, istate, delta, mind,
             # policy tables, one row per phase
             code, jiq, lenient, cum_p, pos, neg, proper, lo, hi, pick, ntup, d, ntol, ptol,
             ph_end,
             # measurement
             t_cut, bscale, nb, bsum, bcnt, counts,
             record, rec_dep, rec_cls):
    """Route ``m`` jobs arriving at ``arr_t`` (deterministic service; see the module doc)."""
    K = inv_mu.shape[0]
    p = istate[1]
    P = ph_end.shape[0]
    dl = delta[0]
    md = mind[0]
    for j in range(m):
        t = arr_t[j]
        while p < P - 1 and t >= ph_end[p]:
            p += 1
        # 1. services that ended by t: a server with more work starts its next job (back of
        #    the class FIFO), an empty one hands its token back, in the order they empty
        if jiq:
            for k in range(K):
                cnt = fq_cnt[k]
                if cnt == 0:
                    continue
                st0 = starts[k]
                nk = sizes[k]
                h = fq_head[k]
                S = inv_mu[k]
                while cnt > 0 and fq_t[st0 + h] <= t:
                    c = fq_t[st0 + h]
                    s = fq_s[st0 + h]
                    h += 1
                    if h == nk:
                        h = 0
                    cnt -= 1
                    if free_at[s] == c:
                        stk[st0 + stn[k]] = s
                        stn[k] += 1
                    else:
                        tail = h + cnt
                        if tail >= nk:
                            tail -= nk
                        fq_t[st0 + tail] = c + S
                        fq_s[st0 + tail] = s
                        cnt += 1
                fq_head[k] = h
                fq_cnt[k] = cnt
        # 2. choose a class
        # the policy's rule (the same code as in _run_exp: keep the two in step)
        i = -1
        if code == _R_JIQ or code == _RANDOM:
            i = 0           # the first k with u < cum_p[k] (cum_p increases): count, no branches
            for k in range(K - 1):
                i += u_pol[j] >= cum_p[p, k]
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
                i = min(int(u_pol[j] * K), K - 1)
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
                    r = min(int(u_pol[j] * nallowed), nallowed - 1)
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
                x = min(int(u_pol[j] * n_total), n_total - 1)
                c = 0
                i = K - 1
                for k in range(K):
                    c += sizes[k]
                    if x < c:
                        i = k
                        break
        # 3. place the job
        S = inv_mu[i]
        if jiq and stn[i] > 0:
            stn[i] -= 1
            s = stk[starts[i] + stn[i]]
            fnew = t + S
            free_at[s] = fnew
            tail = fq_head[i] + fq_cnt[i]
            if tail >= sizes[i]:
                tail -= sizes[i]
            fq_t[starts[i] + tail] = fnew
            fq_s[starts[i] + tail] = s
            fq_cnt[i] += 1
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
    istate[1] = p
    delta[0] = dl
    mind[0] = md


# ============================================================================ Markov engine (exp)

@njit(cache=True)
def _run_exp(ubuf, ebuf, timed,
             # system
             mu, inv_mu, sizes, starts, n_total,
             # state (mutated): q holds each class's queue lengths in slots, busy slots first
             q, stn, cr, ist, fst, delta, mind,
             # policy tables, one row per phase; arrival rate per phase
             code, jiq, lenient, cum_p, pos, neg, proper, lo, hi, pick, ntup, d, ntol, ptol,
             ph_end, rates,
             # measurement
             n_target, j0, by_time, bscale, nb, barea, barr, counts,
             record, rec_arr, rec_cls, rec_dep):
    """Advance the chain until ``n_target`` arrivals, the end of the last phase, a used-up
    block of draws or a full record buffer; the state lives in ``ist``/``fst`` between calls.

    ist: [N, phase, iu, ie, arrivals, n_rec_arr, n_rec_dep, finished]; fst: [t].
    """
    K = mu.shape[0]
    P = ph_end.shape[0]
    N = ist[0]
    p = ist[1]
    iu = ist[2]
    ie = ist[3]
    ja = ist[4]
    ra = ist[5]
    rd = ist[6]
    t = fst[0]
    dl = delta[0]
    md = mind[0]
    lam_tot = rates[p]
    nu = ubuf.shape[0] - 3
    ne = ebuf.shape[0]
    nrec = rec_arr.shape[0]
    bmul = nb / (n_target - j0)         # batch of a measured arrival: (its index − j0)·bmul
    b = 0
    if ja > j0:
        b = min(int((ja - 1 - j0) * bmul), nb - 1)
    while True:
        if ja >= n_target:
            ist[7] = 1
            break
        if iu >= nu or (timed and ie >= ne) or (record and (ra >= nrec or rd >= nrec)):
            break
        R = lam_tot
        for k in range(K):
            R += mu[k] * (sizes[k] - stn[k])
            cr[k] = R           # nλ + the rates of classes 0..k
        if timed:
            dt = ebuf[ie] / R
            ie += 1
            if t + dt >= ph_end[p]:
                # a phase ends first: by memorylessness the race restarts at the boundary
                if ja > j0 or by_time:
                    if by_time:
                        b = min(int(t * bscale), nb - 1)
                    barea[b] += N * (ph_end[p] - t)
                t = ph_end[p]
                if p == P - 1:
                    ist[7] = 1
                    break
                p += 1
                lam_tot = rates[p]
                continue
        else:
            dt = 1.0 / R
        if ja > j0 or by_time:
            if by_time:
                b = min(int(t * bscale), nb - 1)
            barea[b] += N * dt
        t += dt
        x = ubuf[iu] * R
        iu += 1
        if x < lam_tot or N == 0:
            # an arrival
            # the policy's rule (infsched.tad.policies, `choose`); `used`: the uniform was spent
            i = -1
            used = 0
            if code == _R_JIQ or code == _RANDOM:
                used = 1
                i = 0       # the first k with u < cum_p[k] (cum_p increases): count, no branches
                for k in range(K - 1):
                    i += ubuf[iu] >= cum_p[p, k]
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
                    used = 1
                    i = min(int(ubuf[iu] * K), K - 1)
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
                        used = 1
                        nallowed = 0
                        for k in range(K):
                            if dl + d[p, k] >= ntol:
                                nallowed += 1
                        r = min(int(ubuf[iu] * nallowed), nallowed - 1)
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
                    used = 1
                    x = min(int(ubuf[iu] * n_total), n_total - 1)
                    c = 0
                    i = K - 1
                    for k in range(K):
                        c += sizes[k]
                        if x < c:
                            i = k
                            break
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
            if dl < md:
                md = dl
            if ja >= j0:
                if not by_time:
                    b = min(int((ja - j0) * bmul), nb - 1)
                barr[b] += 1
                counts[i] += 1
            if record:
                rec_arr[ra] = t
                rec_cls[ra] = i
                ra += 1
            ja += 1
        else:
            # a departure from a busy server: the class whose share of R holds x, then a slot
            # (a class with no busy server has an empty share and is skipped)
            k = 0
            for kk in range(K - 1):
                k += x >= cr[kk]
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
            if record:
                rec_dep[rd] = t
                rd += 1
    ist[0] = N
    ist[1] = p
    ist[2] = iu
    ist[3] = ie
    ist[4] = ja
    ist[5] = ra
    ist[6] = rd
    fst[0] = t
    delta[0] = dl
    mind[0] = md


# ============================================================================ jump-chain fast path

#: a uniform is reused (see _run_chain) only while its grid has coarsened by at most this
#: factor, so every uniform the chain uses has at least 53 − 20 = 33 bits
MAX_COARSEN = float(2 ** 20)
#: the jump chain recomputes its cumulative rates exactly every this many arrivals
RESYNC = 1 << 12


@njit(cache=True)
def _run_chain(ubuf,
               # system
               mu, inv_mu, sizes, starts, n_total,
               # state (mutated): idle counts, servers with ≥ 2 jobs per class and their
               # queue lengths, cumulative rates
               stn, nmulti, qm, cr, ist, chs, delta, mind,
               # the policy table (one phase)
               code, jiq, lenient, cum_p, cum_lo, inv_p, pos, neg, proper, lo, hi, pick, ntup, d, ntol,
               ptol, lam_tot,
               # measurement: arrivals j0 .. n_target−1 in nb batches of equal counts
               n_target, j0, nb, barea, barr, counts):
    """The stationary jump chain without recorded times (``simulate`` without ``record``).

    The same chain as :func:`_run_exp`, with the per-event work cut to what the event needs:

    - the cumulative rates ``cr`` (nλ + Σ_{j≤k} μ_j·busy_j) and R are updated when a server
      starts or stops being busy (one class's share moves), not recomputed per event;
    - per class, only the servers holding ≥ 2 jobs are stored (``qm[starts[k]:
      starts[k]+nmulti[k]]``, their queue lengths); the others are counted: busy_k − nmulti[k]
      servers hold one job, idle_k none. Servers of one class are exchangeable, so a uniformly
      chosen busy server is a stored one with probability nmulti/busy (then a slot among them),
      else a single-job server that empties; a random server of the class is stored, single or
      idle in proportion. In the usual regime (idle servers in the chosen class) an event
      touches no per-server memory at all;
    - the uniform that chose an arrival is reused: given x = u·R < nλ, x/(nλ) is uniform on
      [0, 1) and independent of everything before, so it drives the next event. R-JIQ's class
      draw is made the same way: from that residual, and the residual of the class draw,
      (v − P_{i−1})/p_i, drives the next event. Each reuse coarsens the uniform's grid by the
      factor (range/width: R/nλ, 1/p_i); a fresh draw is taken once the product would exceed
      :data:`MAX_COARSEN` (every uniform keeps ≥ 33 bits) and after every departure;
    - the batch a measured arrival falls in is found by counting down to the next batch start.

    ist: [N, -, iu, -, arrivals, -, -, finished]; chs: [a uniform in hand, it, its grid
    coarsening, ∫N of the current batch so far], kept when a call runs out of draws, so that
    the numbers used, and the sums, do not depend on the block size.
    """
    K = mu.shape[0]
    p = 0
    N = ist[0]
    iu = ist[2]
    ja = ist[4]
    dl = delta[0]
    md = mind[0]
    nu = ubuf.shape[0] - 3
    inv_lam = 1.0 / lam_tot
    # R = cr[K − 1], updated incrementally; recomputed exactly every RESYNC arrivals (the
    # updates drift by rounding only in between), at points that do not depend on the block
    R = lam_tot
    for k in range(K):
        R += mu[k] * (sizes[k] - stn[k])
        if ja == 0:
            cr[k] = R
    R = cr[K - 1]
    span = n_target - j0
    b = 0
    if ja > j0:
        b = min(((ja - 1 - j0) * nb) // span, nb - 1)
    # the first arrival index of batch b + 1 (batch of arrival j: (j − j0)·nb // span)
    nxt = j0 + ((b + 1) * span + nb - 1) // nb if b < nb - 1 else n_target + 1
    meas = ja > j0
    area = chs[3]           # ∫N of the current batch so far (summed in the same order whatever
    narr = 0                # the block size)
    if chs[0] != 0.0:           # the uniform in hand when the last call ran out of draws
        u = chs[1]
        coarse = chs[2]
    else:
        u = ubuf[iu]
        iu += 1
        coarse = 1.0
    while True:
        if iu >= nu:            # keep the uniform in hand: the numbers used do not depend
            chs[0] = 1.0        # on the block size
            chs[1] = u
            chs[2] = coarse
            break
        if meas:
            area += N / R
        x = u * R
        if x < lam_tot or N == 0:
            # an arrival
            # the policy's rule (the same code as in _run_exp: keep the two in step)
            i = -1
            used = 0
            if code == _R_JIQ or code == _RANDOM:
                # the class from the arrival's residual x/(nλ); its own residual is kept in x
                # v = x/(nλ) (grid coarse·R/nλ) unless that is too coarse
                if coarse * R * inv_lam <= MAX_COARSEN and x < lam_tot:
                    v = x * inv_lam
                else:
                    v = ubuf[iu]
                    iu += 1
                    coarse = lam_tot / R
                i = 0
                for k in range(K - 1):
                    i += v >= cum_p[p, k]
                # x := w·nλ, w = (v − P_{i−1})/p_i: the reuse below takes u = x/(nλ) = w, and
                # its check (coarse·R/nλ) then reads w's grid, (grid of v)/p_i
                x = (v - cum_lo[p, i]) * inv_p[p, i] * lam_tot
                coarse *= inv_p[p, i]
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
                    used = 1
                    i = min(int(ubuf[iu] * K), K - 1)
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
                        used = 1
                        nallowed = 0
                        for k in range(K):
                            if dl + d[p, k] >= ntol:
                                nallowed += 1
                        r = min(int(ubuf[iu] * nallowed), nallowed - 1)
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
                    used = 1
                    y = min(int(ubuf[iu] * n_total), n_total - 1)
                    c = 0
                    i = K - 1
                    for k in range(K):
                        c += sizes[k]
                        if y < c:
                            i = k
                            break
            iu += used
            if jiq and stn[i] > 0:
                starts_busy = True
            else:
                # a uniformly random server of class i: stored (≥ 2 jobs), single or idle
                r = min(int(ubuf[iu] * sizes[i]), sizes[i] - 1)
                iu += 1
                m = nmulti[i]
                if r < m:
                    qm[starts[i] + r] += 1
                    starts_busy = False
                elif r < sizes[i] - stn[i]:
                    qm[starts[i] + m] = 2
                    nmulti[i] = m + 1
                    starts_busy = False
                else:
                    starts_busy = True
            if starts_busy:
                stn[i] -= 1
                mi = mu[i]
                for kk in range(K):         # a fixed trip count: no mispredicted loop exit
                    cr[kk] += mi if kk >= i else 0.0
                R += mi
            N += 1
            dl += d[p, i]
            if dl < md:
                md = dl
            if ja >= j0:
                if ja >= nxt:
                    barea[b] += area
                    barr[b] += narr
                    area = 0.0
                    narr = 0
                    b += 1
                    nxt = j0 + ((b + 1) * span + nb - 1) // nb if b < nb - 1 else n_target + 1
                meas = True
                narr += 1
                counts[i] += 1
            ja += 1
            if ja >= n_target:
                ist[7] = 1
                break
            if ja & (RESYNC - 1) == 0:
                R = lam_tot
                for k in range(K):
                    R += mu[k] * (sizes[k] - stn[k])
                    cr[k] = R
            c2 = coarse * R * inv_lam
            if c2 <= MAX_COARSEN and x < lam_tot:   # (not an arrival forced by N = 0)
                u = x * inv_lam
                coarse = c2
                continue
        else:
            # a departure: the class whose share of R holds x, then a busy server of it
            k = 0
            for kk in range(K - 1):
                k += x >= cr[kk]
            m = nmulti[k]
            empties = True
            if m > 0:
                lo_k = cr[k - 1] if k > 0 else lam_tot
                busy = sizes[k] - stn[k]
                s = min(int((x - lo_k) * inv_mu[k]), busy - 1)
                if s < m:
                    empties = False
                    s += starts[k]
                    qm[s] -= 1
                    if qm[s] == 1:      # down to one job: no longer stored
                        m -= 1
                        qm[s] = qm[starts[k] + m]
                        nmulti[k] = m
            if empties:
                stn[k] += 1
                mk = mu[k]
                for kk in range(K):
                    cr[kk] -= mk if kk >= k else 0.0
                R -= mk
            N -= 1
        u = ubuf[iu]
        iu += 1
        coarse = 1.0
    if ist[7]:
        barea[b] += area
        area = 0.0
    chs[3] = area
    barr[b] += narr
    ist[0] = N
    ist[2] = iu
    ist[4] = ja
    delta[0] = dl
    mind[0] = md


# ============================================================================ engine state

class _Engine:
    """State of one run carried across kernel calls (arrays mutated in place by the kernels)."""

    def __init__(self, params: SystemParams, n: int, tables: list[PolicyTable], ph_end, service):
        sizes = params.class_sizes(n)
        self.sizes = sizes
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.n = int(n)
        self.mu = params.mu_arr
        self.inv_mu = 1.0 / params.mu_arr
        self.det = service == "det"
        self.stn = sizes.astype(np.int64).copy()
        if self.det:
            self.free_at = np.zeros(n)
            # initial idle stacks: class k holds starts[k]+n_k-1 ... starts[k]; pop gives starts[k]
            self.stk = np.concatenate([np.arange(st + nk - 1, st - 1, -1)
                                       for st, nk in zip(self.starts, sizes)]).astype(np.int64)
            self.fq_t = np.zeros(n)                     # per-class FIFO rings of service ends
            self.fq_s = np.zeros(n, np.int64)
            self.fq_head = np.zeros(params.K, np.int64)
            self.fq_cnt = np.zeros(params.K, np.int64)
        else:
            self.q = np.zeros(n, np.int64)
            self.cr = np.zeros(params.K)
            self.nmulti = np.zeros(params.K, np.int64)   # the jump-chain fast path's state
            self.qm = np.zeros(n, np.int64)
            self.chs = np.zeros(4)       # [a uniform in hand?, it, its grid coarsening, ∫N]
            self.fst = np.zeros(1)
        self.istate = np.zeros(8, np.int64)
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
        # R-JIQ's class draw in the jump chain: P_{k−1} and 1/p_k (0 for an empty class)
        self.cum_lo = np.concatenate([np.zeros((len(tables), 1)), self.cum_p[:, :-1]], axis=1)
        width = self.cum_p - self.cum_lo
        self.inv_p = np.divide(1.0, width, out=np.zeros_like(width), where=width > 0)
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
        self.bsum = np.zeros(N_BATCHES)       # Lindley: Σ response; Markov: ∫N dt, per batch
        self.bcnt = np.zeros(N_BATCHES, np.int64)

    def run_det(self, arr_t, u_pol, u_srv, m, t_cut, bscale, record, rec_dep, rec_cls):
        _run_det(arr_t, u_pol, u_srv, m,
                 self.inv_mu, self.sizes, self.starts, self.n,
                 self.free_at, self.stk, self.stn, self.fq_t, self.fq_s, self.fq_head,
                 self.fq_cnt, self.istate, self.delta, self.mind,
                 self.code, self.jiq, self.lenient, self.cum_p, self.pos, self.neg,
                 self.proper, self.lo, self.hi, self.pick, self.ntup, self.d,
                 self.ntol, self.ptol, self.ph_end,
                 t_cut, bscale, N_BATCHES, self.bsum, self.bcnt, self.counts,
                 record, rec_dep, rec_cls)

    def run_chain(self, draws: _Draws, lam_tot: float, n_target: int, j0: int, bar=None):
        """The stationary jump chain without recorded times (:func:`_run_chain`) to the end."""
        ist = self.istate
        while True:
            _run_chain(draws.u, self.mu, self.inv_mu, self.sizes, self.starts, self.n,
                       self.stn, self.nmulti, self.qm, self.cr, ist, self.chs,
                       self.delta, self.mind,
                       self.code, self.jiq, self.lenient, self.cum_p, self.cum_lo, self.inv_p,
                       self.pos,
                       self.neg, self.proper, self.lo, self.hi, self.pick, self.ntup, self.d,
                       self.ntol, self.ptol, lam_tot, n_target, j0, N_BATCHES,
                       self.bsum, self.bcnt, self.counts)
            if bar is not None:
                bar.n = int(ist[4])
                bar.refresh()
            if ist[7]:
                break
            draws.refill(int(ist[2]), 0)
            ist[2] = 0

    def run_exp(self, draws: _Draws, rates, n_target, j0, by_time, bscale, record, rec,
                bar=None):
        """Run the Markov chain to the end, refilling the draws and the record buffers."""
        ist = self.istate
        rec_arr, rec_cls, rec_dep = rec
        parts_a, parts_c, parts_d = [], [], []
        while True:
            _run_exp(draws.u, draws.e, draws.timed,
                     self.mu, self.inv_mu, self.sizes, self.starts, self.n,
                     self.q, self.stn, self.cr, ist, self.fst, self.delta, self.mind,
                     self.code, self.jiq, self.lenient, self.cum_p, self.pos, self.neg,
                     self.proper, self.lo, self.hi, self.pick, self.ntup, self.d,
                     self.ntol, self.ptol, self.ph_end, rates,
                     n_target, j0, by_time, bscale, N_BATCHES, self.bsum, self.bcnt,
                     self.counts, record, rec_arr, rec_cls, rec_dep)
            if record and (ist[7] or ist[5] >= len(rec_arr) or ist[6] >= len(rec_dep)):
                parts_a.append(rec_arr[:ist[5]].copy())
                parts_c.append(rec_cls[:ist[5]].copy())
                parts_d.append(rec_dep[:ist[6]].copy())
                ist[5] = ist[6] = 0
            if bar is not None:
                bar.n = int(ist[4])
                bar.refresh()
            if ist[7]:
                break
            draws.refill(int(ist[2]), int(ist[3]))
            ist[2] = ist[3] = 0
        if not record:
            return None, None, None
        cat = lambda parts, dt: np.concatenate(parts) if parts else np.empty(0, dt)
        return cat(parts_a, float), cat(parts_d, float), cat(parts_c, np.int8)

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
                     ci_halfwidth=ci, arrivals=arrivals, departures=departures, classes=classes,
                     departures_per_job=bool(eng.det))


# ============================================================================ validation

#: the engine's arrays per server (free_at, stk, fq_t, fq_s, q: 8 bytes each), for the memory check
BYTES_PER_SERVER = 40
#: jobs per second of one core, on the fast side of what was measured here (5 M/s on a busy
#: machine), so that the time a long run is announced to take is a lower bound
JOBS_PER_SECOND = 1e7


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
    policy, a_star, lam = _resolve(params, policy, n, rho, lam, a_star)
    table = policy.table(params, a_star=a_star)
    eng = _Engine(params, n, [table], [math.inf], service)
    bar = _progress(progress, n_jobs)
    if not eng.det:
        # the Markov engine: warm-up = the first warmup × n_jobs arrivals; holding times are
        # drawn only when the times are recorded
        draws = _Draws(seed, _block(chunk), timed=record)
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
    for e in _arrival_draws(seed, n_jobs, chunk):
        t_last = _arrivals_const(t_last, e, inv_rate, buf[:len(e)])
    t_cut = warmup * t_last
    bscale = N_BATCHES / (t_last - t_cut) if t_last > t_cut else 0.0

    rec = (np.empty(n_jobs), np.empty(n_jobs), np.empty(n_jobs, np.int8)) if record else None
    dummy_f, dummy_c = np.empty(0), np.empty(0, np.int8)
    t, done = 0.0, 0
    for e_arr, _, u_pol, u_srv in job_streams(seed, n_jobs, chunk, draw_service=False):
        m = len(e_arr)
        t = _arrivals_const(t, e_arr, inv_rate, buf[:m])
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
    eng = _Engine(params, n, tables, ends, service)
    horizon = float(ends[-1])
    bscale = N_BATCHES / horizon
    bar = _progress(progress, None)
    if not eng.det:
        draws = _Draws(seed, _block(chunk), timed=True)
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
        t, p, m = _arrivals_phases(t, p, e_arr, rates, inv_rates, ends, buf)
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
