"""The per-arrival Lindley engine for deterministic service (spec §6.2), compiled with numba.

Every server serves its queue FCFS, so a job's completion time is fixed the moment it is routed:
``free_at[s] = max(t, free_at[s]) + S``. Per class the dispatcher keeps a LIFO stack of idle
servers (the paper's tokens). A server hands its token back when it empties; with one service
time per class, class-k services end in the order they start, so each class keeps a FIFO of
(end of the current service, server) and there is no heap: at an arrival, the services that
ended by then are popped in order, and a server with more work starts its next job (pushed at
the back). Tokens come back in the order the servers empty, exactly as in the simpy reference
(:mod:`infsched.tad.reference`), which consumes the same random numbers
(:func:`infsched.tad.streams.job_streams`): the two agree job by job.
"""

from __future__ import annotations

from numba import njit

from infsched.tad.choice import choose_class


@njit(cache=True, _nrt=False)
def run_det(arr_t, u_pol, u_srv, m,
            # system
            inv_mu, sizes, starts, n_total,
            # state (mutated)
            free_at, stk, stn, fq_t, fq_s, fq_head, fq_cnt, istate, delta, mind,
            # policy tables, one row per phase
            code, jiq, lenient, cum_p, pos, neg, proper, lo, hi, pick, ntup, d,
            ntol, ptol, ph_end,
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
        # 2. choose a class (the policy's uniform is this job's own: nothing to advance)
        i, _ = choose_class(code, lenient, p, dl, stn, sizes, n_total, cum_p, d, ntol, ptol,
                            pos, neg, proper, lo, hi, pick, ntup, u_pol, j)
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
