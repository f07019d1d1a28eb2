"""Bad inputs to the head to head (the serving package): the chapter's parameters, checked by
:mod:`infsched.params` through the serving package's own validators before a kernel starts, and
the library's experiments. Each error names the parameter as the user typed it."""

import pandas as pd
import pytest
from tests.badinput import check, table

from infsched.params import check_chapter_parameters
from infsched.report import find_data_dir
from infsched.runner import book_dir, read_chapter
from infsched.serving import experiments as ex


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("profiles")
    raw = pd.read_csv(find_data_dir() / "profiles" / "measured_cpu.csv")
    (d / "empty.csv").write_bytes(b"")
    absurd = raw.copy()
    absurd.loc[0, "p95_ms"] = 1e300
    absurd.to_csv(d / "absurd.csv", index=False)
    return d


DEFAULTS = read_chapter(book_dir() / "headtohead.md").parameters


def chapter(**params):
    return check_chapter_parameters("headtohead", params, DEFAULTS)


CASES = [
    # the chapter's parameters (infsched run headtohead -p ...)
    ("K", lambda f: chapter(K=0)),
    ("K", lambda f: chapter(K="60")),
    ("seed", lambda f: chapter(seed=1.7)),
    ("slo_ms", lambda f: chapter(slo_ms=10.0)),
    ("slo_ms", lambda f: chapter(slo_ms=30.0, a_star=50.0)),   # the decision table's tight SLO
    ("a_star", lambda f: chapter(a_star=99.0)),
    ("a_star", lambda f: chapter(slo_ms=30.0)),                 # the default a* under a tight SLO
    ("load", lambda f: chapter(load=[])),
    ("load", lambda f: chapter(load=[0.5, 0.5])),
    ("load", lambda f: chapter(load=-0.5)),
    ("targets", lambda f: chapter(targets=(80.0, 70.0))),
    ("profile", lambda f: chapter(profile="nope.csv")),
    ("profile", lambda f: chapter(profile=str(f / "empty.csv"))),
    ("profile", lambda f: chapter(profile=str(f / "absurd.csv"))),
    ("processes", lambda f: chapter(processes=0)),
    # the library's experiments
    ("K", lambda f: ex.load_sweep("smoke", K=0, cache=False)),
    ("slo_ms", lambda f: ex.load_sweep("smoke", slo_ms=10.0, cache=False)),
    ("seed", lambda f: ex.load_sweep("smoke", seed=1.7, cache=False)),
    ("profile", lambda f: ex.load_sweep("smoke", profile="nope.csv", cache=False)),
    ("workers", lambda f: ex.load_sweep("smoke", workers=0, cache=False)),
    ("loads", lambda f: ex.load_sweep("smoke", loads=[], cache=False)),
    ("loads", lambda f: ex.load_sweep("smoke", loads=["a"], cache=False)),
    ("loads", lambda f: ex.load_sweep("smoke", loads=[-0.5], cache=False)),
    ("loads", lambda f: ex.frontier("smoke", loads=[float("nan")], cache=False)),
    ("service", lambda f: ex.load_sweep("smoke", service="gamma", cache=False)),
]


@table(CASES)
def test_bad_input_names_its_parameter(files, name, call, error):
    check(name, call, files, error=error)


def test_a_bad_profile_names_the_file_the_column_and_the_value(files):
    msg = check("profile", lambda: chapter(profile=str(files / "absurd.csv")))
    assert f"profile file {files / 'absurd.csv'}: line 2 (model 'resnet18'): p95_ms = '1e+300' ms is not " \
           "a plausible latency" in msg, msg


def test_good_values_pass():
    assert chapter(load=[0.3, 0.9], targets=(70.0, 76.0), slo_ms=100.0, K=60)["load"] == [0.3, 0.9]
    assert chapter(profile="measured", slo_ms=100.0)["profile"] == "measured"
