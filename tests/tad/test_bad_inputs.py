"""Bad inputs to the TAD package: each a ConfigError whose message names the parameter."""

import os
import warnings

import numpy as np
import pytest
from tests.badinput import check, table

from infsched.errors import ConfigError
from infsched.sweep import point_seed
from infsched.tad import bound, experiments as ex, policies, sim
from infsched.tad.model import MAIN, SystemParams

CASES = [
    ("mu", lambda: SystemParams(mu="21", a=(70.0, 75.0), alpha=(0.5, 0.5))),
    ("a", lambda: SystemParams(mu=(2.0, 1.0), a=(70.0, True), alpha=(0.5, 0.5))),
    ("alpha", lambda: SystemParams(mu=(2.0, 1.0), a=(70.0, 75.0), alpha=[])),
    ("a_stars", lambda: ex.fig6("smoke", 0, a_stars=[])),
    ("a_stars", lambda: ex.fig6("smoke", 0, a_stars=["76"])),
    ("n_points", lambda: ex.fig6("smoke", 0, n_points=0)),
    ("policies", lambda: ex.fig6("smoke", 0, policies=[])),
    ("seed", lambda: point_seed(1.7, 64)),
    ("seed", lambda: ex.fig6("smoke", 1.7)),
    ("seed", lambda: ex.fig6("smoke", -1)),
    ("n", lambda: ex.fig7("smoke", 0, n=-4)),
    ("seed", lambda: point_seed(-1, 64)),
    ("n", lambda: sim.simulate(MAIN, "tad", 2**40, rho=0.5, a_star=76.0, n_jobs=10)),
    ("n_jobs", lambda: sim.simulate(MAIN, "tad", 64, rho=0.5, a_star=76.0, n_jobs=0)),
    ("a_star", lambda: MAIN.check_target("abc")),
    ("lam", lambda: sim.simulate(MAIN, "tad", 64, lam="0.5", a_star=76.0, n_jobs=10)),
    ("warmup", lambda: sim.simulate(MAIN, "tad", 64, rho=0.5, a_star=76.0, n_jobs=10, warmup="0.1")),
    # issue 35: a run too short to measure (its mean response read 0.0), numpy's and the standard
    # library's errors on a seed, loads and sizes, keywords no experiment takes, coerced strings
    ("n_jobs", lambda: sim.simulate(MAIN, "tad-op", n=64, rho=0.5, a_star=76, n_jobs=1)),
    ("n_jobs", lambda: sim.simulate(MAIN, "tad-op", n=64, rho=0.5, a_star=76, n_jobs=5)),
    ("n_jobs", lambda: sim.simulate(MAIN, "tad-op", n=64, rho=0.5, a_star=76, n_jobs=5, service="det")),
    ("seed", lambda: sim.simulate(MAIN, "tad", 64, rho=0.5, a_star=76.0, n_jobs=1000, seed=-1)),
    ("seed", lambda: sim.simulate(MAIN, "tad", 64, rho=0.5, a_star=76.0, n_jobs=1000, seed="abc")),
    ("seed", lambda: sim.simulate(MAIN, "tad", 64, rho=0.5, a_star=76.0, n_jobs=1000, seed=1.5)),
    ("seed", lambda: ex.fig5("smoke", -1)),
    ("rhos", lambda: ex.fig1("smoke", 0, rhos=[-0.5])),
    ("rhos", lambda: ex.fig1("smoke", 0, rhos=["0.5"])),
    ("ns", lambda: ex.fig4("smoke", 0, ns=[-16])),
    ("ns", lambda: ex.fig4("smoke", 0, ns=[16.5])),
    ("ns", lambda: ex.fig4("smoke", 0, ns=[18])),
    ("ns", lambda: ex.fig5("smoke", 0, ns=[-16])),
    ("n_rhos", lambda: ex.fig5("smoke", 0, n_rhos=-5)),
    ("n_rhos", lambda: ex.fig5("smoke", 0, n_rhos=0)),
    ("parameter", lambda: ex.fig6("smoke", 0, bogus=1)),
    ("parameter", lambda: ex.fig1("smoke", 0, ns=[64])),
    ("parameter", lambda: ex.run_experiment("fig7", "smoke", bogus=1)),
    ("rho", lambda: sim.simulate(MAIN, "tad", 64, rho="0.5", a_star=76.0, n_jobs=1000)),
    ("lam", lambda: bound.lp_lower_bound(MAIN, 76.0, "0.5")),
    ("lam", lambda: policies.make_policy("r-jiq", MAIN, 76.0, "0.5", 64)),
]


@table(CASES)
def test_bad_input_names_its_parameter(name, call, error):
    check(name, call, error=error)


def test_memory_estimate_is_in_the_message():
    with pytest.raises(ConfigError, match=r"n = 1099511627776: .* 40 TiB of memory, more than the limit"):
        sim.simulate(MAIN, "tad", 2**40, rho=0.5, a_star=76.0, n_jobs=10)


def test_a_run_of_1e13_jobs_says_how_long_it_takes(monkeypatch):
    """Over the CPU budget (24 CPU-hours by default) it is refused before any work, with the
    estimate; with the budget raised it is only warned about."""
    monkeypatch.delenv("INFSCHED_MAX_CPU_H", raising=False)
    with pytest.raises(ConfigError, match=r"n_jobs = 10000000000000 arrivals would take about "
                                          r"11.6 days.*--max-cpu-hours"):
        sim.check_run_args(MAIN, "exp", 64, 10**13, 0.2)
    monkeypatch.setenv("INFSCHED_MAX_CPU_H", "inf")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sim.check_run_args(MAIN, "exp", 64, 10**13, 0.2)
    assert any("n_jobs = 10000000000000" in str(w.message) and "days" in str(w.message) for w in seen)


@pytest.mark.parametrize("a_star, lam", [(76.0, 1.5e-7), (76.0, 1e-7), (76.0, 1e-12), (70.5, 1e-6),
                                         (99.0, 1e-9)])
def test_lp_bound_at_tiny_loads_is_the_relaxed_lp(a_star, lam):
    """The LP bound's limit as λ -> 0 is the relaxed LP (Lemma 3); at λ near the solver's
    tolerance it used to come out infeasible (1e-7) or 5 % off (a* = 70.5, 1e-6)."""
    from infsched.tad import bound

    b = bound.lp_lower_bound(MAIN, a_star, lam)
    assert b.T == pytest.approx(bound.relaxed_lp(MAIN, a_star)[0], rel=1e-12)
    assert b.p.sum() == pytest.approx(1.0) and b.p @ MAIN.a_arr >= a_star - 1e-9


def test_a_run_too_short_to_measure_is_refused_never_zero():
    """Issue 35: n_jobs = 1 returned a mean response of 0.0 (the warm-up left one job and no time
    in system); a run is refused until N_BATCHES arrivals are measured, and at that minimum it
    measures a positive response with an interval."""
    with pytest.raises(ConfigError, match=r"n_jobs = 1: too short to measure: with warmup = 0.2, "
                                          r"1 arrival\(s\) would be measured and at least 20 are "
                                          r"needed .* use n_jobs >= 25"):
        sim.simulate(MAIN, "tad-op", n=64, rho=0.5, a_star=76, n_jobs=1)
    for service in ("exp", "det"):
        res = sim.simulate(MAIN, "tad-op", n=64, rho=0.5, a_star=76, n_jobs=25, service=service)
        assert res.mean_response > 0 and np.isfinite(res.ci_halfwidth), (service, res)
    from infsched.tad.reference import simulate_reference

    check("n_jobs", lambda: simulate_reference(MAIN, "tad", 8, lam=0.3, a_star=76, n_jobs=3))


def test_a_cache_folder_that_cannot_be_created_is_named(tmp_path):
    """Issue 35: ``cache=`` under a file (or ``/proc``) was a bare FileNotFoundError after the
    first point; it is a ConfigError naming ``cache`` before any point runs."""
    (tmp_path / "file").write_text("x")
    msg = check("cache", lambda: ex.fig6("smoke", 0, cache=str(tmp_path / "file" / "sub"), n_jobs=1))
    assert "cannot be created" in msg and "False (no cache)" in msg
    if os.path.isdir("/proc/self"):
        check("cache", lambda: ex.fig6("smoke", 0, cache="/proc/nope", n_jobs=1))


def test_the_load_sweeps_show_the_keywords_they_take():
    """Figs. 6-8 name their keywords (they took **kw), so ``infsched sweep tad -e fig6 -p
    bogus=1`` is refused before the sweep starts."""
    from infsched.chapters import experiment_parameters

    for name in ("fig6", "fig7", "fig8"):
        assert experiment_parameters(ex.EXPERIMENTS[name]) == (
            ["n", "a_stars", "n_points", "policies", "n_jobs", "cache"], False)
    msg = check("parameter", lambda: ex.fig6("smoke", 0, bogus=1))
    assert msg == ("parameter = 'bogus': experiment fig6 of tad does not take it; it takes n, "
                   "a_stars, n_points, policies, n_jobs, cache")
