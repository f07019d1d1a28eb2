"""The policy's choice of a class, compiled once for every engine (spec §3).

:func:`choose_class` is the numba face of each policy's ``choose`` in
:mod:`infsched.tad.policies`; the Lindley engine (:mod:`infsched.tad.lindley`) and both Markov
engines (:mod:`infsched.tad.markov`) inline it, so the three cannot drift apart. It reads a
:class:`~infsched.tad.policies.PolicyTable` laid out as arrays with one row per phase ``p``
(:class:`infsched.tad.engine.Engine`), the idle counts ``stn`` and the accuracy surplus Δ, and
spends the uniform ``ub[ix]`` only when the rule needs it: it returns whether it did, so that
the caller's stream advances exactly as far.

The kernels that inline it are compiled with ``_nrt=False`` (no reference counting): with it,
numba counts references to every array argument of the inlined call on every arrival, which
made the jump chain 2.5 times slower. The kernels allocate nothing, so they need no counting.
"""

from __future__ import annotations

from numba import njit

from infsched.tad.policies import JIQ_FAST, R_JIQ, RANDOM, TAD_CODE, TADOP_CODE


@njit(inline="always")
def tadop_rule(p, above, stn, sizes, lenient, pos, neg, proper, lo, hi, pick, ntup):
    """TAD-OP's class (Algorithm 2; ``TADOP.choose``) in phase ``p``, or −1 when no server is
    idle (the caller then draws a class uniformly). ``above``: Δ > 0.

    The first routable tuple in the sorted list: a proper pair needs an idle server in both
    classes (only in the one Δ selects when ``lenient``) and routes to lo if Δ > 0 else hi; a
    singleton or shuffle pair needs an idle server in every q_k > 0 class and a busy one in
    every q_k < 0 class, and routes to its ``pick``. Else the most accurate class with an idle
    server.
    """
    K = stn.shape[0]
    for tt in range(ntup[p]):
        if proper[p, tt]:
            l = lo[p, tt]
            h = hi[p, tt]
            sel = l if above else h
            if lenient:
                ok = stn[sel] > 0
            else:
                ok = stn[l] > 0 and stn[h] > 0
            if ok:
                return sel
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
                return pick[p, tt]
    for k in range(K - 1, -1, -1):
        if stn[k] > 0:
            return k
    return -1


@njit(inline="always")
def choose_class(code, lenient, p, dl, stn, sizes, n_total, cum_p, d, ntol, ptol,
                 pos, neg, proper, lo, hi, pick, ntup, ub, ix):
    """The class an arriving job is sent to, and whether the uniform ``ub[ix]`` was spent.

    Random-p and R-JIQ: the class drawn from ``cum_p``. TAD: the fastest class of
    I = {k : Δ + d_k ≥ 0} with an idle server, else one uniform in I. TAD-OP:
    :func:`tadop_rule`, else a class uniform in {1..K}. JIQ-fast / JIQ-accurate: the fastest /
    most accurate class with an idle server, else the class of a uniformly random server.
    ``ntol`` and ``ptol`` are the tolerances of "Δ + d_k ≥ 0" and "Δ > 0" (0 for exact Δ).
    """
    K = stn.shape[0]
    i = -1
    used = 0
    if code == R_JIQ or code == RANDOM:
        used = 1
        i = 0           # the first k with u < cum_p[k] (cum_p increases): count, no branches
        for k in range(K - 1):
            i += ub[ix] >= cum_p[p, k]
    elif code == TADOP_CODE:
        i = tadop_rule(p, dl > ptol, stn, sizes, lenient, pos, neg, proper, lo, hi, pick, ntup)
        if i < 0:
            used = 1
            i = min(int(ub[ix] * K), K - 1)
    elif code == TAD_CODE:
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
                r = min(int(ub[ix] * nallowed), nallowed - 1)
                for k in range(K):
                    if dl + d[p, k] >= ntol:
                        if r == 0:
                            i = k
                            break
                        r -= 1
    else:   # JIQ baselines
        if code == JIQ_FAST:
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
            y = min(int(ub[ix] * n_total), n_total - 1)
            c = 0
            i = K - 1
            for k in range(K):
                c += sizes[k]
                if y < c:
                    i = k
                    break
    return i, used
