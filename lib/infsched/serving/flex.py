"""Shepherd's FLEX (and FLEX without preemption) on the head-to-head's common ground.

FLEX's preemption (Shepherd Algorithms 1–2) is not (yet) a policy of the neutral engine; until it
is, the FLEX contender runs Shepherd's own engine (:mod:`infsched.shepherd.sim`, the Shepherd
chapter's) on exactly the neutral system's inputs: the same arrival times, deadline = arrival +
the SLO it plans for, ``K`` GPUs, and the zoo's ``l(m, b)`` table itself as the engine's latency
table (no linear fit, no exit-point slowdown, no preemption delay, no controller cost), one model
for the whole stream. Its outcome is returned as a :class:`~.sim.Result`, so it is judged by the
same code as every other contender.

The model is the one Shepherd's planner would provision for (HERD's per-GPU goodput rule,
:func:`infsched.shepherd.herd.stream_throughput`: ``T_m = b*/l(m, b*)`` with ``b*`` the largest
batch whose latency fits half the SLO): the most accurate model with ``K T_m >= λ``, else the one
with the largest ``K T_m``.
"""

from __future__ import annotations

import numpy as np

from ..errors import one_of
from .config import ServingConfig
from .sim import Result
from .zoo import Zoo

__all__ = ["planner_model", "simulate_flex", "FLEX_POLICIES"]

FLEX_POLICIES = ("flex", "flex-np")


def goodput_per_gpu(zoo: Zoo, slo_ms: float) -> np.ndarray:
    """HERD's ``T_m`` (queries/s per GPU) for every model of the zoo under ``slo_ms``."""
    lat = zoo.latency_ms
    b = np.arange(1, zoo.max_batch + 1)
    fits = lat <= slo_ms / 2.0
    bstar = np.where(fits, b, 0).max(axis=1)
    return np.where(bstar >= 1, 1000.0 * bstar / lat[np.arange(zoo.n_models), np.maximum(bstar, 1) - 1], 0.0)


def planner_model(zoo: Zoo, workers: int, slo_ms: float, rate_qps: float) -> int:
    """The model Shepherd's planner provisions the stream on (module doc)."""
    cap = workers * goodput_per_gpu(zoo, slo_ms)
    ok = np.flatnonzero(cap >= rate_qps)
    if ok.size == 0:
        return int(np.argmax(cap))
    return int(ok[np.argmax(zoo.accuracy[ok])])


def simulate_flex(zoo: Zoo, workers: int, slo_ms: float, arrivals: np.ndarray, rate_qps: float,
                  policy: str = "flex") -> Result:
    """Run ``policy`` (``"flex"`` or ``"flex-np"``) on the arrivals (ms) with Shepherd's engine
    and the zoo's latency table; one :class:`~.sim.Result` (late or dropped queries included)."""
    from ..shepherd import sim as shp
    from ..shepherd.model import Requests

    one_of("policy", policy, FLEX_POLICIES)
    m = planner_model(zoo, workers, slo_ms, rate_qps)
    B = zoo.max_batch
    L = np.zeros((1, B + 1))
    L[0, 1:] = zoo.latency_ms[m]
    arr = np.asarray(arrivals, dtype=float)
    req = Requests.with_slo(arr, np.zeros(arr.size, np.int64), slo_ms)
    rel_t, rel_i = shp.controller_release(req, L, 0.0)
    u = shp.delay_uniforms(req.n, 0, "none")
    comp, rb, bg, bm, bs, bst, ben, bpre = shp._engine(
        shp.POLICIES.index(policy), rel_t, rel_i, req.deadline, req.model, req.n, 1, int(workers),
        L, B, float(shp.LAMBDA), False, shp._DELAY["none"], np.ones(1), u, False)
    served = ~np.isnan(comp)
    rbi = np.where(served, rb, 0)
    start = np.where(served, bst[rbi], arr)
    bsize = np.where(served, bs[rbi], 0).astype(np.int16)
    model = np.where(served, m, -1).astype(np.int16)
    cfg = ServingConfig(zoo, workers=workers, slo_ms=slo_ms, policy="fcfs", model=zoo.names[m],
                        max_batch=B)
    return Result(cfg, arr, start, comp, model, bsize, int((~bpre).sum()))
