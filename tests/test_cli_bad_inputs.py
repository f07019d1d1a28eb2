"""Bad chapter parameters and environment variables through ``infsched run`` and ``infsched
sweep``: one line naming the parameter as the user typed it, exit status 2, before a kernel
starts or a point computes."""

import pytest

from infsched.cli import main

RUN = [
    (["run", "tad", "-p", "seed=-1"], "seed = -1: must be an integer"),
    (["run", "tad", "-p", "seed=1.7"], "seed = 1.7: must be an integer"),
    (["run", "tad", "-p", "n_servers=-4"], "n_servers = -4: must be an integer"),
    (["run", "tad", "-p", "n_servers=1099511627776"], "n_servers = 1099511627776: simulating"),
    (["run", "tad", "-p", "a_star=abc"], "a_star = 'abc': must be a finite number"),
    (["run", "tad", "-p", "processes=0"], "processes = 0: must be an integer"),
    (["run", "shepherd", "-p", "lam=abc"], "lam = 'abc': must be a finite number > 1"),
    (["run", "shepherd", "-p", "workers=0"], "workers = 0: must be an integer >= 1"),
    (["run", "shepherd", "-p", "workers=10000000"], "workers = 10000000: simulating 10000000 GPUs"),
    (["run", "shepherd", "-p", "profile=no/such.csv"], "profile = 'no/such.csv': no such file"),
    (["run", "kairos", "-p", "budget=1e9"], "budget = 1000000000.0: enumerating the configurations"),
    (["run", "kairos", "-p", "budget='2.5'"], "budget = '2.5': must be a finite number"),
    (["run", "kvcache", "-p", "n_requests=0"], "n_requests = 0: must be an integer in [1, 10000]"),
    (["run", "kvcache", "-p", "demand=medium"], "demand = 'medium': must be one of"),
    (["run", "ramsis", "-p", "slo_ms=-1"], "slo_ms = -1: must be a finite number in (0, "),
]


@pytest.mark.parametrize("argv, expected", RUN, ids=[" ".join(a[1:]) for a, _ in RUN])
def test_run_rejects_before_any_cell(argv, expected, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("infsched: error: " + expected) and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()  # no kernel started, nothing written


@pytest.mark.parametrize("var, value, cmd", [
    ("INFSCHED_PROCESSES", "abc", ["run", "tad"]),
    ("INFSCHED_WORKERS", "abc", ["run", "tad"]),     # the older name is still read and checked
    ("INFSCHED_WORKERS", "0", ["sweep", "tad", "-e", "fig5", "--no-cache"]),
    ("INFSCHED_SCALE", "huge", ["run", "tad"]),
    ("INFSCHED_MEMORY_LIMIT", "lots", ["run", "tad", "-p", "n_servers=64"]),
])
def test_bad_environment_is_one_line(var, value, cmd, monkeypatch, capsys):
    for name in ("INFSCHED_PROCESSES", "INFSCHED_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(var, value)
    assert main(cmd) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"infsched: error: {var} = {value!r}") and err.count("\n") == 1, err


def test_sweep_names_the_bad_keyword(capsys):
    """The experiment rejects it before computing anything; the sweep reports the point."""
    assert main(["sweep", "tad", "-e", "fig6", "-p", "a_stars=[]", "--scale", "smoke", "--no-cache",
                 "--no-progress", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "failed: ConfigError: a_stars = []: must be a non-empty list" in err and err.count("\n") == 1

