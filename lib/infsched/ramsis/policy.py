"""Policy tables: what a RAMSIS worker runs in each MDP state, for a grid of loads, and what a
load-granular baseline runs at each load (:class:`BaselineTable`).

The offline phase (:mod:`infsched.ramsis.mdp`) solves one MDP per load of a grid; the online
phase (spec §2.11, :mod:`infsched.ramsis.sim`) looks the action up per batch. This module holds
only the values both sides share, so the simulators depend on neither the solver nor the
baselines' searches (:mod:`infsched.ramsis.baselines`).

State ``(n, j)``: ``n`` queries in the worker's queue (1..N), and the slack of the earliest one
rounded *down* onto the grid, ``grid_ms[j] <= slack < grid_ms[j + 1]`` (``j = 0`` for any slack
below ``grid_ms[1]``, negative included). For ``n > N`` the worker serves all ``n`` queries with
the fallback (fastest) model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from infsched.errors import config_error, require

__all__ = ["PolicyTable", "BaselineTable"]


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """RAMSIS policies for one (model set, SLO, K) over a grid of loads.

    ``model[p, n, j]`` is the index (into the profile's models) of the model to run in state
    ``(n, j)`` under the policy for ``loads_qps[p]``, and ``batch[p, n, j]`` the batch size
    (``n`` under maximal batching). Row ``n = 0`` is unused (-1). ``expected_accuracy`` and
    ``expected_violation`` are the MDP's own estimates (spec §2.8), in % and as a fraction.
    """

    slo_ms: float
    workers: int
    grid_ms: np.ndarray
    loads_qps: np.ndarray
    model: np.ndarray
    batch: np.ndarray
    fallback: int
    expected_accuracy: np.ndarray
    expected_violation: np.ndarray

    def __post_init__(self) -> None:
        grid = np.asarray(self.grid_ms, dtype=float)
        loads = np.asarray(self.loads_qps, dtype=float).ravel()
        model = np.asarray(self.model)
        batch = np.asarray(self.batch)
        require(grid.ndim == 1 and grid.size >= 2 and grid[0] == 0.0
                and bool(np.all(np.diff(grid) > 0)) and np.isclose(grid[-1], self.slo_ms),
                "grid_ms", self.grid_ms, "must increase strictly from 0 to slo_ms")
        require(loads.size >= 1 and bool(np.all(np.diff(loads) > 0)) and bool(np.all(loads > 0)),
                "loads_qps", self.loads_qps, "must be positive and strictly increasing")
        require(model.ndim == 3 and model.shape[0] == loads.size and model.shape[2] == grid.size
                and model.shape[1] >= 2, "model", model.shape,
                f"must have shape (loads={loads.size}, N+1, J={grid.size})")
        require(batch.shape == model.shape, "batch", batch.shape, f"must have shape {model.shape}")
        require(isinstance(self.workers, (int, np.integer)) and self.workers >= 1, "workers",
                self.workers, "must be an integer >= 1")
        object.__setattr__(self, "grid_ms", grid)
        object.__setattr__(self, "loads_qps", loads)
        object.__setattr__(self, "model", model.astype(np.int32))
        object.__setattr__(self, "batch", batch.astype(np.int32))
        object.__setattr__(self, "expected_accuracy",
                           np.asarray(self.expected_accuracy, dtype=float).reshape(loads.size))
        object.__setattr__(self, "expected_violation",
                           np.asarray(self.expected_violation, dtype=float).reshape(loads.size))

    @property
    def n_max(self) -> int:
        """N: the largest queue length the MDP models."""
        return int(self.model.shape[1] - 1)

    def lookup(self, load_qps: float) -> int:
        """Index of the policy used at an estimated load: the lowest grid load >= it, or the
        highest grid load when the estimate is above every one (the artifact's rule, §1 rule 7)."""
        i = int(np.searchsorted(self.loads_qps, float(load_qps), side="left"))
        return min(i, self.loads_qps.size - 1)

    def slack_index(self, slack_ms: float) -> int:
        """Grid index of a slack, rounded down (0 for slack below ``grid_ms[1]``)."""
        return max(int(np.searchsorted(self.grid_ms, float(slack_ms), side="right")) - 1, 0)

    def at(self, p: int) -> PolicyTable:
        """The table restricted to the single policy ``p``."""
        s = slice(p, p + 1)
        return PolicyTable(self.slo_ms, self.workers, self.grid_ms, self.loads_qps[s],
                           self.model[s], self.batch[s], self.fallback,
                           self.expected_accuracy[s], self.expected_violation[s])


@dataclass(frozen=True, eq=False)
class BaselineTable:
    """A load-granular policy: at load ``loads_qps[p]`` run ``model[p]`` with batch cap ``cap[p]``.

    ``lookup`` applies the rule RAMSIS uses (§1 rule 7): the lowest grid load ``≥`` the
    estimate, or the highest grid load when the estimate is above every one.
    """

    name: str
    loads_qps: np.ndarray
    model: np.ndarray
    cap: np.ndarray

    def __post_init__(self) -> None:
        require(isinstance(self.name, str), "name", self.name, "must be a string")
        try:
            loads = np.asarray(self.loads_qps, dtype=float).ravel()
            model = np.asarray(self.model).ravel()
            cap = np.asarray(self.cap).ravel()
        except (TypeError, ValueError):
            raise config_error("loads_qps/model/cap", (self.loads_qps, self.model, self.cap),
                               "must be 1-D numeric sequences") from None
        require(loads.size >= 1 and bool(np.all(np.isfinite(loads)) and np.all(loads > 0))
                and bool(np.all(np.diff(loads) > 0)), "loads_qps", self.loads_qps,
                "must be non-empty, finite, positive and strictly increasing")
        for nm, arr, low in (("model", model, 0), ("cap", cap, 1)):
            require(arr.shape == loads.shape, nm, self.__dict__[nm],
                    f"must have one entry per load ({loads.size})")
            require(np.issubdtype(arr.dtype, np.integer)
                    or bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))),
                    nm, self.__dict__[nm], "must hold integers")
            require(bool(np.all(arr >= low)), nm, self.__dict__[nm], f"must be >= {low}")
        object.__setattr__(self, "loads_qps", loads)
        object.__setattr__(self, "model", model.astype(np.int64))
        object.__setattr__(self, "cap", cap.astype(np.int64))

    def lookup(self, load_qps: float) -> int:
        """Index of the entry used at an estimated load (lowest grid load ≥ it, else the last)."""
        i = int(np.searchsorted(self.loads_qps, float(load_qps), side="left"))
        return min(i, self.loads_qps.size - 1)

    def to_frame(self, profile=None) -> pd.DataFrame:
        """One row per load: load, model index (and name, accuracy if ``profile`` is given), cap."""
        df = pd.DataFrame({"load_qps": self.loads_qps, "model": self.model, "cap": self.cap})
        if profile is not None:
            df.insert(2, "model_name", [profile.models[m] for m in self.model])
            df.insert(3, "accuracy", np.asarray(profile.accuracy, float)[self.model])
        return df
