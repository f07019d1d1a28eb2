"""Validated configuration of one serving simulation (spec headtohead §1).

Every field is checked in ``__post_init__``; a bad value raises :class:`infsched.errors.ConfigError`
naming the parameter, the value and what is allowed, before any simulation starts. Defaults that
depend on the policy (queue, routing, model, batch cap) are resolved here, so the engine and the
simpy reference read one fully specified configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import config_error, one_of, require
from ..profiles import Profile
from .policies import POLICIES, QUEUES, ROUTINGS, SERVICES, Policy
from .zoo import Zoo

__all__ = ["ServingConfig"]


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


@dataclass(frozen=True, eq=False)
class ServingConfig:
    """K workers serving one query stream with deadline = arrival + ``slo_ms``.

    ``profile``: a profile name, :class:`infsched.profiles.Profile` or :class:`Zoo`.
    ``policy``: a name in :data:`POLICIES`. ``queue`` (``"central"`` or ``"per-worker"``),
    ``routing`` (``"least-loaded"``, ``"jiq"``, ``"random"``; per-worker queues only), ``model``
    (a model name, or ``"most-accurate"`` / ``"fastest"`` within the SLO at batch 1; for the
    fixed-model policies) and ``max_batch`` default to the policy's own.
    ``service``: ``"deterministic"`` (``l(m, b)``), ``"exponential"`` (mean ``l(m, b)``), or
    ``"jitter"`` (drawn from the profile's measured spread).
    """

    profile: "str | Profile | Zoo"
    workers: int
    slo_ms: float
    policy: str = "most-accurate"
    queue: str | None = None
    routing: str | None = None
    model: str | None = None
    max_batch: int | None = None
    service: str = "deterministic"

    def __post_init__(self) -> None:
        zoo = Zoo.of(self.profile)
        object.__setattr__(self, "profile", zoo)
        one_of("policy", self.policy, tuple(POLICIES))
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
        one_of("service", self.service, tuple(SERVICES))
        if self.service == "jitter":
            require(zoo.spread is not None, "service", self.service,
                    "needs a profile with a latency spread; this one has none")
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
        self.model_index

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
