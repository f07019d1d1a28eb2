"""Bad inputs to the KAIROS package: each a ConfigError whose message names the parameter."""

import pytest
from tests.badinput import check, table

from infsched.errors import ConfigError
from infsched.kairos import experiments as ex, model

CASES = [
    ("budget", lambda: model.configurations(1e9)),
    ("budget", lambda: model.configurations("2.5")),
    ("budget", lambda: model.configurations(float("nan"))),
    ("budget", lambda: model.configurations(0.1)),
    ("model", lambda: ex.check_parameters("bert", 2.5, "mean")),
    ("service", lambda: ex.check_parameters("rm2", 2.5, "median")),
    # the experiments' keywords, under the names the caller typed
    ("qos_scale", lambda: ex.picks(qos_scale=0.0)),
    ("qos_scale", lambda: ex.ub_table("rm2", qos_scale=float("nan"))),
    ("source", lambda: ex.picks(source="x")),
    ("seed", lambda: ex.exhaustive("rm2", "smoke", seed=1.5)),
    ("variant", lambda: ex.exhaustive("rm2", "smoke", variant="zz")),
    ("experiment", lambda: ex.run_experiment("x", "smoke")),
    # issue 35: a keyword Fig. 2 does not take (was simulated_annealing's TypeError), refused
    # before its table is built
    ("parameter", lambda: ex.EXPERIMENTS["fig2"]("smoke", 0, bogus=1)),
    ("parameter", lambda: ex.run_experiment("fig2", "smoke", bogus=1)),
    ("parameter", lambda: ex.fig2(None, bogus=1)),
]


@table(CASES)
def test_bad_input_names_its_parameter(name, call, error):
    check(name, call, error=error)


def test_a_budget_that_cannot_be_enumerated_gives_the_estimate():
    with pytest.raises(ConfigError, match=r"budget = 1000000000.0: .* of memory, more than the limit"):
        model.configurations(1e9)


def test_n_queries_that_cannot_fit_are_refused_with_the_estimate():
    from infsched.kairos import sim

    with pytest.raises(ConfigError, match=r"n_queries = 1000000000000: the workload of .* TiB of "
                                          r"memory, more than the limit"):
        sim.make_workload(10**12)


def test_a_run_that_would_take_hours_says_so():
    import warnings

    from infsched.kairos import sim

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match=r"simulating 10000000 queries on 1400000 instances "
                                                 r"will take about .* hours on one core"):
            sim.simulate((100_000, 0, 1_300_000, 0), "rm2", "fcfs", 1000.0, n_queries=10**7)


def test_fig2_shows_the_keywords_it_passes_to_the_annealing():
    """So that ``infsched sweep kairos -e fig2 -p bogus=1`` is refused before any point."""
    from infsched.chapters import experiment_parameters

    taken, open_ = experiment_parameters(ex.EXPERIMENTS["fig2"])
    assert not open_ and taken[:3] == ["runs", "steps", "t0"] and "bogus" not in taken
    msg = check("parameter", lambda: ex.EXPERIMENTS["fig2"]("smoke", 0, bogus=1))
    assert msg.startswith("parameter = 'bogus': experiment fig2 of kairos does not take it; it "
                          "takes runs, steps, t0"), msg
