"""A test oracle: the hindsight optimum of a tiny instance by depth-first search over start times.

Requests are placed one at a time (longest first, so memory conflicts prune early) at every start
time from their arrival up to ``horizon − o_i``; a branch is cut when its memory exceeds ``M`` or
when its latency so far plus the least the rest can add (``Σ o_j``) reaches the best found.
Exponential: for n ≤ 6 and short horizons only.
"""

from __future__ import annotations

import numpy as np

from infsched.kvcache.model import Instance


def exact_opt(inst: Instance, horizon: int) -> tuple[float, np.ndarray]:
    a, s, o, M = inst.arrival, inst.prompt, inst.output, inst.M
    order = np.argsort(-o, kind="stable")
    mem = np.zeros(horizon + 1, dtype=np.int64)
    starts = np.full(inst.n, -1, dtype=np.int64)
    rest = np.concatenate([np.cumsum(o[order][::-1])[::-1], [0]])
    best = [float("inf"), None]

    def place(k: int, cost: float) -> None:
        if cost + rest[k] >= best[0]:
            return
        if k == inst.n:
            best[0], best[1] = cost, starts.copy()
            return
        i = order[k]
        ramp = s[i] + np.arange(1, o[i] + 1)
        for p in range(a[i], horizon - o[i] + 1):
            if cost + (p + o[i] - a[i]) + rest[k + 1] >= best[0]:
                break                                   # later starts only cost more
            seg = mem[p + 1: p + o[i] + 1]
            if np.all(seg + ramp <= M):
                seg += ramp
                starts[i] = p
                place(k + 1, cost + p + o[i] - a[i])
                seg -= ramp
        starts[i] = -1

    place(0, 0.0)
    return best[0], best[1]
