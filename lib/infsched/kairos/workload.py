"""The common random numbers of KAIROS's serving runs (spec §2.7) and the service times drawn
from them.

Per seed one vector of unit-rate exponential gaps, the sizes, one uniform and one standard
normal per query, all from generators spawned from one ``SeedSequence(seed)``. Arrivals at rate λ
are ``a_k = (E_1 + … + E_k)/λ · 1000`` ms, so feasibility is nearly monotone in λ and the
bisection (:func:`infsched.kairos.sim.allowable_throughput`) is stable. Service times
(``service=``): ``"mean"`` (actual = profile mean = prediction), ``"empirical"`` (one of the
artifact's 99 samples, picked by ``u_k``) or ``"gauss"`` (``mean · (1 + σ_rel z_k)``, truncated
at ``0.01 · mean``). Predictions are always the mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from infsched.errors import as_float, config_error, one_of, require
from infsched.kairos.batches import LOGNORMAL_MIX, BatchDist
from infsched.kairos.model import LatencyTable
from infsched.limits import check_memory

__all__ = ["SERVICES", "ARRIVALS", "Workload", "make_workload", "service_arrays", "check_rate"]

SERVICES = ("mean", "empirical", "gauss")
ARRIVALS = ("exponential", "upstream_int_poisson")


@dataclass(frozen=True, eq=False)
class Workload:
    """The common random numbers of one seed (spec §2.7): everything but the rate.

    ``cum_gaps`` are the partial sums ``E_1 + … + E_k`` of unit-rate exponential gaps,
    ``batches`` the query sizes, ``u`` uniforms on [0, 1)
    (which of the 99 samples, ``service="empirical"``) and ``z`` standard normals
    (``service="gauss"``), one per query. With ``arrivals="upstream_int_poisson"`` the gaps
    are the artifact's integer-millisecond ``Poisson(1000/λ)`` draws, which depend on λ: they are
    redrawn for each λ from the same child seed, so a given λ always sees the same gaps.
    """

    n: int
    seed: int
    dist: BatchDist
    arrivals: str
    cum_gaps: np.ndarray
    batches: np.ndarray
    u: np.ndarray
    z: np.ndarray
    arrival_seed: np.random.SeedSequence

    @property
    def batch_index(self) -> np.ndarray:
        """Index of each query's size in :data:`BATCHES`."""
        return self.batches // 10 - 1

    def arrival_times(self, rate: float) -> np.ndarray:
        """Arrival times (ms) at ``rate`` QPS: ``cumsum(E)/λ · 1000`` (or integer-ms gaps)."""
        check_rate(rate)
        if self.arrivals == "upstream_int_poisson":
            rng = np.random.default_rng(self.arrival_seed)
            return np.cumsum(rng.poisson(1000.0 / rate, self.n)).astype(float)
        return self.cum_gaps * (1000.0 / rate)


@lru_cache(maxsize=32)
def make_workload(n_queries: int = 2000, seed: int = 0, dist: BatchDist = LOGNORMAL_MIX,
                  arrivals: str = "exponential") -> Workload:
    """The CRN vectors of ``seed`` (cached: a bisection and a whole table share them)."""
    require(isinstance(n_queries, (int, np.integer)) and n_queries >= 100, "n_queries",
            n_queries, "must be an integer >= 100 (the 99 % criterion needs at least 100)")
    check_memory("n_queries", n_queries, 32.0 * n_queries,
                 f"the workload of {n_queries} queries (four 8-byte vectors each)")
    require(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", seed,
            "must be an integer >= 0")
    require(isinstance(dist, BatchDist), "dist", dist, "must be a BatchDist")
    one_of("arrivals", arrivals, ARRIVALS)
    ss_gap, ss_b, ss_u, ss_z = np.random.SeedSequence(int(seed)).spawn(4)
    # cumulative unit-rate gaps, so arrivals at rate λ are one multiplication away
    cum_gaps = np.cumsum(np.random.default_rng(ss_gap).exponential(1.0, n_queries))
    batches = dist.sample(np.random.default_rng(ss_b), n_queries)
    u = np.random.default_rng(ss_u).random(n_queries)
    z = np.random.default_rng(ss_z).standard_normal(n_queries)
    for arr in (cum_gaps, batches, u, z):
        arr.setflags(write=False)
    return Workload(int(n_queries), int(seed), dist, arrivals, cum_gaps, batches, u, z, ss_gap)


def service_arrays(table: LatencyTable, workload: Workload, service: str = "mean",
                   sigma_rel: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """``(predicted, actual)`` service times, each ``(4, N)`` ms: per type, per query.

    The prediction is the profile mean ``L̂`` (spec §2.1, rule 5); the actual time follows
    ``service`` (spec §2.7).
    """
    one_of("service", service, SERVICES)
    bi = workload.batch_index
    pred = np.ascontiguousarray(table.mean[:, bi])
    if service == "mean":
        return pred, pred
    if service == "empirical":
        pick = np.minimum((workload.u * 99).astype(np.int64), 98)
        return pred, np.ascontiguousarray(table.samples[:, bi, pick])
    require(np.isfinite(sigma_rel) and sigma_rel >= 0, "sigma_rel", sigma_rel,
            "must be a finite relative std >= 0")
    actual = np.maximum(pred * (1.0 + sigma_rel * workload.z[None, :]), 0.01 * pred)
    return pred, np.ascontiguousarray(actual)


def check_rate(rate) -> float:
    try:
        x = as_float(rate)
    except (TypeError, ValueError):
        raise config_error("rate", rate, "must be a number > 0 (QPS)") from None
    require(np.isfinite(x) and x > 0, "rate", rate, "must be a finite number > 0 (QPS)")
    return x
