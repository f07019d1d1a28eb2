"""Bad inputs to the KV-cache package: each a ConfigError whose message names the parameter."""

import inspect

import numpy as np
import pytest
from tests.badinput import check, table

from infsched.errors import ConfigError
from infsched.kvcache import experiments as ex, model, policies, sim

HUGE = dict(arrival=np.array([0, 0]), prompt=np.array([10, 10]), output=np.array([10**12, 10**12]),
            M=4 * 10**12)

CASES = [
    ("demand", lambda: ex.check_parameters("medium", 1000, None)),
    ("n_requests", lambda: ex.check_parameters("high", 0, None)),
    ("n_requests", lambda: ex.check_parameters("high", 2.5, None)),
    ("kappa", lambda: ex.check_parameters("high", 1000, "1")),
    ("output", lambda: sim.simulate(HUGE["arrival"], HUGE["prompt"], HUGE["output"], HUGE["M"],
                                    sim.SimConfig("mc-sf"))),
    ("output", lambda: model.check_schedule(model.Instance(**HUGE), [0, 0])),
    ("M", lambda: model.Instance(np.array([0]), np.array([1]), np.array([1]), "8")),
    # the experiments' keywords, rejected before any point runs (not truncated, not converted)
    ("n", lambda: ex.tab1("smoke", kappa=1.0, n=2.5, n_jobs=1, cache=False)),
    ("n", lambda: ex.alpha_beta_sweep("smoke", kappa=1.0, n=-5, n_jobs=1, cache=False)),
    ("kappa", lambda: ex.tab1("smoke", kappa="a", n_jobs=1, cache=False)),
    ("kappa", lambda: ex.fig3("smoke", kappa=float("nan"), n_jobs=1, cache=False)),
    ("seed", lambda: ex.tab1("smoke", seed=1.5, kappa=1.0, n_jobs=1, cache=False)),
    ("seed", lambda: ex.fig3("smoke", seed=-1, kappa=1.0, n_jobs=1, cache=False)),
    ("demand", lambda: ex.tab1("smoke", kappa=1.0, demand="x", n_jobs=1, cache=False)),
    # the registered experiments (κ-calibrating wrappers): checked before κ is calibrated
    ("kappa", lambda: ex.EXPERIMENTS["fig3"]("smoke", kappa="x")),
    ("kappa", lambda: ex.EXPERIMENTS["fig6"]("smoke", kappa=-1.0)),
    ("parameter", lambda: ex.EXPERIMENTS["fig6"]("smoke", kappa=1.0, n_jobs=1)),
    ("parameter", lambda: ex.EXPERIMENTS["tab1"]("smoke", kappa=1.0, n_requests=5)),
    # issue 35: MC-SF and MC-Benchmark on requests of 10^12 tokens (numpy's ArrayMemoryError
    # asking for 7.28 TiB), refused with the estimate as the simulator and the experiments do
    ("output", lambda: policies.mc_sf(model.Instance(**HUGE))),
    ("output", lambda: policies.mc_benchmark(model.Instance(**HUGE))),
]


@table(CASES)
def test_bad_input_names_its_parameter(name, call, error):
    check(name, call, error=error)


def test_requests_of_1e12_tokens_are_refused_with_the_estimate():
    with pytest.raises(ConfigError, match=r"TiB of memory, more than the limit"):
        sim.simulate(HUGE["arrival"], HUGE["prompt"], HUGE["output"], HUGE["M"], sim.SimConfig("mc-sf"))


def test_the_chapters_n_requests_is_the_sweeps_n():
    """``infsched sweep kvcache -p n_requests=...`` (the chapter's name) sets the experiments' ``n``."""
    from infsched.chapters import chapter_grid

    grid = chapter_grid("kvcache", {"n_requests": [500, 1000]}, experiments=["tab1"], scale="smoke")
    assert [p["n"] for p in grid] == [500, 1000] and all("n_requests" not in p for p in grid)
    with pytest.raises(ConfigError, match="n_requests"):
        chapter_grid("kvcache", {"n_requests": [5], "n": [6]}, experiments=["tab1"], scale="smoke")


def test_the_kappa_wrappers_show_the_keywords_they_take():
    """``_needs_kappa`` keeps the wrapped function's signature (κ optional), so the sweep's name
    check sees ``n`` and ``demand`` of tab1 and names a keyword that no experiment takes."""
    from infsched.chapters import chapter_grid, experiment_parameters

    sig = inspect.signature(ex.EXPERIMENTS["tab1"])
    assert list(sig.parameters) == ["scale", "seed", "kappa", "n", "demand", "n_jobs", "cache"]
    assert sig.parameters["kappa"].default is None and sig.parameters["n"].default == 1000
    assert experiment_parameters(ex.EXPERIMENTS["fig6"]) == (["kappa"], False)
    assert ex.EXPERIMENTS["tab1"].__wrapped__ is ex.tab1
    msg = check("parameter", lambda: chapter_grid("kvcache", {"nn": [5]}, experiments=["tab1"],
                                                    scale="smoke"))
    assert msg.startswith("parameter = 'nn': experiment tab1 of kvcache does not take it; it takes "
                          "kappa, n, demand, n_jobs, cache"), msg
    msg = check("parameter", lambda: chapter_grid("kvcache", {"n_requests": [5]}, experiments=["fig3"],
                                                    scale="smoke"))
    assert "experiments that take it: tab1, fig7-fig8-fig10-fig11" in msg
    # the names a keyword is really taken under pass the check
    assert len(chapter_grid("kvcache", {"demand": ["low"]}, experiments=["tab1"], scale="smoke")) == 1


def test_a_run_of_10e11_rounds_says_how_long_before_it_starts(monkeypatch):
    """Where the memory limit allows it (here raised to 100 TiB), a run of 10^11 rounds is warned
    with its estimate before anything is allocated (the warning made an error here)."""
    import warnings

    monkeypatch.setenv("INFSCHED_MEMORY_LIMIT", "100T")
    o = 10**11
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match=r"simulating 1 requests over 100000000000 rounds or "
                                                 r"more .* will take about 1.\d+ hours on one core"):
            sim.simulate(np.array([0.0]), np.array([10]), np.array([o]), 2 * o,
                         sim.SimConfig("mc-sf", max_rounds=o))
