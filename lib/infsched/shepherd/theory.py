"""Shepherd's theory in numbers: FLEX's competitive ratios (Appendix B), the model-affinity
metric (§5.2, Eq. 4) and the non-preemptive lower bound (Theorem A.1, Eq. 5).

Competitive ratios. The paper bounds FLEX by a max-min program over assignment weights
``x1 + x2 + x3 <= 1`` and an adversarial fraction ``p ∈ [0, 1]`` of the optimum's batches
still queued:

- single GPU, single model (Eq. 25, minimised over x and λ in Eq. 26)::

      c_sgsm = 1 / min_p max( (λ-1)/λ · min(p·x1/λ, x2), (1-p)·x3 )

- multi GPU, multi model (Eq. 47)::

      c_mgmm = 1 / ( (λ-1)/λ · min_p max( min(p·x1/λ, p·x1/K, x2/K), (1-p)·x3 ) )

The paper solves them "via numerical methods" and reports 10.81 at λ ≈ 2.38 and 12.62·K at
λ ≈ 3.03. This module computes both programs two ways, which tests hold to each other:

1. :func:`c_sgsm_numeric` / :func:`c_mgmm_numeric`: the raw program — the worst ``p`` on a
   fine grid, the best ``x`` by Nelder–Mead over the simplex (several starts);
2. :func:`c_sgsm` / :func:`c_mgmm`: the closed forms of the spec's derivation [ours]
   (optimise ``p`` first, ``v = min(ab/(a+b), cap)``, then balance the weights)::

      c_sgsm(λ)    = (λ/√(λ-1) + 1)² + λ/(λ-1)            min 10.873 at λ = 2.29
      c_mgmm(λ, K) = λ/(λ-1) · ((√max(λ, K) + 1)² + K)    K = 1: min 12.672 at λ = 2.82

The paper's constants reproduce to within 0.6 %; the optimum is flat in λ (spec §2.3).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from infsched.errors import one_of, require
from infsched.shepherd.model import ModelSet

__all__ = ["c_sgsm", "c_mgmm", "c_sgsm_numeric", "c_mgmm_numeric", "best_lambda",
           "affinity", "affinity_K", "thm_a1_bound", "thm_a1_lower_bound", "RATIOS",
           "PAPER_RATIOS"]

#: the two settings whose ratio is computed: single-GPU single-model, multi-GPU multi-model
RATIOS = ("sgsm", "mgmm")
#: the paper's reported optima: setting -> (λ, c)  (Theorem B.1; Theorem 5.2 = B.3 with K = 1)
PAPER_RATIOS = {"sgsm": (2.38, 10.81), "mgmm": (3.03, 12.62)}

#: points of the adversary's p-grid: the grid's error on min_p is at most x3/(P_GRID - 1)
P_GRID = 20_001


def _check_lambda(lam: float) -> float:
    require(isinstance(lam, (int, float, np.floating, np.integer)) and math.isfinite(lam)
            and lam > 1, "lam", lam, "must be a finite preemption threshold > 1 (Eq. 26: 1 < λ)")
    return float(lam)


def _check_K(K: float) -> float:
    require(isinstance(K, (int, float, np.floating, np.integer)) and math.isfinite(K) and K >= 1,
            "K", K, "must be a finite affinity >= 1 (Eq. 4; K = 1 for identical models)")
    return float(K)


# --------------------------------------------------------------------------------------------
# Closed forms [ours: the spec's derivation from Eqs. 25 and 47]
# --------------------------------------------------------------------------------------------

def c_sgsm(lam: float) -> float:
    """Eq. 25 minimised over ``x1 + x2 + x3 <= 1`` in closed form [ours]:
    ``(λ/√(λ-1) + 1)² + λ/(λ-1)``.

    Derivation: for fixed x the worst p equalises the increasing term ``A·p`` (A = a·x1/λ,
    a = (λ-1)/λ) and the decreasing ``B·(1-p)`` (B = x3), unless the cap ``C = a·x2`` binds:
    ``v = min(AB/(A+B), C)``. At the best x the cap just binds, and minimising
    ``1/A + 1/B`` over ``x1 + x3 = 1 - x2`` gives the formula.
    """
    lam = _check_lambda(lam)
    return (lam / math.sqrt(lam - 1) + 1) ** 2 + lam / (lam - 1)


def c_mgmm(lam: float, K: float = 1.0) -> float:
    """Eq. 47 minimised over ``x1 + x2 + x3 <= 1`` in closed form [ours]:
    ``λ/(λ-1) · ((√max(λ, K) + 1)² + K)``.

    Same derivation as :func:`c_sgsm`: ``min(p·x1/λ, p·x1/K) = p·x1/max(λ, K)``, the cap is
    ``x2/K`` and the factor ``(λ-1)/λ`` sits outside the min over p. With K = 1 this is the
    paper's Theorem 5.2 constant (12.672 at λ = 2.82; the paper reports 12.62 at 3.03).
    """
    lam, K = _check_lambda(lam), _check_K(K)
    return lam / (lam - 1) * ((math.sqrt(max(lam, K)) + 1) ** 2 + K)


# --------------------------------------------------------------------------------------------
# The raw max-min programs, solved numerically (Eqs. 25-26 and 47)
# --------------------------------------------------------------------------------------------

_P = np.linspace(0.0, 1.0, P_GRID)


def _sgsm_value(x: np.ndarray, lam: float, K: float) -> float:
    """``min_p max(...)`` of Eq. 25 at weights x (K unused: single model)."""
    x1, x2, x3 = x
    a = (lam - 1) / lam
    return float(np.maximum(a * np.minimum(_P * x1 / lam, x2), (1 - _P) * x3).min())


def _mgmm_value(x: np.ndarray, lam: float, K: float) -> float:
    """``(λ-1)/λ · min_p max(...)`` of Eq. 47 at weights x."""
    x1, x2, x3 = x
    inner = np.minimum(np.minimum(_P * x1 / lam, _P * x1 / K), x2 / K)
    return (lam - 1) / lam * float(np.maximum(inner, (1 - _P) * x3).min())


def _simplex(u: np.ndarray) -> np.ndarray:
    """Map R² onto ``x1 + x2 + x3 = 1``, x > 0 (softmax). The budget binds at the optimum
    because each program's value is non-decreasing in every x_i."""
    e = np.exp(np.concatenate([u, [0.0]]) - max(0.0, float(np.max(u))))
    return e / e.sum()


def _solve_program(value: Callable[[np.ndarray, float, float], float], lam: float,
                   K: float) -> tuple[float, np.ndarray]:
    """``max_x value(x)`` by Nelder–Mead from several starts; returns (c = 1/value, x)."""
    best_v, best_x = -math.inf, np.full(3, 1 / 3)
    starts = ([0.0, 0.0], [1.0, -0.5])
    for s in starts:
        res = minimize(lambda u: -value(_simplex(u), lam, K), np.asarray(s, dtype=float),
                       method="Nelder-Mead",
                       options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 2000})
        # restart once from the answer: Nelder-Mead stalls on the program's kinks
        res = minimize(lambda u: -value(_simplex(u), lam, K), res.x, method="Nelder-Mead",
                       options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 2000})
        if -res.fun > best_v:
            best_v, best_x = -float(res.fun), _simplex(res.x)
    return 1.0 / best_v, best_x


def c_sgsm_numeric(lam: float) -> float:
    """Eqs. 25–26 at fixed λ, solved numerically from the raw program: the adversary's p on a
    20,001-point grid, the weights x by Nelder–Mead over the simplex. Agrees with
    :func:`c_sgsm` to ~1e-4 relative."""
    return _solve_program(_sgsm_value, _check_lambda(lam), 1.0)[0]


def c_mgmm_numeric(lam: float, K: float = 1.0) -> float:
    """Eq. 47 at fixed λ and K, solved numerically like :func:`c_sgsm_numeric`."""
    return _solve_program(_mgmm_value, _check_lambda(lam), _check_K(K))[0]


def best_lambda(which: str = "mgmm", K: float = 1.0, method: str = "closed",
                lam_max: float = 20.0) -> tuple[float, float]:
    """``(λ*, c*)``: the preemption threshold minimising the ratio (Eq. 26, and its Eq. 47
    analogue) over ``1 < λ <= lam_max``.

    ``which``: ``"sgsm"`` (Thm B.1; paper 10.81 at 2.38) or ``"mgmm"`` (Thm 5.2 / B.3; paper
    12.62 at 3.03 for K = 1). ``method="closed"`` minimises the closed form, ``"numeric"`` the
    raw program (about a second). A coarse grid picks the basin, then a bounded scalar search
    refines it (the curve is flat near its minimum, so λ* is known to ~1e-3 only).
    """
    one_of("which", which, RATIOS)
    one_of("method", method, ("closed", "numeric"))
    K = _check_K(K)
    require(which == "mgmm" or K == 1.0, "K", K, "only applies to which='mgmm'")
    require(isinstance(lam_max, (int, float)) and lam_max > 1.5, "lam_max", lam_max,
            "must be > 1.5")
    if method == "closed":
        f = (lambda lam: c_sgsm(lam)) if which == "sgsm" else (lambda lam: c_mgmm(lam, K))
    else:
        f = (lambda lam: c_sgsm_numeric(lam)) if which == "sgsm" \
            else (lambda lam: c_mgmm_numeric(lam, K))
    grid = np.linspace(1.05, lam_max, 40 if method == "closed" else 16)
    vals = [f(lam) for lam in grid]
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(f, bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-6 if method == "closed" else 1e-3})
    return float(res.x), float(res.fun)


# --------------------------------------------------------------------------------------------
# Affinity (§5.2, Eq. 4)
# --------------------------------------------------------------------------------------------

def affinity(models: ModelSet) -> np.ndarray:
    """The affinity matrix ``A[i, j] = A(m_i, m_j)`` of §5.2 (asymmetric)::

        A = (α_i + β_i)/α_j                                        if α_j + β_j - β_i <= 0
        A = min((α_i + β_i)/α_j, max(α_i/(α_j + β_j - β_i), α_i/α_j))  otherwise

    ``A(m, m) = 1`` (set on the diagonal: the formula gives 1 there whenever α > 0). A model
    with ``α_j = 0`` makes ``A[i, j] = inf`` for i ≠ j: batch size buys it nothing, so no
    finite affinity bounds the value/density trade-off.
    """
    a_i, b_i = models.alpha[:, None], models.beta[:, None]
    a_j, b_j = models.alpha[None, :], models.beta[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(a_j > 0, (a_i + b_i) / np.where(a_j > 0, a_j, 1.0), np.inf)
        denom = a_j + b_j - b_i
        ratio_a = np.where(a_j > 0, a_i / np.where(a_j > 0, a_j, 1.0), np.inf)
        other = np.minimum(first, np.maximum(a_i / np.where(denom > 0, denom, 1.0), ratio_a))
    A = np.where(denom <= 0, first, other)
    np.fill_diagonal(A, 1.0)
    return A


def affinity_K(models: ModelSet) -> float:
    """``K = max_{i,j} A(m_i, m_j)`` (Eq. 4). For the 16 CV models of Table 4, 357.14
    (i = RS269, j = RN18): FLEX's multi-model guarantee 12.62·K is vacuous there (§8)."""
    return float(affinity(models).max())


# --------------------------------------------------------------------------------------------
# Theorem A.1 (Eq. 5)
# --------------------------------------------------------------------------------------------

def thm_a1_bound(p: int, omega: float) -> float:
    """``max(1/p, ω/(p + (1-p)·ω))`` of Eq. 5: the ratio forced on a deterministic
    non-preemptive algorithm that serves X1 (p = 1) or not (p = 0), the worse of scenario A
    (nothing follows; ratio 1/p) and scenario B (ω requests follow; ratio ω/(p + (1-p)ω))."""
    require(p in (0, 1), "p", p, "must be 0 or 1 (a deterministic algorithm serves X1 or not)")
    require(isinstance(omega, (int, float)) and omega >= 1, "omega", omega, "must be >= 1")
    scen_a = math.inf if p == 0 else 1.0 / p
    return max(scen_a, omega / (p + (1 - p) * omega))


def thm_a1_lower_bound(omega: float) -> float:
    """The best a deterministic non-preemptive algorithm can do against Eq. 5's adversary:
    ``min_{p∈{0,1}} thm_a1_bound(p, ω) = ω`` → ∞ with ω. (The paper prints ``max_p``; the
    algorithm picks p, so the bound is the min over its choice.)"""
    return min(thm_a1_bound(0, omega), thm_a1_bound(1, omega))
