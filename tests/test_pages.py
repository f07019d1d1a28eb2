"""Long tables on a page: the summary, the collapsed full table and its CSV download."""

import base64
import io
import re

import pandas as pd
import pytest

from infsched import pages
from infsched.errors import ConfigError


def table():
    idx = pd.MultiIndex.from_product([[72.0, 76.0], [0.1, 0.2, 0.3, 0.4, 0.5]], names=["a_star", "rho"])
    return pd.DataFrame({"TAD": range(10), "TAD-OP": [x / 3 for x in range(10)]}, index=idx)


def test_thin_keeps_first_middle_and_last_values_of_a_level_or_column():
    t = table()
    assert sorted(set(pages.thin(t, "rho").index.get_level_values("rho"))) == [0.1, 0.3, 0.5]
    flat = t.reset_index()
    assert sorted(pages.thin(flat, "rho", keep=2)["rho"].unique()) == [0.1, 0.5]
    assert len(pages.thin(flat, "a_star", keep=5)) == 10      # fewer values than keep: all rows
    with pytest.raises(ConfigError, match="by = 'load'"):
        pages.thin(t, "load")


def test_summarised_shows_the_summary_and_links_every_row_as_csv():
    t = table()
    s = pages.summarised(t, "tad-fig6", summary=pages.thin(t, "rho"))
    html = s._repr_html_()
    assert html.count("<table") == 2 and "<details>" in html and "6 of 10 rows shown." in html
    href = re.search(r'download="tad-fig6.csv" href="data:text/csv;base64,([^"]+)"', html).group(1)
    back = pd.read_csv(io.BytesIO(base64.b64decode(href)), index_col=[0, 1])
    pd.testing.assert_frame_equal(back, t)
    assert "tad-fig6.csv" in repr(s) and "6 of 10 rows shown." in repr(s)
    assert "per family" in repr(pages.summarised(t, "x", summary=t.head(2), caption="per family"))
    with pytest.raises(ConfigError, match="name"):
        pages.summarised(t, "a/b")


def test_thin_within_groups_picks_each_groups_own_values():
    flat = pd.DataFrame({"task": ["image"] * 5 + ["text"] * 4,
                         "load": [400, 800, 1200, 1600, 2000, 100, 200, 300, 400], "x": range(9)})
    t = pages.thin(flat, "load", within="task")
    assert t["load"].tolist() == [400, 1200, 2000, 100, 300, 400]
    assert pages.thin(flat.set_index(["task", "load"]), "load", within=["task"]).shape == (6, 1)


def test_readable_writes_a_dash_for_missing_values_and_keeps_the_numbers():
    t = pd.DataFrame({"model": ["a", "b"], "ms": [1.23456, float("nan")], "ok": [True, None]})
    r = pages.readable(t, 2)
    assert r["ms"].tolist() == [1.23, "—"] and r["ok"].tolist() == [True, "—"]
    assert "NaN" not in r.to_string() and "None" not in r.to_string()
    full = pages.readable(t.dropna())                     # nothing missing: only rounded (none)
    assert full["ms"].tolist() == [1.23456] and full["ms"].dtype == float
    assert pages.readable(t, missing="n/a")["ms"].iloc[1] == "n/a"
    with pytest.raises(ConfigError, match="digits = -1"):
        pages.readable(t, -1)


def test_folded_keeps_a_short_table_and_folds_a_long_one():
    short = pd.DataFrame({"x": range(10)})
    assert pages.folded(short, "short") is short                          # at the limit: as it is
    long = pd.DataFrame({"x": range(11)})
    f = pages.folded(long, "long")
    assert isinstance(f, pages.Summarised) and len(f.summary) == 6 and len(f.full) == 11
    assert "Download all 11 rows (long.csv)" in f._repr_html_()
    assert pages.folded(long, "long", keep=11) is long
    with pytest.raises(ConfigError, match="keep = 0"):
        pages.folded(long, "long", keep=0)


def test_collapsed_shows_no_row_in_view_and_folds_and_links_every_row():
    t = table()
    c = pages.collapsed(t, "ramsis-fig10", "The accuracy at every load and grid.")
    html = c._repr_html_()
    # the only table is the folded one, after the sentence and the download
    assert html.count("<table") == 1 and html.index("<details>") < html.index("<table")
    assert "The accuracy at every load and grid. " in html
    assert 'download="ramsis-fig10.csv"' in html and "Show all 10 rows" in html
    href = re.search(r'href="data:text/csv;base64,([^"]+)"', html).group(1)
    pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(base64.b64decode(href)), index_col=[0, 1]), t)
    assert repr(c).startswith("The accuracy at every load and grid.") and "Empty" not in repr(c)
    with pytest.raises(ConfigError, match="what"):
        pages.collapsed(t, "x", " ")
