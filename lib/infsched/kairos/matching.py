"""KAIROS's query distribution (Section 5.1, Table 2, Eqs. 1–8): a min-cost bipartite matching of
pending queries to instances, solved by the Jonker–Volgenant algorithm the paper names
(``scipy.optimize.linear_sum_assignment``).

At a decision instant there are ``m`` pending queries and ``n`` instances (busy ones included).
``L_ij = r_j + L̂(type j, b_i)`` is query i's predicted latency on instance j (``r_j`` the
predicted remaining busy time), ``W_i`` the time query i has already waited, and ``C_j`` the
heterogeneity coefficient of instance j's type (Def. 1). The paper's problem (Eqs. 4–7)

    min Σ_ij C_j L_ij P_ij  s.t.  (L_ij + W_i) P_ij ≤ ξ T_qos,  one-to-one,  Σ P_ij = min(m, n)

folds the QoS constraint (5) into the cost (Eq. 8): a pair that would miss ``ξ T_qos`` costs
``C_j · 10 T_qos`` instead. The artifact's variant (``penalty="upstream"``) charges a constant
500 ms when the slack is under 2 % of ``T_qos`` and 1000 ms when QoS is missed, without ``C_j``,
and no penalty for a query already past its target.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from infsched.errors import one_of, require

__all__ = ["PENALTIES", "cost_matrix", "kairos_assign"]

PENALTIES = ("paper", "upstream")


def cost_matrix(L: np.ndarray, W: np.ndarray, C: np.ndarray, qos: float, xi: float = 0.98,
                penalty: str = "paper") -> np.ndarray:
    """The ``m × n`` matrix ``C_j L'_ij`` of Eq. 8 (``penalty="paper"``) or the artifact's
    constant-penalty variant (``penalty="upstream"``)."""
    L = np.asarray(L, dtype=float)
    W = np.asarray(W, dtype=float)[:, None]
    C = np.asarray(C, dtype=float)[None, :]
    if penalty == "paper":
        return C * np.where(L + W <= xi * qos, L, 10.0 * qos)
    one_of("penalty", penalty, PENALTIES)
    slack = qos - (L + W)
    cost = np.where(slack < 0, 1000.0, np.where(slack < 0.02 * qos, 500.0, C * L))
    return np.where(W >= qos, C * L, cost)


def kairos_assign(L: np.ndarray, W: np.ndarray, C: np.ndarray, qos: float, xi: float = 0.98,
                  penalty: str = "paper") -> tuple[np.ndarray, np.ndarray]:
    """Solve Eqs. 4–8: return ``(rows, cols)``, the ``min(m, n)`` matched (query, instance)
    pairs of least total cost.

    ``L`` is ``m × n`` (ms), ``W`` has length ``m`` (ms), ``C`` length ``n``; ``qos`` is
    ``T_qos`` (ms) and ``xi`` the safeguard ξ of Eq. 5 (the paper uses 0.98).
    """
    L = np.asarray(L, dtype=float)
    require(L.ndim == 2 and L.shape[0] >= 1 and L.shape[1] >= 1, "L", L.shape,
            "must be an m × n matrix with m, n >= 1")
    require(np.shape(W) == (L.shape[0],), "W", np.shape(W), f"must have length m = {L.shape[0]}")
    require(np.shape(C) == (L.shape[1],), "C", np.shape(C), f"must have length n = {L.shape[1]}")
    require(qos > 0, "qos", qos, "must be > 0 (ms)")
    require(0 < xi <= 1, "xi", xi, "must lie in (0, 1]")
    return linear_sum_assignment(cost_matrix(L, W, C, qos, xi, penalty))
