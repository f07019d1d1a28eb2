"""The strengthened time-indexed bound (kvcache.tibound): its rows never cut off a feasible
schedule, its pricing equals the column-by-column definition, and its value is at most every
certified optimum and every checked schedule (and, when converged, at least the plain LP)."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import hindsight as hs
from infsched.kvcache.improve import improve_schedule, serial_schedule
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_sf
from infsched.kvcache.tibound import (
    _Ascent,
    _exclusive_offset,
    _lagrangian,
    clique_members,
    horizon_cap,
    row_activity,
    ti_bound,
)

from .exact import exact_opt


def _random_instance(rng, n_lo=3, n_hi=7, arrivals=True) -> Instance:
    n = int(rng.integers(n_lo, n_hi + 1))
    M = int(rng.integers(8, 16))
    s = rng.integers(1, 4, size=n)
    o = rng.integers(1, M - s + 1)
    a = rng.integers(0, 6, size=n) if arrivals else np.zeros(n, np.int64)
    return Instance(a, s, o, M)


def _schedules(inst, rng, k):
    """``k`` feasible schedules: the serial scheme on random orders (checked)."""
    out = []
    for _ in range(k):
        p = serial_schedule(inst, rng.permutation(inst.n))
        check_schedule(inst, p).require()
        out.append(p)
    return out


def test_rows_hold_for_every_feasible_schedule():
    """Property: on random small instances, no row of families 1a, 1b, 2, 3 (and rank 4) is
    violated by the incidence vector of any of 30 feasible schedules per instance (every round
    and every threshold is checked by ``row_activity``)."""
    rng = np.random.default_rng(47)
    checked = 0
    for _ in range(25):
        inst = _random_instance(rng)
        for p in _schedules(inst, rng, 30):
            act = row_activity(inst, p, qs=(2, 3, 4))
            assert act["memory"] <= inst.M, (inst, p, act)
            assert act["exclusive"] <= 1, (inst, p, act)
            for q in (2, 3, 4):
                assert act[f"clique_{q}"] <= q - 1, (inst, p, act)
            checked += 1
    assert checked == 750


def test_rows_are_tight_somewhere():
    """The rows are not vacuous: on a packed schedule (many requests at once) the memory row
    charged with peaks reaches M or a clique row reaches its right side on some instance."""
    rng = np.random.default_rng(3)
    tight = 0
    for _ in range(20):
        inst = _random_instance(rng, arrivals=False)
        p = mc_sf(inst)
        act = row_activity(inst, p)
        tight += act["clique_2"] == 1 or act["memory"] == inst.M
    assert tight > 0


def test_pricing_matches_the_column_definition():
    """``_lagrangian``'s vectorised column costs (prefix sums and per-request intervals) equal
    the costs summed row by row from each column's coefficients, for random multipliers, clique
    rows and windows (infinite after a request's last start)."""
    rng = np.random.default_rng(5)
    for _ in range(6):
        inst = _random_instance(rng)
        W = 6
        H = int((inst.arrival + W + inst.output).max())
        e = _exclusive_offset(inst)
        mu, lam = rng.random(H) * (rng.random(H) < 0.5), rng.random(H) * (rng.random(H) < 0.5)
        cuts = [(int(rng.integers(1, H + 1)), int(rng.integers(2, 4)),
                 int(rng.integers(0, 4 * inst.M))) for _ in range(15)]
        nu = rng.random(len(cuts))
        # windows cut short per request (the no-idle horizon does this), one left whole
        last = inst.arrival + rng.integers(0, W + 1, size=inst.n)
        last[0] = inst.arrival[0] + W
        L, g = _lagrangian(inst, W, H, e, mu, lam, cuts, nu, last)
        ref = np.full_like(g, np.inf)
        for i in range(inst.n):
            s, o, P = inst.prompt[i], inst.output[i], inst.prompt[i] + inst.output[i]
            for w in range(last[i] - inst.arrival[i] + 1):
                k = inst.arrival[i] + w
                v = k + o - inst.arrival[i]
                for j in range(1, o + 1):
                    excl = j > e[i]
                    v += mu[k + j - 1] * (P if excl else s + j) + (lam[k + j - 1] if excl else 0)
                for (t, q, t2), x in zip(cuts, nu):
                    if clique_members(inst, np.array([i]), np.array([k]), t, q, t2)[0]:
                        v += x
                ref[i, w] = v
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-9)
        rhs = inst.M * mu.sum() + lam.sum() + sum((q - 1) * x for (_, q, _), x in zip(cuts, nu))
        assert L == pytest.approx(ref.min(axis=1).sum() - rhs)


def test_never_above_a_checked_schedule():
    """Property: on random small instances the bound, after any number of rounds, is at most the
    latency of every one of 20 feasible schedules, and at most the brute-force optimum."""
    rng = np.random.default_rng(11)
    for _ in range(12):
        inst = _random_instance(rng, 3, 5)
        r = ti_bound(inst, rounds=int(rng.integers(1, 15)))
        assert all(b <= r.bound + 1e-9 for b in r.history[-1:])
        for p in _schedules(inst, rng, 20):
            assert r.bound <= check_schedule(inst, p).tel + 1e-6
        horizon = int(inst.arrival.max() + inst.output.sum())
        opt, _ = exact_opt(inst, horizon)
        assert r.bound <= opt + 1e-6


def test_ascent_slopes_are_the_rows_left_sides():
    """The subgradient of ``_Ascent`` at a choice of one start per request is, row by row, the
    charged memory minus ``M``, the exclusive count minus 1 and the clique count minus ``q − 1``
    (counted directly from each column's coefficients)."""
    rng = np.random.default_rng(8)
    for _ in range(10):
        inst = _random_instance(rng)
        e, W = _exclusive_offset(inst), 8
        last = inst.arrival + W
        H = int((last + inst.output).max())
        asc = _Ascent(inst, W, H, e, last, 1e9)
        cuts = [(int(rng.integers(1, H + 1)), int(rng.integers(2, 4)),
                 int(rng.integers(0, 4 * inst.M))) for _ in range(8)]
        asc.intervals(cuts)
        k = inst.arrival + rng.integers(0, W + 1, size=inst.n)
        mem, exc, cnt = asc.slopes(k, len(cuts))
        s, o = inst.prompt, inst.output
        for tau in range(1, H + 1):
            run = (k < tau) & (tau <= k + o)
            ex = run & (tau - k > e)
            assert mem[tau - 1] == np.where(ex, s + o, s + tau - k)[run].sum() - inst.M
            assert exc[tau - 1] == ex.sum() - 1
        for c, (t, q, t2) in enumerate(cuts):
            assert cnt[c] == clique_members(inst, np.arange(inst.n), k, t, q, t2).sum() - (q - 1)


def test_no_idle_horizon():
    """The lemma behind ``horizon_cap``: on random small instances with arrivals, the
    brute-force optimum over a horizon 8 rounds longer than ``H* = max a + Σ o`` is the optimum
    within ``H*``, and the optimal schedule found completes by ``H*``."""
    rng = np.random.default_rng(23)
    for _ in range(10):
        inst = _random_instance(rng, 3, 5)
        hc = horizon_cap(inst)
        opt_long, p = exact_opt(inst, hc + 8)
        opt, _ = exact_opt(inst, hc)
        assert opt_long == opt
        assert int((p + inst.output).max()) <= hc


@pytest.mark.parametrize("options", [dict(prune=1), dict(two_phase=True), dict(spread=True),
                                     dict(smoothing=0.0), dict(cap=False), dict(ascent=10),
                                     dict(cols_per_request=0, smooth_cols=3), dict(full=True),
                                     dict(prune=2, two_phase=True, spread=True, smoothing=0.5),
                                     dict(prune_base=False), dict(prune=1, two_phase=True),
                                     dict(max_cuts=30, polish=0)])
def test_options_keep_the_bound_valid(options):
    """Property, for each way of keeping the master small or its duals steady (pruning idle
    rows and columns, or clique rows and columns only, two-phase re-solves, spread pricing, smoothing, pricing at the smoothed
    point only, the horizon cap, subgradient ascent, every column from the start): after any
    number of rounds the bound is at most every one of 20 feasible schedules and the brute-force
    optimum, and when it converges it reaches the same LP optimum as the default (the rows and
    columns differ on the way, not the LP over all of them)."""
    rng = np.random.default_rng(13)
    for _ in range(8):
        inst = _random_instance(rng, 3, 5)
        r = ti_bound(inst, rounds=int(rng.integers(1, 15)), **options)
        for p in _schedules(inst, rng, 20):
            assert r.bound <= check_schedule(inst, p).tel + 1e-6
        opt, _ = exact_opt(inst, horizon_cap(inst))
        assert r.bound <= opt + 1e-6
        full, ref = ti_bound(inst, rounds=200, **options), ti_bound(inst, rounds=200)
        if full.converged and ref.converged:
            assert full.bound == pytest.approx(ref.bound, rel=1e-6, abs=1e-6)


def test_polish_reaches_the_lp_over_the_masters_rows():
    """The column-only phase: after a few rounds that leave rows to add, it stops only when no
    column prices out, and then (with no row ever deleted) the bound is the master's LP value,
    the LP over every column and the master's rows; that LP has fewer rows than the whole one,
    so the bound stays at most the converged bound, and the rounds before it are the same as
    without it."""
    rng = np.random.default_rng(17)
    seen = 0
    for _ in range(12):
        inst = _random_instance(rng, 4, 7)
        k = int(rng.integers(1, 6))
        r = ti_bound(inst, rounds=k, prune=0, polish=500)
        r0 = ti_bound(inst, rounds=k, prune=0, polish=0)
        assert r.history[:len(r0.history)] == r0.history
        ref = ti_bound(inst, rounds=500, polish=0)
        assert ref.converged
        assert r.bound <= ref.bound + 1e-6 * max(1.0, ref.bound)
        if not r.converged:
            assert r.polished
            assert r.bound == pytest.approx(r.lp_value, rel=1e-6, abs=1e-6)
            seen += 1
    assert seen >= 3


@pytest.mark.parametrize("trial", range(1, 5))
def test_below_certified_optimum_and_above_the_lp(trial):
    """n = 5–9 requests at time 0 (Arrival Model 1's size rule with a smaller memory, M = 12–20,
    prompts 1–3, so that HiGHS certifies each optimum in about a second): the bound is at most the
    optimum HiGHS certifies, and when it converged it is at least the plain LP relaxation of
    (1)–(3) (it is that LP with more rows over the same columns)."""
    rng = np.random.default_rng(100 + trial)
    n, M = int(rng.integers(5, 10)), int(rng.integers(12, 21))
    s = rng.integers(1, 4, size=n)
    inst = Instance.at_zero(s, rng.integers(1, M - s + 1), M)
    opt = hs.solve_hindsight(inst, solver="highs", lp=True)
    assert opt.certified
    upper, _ = improve_schedule(inst, mc_sf(inst))
    r = ti_bound(inst, upper, rounds=60)
    assert r.bound <= opt.objective + 1e-6
    if r.converged:
        assert r.bound >= opt.bounds["lp"] - 1e-6 * opt.objective


def test_bad_parameters():
    inst = Instance.at_zero([1, 2], [3, 4], 12)
    with pytest.raises(ConfigError, match="rounds"):
        ti_bound(inst, rounds=0)
    with pytest.raises(ConfigError, match="qs"):
        ti_bound(inst, qs=(1,))
    with pytest.raises(ConfigError, match="prune"):
        ti_bound(inst, prune=-1)
    with pytest.raises(ConfigError, match="ascent"):
        ti_bound(inst, ascent=-2)
    with pytest.raises(ConfigError, match="smoothing"):
        ti_bound(inst, smoothing=1.0)
    with pytest.raises(ConfigError, match="polish"):
        ti_bound(inst, polish=-1)
