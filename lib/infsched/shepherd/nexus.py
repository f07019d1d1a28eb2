"""The Nexus-like baseline of Shepherd (Zhang et al., NSDI'23, §7): a periodic, per-stream planner
(Nexus, Shen et al., SOSP'19, "squishy bin packing") and its runtime (spec §2.5).

**Plan** (:func:`plan`, spec §2.5 steps 1–4). A *session* is a (model, SLO) pair; with one SLO per
model there is one session per model. Rates are in req/s, latencies in ms.

1. Saturated allocation: ``b_k = max{b ≤ b_max : 2 ℓ_k(b) ≤ L_k}`` (the worst-case-latency rule: a
   request arriving just after a batch starts waits one batch and rides the next),
   ``T_k = b_k / ℓ_k(b_k)``, ``n_k = ⌊r_k / T_k⌋`` dedicated GPUs, and the residual
   ``r'_k = r_k − n_k T_k``.
   A session with ``2 ℓ_k(1) > L_k`` is unservable and dropped.
2. Residual node: ``b'_k = max{b ≤ b_max : b / r'_k + ℓ_k(b) ≤ L_k}``, duty cycle
   ``d_k = b'_k / r'_k``, occupancy ``o_k = ℓ_k(b'_k) / d_k``.
3. Squishy bin packing: residual nodes in order of occupancy, descending, each merged into the
   existing node that gives the highest resulting occupancy among the feasible merges; a merged
   node's duty cycle is ``d = min`` of the duty cycles, every session's batch is re-sized to
   ``b_s = ⌈r'_s d⌉``, and the merge is feasible iff ``Σ_s ℓ_s(b_s) ≤ d`` and
   ``d + ℓ_s(b_s) ≤ L_s`` for every session. No feasible merge: the node gets a GPU of its own.
4. GPUs needed = ``Σ n_k + #nodes``. If that exceeds ``n_gpus``, every rate is scaled by a common
   ``s ∈ (0, 1]`` and the largest ``s`` that fits is found by bisection (the paper: Nexus "can only
   make its planning decision assuming a specific arrival rate that it can completely satisfy").

**Runtime** (:func:`simulate`, spec §2.5). Each arriving request of model ``k`` goes to one of the
GPUs serving ``k``, chosen by smooth weighted round-robin (nginx's SWRR) with the planned rates as
weights; requests of a model the plan does not serve are not served. Each GPU keeps one FIFO queue
per session (FIFO is earliest-deadline-first: a session has one SLO). A *dedicated* GPU is
work-conserving: whenever it is free and its queue is not empty it starts a batch of ≤ ``b_k``.
A *residual* node starts cycle ``c`` at ``c·d`` and runs one batch of ≤ ``b_s`` per session,
back to back in the plan's order (an empty queue costs nothing), then idles until ``(c+1)·d``.

Early drop at batch formation (Nexus SOSP'19's "early drop"; the exact rule is [ours], a sliding
window): with ``n`` requests queued at time ``t`` and batch limit ``B``, take ``b = min(B, n)``;
if the head request's deadline is ``≥ t + ℓ(b)`` the window ``[head, head + b)`` is the batch
(deadlines are non-decreasing in a session, so all of it is on time), otherwise the head is
dropped and the window slides on. Hence **every served request meets its deadline**.

[ours] choices, each labelled where it is made: the residual batch is capped at ``b_max`` and is
at least one request (a residual so small that one request does not arrive within
``L − ℓ(1)`` gets ``d = L − ℓ(1)``); the session order inside a residual node is the merge order;
cycles start at ``c·d`` from ``t = 0``; the rate scale is bisected to a relative precision of
2⁻⁴⁰ and, if not even a vanishing rate fits in ``n_gpus``, the sessions of the lowest saturated
throughput ``T_k`` (the costliest per request) are dropped first; the plan covers one window
(:func:`plan_for_peak`), re-planning is not simulated. Nexus has no central scheduler, so no
controller-capacity model applies (spec §2.5).

The fast engine (:func:`simulate`) runs every GPU on its own (they are independent given the plan
and the routing) in numba; :func:`nexus_reference` is a simpy model that reads like the text
above, and the tests hold the two to the same completions and batches.

Why one module of about 670 lines: the plan (about 250 lines) and its runtime (the engine and its
simpy reference, about 340) are one baseline, and both runtimes must read the plan's routes and
residual cycles the same way as the plan writes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numba import njit

from infsched.des import timeout_at
from infsched.errors import config_error, require
from infsched.shepherd.model import B_MAX, ModelSet, Requests

__all__ = ["GpuPlan", "NexusPlan", "NexusResult", "plan", "plan_for_peak", "peak_rates",
           "simulate", "nexus_reference", "SERVED", "DROPPED", "UNROUTED"]

#: request status codes of :class:`NexusResult`
SERVED, DROPPED, UNROUTED = 0, 1, 2
DEDICATED, RESIDUAL = "dedicated", "residual"
#: the smallest rate scale tried before sessions are dropped for want of GPUs [ours]
_S_MIN = 1e-6
_BISECT_STEPS = 40


# ----------------------------------------------------------------------------------------------
# Plan
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpuPlan:
    """One planned GPU: ``kind`` is ``"dedicated"`` (one session, back-to-back batches) or
    ``"residual"`` (a squishy-bin-packed node, one batch per session per duty cycle).

    ``models``, ``rates`` (planned req/s, the routing weights) and ``batch`` (batch limit) are
    aligned by session, in execution order; ``duty_ms`` is the duty cycle (for a dedicated GPU,
    ``ℓ_k(b_k)``, the length of a full batch)."""

    kind: str
    models: tuple[int, ...]
    rates: tuple[float, ...]
    batch: tuple[int, ...]
    duty_ms: float
    occupancy: float

    @property
    def capacity(self) -> tuple[float, ...]:
        """Per session, the most this GPU serves (req/s): ``b / duty``."""
        return tuple(1000.0 * b / self.duty_ms for b in self.batch)


@dataclass(frozen=True, eq=False)
class NexusPlan:
    """A Nexus plan (spec §2.5): the GPUs, the rate scale and the planned rate per model.

    ``offered`` is the rate the plan was asked for (req/s per model), ``planned = scale · offered``
    for the sessions it serves and 0 for the ``dropped`` ones (model name → reason).
    ``demand_gpus`` is what the unscaled rates would need."""

    models: ModelSet
    slo_ms: np.ndarray
    offered: np.ndarray
    planned: np.ndarray
    scale: float
    gpus: tuple[GpuPlan, ...]
    dropped: dict[str, str]
    n_gpus: int
    b_max: int
    demand_gpus: int

    @property
    def gpus_needed(self) -> int:
        return len(self.gpus)

    def capacity(self) -> np.ndarray:
        """Per model, the plan's serving capacity (req/s): Σ over its GPUs of ``b / duty``;
        ≥ ``planned`` because residual batches are rounded up."""
        cap = np.zeros(self.models.n)
        for g in self.gpus:
            for k, c in zip(g.models, g.capacity):
                cap[k] += c
        return cap

    def to_frame(self) -> pd.DataFrame:
        """One row per (GPU, session): kind, model, planned rate, batch, duty cycle, occupancy."""
        rows = [{"gpu": i, "kind": g.kind, "model": self.models.names[k], "rate": r, "batch": b,
                 "duty_ms": g.duty_ms, "occupancy": g.occupancy}
                for i, g in enumerate(self.gpus) for k, r, b in zip(g.models, g.rates, g.batch)]
        return pd.DataFrame(rows, columns=["gpu", "kind", "model", "rate", "batch", "duty_ms",
                                           "occupancy"])


def _check_plan_inputs(rates, models: ModelSet, n_gpus, slo_ms, b_max) -> tuple[np.ndarray,
                                                                                   np.ndarray]:
    require(isinstance(models, ModelSet), "models", type(models).__name__, "must be a ModelSet")
    try:
        r = np.array(rates, dtype=float)  # a copy: the plan freezes it
        slo = np.asarray(slo_ms, dtype=float)
    except (TypeError, ValueError):
        raise config_error("rates_per_model/slo_ms", (rates, slo_ms), "must be numbers") from None
    require(r.shape == (models.n,), "rates_per_model", r.shape,
            f"must have one rate per model ({models.n})")
    require(bool(np.all(np.isfinite(r)) and np.all(r >= 0)), "rates_per_model", r.tolist(),
            "must be finite and >= 0 (req/s)")
    require(slo.ndim == 0 or slo.shape == (models.n,), "slo_ms", slo.shape,
            f"must be a scalar or one SLO per model ({models.n})")
    require(bool(np.all(np.isfinite(slo)) and np.all(slo > 0)), "slo_ms", slo_ms,
            "must be finite and > 0 (ms)")
    require(isinstance(n_gpus, (int, np.integer)) and not isinstance(n_gpus, bool) and n_gpus >= 1,
            "n_gpus", n_gpus, "must be an integer >= 1")
    require(isinstance(b_max, (int, np.integer)) and not isinstance(b_max, bool) and b_max >= 1,
            "b_max", b_max, "must be an integer >= 1")
    return r, np.broadcast_to(slo, (models.n,)).astype(float)


def _saturated(models: ModelSet, slo: np.ndarray, b_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Step 1: ``b_k = max{b ≤ b_max : 2 ℓ_k(b) ≤ L_k}`` (0: unservable) and ``T_k`` (req/ms).
    By enumeration over ``b``, so no rounded quotient moves the boundary."""
    b = np.arange(1, b_max + 1)
    ok = 2.0 * (models.alpha[:, None] * b[None, :] + models.beta[:, None]) <= slo[:, None]
    b_k = np.where(ok.any(axis=1), b_max - np.argmax(ok[:, ::-1], axis=1), 0)
    lat = models.latency(np.arange(models.n), np.maximum(b_k, 1))
    return b_k.astype(np.int64), np.where(b_k > 0, b_k / lat, 0.0)


def _residual_node(alpha: float, beta: float, slo: float, r: float,
                   b_max: int) -> tuple[int, float]:
    """Step 2: ``b' = max{b ≤ b_max : b/r' + ℓ(b) ≤ L}`` and ``d = b'/r'`` for a residual of
    ``r`` req/ms. [ours] At least one request: when even one does not arrive in time on average
    (``1/r' + ℓ(1) > L``), ``b' = 1`` with the longest duty cycle that keeps the deadline,
    ``d = L − ℓ(1)``; the cap ``b_max`` is the batch limit of §1.1."""
    b = np.arange(1, b_max + 1)
    ok = b / r + (alpha * b + beta) <= slo
    if not ok.any():
        return 1, slo - (alpha + beta)
    b_k = int(b[ok].max())
    return b_k, b_k / r


def _ceil(x: np.ndarray) -> np.ndarray:
    """``⌈x⌉``, but an integer that float rounding lifted by an ulp (``r·(b/r)``) stays itself."""
    return np.maximum(np.ceil(x * (1.0 - 1e-12)), 1.0)


def _try_merge(node: dict, k: int, r: float, d_k: float, models: ModelSet,
               slo: np.ndarray) -> tuple[float, np.ndarray] | None:
    """Step 3's feasibility test of merging session ``k`` (residual ``r`` req/ms, duty ``d_k``)
    into ``node``: the resulting occupancy and batches, or None if infeasible."""
    ks = np.array(node["models"] + [k])
    rs = np.array(node["rates"] + [r])
    d = min(node["duty"], d_k)
    bs = _ceil(rs * d)
    lat = models.latency(ks, bs)
    if lat.sum() <= d and bool(np.all(d + lat <= slo[ks])):
        return float(lat.sum() / d), bs.astype(np.int64)
    return None


def _pack(residual: list[tuple[int, float]], models: ModelSet, slo: np.ndarray,
          b_max: int) -> list[dict]:
    """Step 3, squishy bin packing (Nexus SOSP'19): residual sessions ``(k, r'_k req/ms)``
    into nodes ``{models, rates, batch, duty, occupancy}``."""
    singles = []
    for k, r in residual:
        b, d = _residual_node(models.alpha[k], models.beta[k], slo[k], r, b_max)
        singles.append((float(models.latency(k, b)) / d, k, r, b, d))
    singles.sort(key=lambda x: -x[0])  # stable: ties stay in model order
    nodes: list[dict] = []
    for occ, k, r, b, d in singles:
        best, best_occ = None, -1.0
        for node in nodes:
            res = _try_merge(node, k, r, d, models, slo)
            if res is not None and res[0] > best_occ:
                best, best_occ, best_b = node, res[0], res[1]
        if best is None:
            nodes.append({"models": [k], "rates": [r], "batch": [b], "duty": d, "occupancy": occ})
        else:
            best["models"].append(k)
            best["rates"].append(r)
            best["batch"] = best_b.tolist()
            best["duty"] = min(best["duty"], d)
            best["occupancy"] = best_occ
    return nodes


def _allocate(rates_ms: np.ndarray, active: np.ndarray, models: ModelSet, slo: np.ndarray,
              b_sat: np.ndarray, t_sat: np.ndarray, b_max: int) -> list[GpuPlan]:
    """Steps 1–3 for rates in req/ms over the ``active`` sessions: the GPUs, dedicated first."""
    gpus: list[GpuPlan] = []
    residual = []
    for k in np.flatnonzero(active & (rates_ms > 0)):
        n_k = int(math.floor(rates_ms[k] / t_sat[k]))
        lat = float(models.latency(k, b_sat[k]))
        gpus += [GpuPlan(DEDICATED, (int(k),), (1000.0 * t_sat[k],), (int(b_sat[k]),), lat, 1.0)
                 ] * n_k
        rest = rates_ms[k] - n_k * t_sat[k]
        if rest > 0:
            residual.append((int(k), float(rest)))
    for node in _pack(residual, models, slo, b_max):
        gpus.append(GpuPlan(RESIDUAL, tuple(node["models"]),
                            tuple(1000.0 * r for r in node["rates"]),
                            tuple(int(b) for b in node["batch"]), float(node["duty"]),
                            float(node["occupancy"])))
    return gpus


def plan(rates_per_model, models: ModelSet, n_gpus: int, slo_ms=250.0,
         b_max: int = B_MAX) -> NexusPlan:
    """Nexus's plan for ``rates_per_model`` (req/s, one per model) on ``n_gpus`` GPUs with SLO
    ``slo_ms`` (a scalar or one per model): spec §2.5 steps 1–4, see the module docstring.

    Unservable sessions (``2 ℓ(1) > L``) are dropped and listed in ``dropped``; if the rates need
    more than ``n_gpus`` GPUs they are scaled by the largest common ``s ∈ (0, 1]`` that fits.
    """
    rates, slo = _check_plan_inputs(rates_per_model, models, n_gpus, slo_ms, b_max)
    b_sat, t_sat = _saturated(models, slo, b_max)
    r_ms = rates / 1000.0
    dropped = {models.names[k]: f"unservable: 2·ℓ(1) = {2 * models.latency(k, 1):.2f} ms > "
               f"L = {slo[k]:g} ms" for k in np.flatnonzero((b_sat == 0) & (rates > 0))}
    active = (b_sat > 0) & (rates > 0)

    def needed(s: float) -> int:
        return len(_allocate(s * r_ms, active, models, slo, b_sat, t_sat, b_max))

    demand = needed(1.0)
    scale = 1.0
    if demand > n_gpus:
        # [ours] not even a vanishing rate fits: drop the costliest sessions (lowest T_k) first
        while active.any() and needed(_S_MIN) > n_gpus:
            k = max(np.flatnonzero(active), key=lambda j: (-t_sat[j], j))
            active[k] = False
            dropped[models.names[k]] = f"no room on {n_gpus} GPUs even at a vanishing rate"
        lo, hi = _S_MIN, 1.0
        for _ in range(_BISECT_STEPS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if needed(mid) <= n_gpus else (lo, mid)
        scale = lo
    gpus = _allocate(scale * r_ms, active, models, slo, b_sat, t_sat, b_max)
    planned = np.where(active, scale * rates, 0.0)
    for a in (slo, rates, planned):
        a.setflags(write=False)
    return NexusPlan(models, slo, rates, planned, float(scale), tuple(gpus), dropped,
                     int(n_gpus), int(b_max), demand)


def peak_rates(requests: Requests, n_models: int, horizon_s: float | None = None,
               bin_s: float = 1.0) -> np.ndarray:
    """Each model's peak arrival rate (req/s): the largest count over ``bin_s``-second bins
    ``[j·bin_s, (j+1)·bin_s)`` from ``t = 0``, divided by ``bin_s`` (spec §2.5 [ours]: oracle
    knowledge of the coming window's peak, which favours Nexus)."""
    require(isinstance(bin_s, (int, float)) and bin_s > 0, "bin_s", bin_s, "must be > 0 (s)")
    require(bool(np.all(requests.model < n_models)), "requests.model", int(requests.model.max()),
            f"must index the {n_models} models")
    if requests.n == 0:
        return np.zeros(n_models)
    bins = np.floor(requests.arrival / (1000.0 * bin_s)).astype(np.int64)
    n_bins = int(bins.max()) + 1
    counts = np.bincount(requests.model * n_bins + bins, minlength=n_models * n_bins)
    return counts.reshape(n_models, n_bins).max(axis=1) / bin_s


def plan_for_peak(requests: Requests, models: ModelSet, n_gpus: int, slo_ms=250.0,
                  window_s: float = 60.0, bin_s: float = 1.0, b_max: int = B_MAX) -> NexusPlan:
    """The plan for each model's peak ``bin_s`` arrival rate over the requests' horizon (the
    paper: Nexus is provisioned "for the peak demand in every 60-second window"). [ours] Re-planning
    is not simulated, so the horizon must fit in one window (second-scale simulations)."""
    require(isinstance(window_s, (int, float)) and window_s > 0, "window_s", window_s,
            "must be > 0 (s)")
    last = float(requests.arrival[-1]) if requests.n else 0.0
    require(last < 1000.0 * window_s, "window_s", window_s,
            f"must cover the requests' horizon ({last / 1000:.3g} s): one plan per run, "
            "re-planning every window is not simulated")
    return plan(peak_rates(requests, models.n, bin_s=bin_s), models, n_gpus, slo_ms, b_max)


# ----------------------------------------------------------------------------------------------
# Runtime: result
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class NexusResult:
    """What a run served. Per request (aligned with ``requests``): ``gpu`` (-1: not routed),
    ``completion`` (ms, NaN if not served), ``status`` (SERVED, DROPPED early, UNROUTED) and
    ``ok`` (served by its deadline). Per batch, in (gpu, start) order: ``batch_gpu``,
    ``batch_start``, ``batch_end`` (ms), ``batch_size``, ``batch_model``. ``busy_ms`` per GPU
    (``n_gpus`` entries; GPUs the plan leaves idle are 0). Windows are in ms, rates in req/s."""

    requests: Requests
    n_gpus: int
    gpu: np.ndarray
    completion: np.ndarray
    status: np.ndarray
    batch_gpu: np.ndarray
    batch_start: np.ndarray
    batch_end: np.ndarray
    batch_size: np.ndarray
    batch_model: np.ndarray

    @property
    def ok(self) -> np.ndarray:
        return self.completion <= self.requests.deadline  # NaN compares False

    @property
    def busy_ms(self) -> np.ndarray:
        return np.bincount(self.batch_gpu, weights=self.batch_end - self.batch_start,
                           minlength=self.n_gpus)

    def _window(self, t0: float, t1: float) -> np.ndarray:
        require(t1 > t0, "t1", t1, f"must be > t0 = {t0} (ms)")
        a = self.requests.arrival
        return (a >= t0) & (a < t1)

    def goodput(self, t0: float, t1: float) -> float:
        """Requests arriving in ``[t0, t1)`` ms that are served by their deadline, per second of
        the window (spec §1.4)."""
        return float(np.count_nonzero(self._window(t0, t1) & self.ok) / ((t1 - t0) / 1000.0))

    def goodput_per_model(self, t0: float, t1: float, n_models: int) -> np.ndarray:
        """:meth:`goodput` split by model (req/s)."""
        m = self._window(t0, t1) & self.ok
        return np.bincount(self.requests.model[m], minlength=n_models) / ((t1 - t0) / 1000.0)

    def utilization(self, t0: float, t1: float) -> float:
        """Busy GPU time inside ``[t0, t1)`` over ``n_gpus · (t1 − t0)`` (spec §1.4)."""
        require(t1 > t0, "t1", t1, f"must be > t0 = {t0} (ms)")
        overlap = np.minimum(self.batch_end, t1) - np.maximum(self.batch_start, t0)
        return float(np.clip(overlap, 0.0, None).sum() / (self.n_gpus * (t1 - t0)))

    def latency(self, t0: float = -np.inf, t1: float = np.inf) -> np.ndarray:
        """``c_r − a_r`` (ms) of the served requests arriving in ``[t0, t1)`` (Fig 8)."""
        a = self.requests.arrival
        m = (self.status == SERVED) & (a >= t0) & (a < t1)
        return self.completion[m] - a[m]


def _check_run_inputs(requests: Requests, models: ModelSet, n_gpus: int,
                      nexus_plan: NexusPlan) -> None:
    require(isinstance(requests, Requests), "requests", type(requests).__name__,
            "must be a shepherd.model.Requests")
    require(isinstance(nexus_plan, NexusPlan), "plan", type(nexus_plan).__name__,
            "must be a NexusPlan (from nexus.plan)")
    require(isinstance(models, ModelSet) and models.names == nexus_plan.models.names, "models",
            getattr(models, "names", models), "must be the ModelSet the plan was made for")
    require(isinstance(n_gpus, (int, np.integer)) and not isinstance(n_gpus, bool)
            and n_gpus >= nexus_plan.gpus_needed, "n_gpus", n_gpus,
            f"must be an integer >= the plan's {nexus_plan.gpus_needed} GPUs")
    require(requests.n == 0 or int(requests.model.max()) < models.n, "requests.model",
            int(requests.model.max()) if requests.n else None,
            f"must index the {models.n} models")
    # FIFO per session is EDF only if deadlines do not decrease within a model
    if requests.n:
        order = np.argsort(requests.model, kind="stable")
        same = np.diff(requests.model[order]) == 0
        require(bool(np.all(np.diff(requests.deadline[order])[same] >= 0)), "requests.deadline",
                "decreasing within a model", "must be non-decreasing per model in arrival order "
                "(one SLO per session)")


def _routes(nexus_plan: NexusPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per model, its GPUs and their weights (planned req/s), CSR: ptr, gpu, weight, total."""
    per_model: list[list[tuple[int, float]]] = [[] for _ in range(nexus_plan.models.n)]
    for g, gp in enumerate(nexus_plan.gpus):
        for k, r in zip(gp.models, gp.rates):
            per_model[k].append((g, r))
    ptr = np.zeros(len(per_model) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(p) for p in per_model])
    gpu = np.array([g for p in per_model for g, _ in p], dtype=np.int64)
    w = np.array([r for p in per_model for _, r in p], dtype=float)
    total = np.array([sum(r for _, r in p) for p in per_model], dtype=float)
    return ptr, gpu, w, total


def _result(requests: Requests, n_gpus: int, gpu, completion, status, bg, bs, be, bn,
            bm) -> NexusResult:
    order = np.lexsort((bs, bg))
    arrays = [gpu, completion, status] + [x[order] for x in (bg, bs, be, bn, bm)]
    for a in arrays:
        a.setflags(write=False)
    return NexusResult(requests, int(n_gpus), *arrays)


# ----------------------------------------------------------------------------------------------
# Runtime: fast engine (numba)
# ----------------------------------------------------------------------------------------------

@njit(cache=True)
def _swrr(model, ptr, gpu, w, total):
    """Smooth weighted round-robin (nginx) per model, in arrival order: each pick adds every
    weight to its current value, takes the largest (first on ties) and subtracts the total."""
    out = np.full(model.size, -1, dtype=np.int64)
    cur = np.zeros(w.size)
    for i in range(model.size):
        k = model[i]
        lo, hi = ptr[k], ptr[k + 1]
        if lo == hi:
            continue
        best = lo
        for j in range(lo, hi):
            cur[j] += w[j]
            if cur[j] > cur[best]:
                best = j
        cur[best] -= total[k]
        out[i] = gpu[best]
    return out


@njit(cache=True)
def _form_batch(t, head, tail, bmax, a_k, b_k, idx, deadline, status):
    """Nexus's sliding-window early drop over the queue ``idx[head:tail]`` at time ``t``:
    returns (new head, batch size, latency); batch size 0 if the whole queue was dropped."""
    while head < tail:
        b = min(bmax, tail - head)
        lat = a_k * b + b_k
        if deadline[idx[head]] >= t + lat:
            return head, b, lat
        status[idx[head]] = 1  # DROPPED
        head += 1
    return head, 0, 0.0


@njit(cache=True)
def _run(arrival, deadline, idx, seg, n_models, is_res, duty, sptr, smodel, sbatch, alpha, beta,
         completion, status, bg, bs, be, bn, bm):
    """Every GPU on its own; ``idx[seg[g·M + k]:seg[g·M + k + 1]]`` are GPU g's requests of model
    k in arrival order. Fills completion/status and the batch arrays; returns the batch count."""
    nb = 0
    for g in range(sptr.size - 1):
        s0, s1 = sptr[g], sptr[g + 1]
        ns = s1 - s0
        head = np.empty(ns, dtype=np.int64)
        tail = np.empty(ns, dtype=np.int64)
        end = np.empty(ns, dtype=np.int64)
        for j in range(ns):
            q = g * n_models + smodel[s0 + j]
            head[j] = seg[q]
            tail[j] = seg[q]
            end[j] = seg[q + 1]
        d = duty[g]
        t = 0.0
        c = 0
        while True:
            # the earliest waiting request; none left: this GPU is done
            nxt = np.inf
            for j in range(ns):
                if head[j] < end[j] and arrival[idx[head[j]]] < nxt:
                    nxt = arrival[idx[head[j]]]
            if nxt == np.inf:
                break
            if is_res[g]:
                # skip empty cycles: the first cycle start c·d ≥ the next arrival
                if nxt > c * d:
                    c = max(c, int(math.ceil(nxt / d)))
                    while c > 0 and (c - 1) * d >= nxt:
                        c -= 1
                    while c * d < nxt:
                        c += 1
                t = max(c * d, t)  # a cycle never starts before the last one's work ends
            elif nxt > t:
                t = nxt  # work-conserving: an idle GPU starts at the next arrival
            for j in range(ns):
                k = smodel[s0 + j]
                while tail[j] < end[j] and arrival[idx[tail[j]]] <= t:
                    tail[j] += 1
                h, b, lat = _form_batch(t, head[j], tail[j], sbatch[s0 + j], alpha[k], beta[k],
                                        idx, deadline, status)
                head[j] = h
                if b > 0:
                    fin = t + lat
                    for i in range(h, h + b):
                        completion[idx[i]] = fin
                        status[idx[i]] = 0
                    bg[nb], bs[nb], be[nb], bn[nb], bm[nb] = g, t, fin, b, k
                    nb += 1
                    head[j] = h + b
                    t = fin
            c += 1
    return nb


def simulate(requests: Requests, models: ModelSet, n_gpus: int, plan: NexusPlan, *,
             seed: int = 0) -> NexusResult:
    """Run the Nexus runtime (spec §2.5, module docstring) on ``requests`` with ``plan``: the fast
    engine. The runtime is deterministic given the plan (SWRR routing, fixed cycles); ``seed`` is
    accepted for the experiments' common signature and does not change the result."""
    nexus_plan = plan
    _check_run_inputs(requests, models, n_gpus, nexus_plan)
    n, m = requests.n, models.n
    ptr, rgpu, w, total = _routes(nexus_plan)
    gpu = _swrr(requests.model, ptr, rgpu, w, total)
    status = np.where(gpu < 0, UNROUTED, DROPPED).astype(np.int8)
    key = np.where(gpu >= 0, gpu * m + requests.model, -1)
    idx = np.argsort(key, kind="stable")  # arrival order within each (gpu, model)
    seg = np.searchsorted(key[idx], np.arange(len(nexus_plan.gpus) * m + 1)).astype(np.int64)
    gp = nexus_plan.gpus
    sptr = np.zeros(len(gp) + 1, dtype=np.int64)
    sptr[1:] = np.cumsum([len(g.models) for g in gp])
    smodel = np.array([k for g in gp for k in g.models], dtype=np.int64)
    sbatch = np.array([b for g in gp for b in g.batch], dtype=np.int64)
    is_res = np.array([g.kind == RESIDUAL for g in gp], dtype=np.bool_)
    duty = np.array([g.duty_ms for g in gp], dtype=float)
    completion = np.full(n, np.nan)
    bg, bn, bm = (np.empty(n, dtype=np.int64) for _ in range(3))
    bs, be = np.empty(n), np.empty(n)
    nb = _run(requests.arrival, requests.deadline, idx, seg, m, is_res, duty, sptr, smodel,
              sbatch, np.asarray(models.alpha, dtype=float), np.asarray(models.beta, dtype=float),
              completion, status, bg, bs, be, bn, bm)
    return _result(requests, n_gpus, gpu, completion, status, bg[:nb], bs[:nb], be[:nb],
                   bn[:nb], bm[:nb])


# ----------------------------------------------------------------------------------------------
# Runtime: simpy reference
# ----------------------------------------------------------------------------------------------

def nexus_reference(requests: Requests, models: ModelSet, n_gpus: int,
                    plan: NexusPlan) -> NexusResult:
    """The same runtime as :func:`simulate`, as a simpy model that reads like spec §2.5: a
    front-end routes each arrival by SWRR into its GPU's session queue; each GPU is a process.
    For small cases only (tests hold it to :func:`simulate`)."""
    import simpy

    nexus_plan = plan
    _check_run_inputs(requests, models, n_gpus, nexus_plan)
    env = simpy.Environment()
    gpus = nexus_plan.gpus
    queues = [{k: [] for k in g.models} for g in gpus]  # per GPU, per session: FIFO of requests
    pending = [0] * len(gpus)  # requests routed to the GPU and not yet served or dropped
    wake: list = [None] * len(gpus)
    n = requests.n
    gpu_of = np.full(n, -1, dtype=np.int64)
    completion = np.full(n, np.nan)
    status = np.full(n, UNROUTED, dtype=np.int8)
    batches: list[tuple[int, float, float, int, int]] = []
    a_arr, d_arr, m_arr = requests.arrival, requests.deadline, requests.model
    routes = {k: [(g, r) for g, gp in enumerate(gpus) for kk, r in zip(gp.models, gp.rates)
                  if kk == k] for k in range(models.n)}
    current = {k: [0.0] * len(v) for k, v in routes.items()}
    totals = {k: sum(r for _, r in v) for k, v in routes.items()}
    # the front-end's routing is decided up front so each GPU knows how many requests to expect
    for i in range(n):
        k = int(m_arr[i])
        if not routes[k]:
            continue
        cur = current[k]
        best = 0
        for j, (_, r) in enumerate(routes[k]):
            cur[j] += r
            if cur[j] > cur[best]:
                best = j
        cur[best] -= totals[k]
        gpu_of[i] = routes[k][best][0]
        pending[gpu_of[i]] += 1
        status[i] = DROPPED

    def frontend():
        """Arrivals at one instant are enqueued together, then idle GPUs are woken."""
        i = 0
        while i < n:
            yield timeout_at(env, a_arr[i])
            while i < n and a_arr[i] == env.now:
                g = gpu_of[i]
                if g >= 0:
                    queues[g][int(m_arr[i])].append(i)
                    if wake[g] is not None and not wake[g].triggered:
                        wake[g].succeed()
                i += 1

    def form_batch(g: int, k: int, bmax: int) -> list[int]:
        """Early drop (Nexus's sliding window), then the batch: the first ≤ bmax of the queue."""
        q = queues[g][k]
        while q:
            b = min(bmax, len(q))
            if d_arr[q[0]] >= env.now + (models.alpha[k] * b + models.beta[k]):
                batch, q[:b] = q[:b], []
                return batch
            pending[g] -= 1
            q.pop(0)
        return []

    def run_batch(g: int, k: int, batch: list[int]):
        start = env.now
        yield env.timeout(models.alpha[k] * len(batch) + models.beta[k])
        for i in batch:
            completion[i] = env.now
            status[i] = SERVED
        pending[g] -= len(batch)
        batches.append((g, start, env.now, len(batch), k))

    def dedicated(g: int):
        """Work-conserving: whenever free with a non-empty queue, one batch of ≤ b_k."""
        k, bmax = gpus[g].models[0], gpus[g].batch[0]
        while pending[g]:
            if not queues[g][k]:
                wake[g] = env.event()
                yield wake[g]
            yield env.timeout(0)  # let requests arriving at this very instant join the queue
            batch = form_batch(g, k, bmax)
            if batch:
                yield from run_batch(g, k, batch)

    def residual(g: int):
        """Cycle c starts at c·d: one batch of ≤ b_s per session in order, then idle."""
        d = gpus[g].duty_ms
        c = 0
        while pending[g]:
            yield timeout_at(env, max(c * d, env.now))
            for k, bmax in zip(gpus[g].models, gpus[g].batch):
                yield env.timeout(0)  # same-instant arrivals first
                batch = form_batch(g, k, bmax)
                if batch:
                    yield from run_batch(g, k, batch)
            c += 1

    env.process(frontend())
    for g, gp in enumerate(gpus):
        env.process(dedicated(g) if gp.kind == DEDICATED else residual(g))
    env.run()
    cols = list(zip(*batches)) if batches else [[]] * 5
    bg, bs, be, bn, bm = (np.array(c, dtype=t) for c, t in
                          zip(cols, (np.int64, float, float, np.int64, np.int64)))
    return _result(requests, n_gpus, gpu_of, completion, status, bg, bs, be, bn, bm)
