"""The papers' own systems expressed on the neutral simulator (issue 23: "on each paper's own
scenario, the neutral simulator with that paper's policy gives the paper engine's numbers")."""

from __future__ import annotations

import numpy as np

from ..errors import require
from ..tad.model import SystemParams
from .zoo import Zoo

__all__ = ["tad_system"]


def tad_system(params: SystemParams, n: int) -> tuple[Zoo, tuple[str, ...]]:
    """TAD paper Section 2's system of ``n`` servers: class k is a model with accuracy ``a_k``
    and batch-1 service time ``1 / mu_k`` (the TAD model has no batching), held by
    ``alpha_k n`` workers. Returns the zoo and the ``worker_models`` of :class:`ServingConfig`.
    Times are in the paper's units (read the simulator's "ms" as those units)."""
    sizes = params.class_sizes(n)
    require(int(sizes.sum()) == n, "n", n, "alpha_k n must add up to n")
    names = tuple(f"class{k + 1}" for k in range(params.K))
    zoo = Zoo(names, np.asarray(params.a), (1.0 / params.mu_arr)[:, None])
    workers = tuple(name for name, s in zip(names, sizes) for _ in range(int(s)))
    return zoo, workers
