"""The random numbers of the TAD engines, and the arrival times made from them.

DESIGN.md: ``numpy.random.Generator`` streams spawned from one ``SeedSequence(seed)``, drawn in
blocks, so that the same seed gives the same numbers whatever the block size or the machine.

- :func:`job_streams`: per job a unit exponential inter-arrival time, a unit exponential service
  draw, the policy's uniform and the server uniform (children 0-3 of the seed). The Lindley
  engine (:mod:`infsched.tad.lindley`) and the simpy reference (:mod:`infsched.tad.reference`)
  read these, so that the two agree job by job.
- :class:`EventDraws`: the Markov engines' two streams (children 4 and 5): uniforms, one per
  event plus those a policy or a random server needs, and unit exponential holding times.
- :func:`arrivals_const` / :func:`arrivals_phases`: arrival times from the inter-arrival draws,
  at a constant rate or a piecewise-constant one (spec §3.4).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Jobs per block of pre-drawn random numbers (Lindley engine); draws per block (Markov engine).
CHUNK = 1 << 18
#: Block of uniforms / holding times the Markov engine draws at a time (fits in the L2 cache).
BLOCK = 1 << 14


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


def arrival_draws(seed, n_jobs: int, chunk: int = CHUNK):
    """Only the inter-arrival stream of :func:`job_streams` (same numbers, same chunks)."""
    g_arr = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(4)[0]))
    done = 0
    while done < n_jobs:
        m = min(chunk, n_jobs - done)
        yield g_arr.standard_exponential(m)
        done += m


class EventDraws:
    """The Markov engine's two streams, in blocks: ``u`` uniforms and ``e`` unit exponentials.

    The engine consumes a block from index ``iu`` / ``ie`` on; :meth:`refill` keeps the unused
    tail in order and draws the rest, so the numbers consumed do not depend on the block size.
    Without ``timed`` (the jump chain) no holding time is drawn.
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
def arrivals_const(t, e, inv_rate, out):
    """out[j] = arrival times t + Σ e·inv_rate, added one at a time (as simpy's clock does)."""
    for j in range(e.shape[0]):
        t = t + e[j] * inv_rate
        out[j] = t
    return t


@njit(cache=True)
def arrivals_phases(t, p, e, rates, inv_rates, ends, out):
    """Arrival times of a Poisson process with piecewise-constant rate (exact time change).

    A unit-exponential draw is spent at rate ``rates[p]`` until the phase ends; what is left
    carries into the next phase. Returns (t, p, m): m arrivals fall before ``ends[-1]``.
    Within a phase the arithmetic is that of :func:`arrivals_const` (t + e·(1/rate)).
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
