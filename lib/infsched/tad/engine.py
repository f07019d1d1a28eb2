"""The state of one TAD engine run, carried across the compiled kernels' calls.

:class:`Engine` holds the servers' state for the kernel the service law needs (the Lindley
engine of :mod:`infsched.tad.lindley` for deterministic service, the Markov engines of
:mod:`infsched.tad.markov` for exponential service), the policy tables, Δ and the measurement
(per-batch sums for the batch-means interval, per-class counts). :mod:`infsched.tad.sim` builds
one per run and turns it into a :class:`~infsched.tad.sim.SimResult`.
"""

from __future__ import annotations

import numpy as np

from infsched.errors import ConfigError
from infsched.tad.lindley import run_det
from infsched.tad.markov import run_jump_chain, run_timed
from infsched.tad.model import SystemParams
from infsched.tad.policies import PolicyTable
from infsched.tad.streams import EventDraws

#: Batches for the batch-means confidence interval of the mean response.
N_BATCHES = 20


class Engine:
    """State of one run carried across kernel calls (arrays mutated in place by the kernels).

    It lays the policy tables of the run's phases out as arrays with one row per phase (TAD-OP's
    tuples padded to the longest list), chooses the type of Δ (exact int64 or float64, see
    :mod:`infsched.tad.policies`), and drives a kernel over blocks of draws until the run ends.
    """

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
        run_det(arr_t, u_pol, u_srv, m,
                self.inv_mu, self.sizes, self.starts, self.n,
                self.free_at, self.stk, self.stn, self.fq_t, self.fq_s, self.fq_head,
                self.fq_cnt, self.istate, self.delta, self.mind,
                self.code, self.jiq, self.lenient, self.cum_p, self.pos, self.neg,
                self.proper, self.lo, self.hi, self.pick, self.ntup, self.d,
                self.ntol, self.ptol, self.ph_end,
                t_cut, bscale, N_BATCHES, self.bsum, self.bcnt, self.counts,
                record, rec_dep, rec_cls)

    def run_chain(self, draws: EventDraws, lam_tot: float, n_target: int, j0: int, bar=None):
        """The stationary jump chain without recorded times (:func:`run_jump_chain`) to the end."""
        ist = self.istate
        while True:
            run_jump_chain(draws.u, self.mu, self.inv_mu, self.sizes, self.starts, self.n,
                           self.stn, self.nmulti, self.qm, self.cr, ist, self.chs,
                           self.delta, self.mind,
                           self.code, self.jiq, self.lenient, self.cum_p, self.cum_lo,
                           self.inv_p, self.pos, self.neg, self.proper, self.lo, self.hi,
                           self.pick, self.ntup, self.d,
                           self.ntol, self.ptol, lam_tot, n_target, j0, N_BATCHES,
                           self.bsum, self.bcnt, self.counts)
            if bar is not None:
                bar.n = int(ist[4])
                bar.refresh()
            if ist[7]:
                break
            draws.refill(int(ist[2]), 0)
            ist[2] = 0

    def run_exp(self, draws: EventDraws, rates, n_target, j0, by_time, bscale, record, rec,
                bar=None):
        """Run the Markov chain to the end, refilling the draws and the record buffers."""
        ist = self.istate
        rec_arr, rec_cls, rec_dep = rec
        parts_a, parts_c, parts_d = [], [], []
        while True:
            run_timed(draws.u, draws.e, draws.timed,
                      self.mu, self.inv_mu, self.sizes, self.starts, self.n,
                      self.q, self.stn, self.cr, ist, self.fst, self.delta, self.mind,
                      self.code, self.jiq, self.lenient, self.cum_p, self.pos, self.neg,
                      self.proper, self.lo, self.hi, self.pick, self.ntup, self.d, self.ntol,
                      self.ptol, self.ph_end, rates,
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
