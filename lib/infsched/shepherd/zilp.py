"""The offline optimum of online serving: Shepherd's ZILP (Eq. 3, §5.1) in a compact,
solvable form [ours], for tiny instances.

Eq. 3 maximises ``Σ_t Σ_n Σ_B |B|·I(B, t, n)`` over binaries "batch B starts at t on GPU n":
(a) each request in at most one batch, (b) one batch at a time per GPU, (c) ``t >= a(B)``,
(d) ``t + ℓ_{m(B)}(|B|) <= d(B)``. The paper calls it NP-hard; enumerating every subset B is
hopeless beyond a handful of requests. The compact form (spec §1.5):

- time in integer ms slots; arrivals, deadlines and latencies ``ℓ_m(b)`` integers, so by a
  left-shift argument an optimal schedule exists with integer start times;
- GPUs are identical, so only counts matter: ``y_{t,m,b} ∈ {0..G}`` batches of model m and
  size b start at t; capacity ``Σ_{t' <= τ < t' + ℓ_m(b)} y_{t',m,b} <= G`` for every slot τ
  (for intervals on identical machines this is schedulability: interval graphs are perfect);
- requests join batches through binaries ``z_{r,(t,m,b)}`` allowed only when ``m_r = m``,
  ``a_r <= t`` and ``d_r >= t + ℓ_m(b)``: ``Σ_r z_{r,v} = b·y_v`` and ``Σ_v z_{r,v} <= 1``;
- objective ``Σ b·y`` (requests served), solved by HiGHS through
  :func:`infsched.optim.solve_milp`.

:func:`zilp_optimum` returns the value and a schedule (batches with start, GPU, model,
requests; GPUs by greedy interval colouring), and :func:`check_schedule` verifies any schedule
independently against Eq. 3's constraints.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from infsched.errors import require
from infsched.optim import solve_milp
from infsched.shepherd.model import ModelSet, Requests

__all__ = ["Batch", "ZilpResult", "InvalidSchedule", "latency_table", "zilp_optimum",
           "check_schedule", "LIMITS"]

#: the largest instance :func:`zilp_optimum` accepts (spec §1.5: seconds, not hours)
LIMITS = {"requests": 20, "slots": 100, "b_max": 8, "models": 2, "n_gpus": 2}


class InvalidSchedule(ValueError):
    """A schedule that breaks one of Eq. 3's constraints (the message says which)."""


@dataclass(frozen=True)
class Batch:
    """A batch of ``model`` started at integer ``start`` on ``gpu``, serving ``requests``
    (indices into the Requests)."""

    start: int
    gpu: int
    model: int
    requests: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.requests)


@dataclass(frozen=True, eq=False)
class ZilpResult:
    """The ZILP's optimum ``value`` (requests served), a schedule achieving it, HiGHS's status
    (``"optimal"`` or ``"time_limit"``), solve seconds and the number of MILP variables."""

    value: int
    batches: tuple[Batch, ...]
    status: str
    seconds: float
    n_vars: int


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

def _is_int(x: np.ndarray) -> bool:
    return bool(np.all(np.abs(x - np.rint(x)) <= 1e-9))


def latency_table(models: ModelSet, b_max: int) -> np.ndarray:
    """``ℓ_m(b) = α_m b + β_m`` (Eq. 1) as integers, shape ``(M, b_max + 1)``, column b for
    batch size b (column 0 unused, 0). The compact ZILP needs integer slots, so α and β must
    be integers (``ℓ(1)`` and ``ℓ(2)`` integer force both) and ``ℓ(1) >= 1``."""
    require(_is_int(models.alpha) and _is_int(models.beta), "models", models.names,
            "need integer α and β (ms) so that ℓ(b) = αb + β is a whole number of slots "
            f"(got α = {models.alpha.tolist()}, β = {models.beta.tolist()})")
    b = np.arange(b_max + 1)
    lat = np.rint(models.alpha[:, None] * b[None, :] + models.beta[:, None]).astype(np.int64)
    lat[:, 0] = 0
    return lat


def _check_latency(latency: Any, b_max: int) -> np.ndarray:
    """A user latency table: ``(M, b_max)`` positive integers for b = 1..b_max."""
    lat = np.asarray(latency, dtype=float)
    require(lat.ndim == 2 and lat.shape[1] == b_max, "latency", latency,
            f"must have shape (models, b_max = {b_max}), entry [m, b-1] = ℓ_m(b)")
    require(bool(np.all(np.isfinite(lat))) and _is_int(lat) and bool(np.all(lat >= 1)),
            "latency", latency, "must hold integer latencies >= 1 (slots)")
    return np.concatenate([np.zeros((lat.shape[0], 1), dtype=np.int64),
                           np.rint(lat).astype(np.int64)], axis=1)


def _validate(requests: Requests, models: ModelSet | None, latency: Any, n_gpus: Any,
              b_max: Any) -> np.ndarray:
    require(isinstance(requests, Requests), "requests", type(requests).__name__,
            "must be a shepherd.model.Requests")
    require(isinstance(b_max, (int, np.integer)) and 1 <= b_max <= LIMITS["b_max"], "b_max",
            b_max, f"must be an integer in [1, {LIMITS['b_max']}]: the compact ZILP has a "
            "variable per (slot, model, size); larger batches make it too big for tests")
    require(isinstance(n_gpus, (int, np.integer)) and 1 <= n_gpus <= LIMITS["n_gpus"],
            "n_gpus", n_gpus, f"must be an integer in [1, {LIMITS['n_gpus']}] (tiny instances)")
    require(requests.n <= LIMITS["requests"], "requests", f"{requests.n} requests",
            f"at most {LIMITS['requests']}: the ZILP is NP-hard (Eq. 3); larger instances "
            "take too long")
    require((models is None) != (latency is None), "models/latency", (models, latency),
            "give exactly one: a ModelSet with integer α, β or a latency table")
    lat = latency_table(models, int(b_max)) if models is not None \
        else _check_latency(latency, int(b_max))
    require(lat.shape[0] <= LIMITS["models"], "models", lat.shape[0],
            f"at most {LIMITS['models']} models (tiny instances)")
    require(bool(np.all(lat[:, 1:] >= 1)), "latency", lat[:, 1:].tolist(),
            "ℓ_m(b) must be >= 1 slot")
    require(_is_int(requests.arrival) and _is_int(requests.deadline), "requests",
            "non-integer times", "arrivals and deadlines must be whole ms (integer slots)")
    require(requests.n == 0 or int(requests.model.max()) < lat.shape[0], "requests.model",
            int(requests.model.max()) if requests.n else None,
            f"must index the {lat.shape[0]} models")
    if requests.n:
        slots = int(round(requests.deadline.max() - requests.arrival.min()))
        require(slots <= LIMITS["slots"], "requests", f"{slots} slots",
                f"span (max deadline - min arrival) must be at most {LIMITS['slots']} slots")
    return lat


# --------------------------------------------------------------------------------------------
# The compact ZILP
# --------------------------------------------------------------------------------------------

def _candidates(a: np.ndarray, d: np.ndarray, m: np.ndarray, lat: np.ndarray, b_max: int,
                n_gpus: int) -> tuple[list[tuple[int, int, int]], list[np.ndarray], list[int]]:
    """Every (t, m, b) with at least b requests that could join it, their eligible requests
    and the bound ``min(G, ⌊eligible / b⌋)`` on y."""
    keys, members, caps = [], [], []
    t_lo, t_hi = int(a.min()), int(d.max())
    for t in range(t_lo, t_hi):
        for model in range(lat.shape[0]):
            for b in range(1, b_max + 1):
                elig = np.flatnonzero((m == model) & (a <= t) & (d >= t + lat[model, b]))
                if elig.size >= b:
                    keys.append((t, model, b))
                    members.append(elig)
                    caps.append(min(n_gpus, elig.size // b))
    return keys, members, caps


def zilp_optimum(requests: Requests, models: ModelSet | None = None, *, n_gpus: int = 1,
                 b_max: int = 8, latency: Any = None, time_limit: float = 60.0) -> ZilpResult:
    """The offline optimum (Eq. 3) of serving ``requests`` on ``n_gpus`` identical GPUs, via
    the compact ZILP [ours] (see the module docstring).

    ``models``: a ModelSet with integer α, β (ms = slots); or ``latency``: a table
    ``(M, b_max)`` of integer ℓ_m(b). Tiny instances only (:data:`LIMITS`: ≤ 20 requests,
    ≤ 100 slots, b_max ≤ 8, ≤ 2 models, ≤ 2 GPUs); larger ones raise ConfigError.
    """
    lat = _validate(requests, models, latency, n_gpus, b_max)
    t0 = time.perf_counter()
    if requests.n == 0:
        return ZilpResult(0, (), "optimal", 0.0, 0)
    a = np.rint(requests.arrival).astype(np.int64)
    d = np.rint(requests.deadline).astype(np.int64)
    m = requests.model
    keys, members, caps = _candidates(a, d, m, lat, int(b_max), int(n_gpus))
    if not keys:  # no request can be served at all
        return ZilpResult(0, (), "optimal", time.perf_counter() - t0, 0)
    nv = len(keys)
    z_off = np.cumsum([0] + [len(e) for e in members])  # z columns of candidate v
    nz = int(z_off[-1])
    nvar = nv + nz
    zcol = nv + np.arange(nz)
    zreq = np.concatenate(members)
    zcand = np.repeat(np.arange(nv), [len(e) for e in members])
    sizes = np.array([k[2] for k in keys], dtype=float)
    # Σ_r z_{r,v} - b·y_v = 0
    A_eq = sp.csr_matrix((np.concatenate([np.ones(nz), -sizes]),
                          (np.concatenate([zcand, np.arange(nv)]),
                           np.concatenate([zcol, np.arange(nv)]))), shape=(nv, nvar))
    # Σ_v z_{r,v} <= 1: each request in at most one batch (a)
    A_req = sp.csr_matrix((np.ones(nz), (zreq, zcol)), shape=(requests.n, nvar))
    # capacity: batches running in slot τ <= G (b); y_v covers [t, t + ℓ)
    t_lo, t_hi = int(a.min()), int(d.max())
    rows, cols = [], []
    for v, (t, model, b) in enumerate(keys):
        for tau in range(t, t + int(lat[model, b])):
            rows.append(tau - t_lo)
            cols.append(v)
    A_cap = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(t_hi - t_lo, nvar))
    A_ub = sp.vstack([A_req, A_cap]).tocsr()
    b_ub = np.concatenate([np.ones(requests.n), np.full(t_hi - t_lo, float(n_gpus))])
    c = np.concatenate([-sizes, np.zeros(nz)])
    bounds = [(0, cap) for cap in caps] + [(0, 1)] * nz
    sol = solve_milp(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.zeros(nv), bounds=bounds,
                     integrality=1, time_limit=time_limit, name="ZILP (Eq. 3, compact)")
    y = np.rint(sol.x[:nv]).astype(np.int64)
    z = np.rint(sol.x[nv:]).astype(np.int64)
    batches = _schedule(keys, y, z, zreq, zcand, lat, int(n_gpus))
    value = int(round(-sol.objective))
    return ZilpResult(value=value, batches=batches, status=sol.status,
                      seconds=time.perf_counter() - t0, n_vars=nvar)


def _schedule(keys, y, z, zreq, zcand, lat, n_gpus) -> tuple[Batch, ...]:
    """Split each y_v into y_v batches of its chosen requests and give each a GPU by greedy
    interval colouring (by start time; any GPU free by then)."""
    batches: list[tuple[int, int, tuple[int, ...]]] = []
    for v in np.flatnonzero(y > 0):
        t, model, b = keys[v]
        chosen = sorted(int(r) for r in zreq[(zcand == v) & (z == 1)])
        for k in range(int(y[v])):
            batches.append((t, model, tuple(chosen[k * b:(k + 1) * b])))
    batches.sort()
    free_at = [-math.inf] * n_gpus
    out = []
    for t, model, reqs in batches:
        g = next(i for i in range(n_gpus) if free_at[i] <= t)  # exists: capacity (b) holds
        free_at[g] = t + int(lat[model, len(reqs)])
        out.append(Batch(start=int(t), gpu=g, model=int(model), requests=reqs))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Independent checker
# --------------------------------------------------------------------------------------------

def check_schedule(batches: Any, requests: Requests, latency: Any, n_gpus: int,
                   b_max: int) -> int:
    """Verify a schedule against Eq. 3 and return the requests it serves.

    ``latency``: a ModelSet (ℓ = αb + β) or a table ``(M, b_max + 1)`` indexed ``[m, b]``
    (as :func:`latency_table` builds). Checks: 1 <= |B| <= b_max; one model per batch;
    (a) no request twice; (c) ``t >= a_r``; (d) ``t + ℓ_m(|B|) <= d_r`` for every member;
    (b) per GPU, no two batches overlap. Raises InvalidSchedule naming the first violation.
    """
    def ell(model: int, b: int) -> float:
        if isinstance(latency, ModelSet):
            return float(latency.latency(model, b))
        return float(np.asarray(latency)[model, b])

    seen: set[int] = set()
    per_gpu: dict[int, list[tuple[float, float]]] = {}
    for k, B in enumerate(batches):
        reqs = list(B.requests)
        if not 1 <= len(reqs) <= b_max:
            raise InvalidSchedule(f"batch {k}: size {len(reqs)} outside [1, {b_max}]")
        if not 0 <= B.gpu < n_gpus:
            raise InvalidSchedule(f"batch {k}: GPU {B.gpu} outside [0, {n_gpus})")
        end = B.start + ell(B.model, len(reqs))
        for r in reqs:
            if r in seen:
                raise InvalidSchedule(f"batch {k}: request {r} served twice (constraint a)")
            seen.add(r)
            if int(requests.model[r]) != B.model:
                raise InvalidSchedule(f"batch {k}: request {r} is for model "
                                      f"{int(requests.model[r])}, batch runs {B.model}")
            if B.start < requests.arrival[r] - 1e-9:
                raise InvalidSchedule(f"batch {k}: starts at {B.start} before request {r} "
                                      f"arrives at {requests.arrival[r]:g} (constraint c)")
            if end > requests.deadline[r] + 1e-9:
                raise InvalidSchedule(f"batch {k}: ends at {end:g} after request {r}'s "
                                      f"deadline {requests.deadline[r]:g} (constraint d)")
        per_gpu.setdefault(B.gpu, []).append((float(B.start), end))
    for g, spans in per_gpu.items():
        spans.sort()
        for (s0, e0), (s1, _) in zip(spans, spans[1:]):
            if s1 < e0 - 1e-9:
                raise InvalidSchedule(f"GPU {g}: batches [{s0:g}, {e0:g}) and from {s1:g} "
                                      "overlap (constraint b)")
    return len(seen)
