"""Bad inputs to the RAMSIS package: each a ConfigError whose message names the parameter."""

import pytest
from tests.badinput import bad_profile_files, check, table

from infsched.errors import ConfigError
from infsched.ramsis import experiments as ex, mdp
from infsched.ramsis.model import MDPConfig, slack_grid


def _falling_profile(path):
    """The stored CPU profile with resnet18's latencies in reverse batch order: they fall as the
    batch grows (1264 ms at batch 1, 40 ms at batch 32)."""
    import pandas as pd

    from infsched.profiles import measured_file

    raw = pd.read_csv(measured_file())
    rows = raw[raw["model"] == "resnet18"].sort_values("batch").index
    for c in ("mean_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"):
        raw.loc[rows, c] = raw.loc[rows, c].to_numpy()[::-1]
    raw.to_csv(path, index=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = bad_profile_files(tmp_path_factory.mktemp("profiles"), absurd_column="p95_ms")
    _falling_profile(d / "falling.csv")
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
    # issue 35: a string SLO (was "could not convert string to float"), a seed that is not an
    # integer, a keyword no experiment takes, the parameter that makes an MDP too large, no profile
    ("slo_ms", lambda f: ex.fig6("smoke", 0, slo_ms="fast")),
    ("slo_ms", lambda f: ex.fig5("smoke", 0, slo_ms="150")),
    ("slo_ms", lambda f: ex.fig11("smoke", 0, slo_ms=float("nan"))),
    ("workers", lambda f: ex.fig6("smoke", 0, workers=True)),
    ("seed", lambda f: ex.fig6("smoke", "abc")),
    ("parameter", lambda f: ex.fig6("smoke", 0, bogus=1)),
    ("parameter", lambda f: ex.run_experiment("fig12", "smoke", bogus=1)),
    ("n_max", lambda f: mdp.solve(ex.get_profile("image"), MDPConfig(150.0, 60, 100.0, n_max=10**6))),
    ("profile", lambda f: mdp.solve(None, MDPConfig(150.0, 60, 100.0))),
    ("profile", lambda f: ex.use_profile(str(f / "falling.csv"))),
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


def test_a_latency_that_falls_with_the_batch_is_called_what_it_is(files):
    """Issue 35: it was blamed on "a fitted p95 of -154" (the line through it, extrapolated)."""
    path = str(files / "falling.csv")
    msg = check("profile", lambda: ex.use_profile(path))
    # pytest's temporary path (".../pytest-154/...") may itself hold the digits looked for.
    text = msg.replace(path, "<path>")
    assert "model 'resnet18': p95_ms = 1264 ms at batch 1, 39.92 ms at batch 32: falls as the " \
           "batch grows" in text and "-154" not in text, msg


def test_an_mdp_too_large_names_the_parameter_that_makes_it_so():
    """``n_max = 10**6`` was refused as ``d = 100``; ``d = 10**7`` is still refused as d."""
    msg = check("n_max", lambda: slack_grid(ex.get_profile("image"), MDPConfig(150.0, 60, 100.0, n_max=10**6)))
    assert "n_max = 1000000: the worker MDP's 1.01e+08 states" in msg
    check("d", lambda: slack_grid(ex.get_profile("image"), MDPConfig(150.0, 60, 100.0, d=10**7)))
