"""Bad inputs to the Shepherd package: each a ConfigError whose message names the parameter."""

import pandas as pd
import pytest

from infsched.errors import ConfigError
from tests.badinput import check, table
from infsched.params import check_chapter_parameters
from infsched.report import find_data_dir
from infsched.shepherd import experiments as ex


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("profiles")
    raw = pd.read_csv(find_data_dir() / "profiles" / "measured_cpu.csv")
    (d / "empty.csv").write_bytes(b"")
    (d / "binary.csv").write_bytes(bytes(range(256)) * 4)
    absurd = raw.copy()
    absurd.loc[0, "mean_ms"] = 1e300
    absurd.to_csv(d / "absurd.csv", index=False)
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
]


@table(CASES)
def test_bad_input_names_its_parameter(files, name, call, error):
    check(name, call, files, error=error)


def test_an_absurd_latency_is_refused_not_run(files):
    with pytest.raises(ConfigError, match="not a plausible latency"):
        ex.use_profile(str(files / "absurd.csv"))
    assert ex.active_profile().published
