"""Lower bounds on the hindsight optimum that do not need a solver to finish.

A solver stopped by its budget leaves a best schedule (an upper bound on OPT) and some lower
bound; the true ratio TEL(MC-SF)/OPT then lies in ``[TEL/best, TEL/bound]``. Besides the solver's
own bound and the LP relaxation (:func:`infsched.kvcache.hindsight.lp_bound`), this module gives
a combinatorial bound that costs ``O(n log n)``.
"""

from __future__ import annotations

import numpy as np

from infsched.kvcache.model import Instance

__all__ = ["volume", "volume_bound"]


def volume(inst: Instance) -> np.ndarray:
    """Memory-time area of each request: ``vol_i = Σ_{j=1}^{o_i} (s_i + j) = s_i o_i + o_i(o_i + 1)/2``
    token-rounds, whatever its start (the volume of Lemma 4.7)."""
    o = inst.output
    return inst.prompt * o + o * (o + 1) // 2


def volume_bound(inst: Instance) -> float:
    """The area bound: ``OPT ≥ Σ_k max(a_min + ⌈V_k / M⌉, e_(k)) − Σ_i a_i``.

    Here ``V_k`` is the sum of the ``k`` smallest volumes (:func:`volume`), ``e_(k)`` the ``k``-th
    smallest of ``a_i + o_i`` and ``a_min = min_i a_i``.

    Proof. Take any feasible schedule and sort its completion times, ``c_(1) ≤ … ≤ c_(n)``.
    Request ``i`` holds memory only at rounds ``p_i + 1 … c_i``, all in ``(a_min, c_i]``, and its
    memory over those rounds sums to ``vol_i``. The ``k`` requests that complete first all finish
    by ``c_(k)``, so their whole area lies in the ``c_(k) − a_min`` rounds ``(a_min, c_(k)]``, where
    memory is at most ``M`` per round (constraint 3): ``M (c_(k) − a_min) ≥`` their total volume
    ``≥ V_k``, and ``c_(k)`` is an integer. Separately ``c_i ≥ a_i + o_i`` for every ``i``, and the
    ``k``-th smallest of numbers each at least its own bound is at least the ``k``-th smallest
    bound, so ``c_(k) ≥ e_(k)``. Summing over ``k``, ``Σ_i c_i ≥ Σ_k max(a_min + ⌈V_k/M⌉, e_(k))``,
    and TEL is ``Σ_i c_i − Σ_i a_i``. This holds for every feasible schedule, hence for the optimum.

    For requests all at time 0 with equal prompts it is the single-machine relaxation behind the
    paper's LP (9) in Lemma 4.7 (there solved greedily by smallest ``o``).
    """
    a = inst.arrival
    V = np.cumsum(np.sort(volume(inst)))
    e = np.sort(a + inst.output)
    rounds = -(-V // inst.M)                          # ⌈V_k / M⌉ in integers
    return float(np.sum(np.maximum(int(a.min()) + rounds, e)) - a.sum())
