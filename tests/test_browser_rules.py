"""The browser check's rules (tests/browser.py) on measurements given by hand: cheap, no Chromium."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import browser  # noqa: E402


def measure(**kw):
    return {"tables": [], "figures": [], "equations": [], "text": "", **kw}


def test_a_clean_page_has_no_problem():
    assert browser.problems_of(measure(text="RAMSIS reproduces 9 of 13 rows; see Figure 3.")) == []


def test_each_kind_of_problem_is_named():
    probs = browser.problems_of(measure(
        tables=["Table 2: 900 px wide, scrolls sideways"], figures=["fig5: 105 px high"],
        equations=["equation-kairos-ub: 831 px wide in 757 px"],
        text="ours NaN here; a {glue:text} role; as the spec says; see issue 32"))
    joined = "\n".join(probs)
    for what in ("horizontal scrolling", "under 120 px", "equation wider than the column: equation-kairos-ub",
                 "NaN", "raw markup", "the spec", "an issue number"):
        assert what in joined, (what, joined)


def test_measurements_without_equations_still_read():
    """A measurement taken before equations were checked has no such key."""
    m = measure()
    del m["equations"]
    assert browser.problems_of(m) == []
