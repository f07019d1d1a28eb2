"""The transformed-area lower bound (kvcache.relax, issue 34 item 1): every function it uses is
dual-feasible, SRPT completes as many jobs by every time as any preemptive schedule, and the
bound is at least the area bound and at most every certified optimum and every schedule."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import hindsight as hs, instances as ins
from infsched.kvcache.bounds import volume_bound
from infsched.kvcache.improve import improve_schedule
from infsched.kvcache.model import Instance, check_schedule
from infsched.kvcache.policies import mc_benchmark, mc_sf
from infsched.kvcache.relax import (
    dff_bound,
    dff_family,
    dff_values,
    sawtooth_ranks,
    srpt_completions,
)


@pytest.mark.parametrize("M", [6, 7, 12, 31])
def test_every_function_is_dual_feasible(M):
    """Σ d ≤ M implies Σ F[d] ≤ D, for every multiset of demands (exhaustive for M ≤ 12 up to
    four items, random beyond), and F is non-decreasing (the release rule needs it)."""
    rng = np.random.default_rng(M)
    for k, e in dff_family(M, k_max=8):
        F, D = dff_values(M, k, e)
        assert F[0] == 0 and F[M] == D and np.all(np.diff(F) >= 0)
        if M <= 12:
            sets = (c for r in range(1, 5) for c in itertools.combinations_with_replacement(
                range(1, M + 1), r) if sum(c) <= M)
        else:
            sets = []
            for _ in range(300):
                cut = np.sort(rng.integers(0, M + 1, size=rng.integers(1, 6)))
                parts = np.diff(np.concatenate([[0], cut]))
                sets.append(tuple(int(x) for x in parts if x > 0))
        for c in sets:
            assert sum(F[d] for d in c) <= D, (k, e, c)


def _max_done_by(release, work, t):
    """Most jobs a preemptive one-machine schedule can complete by ``t``: a set is feasible iff
    the work released at or after each release time ``u`` fits in ``[u, t]``."""
    n = release.size
    for size in range(n, 0, -1):
        for J in itertools.combinations(range(n), size):
            J = np.array(J)
            if all(work[J][release[J] >= u].sum() <= t - u for u in release[J]):
                return size
    return 0


@pytest.mark.parametrize("seed", range(30))
def test_srpt_completes_the_most_jobs_by_every_time(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    release, work = rng.integers(0, 8, n), rng.integers(0, 6, n)
    C = srpt_completions(release, work)
    assert np.all(C >= release + work)
    for t in range(0, int(C.max()) + 1):
        assert int((C <= t).sum()) == _max_done_by(release, work, t)


def test_two_peaks_by_hand():
    """M = 10, two requests s = 1, o = 5 at 0 (peaks 6 + 6 > 10): area bound 5 + 5 = 10; the
    optimum is 12 (one starts two rounds late). With u_1 (demands above M/2 count 1, exactly M/2
    counts 1/2) each request is 1.5 units of work released at round 3 (its demand reaches 5
    after 4 rounds), so SRPT completes them at 4.5 and 6: ⌈·⌉ with a_i + o_i = 5 gives 5 + 6."""
    inst = Instance.at_zero([1, 1], [5, 5], 10)
    assert volume_bound(inst) == 10
    assert dff_bound(inst, [(1, 0)]) == 11 == dff_bound(inst)
    assert hs.solve_hindsight(inst).objective == 12


@functools.cache
def _small(seed: int):
    """A small instance (Model 1 with 2 to 6 requests, or Model 2 over 2 to 3 rounds), its
    certified optimum (HiGHS) and the bound; None when it has more than 7 requests."""
    rng = np.random.default_rng(7000 + seed)
    inst = (ins.arrival_model_1(rng, n_range=(2, 6)) if seed % 2 == 0
            else ins.arrival_model_2(rng, T_range=(2, 3)))
    if inst.n > 7:
        return None
    opt = hs.solve_hindsight(inst, solver="highs", lp=False)
    assert opt.certified
    return inst, opt.objective, dff_bound(inst)


@pytest.mark.parametrize("seed", range(60))
def test_bound_between_area_and_certified_optimum(seed):
    got = _small(seed)
    if got is None:
        pytest.skip("too many requests for a quick certified optimum")
    inst, opt, b = got
    assert volume_bound(inst) <= b <= opt


def test_certified_optimum_reached_on_some_small_instances():
    """Not a tautology: on small instances the bound often meets the optimum, and often exceeds
    the area bound (counts over the 60 instances above: both at least 10)."""
    meets = above_area = 0
    for seed in range(60):
        got = _small(seed)
        if got is None:
            continue
        inst, opt, b = got
        above_area += b > volume_bound(inst)
        meets += b == opt
    assert meets >= 10 and above_area >= 10


@pytest.mark.parametrize("model", [1, 2])
def test_below_every_schedule_at_paper_size(model):
    for seed in range(3):
        rng = np.random.default_rng(seed)
        inst = ins.arrival_model_1(rng) if model == 1 else ins.arrival_model_2(rng)
        b = dff_bound(inst)
        assert b >= volume_bound(inst)
        found, _ = improve_schedule(inst, mc_sf(inst), max_evals=2000)
        for st in (mc_sf(inst), mc_benchmark(inst), found):
            assert b <= check_schedule(inst, st).require().tel


def test_bad_parameters():
    with pytest.raises(ConfigError, match="k"):
        dff_values(10, -1, 0)
    with pytest.raises(ConfigError, match="e"):
        dff_values(10, 1, 6)
    with pytest.raises(ConfigError, match="inst"):
        dff_bound([1, 2, 3])


def test_fig2_brackets_redraw_the_trials_and_only_narrow():
    """The bracket table draws each trial's instance again from its row (seed, model, size
    range, reading): the new bound is then below the certified optimum, never lowers the old
    bound, and narrows the bracket or leaves it."""
    import pandas as pd

    from infsched.kvcache.fig2 import fig2_point
    from infsched.kvcache.relax import claims_brackets, fig2_brackets

    rows = []
    for model in (1, 2):
        for trial in range(3):
            for reading in ("canonical", "prompt-round"):
                p = dict(model=model, trial=trial, seed=0, lo=4, hi=5, effort=1.0,
                         solver="highs", node_limit=5000, reading=reading)
                rows.append({**p, **fig2_point(**p)})
    f2 = pd.DataFrame(rows)
    fb = fig2_brackets(f2)
    assert len(fb) == len(f2)
    cert = fb[fb["certified"]]
    assert len(cert) >= 6 and (cert["dff_bound"] <= cert["best"] + 1e-9).all()
    assert (fb["lower_new"] >= fb["lower_bound"]).all() and (fb["width_new"] <= fb["width_old"] + 1e-12).all()
    c = claims_brackets(fb)
    assert list(c["model"]) == [1, 2] and (c["certified, new"] >= c["certified, old"]).all()


def test_sawtooth_by_hand():
    """Three ramps s = 0, o = 4 at time 0 with M = 4: a second one would hold at least 1 beside
    the first one's peak of 4, so they run back to back and the optimum is 4 + 8 + 12 = 24. Area:
    volumes 10, c_(k) ≥ ⌈10k/4⌉ = 3, 5, 8 against a_i + o_i = 4: 17. Sawtooth: c_(1) is the
    least c with 4c ≥ 10 + h̃(c), h(4) = 0 + 1 + 2 + 3 = 6, so 4; c_(2): 4c ≥ 20 + 2·h̃(c/2), 8
    (32 ≥ 32; 7 gives 28 < 20 + 2·(3 + 1.5)); c_(3) = 12 likewise: the bound is the optimum."""
    inst = Instance.at_zero([0, 0, 0], [4, 4, 4], 4)
    assert volume_bound(inst) == 17
    assert list(sawtooth_ranks(inst)) == [4, 8, 12]
    assert dff_bound(inst) == 24 == hs.solve_hindsight(inst).objective
