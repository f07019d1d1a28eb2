"""Bad inputs to the TAD package: each a ConfigError whose message names the parameter."""

import warnings

import pytest

from infsched.errors import ConfigError
from tests.badinput import check, table
from infsched.sweep import point_seed
from infsched.tad import experiments as ex
from infsched.tad import sim
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
]


@table(CASES)
def test_bad_input_names_its_parameter(name, call, error):
    check(name, call, error=error)


def test_memory_estimate_is_in_the_message():
    with pytest.raises(ConfigError, match=r"n = 1099511627776: .* 40 TiB of memory, more than the limit"):
        sim.simulate(MAIN, "tad", 2**40, rho=0.5, a_star=76.0, n_jobs=10)


def test_a_run_of_1e13_jobs_says_how_long_it_takes():
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
