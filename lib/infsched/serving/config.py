"""Validated configuration of one serving simulation (spec headtohead §1).

Every field is checked in ``__post_init__``; a bad value raises :class:`infsched.errors.ConfigError`
naming the parameter, the value and what is allowed, before any simulation starts. Defaults that
depend on the policy (queue, routing, model, batch cap) are resolved here, so the engine and the
simpy reference read one fully specified configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError, config_error, one_of, require
from ..profiles import Profile
from .policies import (
    FLEX_FAMILY,
    FLEX_LAMBDA,
    POLICIES,
    QUEUES,
    ROUTINGS,
    SERVICES,
    TAD_FAMILY,
    Policy,
)
from .zoo import Zoo

__all__ = ["ServingConfig"]


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


@dataclass(frozen=True, eq=False)
class ServingConfig:
    """K workers serving one query stream with deadline = arrival + ``slo_ms``.

    ``profile``: a profile name, :class:`infsched.profiles.Profile` or :class:`Zoo`.
    ``policy``: a name in :data:`POLICIES`. ``queue`` (``"central"`` or ``"per-worker"``),
    ``routing`` (``"least-loaded"``, ``"jiq"``, ``"random"``; or ``"tad"``, ``"tad-op"``,
    ``"r-jiq"``, each with its own policy; per-worker queues only), ``model``
    (a model name, or ``"most-accurate"`` / ``"fastest"`` within the SLO at batch 1; for the
    fixed-model policies) and ``max_batch`` default to the policy's own.
    ``service``: ``"deterministic"`` (``l(m, b)``), ``"exponential"`` (mean ``l(m, b)``), or
    ``"jitter"`` (drawn from the profile's measured spread).
    ``a_star`` and ``worker_models`` (one model name per worker: its server class) are the TAD
    paper's target and server layout; only its policies (``"tad"``, ``"tad-op"``, ``"r-jiq"``)
    take them, and they need both. ``class_p`` (one probability per server class, fastest class
    first) is R-JIQ's routing split p_RJIQ(λ); only ``"r-jiq"`` takes it, and needs it.
    ``mdp_policy`` is RAMSIS's worker policy for one load: an
    :class:`infsched.ramsis.mdp.Solution` or a ``(grid_ms, model, batch)`` triple with
    ``model[n, j]``, ``batch[n, j]`` for queue length ``n`` (row 0 unused) and slack cell ``j``;
    only ``"ramsis"`` takes it, and needs it. ``lam`` is FLEX's preemption threshold λ (a new
    batch preempts a running one of ``|B_c|`` queries iff it has at least ``λ |B_c|``; default
    3.03, Shepherd's Theorem 5.2); only ``"flex"`` and ``"flex-np"`` take it (FLEX-NP never
    preempts). FLEX and FLEX-NP run on a central queue.

    **Re-planning per load level** (the RAMSIS paper's load monitor, §6; its spec §1 rule 7):
    ``plan_loads`` (queries/s, increasing) are the load levels planned for; at every decision the
    engine estimates the rate as the arrivals in the last ``monitor_window_ms`` divided by the
    window, and uses the plan of the lowest level at or above the estimate (the highest above
    them all). Policy ``"ramsis"`` then takes one MDP policy per level in ``mdp_policy`` (a
    sequence, same slack grid); policy ``"fcfs"`` takes ``plan``, one ``(model, batch cap)`` per
    level (Jellyfish+ and ModelSwitching), its ``model`` and ``max_batch`` being ignored.
    Policy ``"r-jiq"`` takes one split per level in ``class_p`` (p_RJIQ of each level, TAD paper
    eq. 4), the one in force read at each routing decision; ``"flex"`` and ``"flex-np"`` take
    ``plan``, one ``(model, batch cap)`` per level (the model Shepherd's planner provisions for
    that level), read whenever BATCHGEN forms a batch (issue 33: every contender may estimate
    the load the same way).

    **Overheads** (issue 33, item 6; all 0 by default, which leaves every output unchanged):
    ``switch_ms`` is added to a batch whose model differs from the one its worker ran last (a
    worker's first batch pays nothing: every model is loaded); ``dispatch_ms`` passes between
    a decision and the batch's start (the worker is held from the decision; the policies decide
    as if it were 0); ``preempt_ms`` (FLEX only: Shepherd §6's preemption delay, the time the
    preempted batch runs on to its next exit point, Fig. 12) is added to a batch that preempts a
    running one.
    """

    profile: str | Profile | Zoo
    workers: int
    slo_ms: float
    policy: str = "most-accurate"
    queue: str | None = None
    routing: str | None = None
    model: str | None = None
    max_batch: int | None = None
    service: str = "deterministic"
    a_star: float | None = None
    worker_models: tuple[str, ...] | None = None
    class_p: tuple[float, ...] | None = None
    mdp_policy: object = None
    lam: float | None = None
    plan_loads: tuple[float, ...] | None = None
    plan: tuple | None = None
    monitor_window_ms: float = 500.0
    switch_ms: float = 0.0
    dispatch_ms: float = 0.0
    preempt_ms: float = 0.0

    def __post_init__(self) -> None:
        zoo = Zoo.of(self.profile)
        object.__setattr__(self, "profile", zoo)
        if self.policy not in POLICIES:
            from .plugins import unknown_policy
            from .policies import SELECT_USER

            raise unknown_policy(self.policy, "policy", [k for k, v in POLICIES.items() if v.select != SELECT_USER])
        pol = POLICIES[self.policy]
        require(_is_int(self.workers) and self.workers >= 1, "workers", self.workers,
                "must be an integer >= 1")
        require(isinstance(self.slo_ms, (int, float, np.floating)) and not isinstance(self.slo_ms, bool)
                and np.isfinite(self.slo_ms) and self.slo_ms > 0, "slo_ms", self.slo_ms,
                "must be a finite number of ms > 0")
        fastest_b1 = float(zoo.latency_ms[:, 0].min())
        require(self.slo_ms >= fastest_b1, "slo_ms", self.slo_ms,
                f"is below every model's batch-1 latency (the fastest, {zoo.names[zoo.fastest]}, "
                f"takes {fastest_b1:g} ms): no query could meet it")
        queue = pol.queue if self.queue is None else one_of("queue", self.queue, tuple(QUEUES))
        routing = pol.routing if self.routing is None else one_of("routing", self.routing, tuple(ROUTINGS))
        # the TAD paper's routings read Δ and the server classes: each comes with its policy only
        require((routing in TAD_FAMILY or self.policy in TAD_FAMILY) <= (routing == self.policy),
                "routing", routing, f"{routing!r} routing is policy {routing!r}'s own; policy "
                f"{self.policy!r} routes only that way" if self.policy in TAD_FAMILY else
                f"{routing!r} routing is policy {routing!r}'s own")
        one_of("service", self.service, tuple(SERVICES))
        if self.service == "jitter":
            require(zoo.spread is not None, "service", self.service,
                    "needs a profile with a latency spread; this one has none")
        self._check_overheads()
        self._check_plan_loads()
        cap = (pol.max_batch or zoo.max_batch) if self.max_batch is None else self.max_batch
        require(_is_int(cap) and 1 <= cap <= zoo.max_batch, "max_batch", self.max_batch,
                f"must be an integer in [1, {zoo.max_batch}] (the profile's batch sizes)")
        model = pol.model if self.model is None else self.model
        object.__setattr__(self, "queue", queue)
        object.__setattr__(self, "routing", routing)
        object.__setattr__(self, "max_batch", int(cap))
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "slo_ms", float(self.slo_ms))
        # resolved here so a wrong model name fails now, not in the engine
        if self.policy not in TAD_FAMILY:
            _ = self.model_index
        self._check_tad()
        self._check_ramsis()
        self._check_flex()

    def _check_overheads(self) -> None:
        for name in ("switch_ms", "dispatch_ms", "preempt_ms"):
            v = getattr(self, name)
            require(isinstance(v, (int, float, np.floating)) and not isinstance(v, bool)
                    and np.isfinite(v) and v >= 0, name, v, "must be a finite number of ms >= 0")
            object.__setattr__(self, name, float(v))
        require(self.preempt_ms == 0.0 or self.policy == "flex", "preempt_ms", self.preempt_ms,
                "only policy 'flex' preempts (leave it 0 for the others)")
        from .policies import SELECT_USER

        if POLICIES[self.policy].select == SELECT_USER:  # the plug-in loop has no overheads
            for name in ("switch_ms", "dispatch_ms"):
                require(getattr(self, name) == 0.0, name, getattr(self, name),
                        "a reader's policy runs without overheads (leave it 0)")

    def _check_plan_loads(self) -> None:
        pl = self.plan_loads
        require(isinstance(self.monitor_window_ms, (int, float, np.floating))
                and not isinstance(self.monitor_window_ms, bool) and np.isfinite(self.monitor_window_ms)
                and self.monitor_window_ms > 0, "monitor_window_ms", self.monitor_window_ms,
                "must be a finite number of ms > 0")
        if pl is None:
            require(self.plan is None, "plan", "<given>", "needs plan_loads (the load levels it plans for)")
            return
        require(self.policy in ("fcfs", "ramsis", "r-jiq") + FLEX_FAMILY, "plan_loads", pl,
                "only policies 'fcfs' (Jellyfish+, ModelSwitching), 'ramsis', 'r-jiq', 'flex' "
                "and 'flex-np' re-plan per load level")
        try:
            x = np.asarray(pl, dtype=float).ravel()
        except (TypeError, ValueError):
            x = np.empty(0)
        require(x.size >= 1 and bool(np.all(np.isfinite(x)) and np.all(x > 0))
                and bool(np.all(np.diff(x) > 0)), "plan_loads", pl,
                "must be finite loads (queries/s) > 0, strictly increasing")
        object.__setattr__(self, "plan_loads", tuple(x.tolist()))
        if self.policy in ("ramsis", "r-jiq"):
            require(self.plan is None, "plan", "<given>", f"policy {self.policy!r} takes its per-level "
                    + ("policies in mdp_policy" if self.policy == "ramsis" else "splits in class_p"))
            return
        zoo = self.zoo
        plan = self.plan
        ok = plan is not None and not isinstance(plan, str) and len(tuple(plan)) == x.size
        require(ok, "plan", plan, f"must hold one (model, batch cap) per load level ({x.size})")
        rows = []
        for row in plan:
            require(not isinstance(row, str) and len(tuple(row)) == 2, "plan", plan,
                    "must hold (model, batch cap) pairs")
            m, c = tuple(row)
            require(m in zoo.names, "plan", m, "unknown model; known: " + ", ".join(zoo.names))
            require(_is_int(c) and 1 <= c <= zoo.max_batch, "plan", c,
                    f"batch caps must be integers in [1, {zoo.max_batch}]")
            rows.append((m, int(c)))
        object.__setattr__(self, "plan", tuple(rows))

    def _check_flex(self) -> None:
        flex = self.policy in FLEX_FAMILY
        if not flex:
            require(self.lam is None, "lam", self.lam, "only policies 'flex' and 'flex-np' take it")
            return
        require(self.queue == "central", "queue", self.queue,
                f"policy {self.policy!r} runs on a central queue (FLEX's group queue)")
        lam = FLEX_LAMBDA if self.lam is None else self.lam
        require(isinstance(lam, (int, float, np.floating)) and not isinstance(lam, bool)
                and np.isfinite(lam) and lam > 1, "lam", self.lam,
                "must be a finite number > 1 (a preempting batch is lam times the running one)")
        object.__setattr__(self, "lam", float(lam))

    def _check_ramsis(self) -> None:
        ram = self.policy == "ramsis"
        require((self.mdp_policy is not None) == ram, "mdp_policy", type(self.mdp_policy).__name__,
                "policy 'ramsis' needs it" if ram else "only policy 'ramsis' takes it")
        if not ram:
            return
        levels = self.plan_loads is not None
        pols = self.mdp_policy
        if (levels and isinstance(pols, tuple) and len(pols) == 3
                and all(isinstance(x, np.ndarray) for x in pols) and pols[1].ndim == 3):
            # the checked form this method stores ((grid, (P, N+1, J), (P, N+1, J))): a copy of a
            # config (dataclasses.replace) passes it back, one policy per level
            pols = [(pols[0], pols[1][p], pols[2][p]) for p in range(pols[1].shape[0])]
        if levels:
            ok = not isinstance(pols, str) and hasattr(pols, "__len__") and len(pols) == len(self.plan_loads)
            require(ok, "mdp_policy", type(pols).__name__,
                    f"with plan_loads, must hold one policy per load level ({len(self.plan_loads)})")
            pols = list(pols)
        else:
            pols = [pols]
        triples = [self._one_mdp_policy(p) for p in pols]
        grid = triples[0][0]
        require(all(t[0].shape == grid.shape and np.array_equal(t[0], grid) and t[1].shape == triples[0][1].shape
                    for t in triples), "mdp_policy", "<policies>",
                "the per-level policies must share one slack grid and one shape")
        object.__setattr__(self, "mdp_policy", (np.ascontiguousarray(grid, np.float64),
                                                np.ascontiguousarray(np.stack([t[1] for t in triples]), np.int64),
                                                np.ascontiguousarray(np.stack([t[2] for t in triples]), np.int64)))

    def _one_mdp_policy(self, pol):
        """One RAMSIS policy as a checked ``(grid, model, batch)`` triple."""
        if hasattr(pol, "grid") and hasattr(pol, "model") and hasattr(pol, "batch"):
            pol = (pol.grid, pol.model, pol.batch)
        try:
            grid, model, batch = (np.asarray(x) for x in pol)
        except (TypeError, ValueError):
            raise config_error("mdp_policy", type(pol).__name__,
                               "must be a RAMSIS Solution or a (grid_ms, model, batch) triple") from None
        M, B = self.zoo.n_models, self.zoo.max_batch
        ok = (grid.ndim == 1 and grid.size >= 1 and model.ndim == 2 and model.shape[0] >= 2
              and model.shape[1] == grid.size and batch.shape == model.shape
              and bool(np.all(np.diff(grid) > 0)))
        require(ok, "mdp_policy", f"<grid {grid.shape}, model {model.shape}, batch {batch.shape}>",
                "must have model and batch of shape (N+1, len(grid)) and an increasing grid")
        rows = model[1:]
        require(bool(np.all((rows >= 0) & (rows < M))) and bool(np.all((batch[1:] >= 1) & (batch[1:] <= B))),
                "mdp_policy", "<table>", f"models must be in [0, {M - 1}] and batches in [1, {B}] "
                "(the zoo's models and batch sizes, in the profile's order)")
        return grid, model, batch

    def _check_tad(self) -> None:
        tad = self.policy in TAD_FAMILY
        for name in ("a_star", "worker_models"):
            given = getattr(self, name) is not None
            require(given == tad, name, getattr(self, name),
                    f"policy {self.policy!r} needs it" if tad
                    else "only policies " + ", ".join(map(repr, TAD_FAMILY)) + " take it")
        rjiq = self.policy == "r-jiq"
        require((self.class_p is not None) == rjiq, "class_p", self.class_p,
                "policy 'r-jiq' needs it" if rjiq else "only policy 'r-jiq' takes it")
        if not tad:
            return
        zoo = self.zoo
        wm = self.worker_models
        require(not isinstance(wm, str) and len(tuple(wm)) == self.workers, "worker_models", wm,
                f"must name one model per worker ({self.workers})")
        wm = tuple(wm)
        bad = sorted({m for m in wm if m not in zoo.names})
        require(not bad, "worker_models", bad, "unknown models; known: " + ", ".join(zoo.names))
        object.__setattr__(self, "worker_models", wm)
        a = self.a_star
        require(isinstance(a, (int, float, np.floating)) and not isinstance(a, bool)
                and np.isfinite(a), "a_star", a, "must be a finite accuracy (%)")
        best = max(float(zoo.accuracy[zoo.names.index(m)]) for m in wm)
        if a > best:
            raise InfeasibleError(f"a_star = {a!r} exceeds the most accurate worker model, {best:g}")
        if rjiq:
            n_cls = len(set(wm))
            splits = [self.class_p]
            if self.plan_loads is not None:  # one split per load level
                P = len(self.plan_loads)
                ok = not isinstance(self.class_p, str) and hasattr(self.class_p, "__len__") \
                    and len(self.class_p) == P
                require(ok, "class_p", self.class_p,
                        f"with plan_loads, must hold one split per load level ({P})")
                splits = list(self.class_p)
            rows = []
            for sp in splits:
                try:
                    p = np.asarray(sp, dtype=float).ravel() if not isinstance(sp, str) else np.empty(0)
                except (TypeError, ValueError):
                    p = np.empty(0)
                require(p.size == n_cls and bool(np.all(np.isfinite(p)) and np.all(p >= 0))
                        and abs(p.sum() - 1.0) <= 1e-9, "class_p", self.class_p,
                        f"must be {n_cls} probabilities (one per server class, fastest first) summing "
                        "to 1" + (", per load level" if self.plan_loads is not None else ""))
                rows.append(tuple(p.tolist()))
            object.__setattr__(self, "class_p", tuple(rows) if self.plan_loads is not None else rows[0])
        self.layout()  # fails now if the accuracies cannot be held exactly

    def layout(self) -> dict[str, np.ndarray]:
        """The engine's view of the workers: ``worker_model`` (K,), and for TAD the server
        classes (distinct worker models, fastest first): ``worker_class`` (K,), ``cls_start``
        (C+1,) and ``cls_members`` (K,) listing each class's workers in index order, and
        ``d`` (C,) = a_k − a* as int64 in units of 1/``scale`` (TAD's Δ is exact: a float Δ
        drifts and flips the allowed set, spec tad §3.0)."""
        K = self.workers
        none = dict(tup=np.zeros((0, 6), np.int64), cum_p=np.ones((1, 1)), grid=np.zeros(1),
                    pmodel=np.zeros((1, 1, 1), np.int64), pbatch=np.ones((1, 1, 1), np.int64),
                    fallback=np.array(self.zoo.fastest), plan_loads=np.zeros(0),
                    plan_model=np.zeros(0, np.int64), plan_cap=np.zeros(0, np.int64))
        if self.policy == "ramsis":
            none["grid"], none["pmodel"], none["pbatch"] = self.mdp_policy
        if self.plan_loads is not None:
            none["plan_loads"] = np.asarray(self.plan_loads, np.float64)
            if self.plan is not None:
                none["plan_model"] = np.array([self.zoo.names.index(m) for m, _ in self.plan], np.int64)
                none["plan_cap"] = np.array([c for _, c in self.plan], np.int64)
        if self.policy not in TAD_FAMILY:
            one = np.zeros(K, np.int64)
            return dict(worker_model=np.full(K, self.model_index, np.int64), worker_class=one,
                        cls_start=np.array([0, K], np.int64), cls_members=np.arange(K, dtype=np.int64),
                        d=np.zeros(1, np.int64), scale=np.array(1.0), **none)
        from ..tad.policies import accuracy_scale

        zoo = self.zoo
        wm = np.array([zoo.names.index(m) for m in self.worker_models], np.int64)
        classes = sorted(set(wm.tolist()), key=lambda m: (zoo.latency_ms[m, 0], m))
        wc = np.array([classes.index(m) for m in wm], np.int64)
        members = np.argsort(wc, kind="stable").astype(np.int64)
        start = np.searchsorted(wc[members], np.arange(len(classes) + 1)).astype(np.int64)
        acc = [float(zoo.accuracy[m]) for m in classes]
        scale = accuracy_scale(acc + [float(self.a_star)])
        require(scale is not None, "a_star", self.a_star,
                "it and the models' accuracies must have at most 6 decimals (Δ is kept exact)")
        d = np.array([round(x * scale) for x in acc], np.int64) - round(float(self.a_star) * scale)
        if self.policy == "tad-op":
            none["tup"] = self._tadop_tuples(classes, start)
        if self.policy == "r-jiq":  # (P, C): one cumulative split per load level (P = 1: told)
            none["cum_p"] = np.cumsum(np.atleast_2d(np.asarray(self.class_p, float)), axis=1)
            none["cum_p"][:, -1] = 1.0
        return dict(worker_model=wm, worker_class=wc, cls_start=start, cls_members=members, d=d,
                    scale=np.array(float(scale)), **none)

    def system_params(self):
        """The TAD paper's :class:`~infsched.tad.model.SystemParams` of the server classes
        (fastest first): ``mu_k = 1 / l(k, 1)`` per ms, ``a_k``, ``alpha_k`` = share of workers.
        TAD-OP's tuples and R-JIQ's split are computed on it."""
        from ..tad.model import SystemParams

        zoo = self.zoo
        wm = [zoo.names.index(m) for m in self.worker_models]
        classes = sorted(set(wm), key=lambda m: (zoo.latency_ms[m, 0], m))
        return SystemParams(mu=tuple(1.0 / float(zoo.latency_ms[m, 0]) for m in classes),
                            a=tuple(float(zoo.accuracy[m]) for m in classes),
                            alpha=tuple(wm.count(m) / len(wm) for m in classes))

    def _tadop_tuples(self, classes, start) -> np.ndarray:
        """TAD-OP's S*_opt as engine rows ``[proper, lo, hi, pick, pos.., neg..]``."""
        from ..tad.policies import tadop_tuples

        C = len(classes)
        tups = tadop_tuples(self.system_params(), float(self.a_star))
        out = np.zeros((len(tups), 4 + 2 * C), np.int64)
        for t, tp in enumerate(tups):
            out[t, :4] = (int(tp.proper), tp.lo, tp.hi, tp.pick)
            out[t, 4:4 + C] = tp.pos_mask
            out[t, 4 + C:] = tp.neg_mask
        return out

    @property
    def zoo(self) -> Zoo:
        return self.profile  # type: ignore[return-value]

    @property
    def spec(self) -> Policy:
        return POLICIES[self.policy]

    @property
    def model_index(self) -> int:
        """The fixed model of the fixed-model policies (and the default of the others)."""
        zoo = self.zoo
        if self.model == "worker":  # TAD: each worker's own model; the fallback is the fastest
            return zoo.fastest
        if self.model == "fastest":
            return zoo.fastest
        if self.model == "most-accurate":
            # __post_init__ ensured the fastest model fits, so this is never -1
            return zoo.most_accurate_within(self.slo_ms, 1)
        if self.model not in zoo.names:
            raise config_error("model", self.model, "must be 'most-accurate', 'fastest' or one of "
                               + ", ".join(zoo.names))
        return zoo.names.index(self.model)

    def capacity_qps(self) -> float:
        """Spec headtohead §1's capacity: K times the fastest model's best throughput at a batch
        size that fits the SLO (and ``max_batch``), in queries/s."""
        return self.zoo.capacity_qps(self.workers, self.slo_ms, self.max_batch)
