"""KAIROS's throughput upper bound (Section 5.2, Def. 2, Eqs. 9–15) and a rigorous fluid-LP
bound to compare it with.

The bound splits the query mix at a size threshold ``s``: queries with ``b < s`` may go to the
auxiliary (CPU) instances, which meet QoS on them, and the rest must go to the base (GPU)
instances. Per (model, QoS, batch pmf ``p``) it needs, from the latency table ``L`` (ms):

- ``Q_b = 1000 / E[L(base, b)]``: one base instance's QPS on the whole mix, back to back;
- per aux type ``k``: ``s_k``, the smallest ``b`` with ``L(k, b) > T_qos`` (1010 when none:
  the type then serves every size), ``f_k = P(b < s_k)``, ``τ_k = E[L(base,b) 1{b<s_k}] /
  E[L(base,b)]`` (the base time share of small queries) and ``Q_a^k(s) = 1000 / E[L(k,b) | b<s]``.

:class:`BoundProfile` holds these, either computed from the latency table and the exact pmf
(:meth:`BoundProfile.from_latency`: any QoS, any pmf) or read from the artifact's
``allocator_profile.json`` (:meth:`BoundProfile.from_upstream`). :func:`upper_bound` evaluates
Eq. 15 over an ``(n, 4)`` array of configurations at once.

:func:`fluid_lp_bound` is the optional rigorous bound (spec pitfall 11): the largest arrival
rate a fluid allocation of sizes to types can carry while every query meets QoS on its mean
service time. For one aux type it is never below Eq. 15 (Eq. 15 is one feasible fluid
allocation: aux takes a proportional slice of the small queries); with several aux types Eq. 15
assumes every present type serves up to the largest ``s_k``, so it can exceed the LP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from infsched.errors import ConfigError, config_error, require
from infsched.kairos.batches import LOGNORMAL_MIX, BatchDist, pmf
from infsched.kairos.model import (
    BASE,
    BATCHES,
    INSTANCE_TYPES,
    QOS_MS,
    check_config,
    check_model,
    latency_table,
)

__all__ = ["NO_LIMIT", "THRESHOLDS", "BoundProfile", "UpperBound", "upper_bound",
           "upper_bound_one", "fluid_lp_bound", "threshold_index"]

#: ``s_k`` of an aux type that meets QoS at every size: it "violates" only past b = 1000
NO_LIMIT = 1010
#: every threshold ``s`` the profile arrays are indexed by: 10, 20, …, 1000, 1010
THRESHOLDS = np.arange(10, NO_LIMIT + 1, 10)
THRESHOLDS.setflags(write=False)
_AUX = np.arange(1, len(INSTANCE_TYPES))


def threshold_index(s) -> np.ndarray:
    """Index into :data:`THRESHOLDS` of threshold(s) ``s`` (multiples of 10 in 10..1010)."""
    arr = np.asarray(s)
    idx = arr // 10 - 1
    if np.any((arr % 10 != 0) | (idx < 0) | (idx >= THRESHOLDS.size)):
        raise config_error("threshold", s, f"must be a multiple of 10 in 10..{NO_LIMIT}")
    return idx


@dataclass(frozen=True, eq=False)
class BoundProfile:
    """Inputs of the upper bound (Eqs. 9–15) for one model, QoS target and batch pmf.

    Arrays over thresholds are indexed by :func:`threshold_index` (``s = 10, …, 1010``); an
    entry is NaN where the source does not give it (the artifact's JSON only lists the
    thresholds Eq. 15 can need).

    - ``q_base``: ``Q_b`` (QPS);
    - ``s``: length 4, ``s_k`` per type (entry 0, the base, is :data:`NO_LIMIT`);
    - ``f``, ``tau``: length 101, ``P(b < s)`` and the base time share of ``b < s``;
    - ``qa``: ``(4, 101)``, ``Q_a^k(s)`` (QPS; row 0 unused).
    """

    model: str
    qos_ms: float
    q_base: float
    s: np.ndarray
    f: np.ndarray
    tau: np.ndarray
    qa: np.ndarray
    source: str = field(default="latency")

    # -- per-type views (Eqs. 9–11) ---------------------------------------------------------
    def f_k(self, k: int) -> float:
        """``f_k = P(b < s_k)`` (the artifact's ``small_ratio``)."""
        return float(self.f[threshold_index(self.s[k])])

    def tau_k(self, k: int) -> float:
        """``τ_k``, the base time share of the queries aux type ``k`` can take (``time_ratio``)."""
        return float(self.tau[threshold_index(self.s[k])])

    def qa_k(self, k: int, s: int | None = None) -> float:
        """``Q_a^k(s)``, at ``s_k`` unless ``s`` is given (``all_batch[s]``)."""
        return float(self.qa[k, threshold_index(self.s[k] if s is None else s)])

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def from_latency(cls, model: str, qos_ms: float | None = None,
                     dist: BatchDist = LOGNORMAL_MIX,
                     latency: np.ndarray | None = None) -> BoundProfile:
        """Compute every input from the mean latency table and the exact pmf of ``dist``.

        ``qos_ms`` defaults to Table 3's target (Fig. 15b passes 1.2× it); ``latency`` may
        replace the artifact's ``(4, 100)`` mean table (ms), e.g. for a profiled proxy model.
        """
        check_model(model)
        qos = float(QOS_MS[model] if qos_ms is None else qos_ms)
        require(np.isfinite(qos) and qos > 0, "qos_ms", qos_ms, "must be a number > 0 (ms)")
        L = latency_table(model).mean if latency is None else np.asarray(latency, float)
        require(L.shape == (len(INSTANCE_TYPES), BATCHES.size), "latency", L.shape,
                f"must be a {len(INSTANCE_TYPES)} x {BATCHES.size} table of ms")
        p = pmf(dist)
        # cumulative sums with a leading 0: entry t is the sum over sizes b < THRESHOLDS[t]
        f = np.concatenate([[0.0], np.cumsum(p)])
        base_time = np.concatenate([[0.0], np.cumsum(p * L[BASE])])
        tau = base_time / base_time[-1]
        aux_time = np.concatenate([np.zeros((L.shape[0], 1)), np.cumsum(p * L, axis=1)], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            qa = np.where(f > 0, 1000.0 * f / aux_time, np.nan)   # Q_a^k(s) = 1000/E[L_k | b<s]
        s = np.array([NO_LIMIT] + [_first_violation(L[k], qos) for k in _AUX], dtype=np.int64)
        return cls(model, qos, 1000.0 / base_time[-1], _frozen(s), _frozen(np.minimum(f, 1.0)),
                   _frozen(tau), _frozen(qa), source=f"latency table, QoS {qos:g} ms, {dist}")

    @classmethod
    def from_upstream(cls, model: str, path=None) -> BoundProfile:
        """Read the artifact's ``allocator_profile.json`` (``qps``, ``vio_batch``, ``small_ratio``,
        ``time_ratio``, ``all_batch``), the values behind the spec's worked examples."""
        check_model(model)
        data = _read_upstream(path)[model]
        s = np.full(len(INSTANCE_TYPES), NO_LIMIT, dtype=np.int64)
        f = np.full(THRESHOLDS.size, np.nan)
        tau = np.full(THRESHOLDS.size, np.nan)
        qa = np.full((len(INSTANCE_TYPES), THRESHOLDS.size), np.nan)
        for k in _AUX:
            entry = data[INSTANCE_TYPES[k]]
            s[k] = int(entry["vio_batch"])
            t = threshold_index(s[k])
            f[t], tau[t] = entry["small_ratio"], entry["time_ratio"]
            for thr, q in entry["all_batch"].items():
                qa[k, threshold_index(int(thr))] = q
        return cls(model, QOS_MS[model], float(data[INSTANCE_TYPES[BASE]]["qps"]), _frozen(s),
                   _frozen(f), _frozen(tau), _frozen(qa), source="upstream allocator_profile.json")


def _first_violation(row: np.ndarray, qos: float) -> int:
    """Smallest size whose mean latency exceeds ``qos``; :data:`NO_LIMIT` if none does."""
    over = np.flatnonzero(row > qos)
    return int(BATCHES[over[0]]) if over.size else NO_LIMIT


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _read_upstream(path=None) -> dict:
    if path is None:
        from infsched.report import find_data_dir
        path = find_data_dir() / "profiles" / "kairos_allocator_profile.json"
    with open(path) as fh:
        return json.load(fh)


class UpperBound(NamedTuple):
    """Eq. 15 per configuration: ``value`` (QPS) and ``scenario`` (1: base is the bottleneck,
    2: aux is the bottleneck, 0: no aux instance, so ``u·Q_b``, or no base instance, so 0)."""

    value: np.ndarray
    scenario: np.ndarray


def _as_configs(configs) -> np.ndarray:
    arr = np.asarray(configs)
    if arr.ndim == 1:
        arr = arr[None, :]
    require(arr.ndim == 2 and arr.shape[1] == len(INSTANCE_TYPES), "configs", arr.shape,
            "must be an (n, 4) array of instance counts (g4dn, c5n, r5n, t3)")
    require(bool(np.all(arr >= 0)) and bool(np.all(arr == np.round(arr))), "configs",
            "<array>", "must hold whole numbers >= 0")
    return arr.astype(np.int64)


def upper_bound(profile: BoundProfile, configs) -> UpperBound:
    """Eq. 15 for every row ``x = (u, v_1, v_2, v_3)`` of an ``(n, 4)`` array, vectorised.

    Several aux types (Eqs. 14–15): ``s' = max_k s_k`` over the present types (``v_k > 0``),
    ``f' = P(b < s')``, ``τ'`` at ``s'``, and every present type's ``Q_a^k(s')``, optimistic for
    the weaker types, exactly as the artifact. With ``A = Σ_k v_k Q_a^k(s')``, the base rate on
    the large queries ``u·Q_b^{s'+} = u·Q_b (1−f')/(1−τ')`` and ``C = (1−f')/f'·A`` (Eq. 14):

    - Scenario 1 (``u·Q_b^{s'+} ≤ C``, Eq. 12): ``u·Q_b^{s'+} / (1 − f')``;
    - Scenario 2 (Eq. 13): ``A/f' + (u·Q_b^{s'+} − C)/(u·Q_b^{s'+}) · u·Q_b``.

    Edge cases: no aux gives ``u·Q_b`` (homogeneous); ``u = 0`` gives 0 (such configurations
    are excluded from the search space); ``f' = 0`` (aux serves nothing) gives ``u·Q_b``;
    ``f' = 1`` (aux serves every size) gives ``A + u·Q_b``, the limit of Scenario 2.
    """
    x = _as_configs(configs)
    u, v = x[:, BASE].astype(float), x[:, _AUX]
    present = v > 0
    has_aux = present.any(axis=1)
    # s' over the present aux types; rows without aux get a dummy threshold (masked below)
    s_prime = np.where(present, profile.s[_AUX][None, :], 0).max(axis=1)
    t = threshold_index(np.where(has_aux, s_prime, NO_LIMIT))
    f, tau = profile.f[t], profile.tau[t]
    qa = profile.qa[_AUX][:, t].T                       # (n, 3): Q_a^k(s') per aux type
    A = np.where(present, v * np.nan_to_num(qa), 0.0).sum(axis=1)
    missing = has_aux & (np.isnan(f) | np.isnan(tau) | (present & np.isnan(qa)).any(axis=1))
    missing &= ~(f == 0)                                # f' = 0: Q_a is never used
    if missing.any():
        bad = x[np.flatnonzero(missing)[0]]
        raise ConfigError(f"profile ({profile.source}) lacks Q_a/f/tau at s' for config "
                          f"{tuple(bad.tolist())}: build it with BoundProfile.from_latency")
    with np.errstate(divide="ignore", invalid="ignore"):
        large = u * profile.q_base * (1.0 - f) / (1.0 - tau)        # u·Q_b^{s'+}
        C = (1.0 - f) / f * A                                        # Eq. 14
        scen1 = large / (1.0 - f)                                    # Eq. 12
        scen2 = A / f + (large - C) / large * u * profile.q_base     # Eq. 13
    mid = (f > 0) & (f < 1)
    is1 = mid & (large <= C)
    value = np.where(is1, scen1, scen2)
    value = np.where(f >= 1, A + u * profile.q_base, value)
    value = np.where(f <= 0, u * profile.q_base, value)
    scenario = np.where(is1 | (f <= 0), 1, 2)
    value = np.where(has_aux, value, u * profile.q_base)
    scenario = np.where(has_aux, scenario, 0)
    value = np.where(u > 0, value, 0.0)
    scenario = np.where(u > 0, scenario, 0)
    return UpperBound(value, scenario.astype(np.int64))


def upper_bound_one(profile: BoundProfile, x) -> tuple[float, int]:
    """Eq. 15 for one configuration: ``(UB in QPS, scenario)``."""
    res = upper_bound(profile, check_config(x)[None, :])
    return float(res.value[0]), int(res.scenario[0])


def fluid_lp_bound(model: str, config, qos_ms: float | None = None,
                   dist: BatchDist = LOGNORMAL_MIX, latency: np.ndarray | None = None,
                   limits=None) -> float:
    """The fluid LP bound of spec pitfall 11 (not in the paper), solved with HiGHS.

    Variables ``y_{b,k} ≥ 0``: the QPS of size-``b`` queries sent to type ``k``, and ``λ``.
    ``max λ`` s.t. ``Σ_k y_{b,k} = λ p(b)`` for every size, ``y_{b,k} = 0`` where
    ``L(k, b) > T_qos`` or ``n_k = 0``, and ``Σ_b y_{b,k} L(k, b)/1000 ≤ n_k`` (type ``k``'s
    instances are busy at most all of the time). Any policy meeting QoS on every query with
    mean service times carries at most ``λ*`` QPS. Returns ``λ*`` (QPS); 0 if some size with
    ``p(b) > 0`` has no type that can serve it.

    ``limits`` (4 sizes, optional) replaces the QoS rule: type ``k`` may serve ``b < limits[k]``.
    With every present aux type's limit set to ``s'`` this is the relaxation Eq. 15 assumes,
    and Eq. 15 is one of its feasible allocations (so never above it).
    """
    from infsched.optim import solve_lp
    check_model(model)
    x = check_config(config)
    qos = float(QOS_MS[model] if qos_ms is None else qos_ms)
    require(np.isfinite(qos) and qos > 0, "qos_ms", qos_ms, "must be a number > 0 (ms)")
    L = latency_table(model).mean if latency is None else np.asarray(latency, float)
    p = pmf(dist)
    if limits is None:
        eligible = L.T <= qos
    else:
        lim = np.asarray(limits)
        require(lim.shape == (len(INSTANCE_TYPES),), "limits", limits,
                "must give one size limit per instance type (4)")
        eligible = BATCHES[:, None] < lim[None, :]
    # only (b, k) pairs that may carry load become variables; the last variable is λ
    bi, ki = np.nonzero(eligible & (x[None, :] > 0))
    nb, nv = BATCHES.size, bi.size + 1
    sizes = np.flatnonzero(p > 0)
    if not np.all(np.isin(sizes, bi)):
        return 0.0
    A_eq = np.zeros((nb, nv))
    A_eq[bi, np.arange(bi.size)] = 1.0
    A_eq[:, -1] = -p
    A_ub = np.zeros((len(INSTANCE_TYPES), nv))
    A_ub[ki, np.arange(bi.size)] = L[ki, bi] / 1000.0
    c = np.zeros(nv)
    c[-1] = -1.0
    sol = solve_lp(c, A_ub=A_ub, b_ub=x.astype(float), A_eq=A_eq, b_eq=np.zeros(nb),
                   name=f"fluid LP bound ({model}, {tuple(x.tolist())})")
    return float(sol.x[-1])
