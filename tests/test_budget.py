"""Every request is bounded before it starts (infsched.limits.check_budget, check_grid): one
whose estimate exceeds the CPU budget (24 CPU-hours by default; ``--max-cpu-hours`` or
``$INFSCHED_MAX_CPU_H``) is refused before any work, with the estimate, what it rests on and how
to raise the budget; a seed range or grid is counted, never listed, before that check."""

from __future__ import annotations

import time

import pytest

from infsched.chapters import sweep_chapter
from infsched.cli import count_seeds, main
from infsched.errors import ConfigError
from infsched.limits import MAX_CPU_H_ENV, check_budget, cpu_budget
from infsched.tad.model import MAIN
from infsched.tad.sim import simulate


def test_the_budget_defaults_to_a_day_and_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(MAX_CPU_H_ENV, raising=False)
    assert cpu_budget()[0] == 24 * 3600
    monkeypatch.setenv(MAX_CPU_H_ENV, "2.5")
    assert cpu_budget()[0] == 2.5 * 3600
    check_budget("x", 2 * 3600)  # within: nothing
    with pytest.raises(ConfigError, match="about 3 hours.*budget of 2.5 CPU-hours"):
        check_budget("x", 3 * 3600)
    monkeypatch.setenv(MAX_CPU_H_ENV, "-1")
    with pytest.raises(ConfigError, match=MAX_CPU_H_ENV):
        cpu_budget()


def test_a_huge_n_jobs_is_refused_before_any_work(monkeypatch):
    monkeypatch.delenv(MAX_CPU_H_ENV, raising=False)
    t = time.process_time()
    with pytest.raises(ConfigError, match=r"n_jobs = 10000000000000 arrivals would take about 11.6 "
                                          r"days.*--max-cpu-hours H or INFSCHED_MAX_CPU_H=H"):
        simulate(MAIN, "tad", 64, rho=0.5, n_jobs=10**13)
    assert time.process_time() - t < 5  # refused, not started (a generous bound on a check)


def test_a_huge_seed_range_is_counted_and_refused(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(MAX_CPU_H_ENV, raising=False)
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    assert count_seeds("0-10000000,5") == 10_000_002
    for scale in ("smoke", "default"):
        assert main(["sweep", "tad", "--seeds", "0-10000000", "--scale", scale, "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert "a sweep of 100,000,010 points would take about" in err and "--max-cpu-hours" in err
    assert not (tmp_path / "cache").exists()  # no point started
    with pytest.raises(ConfigError, match="a sweep of 10,000,000 points"):  # the API: a range is counted
        sweep_chapter("tad", experiments=["fig5"], scale="default", seeds=range(10**7))


def test_max_cpu_hours_is_checked_and_refuses_a_run_over_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(MAX_CPU_H_ENV, "24")  # removed again after: --max-cpu-hours sets it
    assert main(["sweep", "tad", "--max-cpu-hours", "0", "--no-progress"]) == 2
    assert "--max-cpu-hours 0.0: must be a positive number" in capsys.readouterr().err
    # tad at default scale: 60 CPU s measured, over a budget of 3.6 CPU s
    assert main(["run", "tad", "--scale", "default", "--max-cpu-hours", "0.001",
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "infsched run tad would take about" in err and "budget of 0.001 CPU-hours" in err
    assert not (tmp_path / "run").exists()
