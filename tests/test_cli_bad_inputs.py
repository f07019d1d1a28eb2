"""Bad chapter parameters and environment variables through ``infsched run`` and ``infsched
sweep``: one line naming the parameter as the user typed it, exit status 2, before a kernel
starts or a point computes."""

from pathlib import Path

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
    # issue 35: experiments that passed **kw on now show what they take: refused before any point
    (["tad", "-e", "fig6", "-p", "bogus=1"], "parameter = 'bogus': experiment fig6 of tad does not "
                                             "take it; it takes n, a_stars, n_points, policies, n_jobs, cache"),
    (["kairos", "-e", "fig2", "-p", "bogus=1"], "parameter = 'bogus': experiment fig2 of kairos does "
                                                "not take it; it takes runs, steps, t0"),
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



def test_run_out_that_cannot_be_a_folder_is_named(tmp_path, capsys):
    """Issue 35: ``--out /proc/x`` was a bare FileNotFoundError; it is one line naming --out,
    after the parameters pass and before a kernel starts, and nothing is left behind."""
    (tmp_path / "file").write_text("x")
    bad = [(str(tmp_path / "file" / "x"), "is a file, not a folder")]
    if Path("/proc/self").is_dir():
        bad.append(("/proc/x", "the folder cannot be created"))
    for out, why in bad:
        assert main(["run", "tad", "--out", out]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"infsched: error: --out {out!r}: ") and why in err and \
            err.count("\n") == 1, err
    # a parameter is still checked first, and a good --out is left uncreated by the check
    assert main(["run", "tad", "-p", "seed=-1", "--out", str(tmp_path / "a" / "b")]) == 2
    assert capsys.readouterr().err.startswith("infsched: error: seed = -1") and not (tmp_path / "a").exists()


def _tad_fig5_sweep(*extra):
    return ["sweep", "tad", "-e", "fig5", "-p", "a_star=72,76", "-p", "n_rhos=5", "--scale", "smoke",
            "--jobs", "1", *extra]


def test_sweep_says_which_cache_entries_it_repairs(tmp_path, monkeypatch, capsys):
    """Issue 35: ``infsched sweep`` ignored every RuntimeWarning, so a damaged cache entry was
    recomputed without a word; now each repair is one line naming the file (also above a
    progress bar), and the failed-points summary stays out (each failed point has its line)."""
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    assert main(_tad_fig5_sweep("--no-progress")) == 0
    capsys.readouterr()
    entries = sorted((tmp_path / "cache").rglob("*.pkl"))
    assert len(entries) == 2
    for f in entries:
        f.write_bytes(f.read_bytes()[:40])                      # truncated
    for extra in (["--no-progress"], []):                       # with and without a bar
        if not extra:
            for f in entries:
                f.write_bytes(f.read_bytes()[:40])
        assert main(_tad_fig5_sweep(*extra)) == 0
        lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("infsched cache: ")]
        assert sorted(x.split(": ")[1] for x in lines) == [str(f) for f in entries], lines
        assert all(x.endswith("; recomputing this point") for x in lines)


def test_sweep_passes_a_long_run_estimate_through(monkeypatch, capsys):
    """The long-run estimate (infsched.limits.warn_long) a point gives is one line on stderr."""
    import pandas as pd

    from infsched.limits import warn_long
    from infsched.tad import experiments as tad

    def slow(scale="default", seed=0):
        warn_long("simulating n_jobs = 200000000000 arrivals", 2e4)  # within the CPU budget
        return pd.DataFrame({"y": [1.0]})

    monkeypatch.setitem(tad.EXPERIMENTS, "fig5", slow)
    assert main(["sweep", "tad", "-e", "fig5", "--scale", "smoke", "--jobs", "1", "--no-cache",
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "infsched: RuntimeWarning: simulating n_jobs = 200000000000 arrivals will take about " \
           "5.56 hours on one core (an estimate)\n" in err, err


def _page(tmp_path, texts):
    import nbformat

    nb = nbformat.v4.new_notebook()
    for name, text in texts:
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("stream", name=name, text=text)]
        nb.cells.append(cell)
    path = tmp_path / "tad.ipynb"
    nbformat.write(nb, path)
    return path


PAGE = [("stdout", "infsched cache: /c/a.pkl: truncated header; recomputing this point\nother\n"),
        ("stderr", "/lib/x.py:3: RuntimeWarning: simulating 9 requests will take about 2 hours on one "
                   "core (an estimate)\n  warnings.warn(\n"),
        ("stdout", "infsched cache: /c/b.pkl: checksum mismatch; recomputing this point\n")]
EXPECTED = ["infsched cache: /c/a.pkl: truncated header; recomputing this point",
            "infsched: simulating 9 requests will take about 2 hours on one core (an estimate)",
            "infsched cache: /c/b.pkl: checksum mismatch; recomputing this point"]


def test_run_repeats_the_repairs_its_chapter_made(tmp_path, monkeypatch, capsys):
    """``infsched run``: a chapter's cells print each cache entry they repair on the page (stderr
    in a cell fails the strict book build); the command repeats each as one line on its stderr,
    with the long-run estimates, when the chapter has run or failed."""
    import infsched.cli as cli
    from infsched.runner import ChapterFailed

    page = _page(tmp_path, PAGE)
    monkeypatch.setattr(cli, "run_chapter", lambda *a, **k: page)
    assert main(["run", "tad", "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert cap.err.splitlines() == EXPECTED and str(page) in cap.out

    def fail(*a, **k):
        exc = ChapterFailed("chapter 'tad' failed at cell [3]: ValueError: x")
        exc.notebook = page
        raise exc

    monkeypatch.setattr(cli, "run_chapter", fail)
    assert main(["run", "tad", "--no-progress"]) == 2
    assert capsys.readouterr().err.splitlines() == EXPECTED + [
        "infsched: error: chapter 'tad' failed at cell [3]: ValueError: x"]
