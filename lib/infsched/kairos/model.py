"""The model of KAIROS (Li et al., HPDC'23), Sections 3 and 6: instance types, prices, models,
QoS targets, the latency of one query per (model, instance type, batch size), and the space of
configurations a budget allows.

A *configuration* is ``x = (n_0, n_1, n_2, n_3)``, the number of instances of each type in
:data:`INSTANCE_TYPES` (Table 4); type 0, the GPU g4dn.xlarge, is the *base* type, the only one
that meets every model's QoS at every batch size. ``cost(x) = Σ_k n_k p_k`` in $/hour.

Latencies are the upstream artifact's measurements (boringlee24/hpdc23-kairos, MIT licence,
© 2023 Baolin Li): per (model, type, batch b = 10, 20, …, 1000), 99 service-time samples in ms,
each execution + load time; their mean is the prediction ``L̂`` the paper's controller uses.
The files are ``data/profiles/kairos_latency.csv`` (summary) and
``data/profiles/kairos_latency_samples.csv.gz`` (the 99 samples).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache

import numpy as np
import pandas as pd

from infsched.errors import config_error, one_of, require
from infsched.limits import check_memory

__all__ = ["INSTANCE_TYPES", "SHORT_NAMES", "PRICES", "MODELS", "QOS_MS", "BATCHES", "BASE",
           "LatencyTable", "latency_table", "cost", "configurations", "homogeneous",
           "check_config", "check_budget", "check_model", "config_label"]

#: Table 4: the four instance types, base (GPU) first, in the order of a configuration vector
INSTANCE_TYPES = ("g4dn.xlarge", "c5n.2xlarge", "r5n.large", "t3.xlarge")
SHORT_NAMES = ("g4dn", "c5n", "r5n", "t3")
#: Table 4: AWS on-demand prices, $/hour
PRICES = np.array([0.526, 0.432, 0.149, 0.1664])
PRICES.setflags(write=False)
BASE = 0
#: Table 3: the five recommendation models and their p99 latency targets (ms)
MODELS = ("ncf", "rm2", "wnd", "mtwnd", "dien")
QOS_MS = {"ncf": 5.0, "rm2": 350.0, "wnd": 25.0, "mtwnd": 25.0, "dien": 35.0}
MODEL_NAMES = {"ncf": "NCF", "rm2": "RM2", "wnd": "WND", "mtwnd": "MT-WND", "dien": "DIEN"}
#: query (batch) sizes: the artifact rounds every query up to a multiple of 10, at most 1000
BATCHES = np.arange(10, 1001, 10)
BATCHES.setflags(write=False)
#: budget tolerance: a configuration costing B + 1e-9 still fits the budget B
BUDGET_TOL = 1e-9


def check_model(model: str) -> str:
    """Return ``model`` if it is one of Table 3's, else raise a ConfigError listing them."""
    return one_of("model", model, MODELS)


def check_budget(budget: float) -> float:
    """A budget in $/hour that buys at least one base instance (a number: a string is
    rejected, not converted)."""
    if isinstance(budget, (str, bytes, bool, np.bool_)):
        raise config_error("budget", budget, "must be a number ($/hour)")
    try:
        b = float(budget)
    except (TypeError, ValueError):
        raise config_error("budget", budget, "must be a number ($/hour)") from None
    require(np.isfinite(b) and b >= PRICES[BASE] - BUDGET_TOL, "budget", budget,
            f"must be at least the price of one base instance, {PRICES[BASE]} $/hour "
            f"({INSTANCE_TYPES[BASE]})")
    return b


def check_config(x, budget: float | None = None) -> np.ndarray:
    """Return ``x`` as an int64 vector of 4 instance counts, checking its shape and signs (and
    its cost against ``budget`` when given)."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise config_error("config", x, "must be 4 instance counts (g4dn, c5n, r5n, t3)") from None
    require(arr.shape == (4,), "config", x,
            "must be 4 instance counts, one per type (g4dn, c5n, r5n, t3)")
    require(bool(np.all(arr >= 0)) and bool(np.all(arr == np.round(arr))), "config", x,
            "must hold whole numbers >= 0")
    out = arr.astype(np.int64)
    if budget is not None:
        require(cost(out) <= check_budget(budget) + BUDGET_TOL, "config", tuple(out.tolist()),
                f"costs {cost(out):.4f} $/hour, above the budget {budget}")
    return out


def cost(x) -> float | np.ndarray:
    """``Σ_k n_k p_k`` in $/hour, for one configuration or an ``(n, 4)`` array of them."""
    return np.asarray(x) @ PRICES


def config_label(x) -> str:
    return "(" + ",".join(str(int(v)) for v in x) + ")"


@lru_cache(maxsize=8)
def _configurations(budget: float) -> np.ndarray:
    most = [int(np.floor((budget + BUDGET_TOL) / p)) for p in PRICES]
    cells = float(np.prod([k + 1.0 for k in most]))
    # the grid of every count vector, twice over (meshgrid, then the stacked copy), int64 x 4
    check_memory("budget", budget, 2 * cells * 4 * 8,
                 f"enumerating the configurations within {budget:g} $/hour")
    grid = np.stack(np.meshgrid(*[np.arange(k + 1) for k in most], indexing="ij"), -1)
    grid = grid.reshape(-1, 4)
    keep = (grid @ PRICES <= budget + BUDGET_TOL) & (grid[:, BASE] >= 1)
    out = np.ascontiguousarray(grid[keep], dtype=np.int64)  # meshgrid 'ij' is lexicographic
    out.setflags(write=False)
    return out


def configurations(budget: float = 2.5) -> np.ndarray:
    """Every configuration with at least one base instance within ``budget`` ($/hour), as an
    ``(n, 4)`` int array in lexicographic order: 331 at $2.5/h, 77,096 at $10/h.

    The artifact skips ``n_0 = 0`` because the CPU types alone cannot serve the largest queries.
    """
    return _configurations(check_budget(budget))


def homogeneous(budget: float = 2.5) -> tuple[np.ndarray, float]:
    """The homogeneous baseline: ``u* = ⌊B/p_0⌋`` base instances, and the factor
    ``B/(u* p_0)`` its throughput is scaled by to spend the whole budget (Section 8.1)."""
    b = check_budget(budget)
    u = int(np.floor((b + BUDGET_TOL) / PRICES[BASE]))
    return np.array([u, 0, 0, 0], dtype=np.int64), b / (u * PRICES[BASE])


@dataclass(frozen=True, eq=False)
class LatencyTable:
    """Service time of one query on one instance, per type and batch size, for one model.

    ``mean`` and ``p99`` are ``(4, 100)`` arrays in ms over :data:`INSTANCE_TYPES` ×
    :data:`BATCHES`; ``samples`` is ``(4, 100, 99)``, the artifact's 99 samples per cell.
    """

    model: str
    mean: np.ndarray
    std: np.ndarray
    p99: np.ndarray
    samples: np.ndarray = field(repr=False)

    @staticmethod
    def batch_index(b) -> np.ndarray:
        """Index into :data:`BATCHES` of batch size(s) ``b`` (multiples of 10 in 10..1000)."""
        arr = np.asarray(b)
        idx = arr // 10 - 1
        if np.any((arr % 10 != 0) | (idx < 0) | (idx >= BATCHES.size)):
            raise config_error("batch", b, "must be a multiple of 10 in 10..1000")
        return idx

    def latency(self, k: int, b) -> np.ndarray:
        """Mean service time (ms) of a query of size ``b`` on one instance of type ``k``."""
        return self.mean[k, self.batch_index(b)]

    def coefficient(self) -> np.ndarray:
        """Heterogeneity coefficients ``C_j = L̂(base, 1000) / L̂(j, 1000)`` (Def. 1), rounded to
        two decimals as the artifact does, so ``C_base = 1``."""
        return np.round(self.mean[BASE, -1] / self.mean[:, -1], 2)


@cache
def _read_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    from infsched.report import find_data_dir
    folder = find_data_dir() / "profiles"
    summary = pd.read_csv(folder / "kairos_latency.csv")
    samples = pd.read_csv(folder / "kairos_latency_samples.csv.gz")
    return summary, samples


@cache
def latency_table(model: str) -> LatencyTable:
    """The artifact's latency table for ``model`` (one of :data:`MODELS`)."""
    check_model(model)
    summary, samples = _read_tables()
    s = summary[summary["model"] == model]
    arrays = {}
    for col in ("mean_ms", "std_ms", "p99_ms"):
        wide = s.pivot(index="instance", columns="batch", values=col)
        arrays[col] = wide.loc[list(INSTANCE_TYPES), list(BATCHES)].to_numpy(float)
    sm = samples[samples["model"] == model]
    order = {t: i for i, t in enumerate(INSTANCE_TYPES)}
    k = sm["instance"].map(order).to_numpy()
    bi = sm["batch"].to_numpy() // 10 - 1
    smp = np.full((4, BATCHES.size, 99), np.nan)
    smp[k, bi, sm["sample"].to_numpy()] = sm["latency_ms"].to_numpy()
    if np.isnan(smp).any() or np.isnan(arrays["mean_ms"]).any():
        raise RuntimeError(f"latency data for {model!r} is incomplete: check data/profiles/")
    for arr in (*arrays.values(), smp):
        arr.setflags(write=False)
    return LatencyTable(model, arrays["mean_ms"], arrays["std_ms"], arrays["p99_ms"], smp)
