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
    # each chapter's own first-cell checks, run before its kernel starts
    (["run", "ramsis", "-p", "slo_ms=1"], "slo_ms = 1: below the fastest model's batch-1 latency"),
    (["run", "ramsis", "-p", "workers=1"], "workers = 1: at SLO 150 ms the image models need at least"),
    (["run", "shepherd", "-p", "slo_ms=1"], "slo_ms = 1: must be at least the fastest model's batch-1"),
    (["run", "kvcache", "-p", "kappa=100"], "kappa = 100: must be None (calibrate on Table 1) or a "
                                            "positive batch-time scale below 100"),
    # the head to head: each value alone, then together through the serving package's checks
    (["run", "shepherd", "-p", "workers=1000000", "--scale", "smoke"],
     "workers = 1000000: a trace of 7.2e+09 requests (1.2e+10 requests/s for 0.6 s) would need about"),
    (["run", "headtohead", "-p", "K=0"], "K = 0: must be an integer in [1, 100000]"),
    (["run", "headtohead", "-p", "seed=1.7"], "seed = 1.7: must be an integer"),
    (["run", "headtohead", "-p", "load=[]"], "load = []: must be None, a number or a non-empty list"),
    (["run", "headtohead", "-p", "load=[0.5,0.5]"], "load = [0.5, 0.5]: must not repeat a value"),
    (["run", "headtohead", "-p", "load=abc"], "load = 'abc': must be None, a number"),
    (["run", "headtohead", "-p", "targets=(80,70)"], "targets = (80, 70): must be the low target, then"),
    (["run", "headtohead", "-p", "targets=[70]"], "targets = [70]: must be 2 numbers"),
    (["run", "headtohead", "-p", "profile=nope.csv"], "profile = 'nope.csv': no such file"),
    (["run", "headtohead", "-p", "slo_ms=10"], "slo_ms = 10: it is below every model's batch-1 latency "
                                               "(the fastest, shufflenet_v2_x0_5, takes 21.921 ms)"),
    (["run", "headtohead", "-p", "slo_ms=30", "-p", "a_star=50"],
     "slo_ms = 30: the decision table's tight SLO, 0.667 × slo_ms = 20 ms, is below every model's"),
    (["run", "headtohead", "-p", "a_star=99"], "a_star = 99: TAD cannot reach it: a* = 99 exceeds the "
                                               "most accurate model that meets the SLO (150 ms)"),
    (["run", "headtohead", "-p", "slo_ms=30"], "a_star = 76.0 (the default): TAD cannot reach it"),
    (["run", "headtohead", "-p", "profile=measured", "-p", "slo_ms=5"],
     "slo_ms = 5: it is below every model's batch-1 latency of profile 'measured'"),
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


SWEEP = [  # refused before any point runs: exit 2, one line
    (["kvcache", "-e", "tab1", "-p", "n_requests=0"], "n_requests = 0: must be an integer in [1, 10000]"),
    (["kvcache", "-e", "tab1", "-p", "n_requests=5,2.5"], "n_requests = 2.5: must be an integer"),
    (["kvcache", "-e", "fig3", "-p", "bogus=1"], "parameter = 'bogus': experiment fig3 of kvcache does "
                                                 "not take it; it takes kappa, n_jobs, cache"),
    (["kvcache", "-e", "fig3", "-p", "n_requests=5"], "parameter = 'n_requests': experiment fig3 of "
                                                      "kvcache does not take it"),
    (["tad", "-e", "fig6", "-p", "seed=3"], "parameter = 'seed': is set by the sweep itself"),
    (["tad", "--seeds", "1.7"], "--seeds '1.7': must be non-negative integers"),
    (["tad", "-e", "fig99"], "experiment = 'fig99': tad has "),
]


@pytest.mark.parametrize("argv, expected", SWEEP, ids=[" ".join(a) for a, _ in SWEEP])
def test_sweep_rejects_before_any_point(argv, expected, capsys):
    assert main(["sweep", *argv, "--scale", "smoke", "--no-cache", "--no-progress", "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("infsched: error: " + expected) and err.count("\n") == 1, err


POINTS = [  # checked by the experiment when its point runs: the point fails, named, exit 1
    (["tad", "-e", "fig6", "-p", "n_points=0"], "n_points = 0: must be None (the scale's) or an integer >= 1"),
    (["shepherd", "-e", "fig7", "-p", "lam=abc"], "lam = 'abc': must be a finite number > 1"),
    (["shepherd", "-e", "fig7", "-p", "workers=10000000"], "workers = 10000000: a trace of 7.2e+10 "
                                                          "requests"),
]


@pytest.mark.parametrize("argv, expected", POINTS, ids=[" ".join(a) for a, _ in POINTS])
def test_sweep_names_the_bad_value_of_a_failed_point(argv, expected, tmp_path, capsys):
    assert main(["sweep", *argv, "--scale", "smoke", "--no-cache", "--no-progress", "--jobs", "1",
                 "--out", str(tmp_path / "o.csv")]) == 1
    captured = capsys.readouterr()
    assert f"failed: ConfigError: {expected}" in captured.err and captured.err.count("\n") == 1, captured.err
    assert "1 point(s) failed (rerun to retry them)" in captured.out


@pytest.fixture(scope="module")
def bad_profiles(tmp_path_factory):
    from tests.badinput import bad_profile_files

    return bad_profile_files(tmp_path_factory.mktemp("profiles"))


@pytest.mark.parametrize("chapter", ["headtohead", "shepherd", "ramsis"])
@pytest.mark.parametrize("bad, why", [
    ("empty", "cannot be read as a CSV profile: it is empty"),
    ("binary", "cannot be read as"),
    ("absurd", "line 2 (model 'resnet18'): p95_ms = '1e+300' ms is not a plausible latency"),
    ("fractional", "line 2 (model 'resnet18'): batch = '2.5' must be a whole number"),
])
def test_a_bad_profile_file_is_one_line_naming_file_column_and_value(chapter, bad, why, bad_profiles,
                                                                      tmp_path, capsys):
    """The shared profile validator (profiling.timing.read_raw) runs before a kernel starts."""
    path = bad_profiles / f"{bad}.csv"
    assert main(["run", chapter, "-p", f"profile={str(path)!r}", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"infsched: error: profile = {str(path)!r}: profile file {path}") and \
        why in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


def test_sweep_names_the_bad_keyword(capsys):
    """The experiment rejects it before computing anything; the sweep reports the point."""
    assert main(["sweep", "tad", "-e", "fig6", "-p", "a_stars=[]", "--scale", "smoke", "--no-cache",
                 "--no-progress", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "failed: ConfigError: a_stars = []: must be a non-empty list" in err and err.count("\n") == 1

