"""Every configuration of a budget ranked by Eq. 15, and KAIROS's one-shot pick (Sec. 5.2), as
tables; and the upper end the allowable-throughput bisection searches below.

The bound's inputs come from the artifact (the numbers KAIROS's own implementation ranks with)
or are derived here from the latency table (:func:`profile`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.errors import one_of, require
from infsched.kairos import bound, search
from infsched.kairos.batches import LOGNORMAL_MIX, BatchDist
from infsched.kairos.model import (
    MODELS,
    QOS_MS,
    SHORT_NAMES,
    config_label,
    configurations,
    cost,
    homogeneous,
)

__all__ = ["profile", "ub_table", "configs_of", "picks", "bisection_ub"]


def profile(model: str, source: str = "artifact", qos_scale: float = 1.0,
            dist: BatchDist = LOGNORMAL_MIX) -> bound.BoundProfile:
    """The upper bound's inputs: the artifact's own (``source="artifact"``, the default, the
    numbers KAIROS's implementation ranks with) or derived here from the latency table and the
    exact pmf (``"derived"``; needed for other QoS targets and batch distributions)."""
    one_of("source", source, ("artifact", "derived"))
    require(isinstance(qos_scale, (int, float, np.integer, np.floating))
            and not isinstance(qos_scale, (bool, np.bool_)) and np.isfinite(qos_scale)
            and qos_scale > 0, "qos_scale", qos_scale,
            "must be a positive number (a multiple of the model's QoS target)")
    if source == "artifact" and qos_scale == 1.0 and dist == LOGNORMAL_MIX:
        return bound.BoundProfile.from_upstream(model)
    return bound.BoundProfile.from_latency(model, QOS_MS[model] * qos_scale, dist)


def ub_table(model: str, budget: float = 2.5, source: str = "artifact", qos_scale: float = 1.0,
             dist: BatchDist = LOGNORMAL_MIX) -> pd.DataFrame:
    """Every configuration of ``budget`` with its cost, Eq. 15 bound, scenario and UB rank
    (1 = highest; ties by lexicographic order)."""
    X = configurations(budget)
    ub = bound.upper_bound(profile(model, source, qos_scale, dist), X)
    order = search.rank_order(X, ub.value)
    rank = np.empty(len(X), dtype=np.int64)
    rank[order] = np.arange(1, len(X) + 1)
    df = pd.DataFrame(X, columns=list(SHORT_NAMES))
    df.insert(0, "config", [config_label(x) for x in X])
    df["cost"] = cost(X)
    df["ub"] = ub.value
    df["scenario"] = ub.scenario
    df["ub_rank"] = rank
    return df.sort_values("ub_rank").reset_index(drop=True)


def configs_of(df: pd.DataFrame) -> np.ndarray:
    """The configurations of a table's rows, as an ``(n, 4)`` integer array."""
    return df[list(SHORT_NAMES)].to_numpy(np.int64)


def picks(budget: float = 2.5, source: str = "artifact", qos_scale: float = 1.0,
          dist: BatchDist = LOGNORMAL_MIX, models=MODELS) -> pd.DataFrame:
    """KAIROS's one-shot configuration per model (Sec. 5.2: top-1 if the top 3 share their base
    count, else the top-10 configuration of least summed squared distance), with its bound and
    the budget-scaled homogeneous bound."""
    rows = []
    for m in models:
        t = ub_table(m, budget, source, qos_scale, dist)
        X = configs_of(t)
        x, rule = search.select_config(X, t["ub"].to_numpy())
        row = t[t["config"] == config_label(x)].iloc[0]
        u, factor = homogeneous(budget)
        homo_ub = float(bound.upper_bound(profile(m, source, qos_scale, dist), u[None]).value[0])
        rows.append({"model": m, "pick": config_label(x), "rule": rule, "ub": row["ub"],
                     "ub_rank": int(row["ub_rank"]), "cost": row["cost"],
                     "top3_base": ", ".join(str(v) for v in t["g4dn"].head(3)),
                     "homogeneous": config_label(u), "homogeneous_ub_scaled": homo_ub * factor})
    return pd.DataFrame(rows)


def bisection_ub(model: str, x, qos_scale: float = 1.0, dist: BatchDist = LOGNORMAL_MIX) -> float:
    """The bisection's upper end (it searches up to 1.15 times this): the larger of Eq. 15
    under the artifact's and under the derived profile, so a configuration one of them
    underrates is still bracketed."""
    xs = np.asarray(x)[None]
    ubs = [bound.upper_bound(profile(model, s, qos_scale, dist), xs).value[0]
           for s in ("artifact", "derived")]
    return float(max(ubs))
