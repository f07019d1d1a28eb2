"""FLEX and FLEX-NP (Shepherd §5.2, Algorithms 1-2; spec shepherd §2.2) written for reading, not
speed: the check on :func:`.engine.run_flex` for what Shepherd's own engines do not cover, the
load monitor (issue 33: the model per load level, read when a batch forms) and the overheads.

Plain Python lists and a scan for the next completion, independent of the compiled loop's
arrays, binary searches and heap. BATCHGEN is the definition itself: over S = merge(queue, the
running batch when preempting) in deadline order, the batch headed by rank ``i`` has
``min(|S| - i, cap, h(i))`` queries, ``h(i)`` the largest ``k`` with ``now + l(m, k) <= d_i``;
the largest such batch, headed by the smallest rank. Event rules as the engine's docstring
states them (a completion before an arrival at the same instant; all queries arriving at one
instant form one event). Ties between completions are not resolved the engine's way (its heap
order), so the tests feed it inputs without them (random service times).
"""

from __future__ import annotations

import numpy as np

from ..profiles import QUANTILE_LEVELS
from .config import ServingConfig
from .sim import Result

__all__ = ["simulate_flex_reference"]


def _batchgen(S: list[int], now: float, lrow: np.ndarray, arr: np.ndarray, slo: float,
              cap: int) -> tuple[int, int]:
    """BATCHGEN by its definition (module doc): ``(V, first rank)``, ``(0, 0)`` if none; every
    rank's batch is computed (no search), ``h`` as the count of batch sizes that fit (``l(m, k)``
    rises in ``k``)."""
    if not S:
        return 0, 0
    s = len(S)
    h = np.sum(now + lrow[None, :] <= arr[np.asarray(S)][:, None] + slo, axis=1)
    size = np.minimum(np.minimum(s - np.arange(s), cap), h)
    at = int(np.argmax(size))  # the first rank of the largest
    return int(size[at]), at if size[at] > 0 else 0


def simulate_flex_reference(config: ServingConfig, arr: np.ndarray, svc: np.ndarray) -> Result:
    """FLEX (``config.policy`` ``"flex"`` or ``"flex-np"``) on ``arr`` with the service draws
    ``svc`` of :func:`.sim.draws`."""
    cfg, zoo = config, config.zoo
    lat, slo, K, n = zoo.latency_ms, cfg.slo_ms, cfg.workers, arr.size
    preempts = cfg.policy == "flex"
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    model = np.full(n, -1, np.int16)
    bsize = np.zeros(n, np.int32)
    wstat = np.zeros((K, 3), np.int64)
    queue: list[int] = []             # deadline order = arrival order (one SLO)
    running: list[list[int]] = [[] for _ in range(K)]
    end = [np.inf] * K
    busy = [False] * K
    prev = [-1] * K
    nb = 0

    def plan(now: float, seen: int) -> tuple[int, int]:
        """The model and cap in force: the level of the rate over the last window (the
        arrivals seen so far), or the told model."""
        if cfg.plan_loads is None:
            return cfg.model_index, cfg.max_batch
        win = cfg.monitor_window_ms
        est = (seen - int(np.searchsorted(arr[:seen], now - win, side="right"))) / (win / 1000.0)
        p = min(int(np.searchsorted(cfg.plan_loads, est, side="left")), len(cfg.plan_loads) - 1)
        m, cap = cfg.plan[p]
        return zoo.names.index(m), cap

    def multiplier(k: int, m: int, b: int) -> float:
        if cfg.service == "exponential":
            return float(svc[k % svc.size])
        if cfg.service == "jitter":
            q = zoo.spread[m, min(b, zoo.max_batch) - 1]
            return float(np.interp(svc[k % svc.size], QUANTILE_LEVELS, q))
        return 1.0

    def drop(now: float, m: int) -> None:
        while queue and arr[queue[0]] + slo < now + lat[m, 0]:
            j = queue.pop(0)
            start[j], finish[j], model[j] = now, np.nan, -1

    def begin(v: int, batch: list[int], m: int, now: float, preempting: bool) -> None:
        nonlocal nb
        t0 = now + cfg.dispatch_ms
        extra = cfg.switch_ms if prev[v] not in (-1, m) else 0.0
        if preempting:
            extra += cfg.preempt_ms
        e = t0 + lat[m, len(batch) - 1] * multiplier(nb, m, len(batch)) + extra
        nb += 1
        prev[v] = m
        for j in batch:
            start[j], finish[j], model[j], bsize[j] = t0, e, m, len(batch)
        running[v], end[v], busy[v] = list(batch), e, True

    i = 0
    while i < n or any(busy):
        w = min(range(K), key=lambda v: end[v])
        if busy[w] and (i >= n or end[w] <= arr[i]):  # completion: the freed worker runs BATCHGEN
            now = end[w]
            wstat[w, 0] += len(running[w])
            running[w], end[w], busy[w] = [], np.inf, False
            m, cap = plan(now, i)
            drop(now, m)
            V, at = _batchgen(queue, now, lat[m], arr, slo, cap)
            if V > 0:
                batch = queue[at:at + V]
                del queue[at:at + V]
                begin(w, batch, m, now, False)
            continue
        now = arr[i]  # an arrival event: every query arriving now
        while i < n and arr[i] == now:
            queue.append(i)
            i += 1
        m, cap = plan(now, i)
        for _ in range(K + 1):
            cands = [v for v in range(K) if busy[v]] if preempts else []
            if not all(busy):
                drop(now, m)
                for v in range(K):
                    if busy[v]:
                        continue
                    V, at = _batchgen(queue, now, lat[m], arr, slo, cap)
                    if V == 0:
                        break
                    batch = queue[at:at + V]
                    del queue[at:at + V]
                    begin(v, batch, m, now, False)
            if not cands:
                break
            drop(now, m)
            ub, _ = _batchgen(queue, now, lat[m], arr, slo, cap)
            lam = cfg.lam
            order = sorted((v for v in cands if lam * len(running[v]) <= cap
                            and lam * len(running[v]) <= ub + len(running[v])),
                           key=lambda v: (len(running[v]), v))
            done = False
            for v in order:
                kc = len(running[v])
                S = sorted(queue + running[v])
                V, at = _batchgen(S, now, lat[m], arr, slo, cap)
                if V > 0 and V >= lam * kc:  # Algorithm 1 line 16: preempt v
                    batch = S[at:at + V]
                    taken = set(batch)
                    queue[:] = [q for q in queue if q not in taken]
                    for r in running[v]:
                        if r in taken:
                            continue
                        if arr[r] + slo >= now + lat[m, 0]:  # can still make it alone: back in line
                            queue.append(r)
                        else:
                            start[r], finish[r], model[r] = now, np.nan, -1
                    queue.sort()
                    wstat[v, 1] += kc
                    wstat[v, 2] += 1
                    begin(v, batch, m, now, True)
                    done = True
                    break
            if not done:
                break
    for j in queue:
        finish[j], model[j] = np.nan, -1
    return Result(cfg, arr, start, finish, model, bsize, nb, 0.0, 0.0, wstat)
