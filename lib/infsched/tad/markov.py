"""The Markov engines for exponential service (spec §6), compiled with numba.

With exponential service the state that matters is the number of jobs at each server, and the
next event is drawn in O(1) by competing exponentials: arrivals at rate nλ, and a departure
from each busy class-k server at rate μ_k, so the next event comes after Exp(R),
R = nλ + Σ_k μ_k·busy_k, and is an arrival with probability nλ/R, else a departure from a
uniformly chosen busy server of class k with probability μ_k·busy_k/R (one uniform picks both
the event and the server). Servers of one class are exchangeable, so each class keeps its queue
lengths in slots, the busy servers first: an idle server is the first idle slot, and a server
that empties swaps with the last busy slot (O(1), no heap). The mean response time is Little's
law over the measured window: ∫N(t)dt / (arrivals in it). The warm-up is the first
``warmup × n_jobs`` arrivals.

Two kernels run this chain:

- :func:`run_jump_chain`, the stationary run without recorded times (what the book uses). The
  sequence of states (the jump chain) does not depend on the holding times, so none is drawn,
  and ∫N dt is estimated by Σ N/R, the expected holding time of each state (discrete-time
  conversion, Fox & Glynn 1990; same mean, smaller variance). Each event does only what it
  needs; see its docstring.
- :func:`run_timed`, for ``record=True`` and for phases: holding times are drawn and every
  arrival and departure time is kept. Per-job response times are not known (the chain does not
  track which job leaves), so ``SimResult.responses`` needs deterministic service.

Both draw from :class:`infsched.tad.streams.EventDraws` (uniforms: one per event, one for the
policy and one for a random server when the policy or the routing needs them; and unit
exponential holding times for the timed kernel), and route with
:func:`infsched.tad.choice.choose_class`.
"""

from __future__ import annotations

from numba import njit

from infsched.tad.choice import choose_class
from infsched.tad.policies import R_JIQ, RANDOM

#: a uniform is reused (see run_jump_chain) only while its grid has coarsened by at most this
#: factor, so every uniform the chain uses has at least 53 − 20 = 33 bits
MAX_COARSEN = float(2 ** 20)
#: the jump chain recomputes its cumulative rates exactly every this many arrivals
RESYNC = 1 << 12


@njit(inline="always")
def cumulative_rates(lam_tot, mu, sizes, stn, cr):
    """cr[k] = nλ + Σ_{j≤k} μ_j·busy_j, the event rates up to class k; returns R = cr[K−1]."""
    R = lam_tot
    for k in range(mu.shape[0]):
        R += mu[k] * (sizes[k] - stn[k])
        cr[k] = R
    return R


@njit(inline="always")
def shift_rates(cr, k, dmu):
    """A class-k server starts (dmu = μ_k) or stops (−μ_k) being busy: cr[j] += dmu for j ≥ k,
    over every j (a fixed trip count: no mispredicted loop exit)."""
    for j in range(cr.shape[0]):
        cr[j] += dmu if j >= k else 0.0


@njit(inline="always")
def departing_class(x, cr):
    """The class whose share of R holds x (x ≥ nλ): the number of cr[0..K−2] ≤ x, counted
    without branches (a class with no busy server has an empty share and is skipped)."""
    k = 0
    for j in range(cr.shape[0] - 1):
        k += x >= cr[j]
    return k


@njit(cache=True, _nrt=False)
def run_timed(ubuf, ebuf, timed,
              # system
              mu, inv_mu, sizes, starts, n_total,
              # state (mutated): q holds each class's queue lengths in slots, busy slots first
              q, stn, cr, ist, fst, delta, mind,
              # policy tables, one row per phase; arrival rate per phase
              code, jiq, lenient, cum_p, pos, neg, proper, lo, hi, pick, ntup, d,
              ntol, ptol, ph_end, rates,
              # measurement
              n_target, j0, by_time, bscale, nb, barea, barr, counts,
              record, rec_arr, rec_cls, rec_dep):
    """Advance the chain until ``n_target`` arrivals, the end of the last phase, a used-up
    block of draws or a full record buffer; the state lives in ``ist``/``fst`` between calls.

    ist: [N, phase, iu, ie, arrivals, n_rec_arr, n_rec_dep, finished]; fst: [t].
    """
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
        R = cumulative_rates(lam_tot, mu, sizes, stn, cr)
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


@njit(cache=True, _nrt=False)
def run_jump_chain(ubuf,
                   # system
                   mu, inv_mu, sizes, starts, n_total,
                   # state (mutated): idle counts, servers with ≥ 2 jobs per class and their
                   # queue lengths, cumulative rates
                   stn, nmulti, qm, cr, ist, chs, delta, mind,
                   # the policy table (one phase)
                   code, jiq, lenient, cum_p, cum_lo, inv_p, pos, neg, proper, lo, hi, pick,
                   ntup, d, ntol, ptol, lam_tot,
                   # measurement: arrivals j0 .. n_target−1 in nb batches of equal counts
                   n_target, j0, nb, barea, barr, counts):
    """The stationary jump chain without recorded times (``simulate`` without ``record``).

    The same chain as :func:`run_timed`, with the per-event work cut to what the event needs:

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
            if code == R_JIQ or code == RANDOM:
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
            else:
                i, used = choose_class(code, lenient, p, dl, stn, sizes, n_total, cum_p, d, ntol,
                                       ptol, pos, neg, proper, lo, hi, pick, ntup, ubuf, iu)
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
                shift_rates(cr, i, mi)
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
                R = cumulative_rates(lam_tot, mu, sizes, stn, cr)
            c2 = coarse * R * inv_lam
            if c2 <= MAX_COARSEN and x < lam_tot:   # (not an arrival forced by N = 0)
                u = x * inv_lam
                coarse = c2
                continue
        else:
            # a departure: the class whose share of R holds x, then a busy server of it
            k = departing_class(x, cr)
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
                shift_rates(cr, k, -mk)
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
