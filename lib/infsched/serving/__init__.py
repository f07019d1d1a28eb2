"""A neutral serving simulator for comparing the papers' policies on common ground (issue 23).

K workers, a central queue or per-worker queues, batches served in ``l(m, b)`` from a latency
profile, deadlines at arrival + SLO, and a small policy interface (route on arrival; drop, model
and batch when a worker is free; a preemption hook). See ``shared`` spec headtohead §1–4.
A reader's own policy plugs in by name: :mod:`infsched.serving.plugins`.

>>> from infsched.serving import ServingConfig, simulate
>>> cfg = ServingConfig("ramsis-image", workers=8, slo_ms=150, policy="batch-greedy")
>>> simulate(cfg, 100_000, load=0.7, seed=1).summary()  # doctest: +SKIP
"""

from .config import ServingConfig
from .plugins import UserPolicy
from .policies import POLICIES, QUEUES, ROUTINGS, SERVICES, Policy
from .sim import Result, simulate
from .zoo import Zoo

__all__ = ["ServingConfig", "UserPolicy", "Zoo", "Policy", "POLICIES", "QUEUES", "ROUTINGS", "SERVICES",
           "Result", "simulate"]
