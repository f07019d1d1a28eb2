"""The model of Section 2: requests, KV-cache memory, schedules and total end-to-end latency.

One worker with KV-cache limit ``M`` (tokens) runs one batch per time unit. Request ``i`` arrives
at ``a_i`` with a prompt of ``s_i`` tokens and ``o_i`` output tokens, all known on arrival. Started
at round ``p_i ≥ a_i`` it runs in every batch until it completes at ``c_i = p_i + o_i``
(non-preemptive). Memory follows the convention of the paper's integer program (constraint 3):
the request holds ``s_i + (t − p_i)`` tokens at every integer time ``t ∈ {p_i + 1, …, p_i + o_i}``
and nothing otherwise, so a request finishing at ``c`` and one starting at ``c`` never overlap.

:func:`check_schedule` applies that one rule to any schedule, so every algorithm and the hindsight
optimum are checked the same way; :func:`total_latency` is the objective ``TEL = Σ_i (c_i − a_i)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infsched.errors import InfeasibleError, config_error, require
from infsched.limits import check_memory

__all__ = ["Instance", "ScheduleCheck", "memory_profile", "check_schedule", "total_latency"]


def _int_array(name: str, values, *, minimum: int) -> np.ndarray:
    # a bool is not a count: numpy would read [True] as [1] and the instance would run silently
    flags = values.dtype.kind == "b" if isinstance(values, np.ndarray) else \
        isinstance(values, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in values)
    require(not flags, name, values if np.size(values) <= 8 else "an array of bools",
            "must hold integers, not True/False")
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise config_error(name, values, "must be a sequence of integers") from None
    require(arr.ndim == 1, name, values, "must be one-dimensional")
    require(bool(np.all(np.isfinite(arr))) and bool(np.all(arr == np.round(arr))), name,
            values if arr.size <= 8 else f"array of {arr.size}", "must hold whole numbers")
    bad = np.flatnonzero(arr < minimum)
    if bad.size:
        i = int(bad[0])
        raise config_error(f"{name}[{i}]", int(arr[i]), f"must be >= {minimum}")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Instance:
    """``n`` requests for one worker with KV-cache limit ``M`` tokens (Section 2).

    ``arrival`` (rounds, ≥ 0), ``prompt`` (``s_i ≥ 0``; 0 only arises when another reading of
    the memory rule is written in this one, see ``experiments.READINGS``) and ``output`` (``o_i ≥ 1``) are integer
    arrays of equal length. Every request must fit on its own, ``s_i + o_i ≤ M``, or no schedule
    exists. Arrays are stored as read-only int64 copies.
    """

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    M: int

    def __post_init__(self) -> None:
        a = _int_array("arrival", self.arrival, minimum=0)
        s = _int_array("prompt", self.prompt, minimum=0)
        o = _int_array("output", self.output, minimum=1)
        require(a.size == s.size == o.size, "arrival/prompt/output", (a.size, s.size, o.size),
                "must have the same length n")
        require(a.size >= 1, "arrival/prompt/output", "[]", "must hold at least one request")
        require(isinstance(self.M, (int, np.integer)) and not isinstance(self.M, bool)
                and self.M >= 2, "M", self.M, "must be an integer >= 2 (tokens)")
        too_big = np.flatnonzero(s + o > self.M)
        if too_big.size:
            i = int(too_big[0])
            raise config_error(f"prompt[{i}] + output[{i}]", int(s[i] + o[i]),
                               f"must be <= M = {self.M}: a request must fit in memory on its own")
        for name, arr in (("arrival", a), ("prompt", s), ("output", o)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "M", int(self.M))

    @property
    def n(self) -> int:
        return int(self.arrival.size)

    @property
    def min_rounds(self) -> int:
        """A lower bound on the rounds of any schedule: every request runs ``o_i`` rounds after
        it arrives, so the last one ends no earlier than ``max_i(a_i + o_i)``."""
        return int((self.arrival + self.output).max())

    @classmethod
    def at_zero(cls, prompt, output, M: int) -> Instance:
        """Every request released at time 0 (the paper's Arrival Model 1)."""
        return cls(np.zeros(len(prompt), dtype=np.int64), prompt, output, M)


@dataclass(frozen=True)
class ScheduleCheck:
    """The verdict of :func:`check_schedule`: ``feasible`` with the first ``problem`` found
    (empty when feasible), the memory profile ``memory[t]`` for ``t = 0..horizon``, its
    ``peak``, and ``tel`` (total end-to-end latency; NaN if a start time is missing)."""

    feasible: bool
    problem: str
    memory: np.ndarray
    peak: int
    tel: float

    def require(self) -> ScheduleCheck:
        """Raise :class:`InfeasibleError` with the problem unless the schedule is feasible."""
        if not self.feasible:
            raise InfeasibleError(self.problem)
        return self


def _starts(inst: Instance, starts) -> np.ndarray:
    p = np.asarray(starts, dtype=float)
    require(p.shape == (inst.n,), "starts", p.shape, f"must hold one start time per request ({inst.n})")
    return p


def memory_profile(inst: Instance, starts) -> np.ndarray:
    """``mem[t] = Σ_i (s_i + t − p_i) · 1[p_i < t ≤ p_i + o_i]`` for ``t = 0..max_i(p_i + o_i)``
    (the left side of constraint 3). Start times must be whole numbers ≥ 0."""
    p = _starts(inst, starts)
    require(bool(np.all(np.isfinite(p))) and bool(np.all(p == np.round(p))) and bool(np.all(p >= 0)),
            "starts", "...", "must be whole numbers >= 0 for every request")
    p = p.astype(np.int64)
    horizon = int((p + inst.output).max()) if inst.n else 0
    check_memory("output", int(inst.output.max()), 24.0 * (horizon + 2),
                 f"the memory profile over {horizon} rounds (three int64 arrays per round)")
    # each request adds a ramp s+1, s+2, ..., s+o on (p, p+o]: a constant s and a linear part,
    # both laid down with first and second differences so the whole profile costs O(n + horizon)
    const = np.zeros(horizon + 2, dtype=np.int64)
    np.add.at(const, p + 1, inst.prompt)
    np.add.at(const, p + inst.output + 1, -inst.prompt)
    slope = np.zeros(horizon + 2, dtype=np.int64)
    np.add.at(slope, p + 1, 1)
    np.add.at(slope, p + inst.output + 1, -1)
    # the linear part at t is Σ (t − p_i) over running requests: cumulate the count, then again
    running = np.cumsum(slope)
    linear = np.cumsum(running)
    # subtract what the second cumsum keeps adding after a request ends: o_i at each later step
    tail = np.zeros(horizon + 2, dtype=np.int64)
    np.add.at(tail, p + inst.output + 1, inst.output)
    linear -= np.cumsum(tail)
    return (np.cumsum(const) + linear)[: horizon + 1]


def total_latency(inst: Instance, starts) -> float:
    """``TEL = Σ_i (p_i + o_i − a_i)`` in rounds (objective 1)."""
    p = _starts(inst, starts)
    return float(np.sum(p + inst.output - inst.arrival))


def check_schedule(inst: Instance, starts) -> ScheduleCheck:
    """Check a schedule given by its start times ``p_i`` (rounds).

    Feasible means: every request has a start time (no NaN: it is completed), none starts before
    it arrives, and the memory of :func:`memory_profile` never exceeds ``M``. The first violation
    found is named in ``problem``; call ``.require()`` to turn it into an error.
    """
    p = _starts(inst, starts)
    missing = np.flatnonzero(~np.isfinite(p))
    if missing.size:
        return ScheduleCheck(False, f"request {int(missing[0])} is never started "
                             f"({missing.size} of {inst.n} requests)", np.zeros(0, np.int64), 0,
                             float("nan"))
    require(bool(np.all(p == np.round(p))), "starts", "...", "must be whole numbers (rounds)")
    early = np.flatnonzero(p < inst.arrival)
    if early.size:
        i = int(early[0])
        return ScheduleCheck(False, f"request {i} starts at {int(p[i])}, before its arrival at "
                             f"{int(inst.arrival[i])}", np.zeros(0, np.int64), 0,
                             total_latency(inst, p))
    mem = memory_profile(inst, p)
    peak = int(mem.max()) if mem.size else 0
    over = np.flatnonzero(mem > inst.M)
    problem = "" if not over.size else (
        f"memory {int(mem[over[0]])} exceeds M = {inst.M} at t = {int(over[0])} "
        f"({over.size} rounds over)")
    return ScheduleCheck(not over.size, problem, mem, peak, total_latency(inst, p))
