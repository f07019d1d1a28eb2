"""Fig. 11's "80 % of decisions" read as a share of the policy's states (issue 32).

§4.3.2 says variable-batching policies "select the maximum batch size b = n in 80% of decisions",
App. D that variable batching "selects maximum batch size ... in 80% of its decisions". A policy
is a table from MDP states to actions (the artifact stores "a dictionary mapping states of the
MDP to actions"), so "decisions" may mean the table's entries or the decisions taken in a run.
The chapter's ``full_batch_share`` counts the decisions of its simulated runs (every batch,
including those taken with one query queued, where ``b = n`` is the only choice);
:func:`state_full_batch_share` counts the policy's own entries: the states ``(n, T_j)`` with
``n >= 1`` (the overflow state excluded) whose action serves the whole queue. It is new code beside
the chapter's sweeps: the policies come from the same cached solves as Fig. 11.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.ramsis.points import policies
from infsched.ramsis.scales import get_scale

__all__ = ["policy_state_shares", "state_full_batch_share"]


def policy_state_shares(batch: np.ndarray) -> tuple[float, float]:
    """For one policy's ``batch[n, j]`` (row 0, the empty queue, unused): the share of states
    with ``n >= 1`` whose batch is ``n``, and the same among states with ``n >= 2`` (where a
    smaller batch could be chosen)."""
    b = np.asarray(batch)
    n = np.arange(b.shape[0])[:, None] * np.ones((1, b.shape[1]), dtype=int)
    full = b == n
    one = n >= 1
    two = n >= 2
    return float(full[one].mean()), float(full[two].mean())


def state_full_batch_share(f11: pd.DataFrame, scale: str = "default", *, workers: int = 60,
                           slo_ms: float = 150.0, profile: str = "image",
                           n_jobs: int | None = None, cache=None) -> dict:
    """The share of policy states that take the whole queue, pooled over the variable-batching
    policies of the loads where Fig. 11 plots variable batching for ``profile`` (every state
    weighs the same): ``{"share": %, "share_n2": % among n >= 2, "policies": count}``; NaN
    shares where no load is plotted."""
    sc = get_scale(scale)
    from infsched.ramsis.model_sets import get_profile
    n_models = get_profile(profile).n_models
    v = f11[(f11["batching"] == "variable") & f11["plotted"]]
    if "models" in v:
        v = v[v["models"] == n_models]
    loads = sorted(float(x) for x in v["load_qps"])
    if not loads:
        return {"share": np.nan, "share_n2": np.nan, "policies": 0}
    pol = policies(profile, slo_ms, workers, loads, d=sc.d, batching="variable", n_jobs=n_jobs,
                   cache=cache)
    full = one = full2 = two = 0
    for batch in pol.loc[pol["feasible"], "batch"]:
        b = np.asarray(batch)
        n = np.broadcast_to(np.arange(b.shape[0])[:, None], b.shape)
        full += int((b == n)[n >= 1].sum()); one += int((n >= 1).sum())
        full2 += int((b == n)[n >= 2].sum()); two += int((n >= 2).sum())
    return {"share": 100.0 * full / one if one else np.nan,
            "share_n2": 100.0 * full2 / two if two else np.nan,
            "policies": int(pol["feasible"].sum())}
