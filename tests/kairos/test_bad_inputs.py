"""Bad inputs to the KAIROS package: each a ConfigError whose message names the parameter."""

import pytest

from infsched.errors import ConfigError
from tests.badinput import check, table
from infsched.kairos import experiments as ex
from infsched.kairos import model

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
]


@table(CASES)
def test_bad_input_names_its_parameter(name, call, error):
    check(name, call, error=error)


def test_a_budget_that_cannot_be_enumerated_gives_the_estimate():
    with pytest.raises(ConfigError, match=r"budget = 1000000000.0: .* of memory, more than the limit"):
        model.configurations(1e9)
