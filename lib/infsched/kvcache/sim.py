"""Continuous-time batch simulation for the real-data experiments (Section 5.2; spec §3, §6).

Requests arrive in seconds. The worker runs one batch per *round*; a round's length in seconds
comes from a pluggable batch-time model (:class:`~infsched.kvcache.timing.BatchTimeModel`). At the
start of a round every request that has arrived joins the waiting queue, the policy admits new
prompts, the batch runs (each running request advances one token; a new prompt produces its first
token) and the clock moves on by the batch's time. A request admitted in round ``p`` completes at
the end of round ``p + o − 1``; its latency is that clock minus its arrival. With nothing running
or waiting the clock jumps to the next arrival.

Memory follows the model's convention in rounds: a request started in round ``p`` holds
``s + (r + 1 − p)`` tokens after round ``r``. Policies:

- ``"mc-sf"`` and ``"mc-benchmark"``: Algorithms 1 and 2, admitting against the memory of every
  future round (:class:`~infsched.kvcache.policies.MemoryLedger`); never evict.
- ``"alpha"``: α-protection greedy. If the running requests would hold more than ``M`` after this
  round, all of them are cleared (progress lost, back to the queue at their arrival position);
  then new prompts are admitted first come first served while the memory after the round stays
  within ``(1 − α)·M``, stopping at the first that does not fit.
- ``"alpha-beta"``: α-protection β-clearing. On overflow each running request is cleared
  independently with probability ``β`` (one pass per round, our reading; spec §3.4); if memory
  still exceeds ``M`` the round stalls: nothing progresses and it costs an empty batch's time.
  The clearing draws come from their own generator, so the workload is the same for every policy.

A run that evicts more than ``max_evictions_per_request · n`` times, or runs ``max_rounds``
rounds, stops and reports ``terminated=False`` (small α can cycle forever; spec §3.3).

The loop below is the readable statement of these rules and the reference; by default
:func:`simulate` runs the same loop compiled with numba (:mod:`infsched.kvcache.engine`), which
the tests hold to identical results.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from infsched.errors import config_error, one_of, require
from infsched.kvcache import engine as _engine
from infsched.kvcache.policies import MemoryLedger
from infsched.kvcache.timing import BatchTimeModel
from infsched.limits import check_memory, warn_long

__all__ = ["POLICIES", "ENGINES", "SimConfig", "SimResult", "simulate"]

POLICIES = ("mc-sf", "mc-benchmark", "alpha", "alpha-beta")


@dataclass(frozen=True)
class SimConfig:
    """A policy and its parameters. ``alpha`` (protected fraction of ``M``) is used by
    ``"alpha"`` and ``"alpha-beta"``, ``beta`` (clearing probability) by ``"alpha-beta"``."""

    policy: str = "mc-sf"
    alpha: float = 0.0
    beta: float = 0.0
    max_evictions_per_request: int = 50
    max_rounds: int = 10_000_000

    def __post_init__(self) -> None:
        one_of("policy", self.policy, POLICIES)
        if self.policy in ("alpha", "alpha-beta"):
            require(isinstance(self.alpha, (int, float)) and 0 < self.alpha < 1, "alpha",
                    self.alpha, "must be a number in (0, 1) (the protected fraction of M)")
        if self.policy == "alpha-beta":
            require(isinstance(self.beta, (int, float)) and 0 < self.beta < 1, "beta", self.beta,
                    "must be a number in (0, 1) (the clearing probability; 1 is 'alpha')")
        require(isinstance(self.max_evictions_per_request, int)
                and self.max_evictions_per_request >= 1, "max_evictions_per_request",
                self.max_evictions_per_request, "must be a positive integer")
        require(isinstance(self.max_rounds, int) and self.max_rounds >= 1, "max_rounds",
                self.max_rounds, "must be a positive integer")

    @property
    def label(self) -> str:
        if self.policy == "alpha":
            return f"α={self.alpha:g}"
        if self.policy == "alpha-beta":
            return f"α={self.alpha:g}, β={self.beta:g}"
        return {"mc-sf": "MC-SF", "mc-benchmark": "MC-Benchmark"}[self.policy]


@dataclass(frozen=True, eq=False)
class SimResult:
    """``latency`` per request (s; NaN if the run stopped first), ``completion`` (s), the
    ``rounds`` run, ``evictions`` and ``stalls``, ``terminated``, and the memory after each
    round (``memory``, tokens) with the clock at its end (``clock``, s) and the number of
    requests left waiting (``queued``)."""

    config: SimConfig
    latency: np.ndarray
    completion: np.ndarray
    rounds: int
    evictions: int
    stalls: int
    terminated: bool
    memory: np.ndarray
    clock: np.ndarray
    queued: np.ndarray

    @property
    def mean_latency(self) -> float:
        """Average end-to-end latency, TEL / n (s); NaN if the run did not terminate."""
        return float(np.mean(self.latency)) if self.terminated else float("nan")

    @property
    def peak_memory(self) -> int:
        return int(self.memory.max()) if self.memory.size else 0


def _check_requests(arrival, prompt, output, M):
    a = np.asarray(arrival, dtype=float)
    s = np.asarray(prompt, dtype=np.int64)
    o = np.asarray(output, dtype=np.int64)
    require(a.ndim == 1 and a.shape == s.shape == o.shape, "arrival/prompt/output",
            (a.shape, s.shape, o.shape), "must be 1-D arrays of the same length")
    require(a.size >= 1, "arrival/prompt/output", "[]", "must hold at least one request")
    for name, x, ok, what in (("arrival", a, np.isfinite(a) & (a >= 0), "a finite time >= 0 (s)"),
                              ("prompt", s, s >= 1, ">= 1 token"),
                              ("output", o, o >= 1, ">= 1 token")):
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise config_error(f"{name}[{i}]", x[i].item(), f"must be {what}")
    require(isinstance(M, (int, np.integer)) and M >= 2, "M", M, "must be an integer >= 2")
    big = np.flatnonzero(s + o > M)
    require(big.size == 0, "prompt + output", f"{int((s + o)[big[0]])} at request {int(big[0])}"
            if big.size else "", f"must be <= M = {M}: a request must fit in memory on its own")
    return a, s, o


ENGINES = ("numba", "python")
#: rounds and requests per second of one core, on the fast side of what the numba engine ran
#: here (7-10 M rounds/s for two long requests; 0.9-1.5 M requests/s at Table 1's setting), so
#: that the time a long run is announced to take is a lower bound
ROUNDS_PER_SECOND, REQUESTS_PER_SECOND = 2e7, 3e6


def simulate(arrival, prompt, output, M: int, config: SimConfig,
             timing: BatchTimeModel | None = None,
             clearing_rng: np.random.Generator | None = None, *,
             engine: str = "numba") -> SimResult:
    """Run one policy over requests given by arrival times (s), prompt and output lengths.

    ``engine="numba"`` runs the compiled loop of :mod:`infsched.kvcache.engine`;
    ``engine="python"`` the readable loop below, kept as the reference it is tested against
    (identical results, 50-100 times slower)."""
    require(isinstance(config, SimConfig), "config", type(config).__name__, "must be a SimConfig")
    timing = BatchTimeModel() if timing is None else timing
    require(isinstance(timing, BatchTimeModel), "timing", type(timing).__name__,
            "must be a BatchTimeModel")
    one_of("engine", engine, ENGINES)
    a, s, o = _check_requests(arrival, prompt, output, M)
    if config.policy == "alpha-beta":
        require(isinstance(clearing_rng, np.random.Generator), "clearing_rng",
                type(clearing_rng).__name__, "must be a numpy Generator for 'alpha-beta'")
    n = a.size
    if n:  # the engine's ledger of memory freed per future round reaches the last request's
        # end, max(a + o) at least (8 bytes a round), and it logs memory, clock and queue for
        # every round it runs (24 bytes a round, up to max_rounds)
        ends = int((a + o).max())
        check_memory("output", int(o.max()), 8.0 * ends + 24.0 * min(ends, int(config.max_rounds)),
                     f"a run whose requests end in round {ends} or later")
        rounds = min(ends, int(config.max_rounds))  # a lower bound (issue 21): see ROUNDS_PER_SECOND
        warn_long(f"simulating {n} requests over {rounds} rounds or more (output up to "
                  f"{int(o.max())} tokens)", rounds / ROUNDS_PER_SECOND + n / REQUESTS_PER_SECOND)
    order = np.lexsort((np.arange(n), a))
    if engine == "numba":
        rng = clearing_rng if clearing_rng is not None else np.random.default_rng(0)
        comp, rounds, ev, st, term, mem, clk, q = _engine.run(
            order.astype(np.int64), a, s, o, int(M), _engine.POLICY_CODES[config.policy],
            float(config.alpha), float(config.beta),
            int(config.max_evictions_per_request * n), int(config.max_rounds),
            float(timing.kappa), float(timing.floor_ms), float(timing.intercept_ms),
            float(timing.per_token_ms), float(timing.per_kv_token_ms),
            float(timing.prefill_sq_ms), rng)
        return SimResult(config, comp - a, comp, int(rounds), int(ev), int(st), bool(term),
                         mem, clk, q)
    ledger_policy = config.policy in ("mc-sf", "mc-benchmark")
    key = o if config.policy == "mc-sf" else np.zeros(n, dtype=np.int64)
    ledger = MemoryLedger(M) if ledger_policy else None
    cap = (1.0 - config.alpha) * M

    start = np.full(n, -1, dtype=np.int64)           # round the current attempt started
    progress = np.zeros(n, dtype=np.int64)           # tokens produced in the current attempt
    completion = np.full(n, np.nan)
    active = np.zeros(0, dtype=np.int64)
    waiting: list[tuple[float, float, int]] = []
    mem_log: list[int] = []
    clock_log: list[float] = []
    queue_log: list[int] = []
    nxt, done, r, clock = 0, 0, 0, 0.0
    evictions = stalls = 0
    max_evictions = config.max_evictions_per_request * n
    terminated = True
    while done < n:
        if r >= config.max_rounds or evictions > max_evictions:
            terminated = False
            break
        while nxt < n and a[order[nxt]] <= clock:
            i = int(order[nxt])
            heapq.heappush(waiting, (float(key[i]), float(a[i]), i))
            nxt += 1
        if active.size == 0 and not waiting:
            clock = float(a[order[nxt]])             # idle: jump to the next arrival
            continue
        admitted: list[int] = []
        stalled = False
        if ledger_policy:
            while waiting:
                _, _, i = waiting[0]
                if not ledger.fits(r, int(s[i]), int(o[i])):
                    break
                heapq.heappop(waiting)
                ledger.add(r, int(s[i]), int(o[i]))
                admitted.append(i)
        else:
            need = int(np.sum(s[active] + r + 1 - start[active])) if active.size else 0
            if need > M:
                if config.policy == "alpha":
                    cleared = active
                else:
                    cleared = active[clearing_rng.random(active.size) < config.beta]
                for i in cleared.tolist():
                    heapq.heappush(waiting, (0.0, float(a[i]), i))
                evictions += cleared.size
                progress[cleared] = 0
                start[cleared] = -1
                active = np.setdiff1d(active, cleared, assume_unique=True)
                need = int(np.sum(s[active] + r + 1 - start[active])) if active.size else 0
                stalled = need > M
            while waiting and not stalled:
                _, _, i = waiting[0]
                if need + s[i] + 1 > cap:
                    break
                heapq.heappop(waiting)
                need += int(s[i]) + 1
                admitted.append(i)
        if stalled:
            stalls += 1
            clock += timing.empty_batch_seconds
            mem_log.append(int(np.sum(s[active] + progress[active])))
            clock_log.append(clock)
            queue_log.append(len(waiting))
            r += 1
            continue
        new = np.asarray(admitted, dtype=np.int64)
        start[new] = r
        decode = active
        dt = timing.seconds(int(decode.size), float(np.sum(s[decode] + progress[decode])),
                            float(np.sum(s[new])), float(np.sum(s[new].astype(float) ** 2)))
        active = np.concatenate([active, new])
        progress[active] += 1
        clock += dt
        finished = active[progress[active] >= o[active]]
        completion[finished] = clock
        done += finished.size
        mem_log.append(int(np.sum(s[active] + progress[active])))
        clock_log.append(clock)
        queue_log.append(len(waiting))
        active = active[progress[active] < o[active]]
        r += 1
    return SimResult(config, completion - a, completion, r, evictions, stalls, terminated,
                     np.asarray(mem_log, dtype=np.int64), np.asarray(clock_log),
                     np.asarray(queue_log, dtype=np.int64))
