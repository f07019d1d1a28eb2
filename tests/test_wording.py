"""Generated phrases at their edge cases: no points, one point, several."""

import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.wording import and_list, at_points, shared_parts, verdicts_once


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


def test_shared_parts_edge_cases():
    assert shared_parts([]) == ("", [])
    assert shared_parts(["only one; note"]) == ("", ["only one; note"])          # one row: nothing to share
    assert shared_parts(["a; x", "b; y"]) == ("", ["a; x", "b; y"])            # nothing in common
    assert shared_parts(["s; a", "b; s", "s"]) == ("s", ["a", "b", ""])         # all, wherever it sits
    assert shared_parts(["s; t", "s; t"]) == ("s; t", ["", ""])                # equal notes
    assert shared_parts([None, "s"]) == ("", ["", "s"])


def test_verdicts_once_changes_only_the_display():
    t = pd.DataFrame({"quantity": ["q1", "q2"], "note": ["on a substitute (P <x>); r1", "on a substitute (P <x>)"]})
    head, shown = verdicts_once(t)
    assert "on a substitute (P &lt;x&gt;)" in head and shown["note"].tolist() == ["r1", ""]
    assert t["note"].iloc[1] == "on a substitute (P <x>)"                       # the kept table as it was
    bare = t.drop(columns="note")
    assert verdicts_once(bare)[0] == "" and verdicts_once(bare)[1] is bare
    assert verdicts_once(t.head(1))[0] == ""
