"""A stronger combinatorial lower bound on the hindsight optimum: transformed areas on one machine
(issue 34, item 1).

The area bound of :mod:`~infsched.kvcache.bounds` reads the KV cache as one machine of speed
``M`` that can run any request at any rate: request ``i`` is ``vol_i`` units of work. It forgets
that a request's memory comes as a ramp ``s_i + 1, …, s_i + o_i`` that cannot be squeezed, so
two requests that each need more than half of ``M`` at their peak can never peak together. This
module keeps more of that, with *dual-feasible functions* (Fekete and Schepers, "A general
framework for bounds for higher-dimensional orthogonal packing problems", Math. Methods Oper.
Res. 60 (2004); Carlier, Clautiaux and Moukrim, Comput. Oper. Res. 34 (2007)) and the single
machine's shortest-remaining-processing-time rule.

**Dual-feasible function.** ``f: [0, 1] → [0, 1]`` such that ``Σ x_j ≤ 1`` implies
``Σ f(x_j) ≤ 1`` for any finite family. We use, for integers ``k ≥ 1`` and ``0 ≤ e ≤ M/2``,

- ``u_k(x) = x`` if ``(k + 1)x`` is an integer, else ``⌊(k + 1)x⌋ / k``;
- ``U_e(x) = 1`` if ``x > 1 − e/M``, ``x`` if ``e/M ≤ x ≤ 1 − e/M``, ``0`` if ``x < e/M``;

and their compositions ``u_k ∘ U_e`` (``U_0`` is the identity, which gives back the area bound,
with release times). Proofs: (U) if one
``x_j > 1 − e/M`` the others sum to less than ``e/M``, so each maps to 0 and the sum of images is
1; otherwise every image is at most its ``x_j``. (u) Let ``y_j = (k + 1)x_j``, so ``Σ y_j ≤ k + 1``.
If every ``y_j`` is an integer, images equal the ``x_j``. Otherwise ``N = Σ_{y_j ∉ ℤ} ⌊y_j⌋ +
Σ_{y_j ∈ ℤ} y_j`` is an integer strictly below ``Σ y_j ≤ k + 1``, so ``N ≤ k``, and the images sum
to ``Σ_{∉ℤ} ⌊y_j⌋/k + Σ_{∈ℤ} y_j/(k + 1) ≤ N/k ≤ 1``. (∘) If ``g`` and ``f`` are dual-feasible,
``Σ x_j ≤ 1 ⇒ Σ g(x_j) ≤ 1 ⇒ Σ f(g(x_j)) ≤ 1``.

**The bound.** Fix a dual-feasible ``f`` and any feasible schedule. At round ``τ`` the running
requests hold ``d_j(τ)`` tokens with ``Σ_j d_j(τ) ≤ M``, so ``Σ_j f(d_j(τ)/M) ≤ 1``. Give request
``i`` the work ``w_i = Σ_{j=1}^{o_i} f((s_i + j)/M)`` and a machine of speed 1: in the time
interval ``(τ − 1, τ]`` process, one after another, ``f(d_j(τ)/M)`` of each running request's
work. This is a preemptive one-machine schedule in which request ``i`` receives all its work
within ``(p_i + j_i − 1, c_i]``, with ``j_i`` the first offset at which ``f((s_i + j)/M) > 0``:
it is released at ``r_i = a_i + j_i − 1`` (``p_i ≥ a_i``) and completes no later than ``c_i``.
On one machine with release times and preemption, shortest remaining processing time (SRPT)
completes at least as many jobs by every time ``t`` as any schedule does (Schrage, "A proof of
the optimality of the shortest remaining processing time discipline", Oper. Res. 16 (1968): SRPT
minimises the number of jobs in the system at every instant; tested here by exhaustion on
small cases). So with ``C^f`` SRPT's completion times, sorted, every feasible schedule has
``c_(k) ≥ C^f_(k)`` for every rank ``k``, and ``c_(k) ≥ ⌈C^f_(k)⌉`` because completions are whole
rounds. With ``e_(k)``, the ``k``-th smallest ``a_i + o_i`` (as in the area bound), for every
``k``:

    ``c_(k) ≥ L_k := max(e_(k), max_f ⌈C^f_(k)⌉)``  and  ``OPT ≥ Σ_k L_k − Σ_i a_i``.

The maximum is taken rank by rank, over every ``f`` in the family, so the bound is at least the
area bound (``f`` the identity, with release times ``a_i ≥ a_min``) and at least each single
``f``'s. All arithmetic is in integers (values of ``f`` times ``k·M``), so the rounding up is
exact.

**The sawtooth: memory no schedule can use** (:func:`sawtooth_ranks`, also taken rank by rank).
Ramps only grow and free their peak at once, so memory cannot stay full. Take any feasible
schedule and a round ``τ``, and let ``κ(τ)`` be the first completion time ``≥ τ``. If some
requests run at ``τ``, the one that completes first does so at ``τ + r`` with ``r ≥ κ(τ) − τ``;
every request running at ``τ`` still runs at ``τ + r`` and holds ``r`` tokens more, so
``mem(τ) + r ≤ M`` (memory at ``τ + r``), and the unused memory ``M − mem(τ)`` is at least
``κ(τ) − τ``. If none runs, it is ``M``. Either way it is at least ``min(M, κ(τ) − τ)``. Cut
``(a_min, c_(k)]`` at the ``m ≤ k`` distinct completion times up to ``c_(k)``: a piece of ``G``
rounds ending at a completion wastes at least ``h(G) = Σ_{u=0}^{G−1} min(M, u)``. ``h`` has
non-decreasing steps, so its piecewise-linear extension ``h̃`` is convex with ``h̃(0) = 0``,
and ``Σ h(G_l) ≥ m·h̃((c_(k) − a_min)/m) ≥ k·h̃((c_(k) − a_min)/k)`` (Jensen's inequality, then
``m·h̃(x/m)`` does not grow with ``m``). The ``k`` requests that complete first hold their whole
volume, at least ``V_k`` (the ``k`` smallest volumes), inside ``(a_min, c_(k)]``. So

    ``M·(c_(k) − a_min) ≥ V_k + k·h̃((c_(k) − a_min)/k)``,

whose two sides differ by a non-decreasing function of ``c_(k)`` (slope ``M − min(M, ⌊x/k⌋)``),
so ``c_(k)`` is at least the least integer that satisfies it. For ``k`` staggered copies of one
ramp this waste is the true one (the sawtooth); with ``h = 0`` it is the area bound.
"""

from __future__ import annotations

import heapq

import numpy as np

from infsched.errors import require
from infsched.kvcache.model import Instance

__all__ = ["dff_values", "srpt_completions", "dff_bound", "dff_family", "sawtooth_ranks",
           "fig2_brackets", "claims_brackets"]


def dff_values(M: int, k: int, e: int) -> tuple[np.ndarray, int]:
    """``(F, D)``: ``F[d] = D · u_k(U_e(d / M))`` for ``d = 0 … M``, integers, with ``D = k·M``
    (``k = 0``: ``U_e`` alone, ``D = M``; ``U_0`` is the identity)."""
    require(isinstance(k, (int, np.integer)) and k >= 0, "k", k, "must be an integer >= 0")
    require(isinstance(e, (int, np.integer)) and 0 <= 2 * e <= M, "e", e,
            f"must be an integer in [0, M/2] = [0, {M // 2}]")
    d = np.arange(M + 1, dtype=np.int64)
    if k == 0:
        return np.where(d * M > (M - e) * M, M, np.where(d < e, 0, d)).astype(np.int64), M
    D = k * M
    # U_e: 1 above 1 − e/M, 0 below e/M, the identity between
    top, zero = d * M > (M - e) * M, d < e
    # u_k on x = d/M: x if (k+1)·d/M is an integer, else ⌊(k+1)·d/M⌋ / k; on 1 and 0 themselves
    whole = ((k + 1) * d) % M == 0
    F = np.where(whole, d * k, ((k + 1) * d // M) * M)
    F = np.where(top, D, np.where(zero, 0, F))
    return F.astype(np.int64), D


def dff_family(M: int, k_max: int = 12) -> list[tuple[int, int]]:
    """The ``(k, e)`` pairs :func:`dff_bound` uses by default: ``k = 0 … k_max`` (0: ``U_e``
    alone) with every threshold ``e = 0 … ⌊M/2⌋``."""
    return [(k, e) for k in range(0, k_max + 1) for e in range(0, M // 2 + 1)]


def srpt_completions(release: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Completion times of shortest remaining processing time on one machine of speed 1
    (integer release times and works; a job of no work completes at its release)."""
    release = np.asarray(release, dtype=np.int64)
    work = np.asarray(work, dtype=np.int64)
    n = release.size
    order = np.argsort(release, kind="stable")
    done = np.empty(n, dtype=np.int64)
    heap: list[tuple[int, int]] = []
    t, k = 0, 0
    while k < n or heap:
        if not heap:
            t = max(t, int(release[order[k]]))
        while k < n and release[order[k]] <= t:
            j = int(order[k])
            heapq.heappush(heap, (int(work[j]), j))
            k += 1
        rem, j = heapq.heappop(heap)
        nxt = int(release[order[k]]) if k < n else None
        if nxt is None or t + rem <= nxt:
            t += rem
            done[j] = t
        else:
            heapq.heappush(heap, (rem - (nxt - t), j))
            t = nxt
    return done


def _rank_bounds(inst: Instance, F: np.ndarray, D: int) -> np.ndarray:
    """``⌈C^f_(k)⌉`` for ``k = 1 … n`` (sorted) for one dual-feasible function."""
    P = np.concatenate([[0], np.cumsum(F)])               # P[d] = Σ_{x < d} F[x]
    s, o, a = inst.prompt, inst.output, inst.arrival
    work = P[s + o + 1] - P[s + 1]                          # Σ_{j=1..o} F[s + j]
    # first offset j with F[s + j] > 0: F is non-decreasing in d
    first_d = int(np.argmax(F > 0)) if F.any() else inst.M + 1
    first = np.maximum(first_d - s, 1)
    release = np.where(work > 0, a + first - 1, a) * D
    C = srpt_completions(release, work)
    return np.sort(-(-C // D))


def sawtooth_ranks(inst: Instance) -> np.ndarray:
    """For every rank ``k``, the least integer ``c`` with
    ``M·(c − a_min) ≥ V_k + k·h̃((c − a_min)/k)`` (module docstring): ``c_(k) ≥ c``."""
    from infsched.kvcache.bounds import volume

    M = inst.M
    V = np.cumsum(np.sort(volume(inst)))
    a_min = int(inst.arrival.min())

    def room(x: int, k: int) -> int:              # M·x − k·h̃(x/k), in integers
        q, r = divmod(x, k)
        hq = q * (q - 1) // 2 if q <= M else M * (M - 1) // 2 + (q - M) * M
        return M * x - k * hq - r * min(M, q)

    out = np.empty(inst.n, dtype=np.int64)
    for k in range(1, inst.n + 1):
        need = int(V[k - 1])
        lo, hi = -(-need // M), k * M + 1            # room(k·M + 1, k) ≥ k·M(M+1)/2 ≥ V_k
        while room(hi, k) < need:                    # (never: each volume is at most M(M+1)/2)
            hi *= 2
        while lo < hi:                               # room(·, k) is non-decreasing
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if room(mid, k) >= need else (mid + 1, hi)
        out[k - 1] = a_min + lo
    return out


def dff_bound(inst: Instance, family: list[tuple[int, int]] | None = None,
              detail: bool = False, sawtooth: bool = True):
    """The bound of this module's docstring: rank by rank, the largest of ``a_i + o_i``, the
    transformed areas over ``family`` (``(k, e)`` pairs; :func:`dff_family` by default) and,
    with ``sawtooth``, :func:`sawtooth_ranks`. With ``detail``, also the per-rank bounds
    ``L_k``."""
    require(isinstance(inst, Instance), "inst", type(inst).__name__, "must be an Instance")
    family = dff_family(inst.M) if family is None else family
    L = np.sort(inst.arrival + inst.output)
    if sawtooth:
        L = np.maximum(L, sawtooth_ranks(inst))
    for k, e in family:
        F, D = dff_values(inst.M, k, e)
        L = np.maximum(L, _rank_bounds(inst, F, D))
    value = float(L.sum() - inst.arrival.sum())
    return (value, L) if detail else value


def fig2_brackets(f2):
    """Fig. 2's trials (rows of :func:`~infsched.kvcache.fig2.fig2` or ``fig2_small``) with the
    transformed-area bound beside the old ones: each instance is drawn again from the row's
    seed and size range (and reading), ``dff_bound`` is the new bound, ``lower_new`` the best of
    it and the row's ``lower_bound``, ``width_old``/``width_new`` the bracket widths
    ``best / lower − 1`` and ``certified_new`` whether the best schedule meets the new bound."""
    import pandas as pd

    from infsched.kvcache.fig2 import _fig2_instance, reading_instance

    rows = []
    for _, r in f2.iterrows():
        inst = _fig2_instance(int(r["model"]), int(r["trial"]), int(r["seed"]), int(r["lo"]),
                              int(r["hi"]))
        inst, shift = reading_instance(inst, r.get("reading", "canonical") or "canonical")
        b = dff_bound(inst) + shift
        new = max(float(r["lower_bound"]), b)
        rows.append({"dff_bound": b, "lower_new": new,
                     "width_old": float(r["best"]) / float(r["lower_bound"]) - 1,
                     "width_new": float(r["best"]) / new - 1,
                     "certified_new": bool(np.ceil(new - 1e-6) >= float(r["best"]))})
    return pd.concat([f2.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def claims_brackets(fb):
    """Per arrival model: trials, the median bracket width before and after the new bound, the
    trials where the new bound is the best lower bound, and the trials certified before and
    after."""
    import pandas as pd

    out = []
    for m, d in fb.groupby("model"):
        out.append({"model": int(m), "trials": len(d),
                    "median width, old bounds": float(d["width_old"].median()),
                    "median width, with the new bound": float(d["width_new"].median()),
                    "new bound is the best": int((d["dff_bound"] > d["lower_bound"]).sum()),
                    "certified, old": int(d["certified"].sum()),
                    "certified, new": int(d["certified_new"].sum())})
    return pd.DataFrame(out)
