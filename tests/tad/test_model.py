"""System parameters (Section 2): every bad input is named, with what is allowed."""

from __future__ import annotations

import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.tad.model import MAIN, SystemParams


@pytest.mark.parametrize("kwargs, match", [
    (dict(mu=(2, 1), a=(70, 80), alpha=(0.5, 0.6)), r"alpha = \(0\.5, 0\.6\): class fractions must sum to 1"),
    (dict(mu=(2, 0), a=(70, 80), alpha=(0.5, 0.5)), r"mu = \(2\.0, 0\.0\): service rates must be positive"),
    (dict(mu=(2, -1), a=(70, 80), alpha=(0.5, 0.5)), r"mu = .*: service rates must be positive"),
    (dict(mu=(1, 2), a=(70, 80), alpha=(0.5, 0.5)), r"mu = \(1\.0, 2\.0\): must be strictly decreasing"),
    (dict(mu=(2, 1), a=(80, 70), alpha=(0.5, 0.5)), r"a = \(80\.0, 70\.0\): must be strictly increasing"),
    (dict(mu=(2, 1), a=(70, 80), alpha=(1.0, 0.0)), r"alpha = .*: class fractions must be positive"),
    (dict(mu=(2, 1), a=(70, 80, 90), alpha=(0.5, 0.5)), r"mu, a and alpha must have the same length"),
    (dict(mu=(2, float("nan")), a=(70, 80), alpha=(0.5, 0.5)), r"mu = .*: must be finite numbers"),
    (dict(mu="fast", a=(70, 80), alpha=(0.5, 0.5)), r"mu = 'fast': must be a sequence of numbers"),
])
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SystemParams(**kwargs)


def test_target_above_the_best_model_is_infeasible():
    with pytest.raises(InfeasibleError, match=r"a\* = 101 exceeds the most accurate model, 100"):
        MAIN.check_target(101)
    assert MAIN.check_target(100) == 100.0


def test_class_sizes_must_be_whole_servers():
    assert MAIN.class_sizes(64).tolist() == [16, 16, 16, 16]
    with pytest.raises(ConfigError, match=r"n = 66: .*whole number of servers"):
        MAIN.class_sizes(66)
    with pytest.raises(ConfigError, match=r"n = 0: must be a positive integer"):
        MAIN.class_sizes(0)
