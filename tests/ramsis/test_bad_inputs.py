"""Bad inputs to the RAMSIS package: each a ConfigError whose message names the parameter."""

import pytest

from infsched.errors import ConfigError
from tests.badinput import bad_profile_files, check, table
from infsched.ramsis import experiments as ex
from infsched.ramsis import mdp
from infsched.ramsis.model import MDPConfig, slack_grid


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = bad_profile_files(tmp_path_factory.mktemp("profiles"), absurd_column="p95_ms")
    yield d
    ex.use_profile("published")


def _scale():
    return ex.get_scale("smoke") if hasattr(ex, "get_scale") else ex.SCALES["smoke"]


CASES = [
    ("slo_ms", lambda f: ex.check_workers(60, 0.001, _scale())),
    ("slo_ms", lambda f: ex.check_workers(60, "150", _scale())),
    ("workers", lambda f: ex.check_workers(0, 150.0, _scale())),
    ("slo_ms", lambda f: MDPConfig("150", 60, 100.0)),
    ("d", lambda f: slack_grid(ex.get_profile("image"), MDPConfig(150.0, 60, 100.0, d=10**7))),
    # a memory refusal names the parameter that makes it too large (was "d = 100" for workers)
    ("d", lambda f: mdp.solve(ex.get_profile("image"), MDPConfig(150.0, 60, 100.0, d=10**7))),
    ("workers", lambda f: mdp.solve(ex.get_profile("image"), MDPConfig(150.0, 10**7, 100.0))),
    ("profile", lambda f: ex.use_profile(str(f / "empty.csv"))),
    ("profile", lambda f: ex.use_profile(str(f / "binary.csv"))),
    ("profile", lambda f: ex.use_profile(str(f / "absurd.csv"))),
    ("profile", lambda f: ex.use_profile(str(f / "fractional.csv"))),
    ("profile", lambda f: ex.use_profile(str(f / "missing.csv"))),
]


@table(CASES)
def test_bad_input_names_its_parameter(files, name, call, error):
    check(name, call, files, error=error)


def test_what_is_wrong_with_a_profile_is_said(files):
    for f, why in (("empty", "it is empty"), ("binary", "not text|cannot be read"), ("absurd", "not a plausible latency"),
                   ("fractional", "must be a whole number")):
        with pytest.raises(ConfigError, match=why):
            ex.use_profile(str(files / f"{f}.csv"))


def test_a_solve_that_would_take_hours_says_so_before_it_starts(monkeypatch):
    """Where the memory limit allows it (here raised to 100 TiB), 3.2e8 states are warned with
    the estimate before anything is allocated (the warning made an error here)."""
    import warnings

    monkeypatch.setenv("INFSCHED_MEMORY_LIMIT", "100T")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match=r"solving the worker MDP's 3.2e\+08 states \(d = 10000000, "
                                                 r"workers = 60\) will take about .* on one core"):
            slack_grid(ex.get_profile("image"), MDPConfig(150.0, 60, 100.0, d=10**7))
