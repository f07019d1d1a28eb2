"""Memory-constrained admission in rounds: MC-SF (Algorithm 1) and MC-Benchmark (Algorithm 2).

At every round ``t`` both scan the waiting requests in a fixed order, shortest output first
(MC-SF) or earliest arrival first (MC-Benchmark, FCFS as in vLLM), and admit the longest prefix
of that order whose memory fits at every future round, stopping at the first request that does
not fit (eq. 6; head-of-line blocking for MC-Benchmark). Started requests are never evicted.

The paper checks inequality (5) only at the completion times of the running and admitted
requests, where memory peaks. We keep the committed memory of every future round in an array
(:class:`MemoryLedger`) and check a request against all of the rounds it would occupy: the same
test, exact, in ``O(o_i)`` per candidate. Ties in the order go to the earlier arrival, then to the
lower index (the paper does not say).
"""

from __future__ import annotations

import heapq

import numpy as np

from infsched.errors import one_of
from infsched.kvcache.model import Instance
from infsched.limits import check_memory

__all__ = ["ORDERS", "MemoryLedger", "schedule_rounds", "mc_sf", "mc_benchmark"]

#: The scan orders: ``"shortest"`` (MC-SF, by o_i) and ``"fcfs"`` (MC-Benchmark, by a_i).
ORDERS = ("shortest", "fcfs")


class MemoryLedger:
    """Committed KV memory at every absolute round ``τ``, for requests already started.

    ``fits(t, s, o)`` says whether a request started at round ``t`` keeps memory ≤ ``M`` at every
    ``τ ∈ (t, t + o]`` (it adds ``s + τ − t`` there); ``add(t, s, o)`` commits it.
    """

    def __init__(self, M: int, size: int = 1024) -> None:
        self.M = int(M)
        self.mem = np.zeros(max(int(size), 16), dtype=np.int64)
        self._ramp = np.arange(1, 2, dtype=np.int64)

    def _ensure(self, end: int) -> None:
        if end >= self.mem.size:
            grown = np.zeros(max(2 * self.mem.size, end + 1), dtype=np.int64)
            grown[: self.mem.size] = self.mem
            self.mem = grown

    def _ramp_of(self, o: int) -> np.ndarray:
        if o > self._ramp.size:
            self._ramp = np.arange(1, max(o, 2 * self._ramp.size) + 1, dtype=np.int64)
        return self._ramp[:o]

    def fits(self, t: int, s: int, o: int) -> bool:
        self._ensure(t + o)
        return bool(np.max(self.mem[t + 1: t + o + 1] + self._ramp_of(o)) + s <= self.M)

    def add(self, t: int, s: int, o: int) -> None:
        self._ensure(t + o)
        self.mem[t + 1: t + o + 1] += s + self._ramp_of(o)


def schedule_rounds(inst: Instance, order: str = "shortest") -> np.ndarray:
    """Start round ``p_i`` of every request under the rule above, one batch per round.

    The first round is the first arrival (0 under Arrival Model 1); a request may start in the
    round it arrives. When nothing runs and nothing waits, the clock jumps to the next arrival.
    Every request is started: each fits in memory on its own (checked by :class:`Instance`), and
    the ledger empties when nothing runs.
    """
    one_of("order", order, ORDERS)
    n = inst.n
    starts = np.full(n, -1, dtype=np.int64)
    a, s, o = inst.arrival, inst.prompt, inst.output
    by_arrival = np.lexsort((np.arange(n), a))
    key = o if order == "shortest" else a
    size = int(a.max() + o.sum() + 1)
    # the ledger (8 bytes a round up to the last possible end) and the ramp of the longest output
    check_memory("output", int(o.max()), 8.0 * (size + int(o.max())),
                 f"the memory ledger of {size} rounds (a request of {int(o.max())} output tokens)")
    ledger = MemoryLedger(inst.M, size=size)
    waiting: list[tuple[int, int, int]] = []
    nxt, done, t = 0, 0, int(a[by_arrival[0]])
    last_end = -1                                        # last round any started request occupies
    while done < n:
        while nxt < n and a[by_arrival[nxt]] <= t:
            i = int(by_arrival[nxt])
            heapq.heappush(waiting, (int(key[i]), int(a[i]), i))
            nxt += 1
        while waiting:
            _, _, i = waiting[0]
            if not ledger.fits(t, int(s[i]), int(o[i])):
                break                                    # eq. (6): the largest feasible prefix
            heapq.heappop(waiting)
            ledger.add(t, int(s[i]), int(o[i]))
            starts[i] = t
            last_end = max(last_end, t + int(o[i]))
            done += 1
        if not waiting and nxt < n and last_end <= t:
            t = max(t + 1, int(a[by_arrival[nxt]]))      # idle: jump to the next arrival
        else:
            t += 1
    return starts


def mc_sf(inst: Instance) -> np.ndarray:
    """Memory-Constrained Shortest-First (Algorithm 1): start rounds of every request."""
    return schedule_rounds(inst, "shortest")


def mc_benchmark(inst: Instance) -> np.ndarray:
    """MC-Benchmark (Algorithm 2, App. C): FCFS with the same memory check and stop rule."""
    return schedule_rounds(inst, "fcfs")
