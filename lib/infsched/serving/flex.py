"""Shepherd's planner on the head-to-head's common ground: which model FLEX serves the stream on.

FLEX and FLEX-NP themselves are policies of the neutral engine (``"flex"``, ``"flex-np"`` in
:data:`.policies.POLICIES`, BATCHGEN and the preemption rule in :mod:`.policies` and
:mod:`.engine`); the tests hold them to Shepherd's own engine on Shepherd's scenario.

The model is the one Shepherd's planner would provision for (HERD's per-GPU goodput rule,
:func:`infsched.shepherd.herd.stream_throughput`: ``T_m = b*/l(m, b*)`` with ``b*`` the largest
batch whose latency fits half the SLO): the most accurate model with ``K T_m >= λ``, else the one
with the largest ``K T_m``.
"""

from __future__ import annotations

import numpy as np

from .zoo import Zoo

__all__ = ["planner_model", "goodput_per_gpu"]


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
