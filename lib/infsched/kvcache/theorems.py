"""The KV-cache paper's theorems checked on their instances: Thm 4.1's lower bound and Thm 4.3's
equal-length ratio with App. B.3's bounds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.kvcache import hindsight, instances
from infsched.kvcache.model import check_schedule
from infsched.kvcache.policies import mc_sf

__all__ = ["theorem_41_table", "claims_theorem_41", "theorem_43_table", "claims_theorem_43"]


def theorem_41_table(Ms=(100, 400, 1600, 6400)) -> pd.DataFrame:
    """Thm 4.1: MC-SF on the lower-bound instance against a feasible schedule (an upper bound
    on OPT), beside the theorem's √M / 28."""
    rows = []
    for M in Ms:
        inst = instances.theorem_41(M)
        tel = check_schedule(inst, mc_sf(inst)).require().tel
        ub, starts = instances.theorem_41_opt_bound(M)
        check_schedule(inst, starts).require()
        rows.append({"M": M, "n": inst.n, "tel_mcsf": tel, "opt_upper": ub, "ratio": tel / ub,
                     "sqrt_M_over_28": np.sqrt(M) / 28})
    return pd.DataFrame(rows)


def claims_theorem_41(t41: pd.DataFrame) -> dict:
    """Thm 4.1: the ratio is at least √M/28 at every M, and grows like √M (× 2 per 4× M; the
    mean factor between consecutive M of the table)."""
    growth = t41["ratio"].to_numpy()[1:] / t41["ratio"].to_numpy()[:-1]
    return {"ratio_ge_bound": bool((t41["ratio"] >= t41["sqrt_M_over_28"]).all()),
            "growth_per_4x": float(np.mean(growth))}


def theorem_43_table(configs=((50, 1, 1, 4), (40, 2, 3, 10), (30, 3, 5, 20), (25, 1, 8, 18),
                              (60, 2, 2, 9))) -> pd.DataFrame:
    """Thm 4.3, equal lengths: MC-SF against the LP bound and the App. B.3 upper bounds, with
    B.3's dual certificate summed as it is defined and in the paper's closed form."""
    rows = []
    for n, s, o, M in configs:
        inst = instances.equal_lengths(n, s, o, M)
        tel = check_schedule(inst, mc_sf(inst)).require().tel
        tight, loose = instances.equal_lengths_bound(n, s, o, M)
        dual, closed = instances.equal_lengths_dual(n, s, o, M)
        lp = hindsight.lp_bound(inst)
        rows.append({"n": n, "s": s, "o": o, "M": M, "tel_mcsf": tel, "lp_bound": lp,
                     "ratio_to_lp": tel / lp, "b3_bound": tight, "b3_loose": loose,
                     "dual_sum": dual, "dual_closed_form": closed})
    return pd.DataFrame(rows)


def claims_theorem_43(t43: pd.DataFrame) -> dict:
    """Thm 4.3 (equal lengths): MC-SF within 4 of the LP bound (so of OPT); B.3's bound on
    TEL(MC-SF) holds; the closed-form dual is a lower bound (it is not if it exceeds TEL(MC-SF),
    which is at least OPT)."""
    return {"ratio_le_4": bool((t43["ratio_to_lp"] <= 4).all()),
            "b3_bound_holds": bool((t43["tel_mcsf"] <= t43["b3_bound"] + 1e-9).all()),
            "closed_form_dual_valid": bool((t43["dual_closed_form"] <= t43["tel_mcsf"]).all())}
