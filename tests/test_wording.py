"""Generated phrases at their edge cases: no points, one point, several."""

import pytest

from infsched.errors import ConfigError
from infsched.wording import and_list, at_points


def test_and_list():
    assert and_list([]) == ""
    assert and_list(["n = 8"]) == "n = 8"
    assert and_list(["a", "b"]) == "a and b"
    assert and_list(["a", "b", "c"]) == "a, b and c"


def test_at_points_writes_the_empty_case_as_its_own_sentence():
    some, none = "proves it below 5 % only at {}", "proves it below 5 % at no point"
    assert at_points([], some=some, none=none) == "proves it below 5 % at no point"
    assert "none" not in at_points([], some=some, none=none)
    assert at_points(["M = 16"], some=some, none=none) == "proves it below 5 % only at M = 16"
    assert at_points(["M = 16", "n = 4"], some=some, none=none).endswith("only at M = 16 and n = 4")
    with pytest.raises(ConfigError, match="some = "):
        at_points([], some="no placeholder", none=none)
    with pytest.raises(ConfigError, match="none = "):
        at_points([], some=some, none="")
