"""The front page's generated sentences agree with their numbers: every phrase generator of
infsched.headlines (and the row counts of infsched.report and the captions of infsched.pages)
at its edges: none, one, equal values, zero."""

import json

import pandas as pd
import pytest

from infsched import headlines, pages, report
from infsched.errors import ConfigError


def card(rows):
    base = {"unit": "", "note": ""}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_every_headline_names_a_row_of_its_paper_and_a_known_form():
    for chapter, picks in headlines.HEADLINES.items():
        df = report.paper_numbers(chapter)
        keys = set(zip(df["item"], df["quantity"]))
        for h in picks:
            assert (h.item, h.quantity) in keys, (chapter, h)
            if h.also:
                assert h.also[:2] in keys, (chapter, h.also)
            claim = df[(df["item"] == h.item) & (df["quantity"] == h.quantity)]["qualitative"].iloc[0]
            assert (h.form == "claim") == bool(claim), (chapter, h.quantity, h.form)
    assert set(headlines.HEADLINES) == set(headlines.PAPERS)


@pytest.mark.parametrize("value, form, words", [
    (1.126, "times", "1.13×"), (1.0, "times", "1×"), (13.48, "times", "13.5×"), (38, "times", "38×"),
    (1.069, "above", "6.9 % above"), (1.0, "above", "on it"), (1.0004, "above", "on it"),
    (0.98, "above", "2 % below"), (16.67, "pct", "16.7 %"), (0, "pct", "0 %"),
    (5.7, "points", "5.7 points"), (1.0, "points", "1 point"), (-1.0, "points", "-1 point"),
    (0.0, "points", "0 points"), (True, "claim", "holds"), (False, "claim", "does not hold"),
    (None, "times", "—"), (float("nan"), "pct", "—"), (0.000123, "times", "0.000123×"),
    ("[1.014, 1.081]", "above", "between 1.4 % above and 8.1 % above"),   # an open row's bracket
    ("[1.0123, —]", "times", "between 1.01× and —"),
])
def test_plain_number_reads_every_form(value, form, words):
    assert headlines.plain_number(value, form) == words


def test_plain_number_refuses_an_unknown_form():
    with pytest.raises(ConfigError, match="form"):
        headlines.plain_number(1.0, "ratio")


def test_verdict_counts_count_numbers_claims_and_rows_apart():
    c = report.verdict_counts(card([
        {"paper": 1.0, "verdict": "reproduced"}, {"paper": 1.0, "verdict": "close"},
        {"paper": 2.0, "verdict": "differs"}, {"paper": float("nan"), "verdict": "reproduced"},
        {"paper": None, "verdict": "differs"}, {"paper": 1.0, "verdict": "differs (substitute)"},
        {"paper": None, "verdict": "reproduced (substitute)"}, {"paper": 1.0, "verdict": "stand-in"},
        {"paper": 1.0, "verdict": "calibrated"}, {"paper": 1.0, "verdict": "not reproducible here"}]))
    assert c == {"reproduced": 1, "close": 1, "differs": 1, "holds": 1, "fails": 1, "substitute": 2,
                 "stand-in": 1, "calibrated": 1, "open": 0, "not reproducible here": 1, "rows": 10}
    assert report.verdict_counts(card([{"paper": 1.0, "verdict": "open"}]))["open"] == 1
    assert report.verdict_counts(card([]).reindex(columns=["paper", "verdict"]))["rows"] == 0
    with pytest.raises(ConfigError, match="verdict"):
        report.verdict_counts(card([{"paper": 1.0, "verdict": "fine"}]))


def counts(**kw):
    return {**dict.fromkeys(report.COUNT_KEYS, 0), **kw}


@pytest.mark.parametrize("c, phrase", [
    (counts(reproduced=30, close=12, differs=29, holds=67, fails=3, substitute=12),
     ("30 of 71 numbers reproduced (12 close, 29 differ); 67 of 70 claims hold; "
      "12 rows counted apart (12 on a substitute)")),
    (counts(reproduced=2), "2 of 2 numbers reproduced"),                  # nothing close or differing
    (counts(differs=1), "0 of 1 number reproduced (1 differs)"),          # one: singular
    (counts(holds=1), "no numeric row; 1 of 1 claim holds"),
    (counts(fails=2), "no numeric row; 0 of 2 claims hold"),
    (counts(), "no numeric row"),                                          # an empty table
    (counts(reproduced=1, **{"stand-in": 1, "not reproducible here": 2}),
     "1 of 1 number reproduced; 3 rows counted apart (1 stand-in, 2 not reproducible here)"),
])
def test_counts_phrase_agrees_with_its_counts(c, phrase):
    assert headlines.counts_phrase(c) == phrase


def test_totals_sentence_sums_the_papers_and_names_the_whole_book():
    per = {p: counts(reproduced=1, holds=1, rows=2) for p in headlines.PAPERS}
    s = headlines.totals_sentence(per)
    assert s == ("Across the 5 papers, 10 rows set a result of ours beside the paper's: "
                 "5 of 5 numbers reproduced; 5 of 5 claims hold.")
    per["headtohead"] = counts(fails=1, rows=1)
    assert s.rstrip(".") in headlines.totals_sentence(per)
    assert headlines.totals_sentence(per).endswith("With the head to head, the book holds 11 rows.")
    per["headtohead"] = counts()  # a chapter with no row adds nothing to say
    assert headlines.totals_sentence(per) == s
    one = headlines.totals_sentence({"tad": counts(differs=1, rows=1)}, papers=("tad",))
    assert one.startswith("Across the paper, 1 row sets a result")
    with pytest.raises(ConfigError, match="counts"):
        headlines.totals_sentence({"tad": counts()})


def kv_card(mean_verdict="differs", exact=0.0):
    return card([
        {"item": "fig2", "quantity": "model1_mean", "paper": 1.005, "ours": 1.069, "verdict": mean_verdict},
        {"item": "fig2", "quantity": "model1_exact_pct", "paper": 57.0, "ours": exact, "verdict": "differs"},
        {"item": "fig3", "quantity": "mcsf_lowest_everywhere", "paper": float("nan"), "ours": True,
         "verdict": "reproduced"},
    ])


def test_headline_lines_in_plain_units_with_their_caveats():
    lines = headlines.headline_lines("kvcache", kv_card())
    assert len(lines) == 3  # Table 1's row is absent: left out
    assert "paper 0.5 % above, ours 6.9 % above. **differs**" in lines[0]
    assert "lower bound" in lines[0] and "better schedules" in lines[0]  # caveat, and why (differs)
    assert "paper 57 %, ours 0 %" in lines[1]
    assert "ours: holds. **reproduced**" in lines[2]
    # a reproduced row keeps its caveat but not the reason for a difference it does not have
    ok = headlines.headline_lines("kvcache", kv_card("reproduced"))[0]
    assert "lower bound" in ok and "better schedules" not in ok
    with pytest.raises(ConfigError, match="chapter"):
        headlines.headline_lines("profiling", kv_card())


def test_a_second_reading_is_shown_beside_the_first():
    c = card([{"item": "fig9", "quantity": "kairos_over_ribbon_median_ribbon_own_best", "paper": 1.5,
               "ours": 1.74, "verdict": "close"},
              {"item": "fig9", "quantity": "kairos_over_ribbon_median", "paper": 1.5,
               "ours": 13.48, "verdict": "differs"}])
    (line,) = headlines.headline_lines("kairos", c)
    assert "paper 1.5×, ours 1.74×; with Ribbon on the Oracle's configuration: 13.5× (**differs**)" in line
    assert "Two readings: this row runs Ribbon on its own best configuration" in line
    assert "Does not: about 1.5× Ribbon (close: 1.74× against 1.5×)." in headlines.finding("kairos", c)


def test_the_rjiq_line_says_its_claim_is_for_a_high_accuracy_target():
    c = card([{"item": "fig4", "quantity": "rjiq_over_bound_n64_high_astar", "paper": 1.0,
               "ours": 1.0002, "verdict": "reproduced"}])
    (line,) = headlines.headline_lines("tad", c)
    assert "paper 1×, ours 1.0002×" in line and "high accuracy target only" in line


def test_finding_lists_what_holds_and_what_does_not():
    f = headlines.finding("kvcache", kv_card())
    assert f.startswith("0 of 2 numbers reproduced and 1 of 1 claim holds.")
    assert "Holds: MC-SF fastest at every n." in f
    assert ("Does not: MC-SF within 0.5 % of the optimum (differs: 6.9 % above against 0.5 % above) "
            "and MC-SF optimal in 57 % of trials (differs: 0 % against 57 %).") in f
    apart = kv_card().assign(verdict=["stand-in", "stand-in", "reproduced"])
    f = headlines.finding("kvcache", apart)
    assert "Does not" not in f and f.startswith("1 of 1 claim holds.")
    # a table without any headline row says only its counts
    assert headlines.finding("tad", kv_card()).count(".") == 1
    assert headlines.finding("tad", kv_card().iloc[:0]) == "No row judged by the rule."


def test_equal_looking_numbers_get_the_digits_that_tell_them_apart():
    assert headlines.plain_pair(1.0, 1.0008, "times") == ("1×", "1.001×")
    assert headlines.plain_pair(1.0, 1.0, "times") == ("1×", "1×")
    assert headlines.plain_pair(16.67, 16.7, "pct") == ("16.67 %", "16.7 %")
    assert headlines.plain_pair(1.005, 1.0051, "above") == ("0.5 % above", "0.51 % above")
    c = card([{"item": "fig4", "quantity": "rjiq_over_bound_n64_high_astar", "paper": 1.0,
               "ours": 1.0008, "verdict": "close"}])
    assert "paper 1×, ours 1.001×" in headlines.headline_lines("tad", c)[0]
    assert "(close: 1.001× against 1×)" in headlines.finding("tad", c)


def test_the_totals_table_sums_the_papers_and_the_book():
    per = {p: counts(reproduced=1, rows=1) for p in headlines.PAPERS}
    per["profiling"] = counts(substitute=2, rows=2)
    html = headlines.totals_table_html(per, {"tad": "tad.html"})
    assert "<a href='tad.html'>TAD, TAD-OP, R-JIQ</a>" in html
    assert "<td><strong>the 5 papers</strong></td><td><strong>5</strong></td>" in html
    assert html.count("<tr>") == 2 + 5 + 1 + 1 + 1  # two header rows, papers, sum, profiling, book
    assert "<td><strong>7</strong></td></tr></tbody>" in html  # the whole book's rows


def test_glued_counts_are_json():
    c = report._Counts({"reproduced": 2, "rows": 2})
    assert json.loads(repr(c)) == {"reproduced": 2, "rows": 2}


@pytest.mark.parametrize("k, n, words", [(6, 10, "6 of 10 rows shown."), (3, 3, "All 3 rows shown."),
                                         (1, 1, "The 1 row shown."), (0, 0, "No row."),
                                         (0, 4, "0 of 4 rows shown.")])
def test_summary_captions_agree_with_their_counts(k, n, words):
    assert pages.shown_caption(k, n) == words


def test_a_one_row_table_is_one_row_in_every_sentence():
    s = pages.summarised(pd.DataFrame({"a": [1]}), "one")
    assert "The 1 row shown." in repr(s) and "The 1 row: one.csv" in repr(s)
    assert "Download the 1 row (one.csv)" in s._repr_html_() and "rows" not in s._repr_html_()


def test_the_build_commit_is_named_or_said_unknown(tmp_path):
    assert pages.build_commit(tmp_path) == "an unknown commit (not a git checkout)"
    here = pages.build_commit()
    assert len(here.split()[0]) == 7 and pages.build_note(here).startswith("This page was built from commit ")


def test_a_brief_phrase_leaves_out_what_the_rows_apart_are():
    c = counts(reproduced=1, substitute=2, calibrated=1)
    assert headlines.counts_phrase(c, brief=True) == "1 of 1 number reproduced; 3 rows counted apart"
    assert headlines.counts_phrase(c).endswith("(2 on a substitute, 1 calibrated)")


def test_quotes_reach_the_page_without_raw_markup():
    q = report.quote_html(r"*For all $\lambda \in [0, 1]$, with* $x < y$; it costs $10 or $20; a*b")
    assert q.startswith("<em>For all <span class=\"math notranslate nohighlight\">\\(\\lambda \\in [0, 1]\\)</span>")
    assert "\\(x &lt; y\\)" in q and "costs $10 or $20" in q and "a*b" in q and "$\\" not in q
    assert report.quote_html(r"(1.8 \times worse)") == "(1.8 × worse)"
    cell = report._quantity_cell("q_x", r"converges to $T_{LP}$ … as $n$ grows", "Sec. 3")
    assert cell.count('class="math') == 2 and "$" not in cell
