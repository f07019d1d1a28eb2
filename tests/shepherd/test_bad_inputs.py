"""Bad inputs to the Shepherd package: each a ConfigError whose message names the parameter."""

import pytest
from tests.badinput import bad_profile_files, check, table

from infsched.errors import ConfigError
from infsched.params import check_chapter_parameters
from infsched.shepherd import experiments as ex


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = bad_profile_files(tmp_path_factory.mktemp("profiles"), absurd_column="mean_ms")
    yield d
    ex.use_profile("published")


CASES = [
    ("profile", lambda f: ex.use_profile(str(f / "empty.csv"))),
    ("profile", lambda f: ex.use_profile(str(f / "binary.csv"))),
    ("profile", lambda f: ex.use_profile(str(f / "absurd.csv"))),
    ("workers", lambda f: ex.check_parameters(0, 250.0)),
    ("lam", lambda f: ex.check_parameters(12, 250.0, "cv16", 0.5)),
    ("workers", lambda f: check_chapter_parameters("shepherd", {"workers": 10**7})),
    ("lam", lambda f: check_chapter_parameters("shepherd", {"lam": "abc"})),
    ("profile", lambda f: check_chapter_parameters("shepherd", {"profile": str(f / "binary.csv")})),
    ("workers", lambda f: ex.fig7("smoke", 0, workers=0)),
    ("lam", lambda f: ex.fig7("smoke", 0, lam="3")),
    ("profile", lambda f: ex.use_profile(str(f / "fractional.csv"))),
    ("seed", lambda f: ex.fig7("smoke", 1.7)),
    ("seed", lambda f: ex.fig7("smoke", -1)),
    # a trace that cannot fit, refused before any point is built (was numpy's MemoryError)
    ("workers", lambda f: ex.fig7("smoke", 0, workers=10**7)),
    ("workers", lambda f: check_chapter_parameters("shepherd", {"workers": 10**6, "scale": "smoke"})),
    # issue 35: numpy's ufunc error on λ, a bool and a string accepted for a number, a string
    # SLO failing in a worker, a keyword no experiment takes
    ("lam", lambda f: ex.check_parameters(12, 250.0, "cv16", "abc")),
    ("lam", lambda f: ex.check_parameters(12, 250.0, "cv16", None)),
    ("workers", lambda f: ex.check_parameters(True, 250.0)),
    ("slo_ms", lambda f: ex.check_parameters(12, "250")),
    ("slo_ms", lambda f: ex.fig7("smoke", 0, slo_ms="250")),
    ("slo_ms", lambda f: ex.fig10("smoke", 0, slo_ms="250")),
    ("parameter", lambda f: ex.fig7("smoke", 0, bogus=1)),
    ("parameter", lambda f: ex.run_experiment("fig9", "smoke", bogus=1)),
]


@table(CASES)
def test_bad_input_names_its_parameter(files, name, call, error):
    check(name, call, files, error=error)


def test_an_absurd_latency_is_refused_not_run(files):
    with pytest.raises(ConfigError, match="not a plausible latency"):
        ex.use_profile(str(files / "absurd.csv"))
    assert ex.active_profile().published


def test_a_run_that_would_take_hours_says_so_before_it_starts():
    """10^6 GPUs fit in memory (3 GiB) but 2 million requests on them take hours: warned with
    the estimate (here turned into an error, so the run does not start)."""
    import warnings

    import numpy as np

    from infsched.shepherd import sim
    from infsched.shepherd.model import Requests, model_set

    n = 2_000_000
    req = Requests(np.linspace(0.0, 1000.0, n), np.zeros(n, np.int64), np.linspace(250.0, 1250.0, n))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match=r"simulating 2000000 requests on n_gpus = 1000000 "
                                                 r"GPUs will take about .* hours on one core"):
            sim.simulate(req, model_set("cv16"), 10**6)


def test_a_fractional_batch_size_is_called_what_it_is(files):
    with pytest.raises(ConfigError, match=r"batch = '2.5' must be a whole number"):
        ex.use_profile(str(files / "fractional.csv"))
