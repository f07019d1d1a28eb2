"""Paper-vs-ours tables: CSV reading, verdict rule, errors, glue, styling, Sphinx hook."""

import math
import re

import pandas as pd
import pytest

from infsched import report
from infsched.errors import ConfigError
from infsched.report import NotReproducible, compare, paper_numbers, summary_line, verdict

CSV = """item,quantity,paper_value,unit,tolerance,basis,source
fig4,mean_latency,2.0,s,0.1,figure,Sec. 5 p. 7; read off Fig. 4 to a tenth of its 1 s grid
fig4,p99,10,ms,,printed,Fig. 4
fig4,tad_beats_jsq,,,,,Sec. 5
ex1,cost,0,$,,exact,Ex. 1
ex1,speedup,4.50,x,,printed,Tab. 2
ex1,share,57,%,6.9,paper-ci,114 of 200 trials
"""


@pytest.fixture
def data(tmp_path, monkeypatch):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "toy.csv").write_text(CSV)
    monkeypatch.setenv("INFSCHED_DATA", str(tmp_path))
    return tmp_path


def test_paper_numbers(data):
    df = paper_numbers("toy")
    assert list(df.columns[:7]) == list(report.PAPER_COLUMNS)
    # printed: half a unit of the last printed digit; exact: none; figure, paper-ci: as given
    assert df.loc[0, "tolerance"] == 0.1 and df.loc[1, "tolerance"] == 0.5
    assert df.loc[3, "tolerance"] == 0.0 and df.loc[4, "tolerance"] == pytest.approx(0.005)
    assert df.loc[5, "tolerance"] == 6.9 and df.loc[4, "printed"] == "4.50"
    assert math.isnan(df.loc[2, "paper_value"]) and df.loc[2, "qualitative"]
    assert math.isnan(df.loc[2, "tolerance"])
    assert df.loc[0, "source"].startswith("Sec. 5 p. 7")
    assert len(paper_numbers("toy", data_dir=data)) == 6


@pytest.mark.parametrize("text, half", [("1.005", 0.0005), ("57", 0.5), ("0.0843", 0.00005),
                                        ("-2.5", 0.05), ("2.5e3", 50.0), ("16.67", 0.005)])
def test_printed_half_unit(text, half):
    assert report.printed_half_unit(text) == pytest.approx(half)


def test_paper_numbers_errors(data):
    with pytest.raises(ConfigError, match=r"paper = 'nope': no file .*nope.csv; papers with numbers: 'toy'"):
        paper_numbers("nope")
    bad = data / "paper" / "bad.csv"
    bad.write_text("item,quantity,paper_value\nfig1,x,1\n")
    with pytest.raises(ConfigError, match="missing column.*unit, tolerance, basis, source"):
        paper_numbers("bad")
    cases = [
        (CSV.replace("2.0,s", "two,s"), r"row 2: paper_value = 'two'"),
        (CSV + "fig4,p99,1,s,,printed,x\n", "duplicate quantity 'p99'"),
        # a tolerance must come from a stated basis, never be chosen
        (CSV.replace("0.1,figure", "0.1,"), r"row 2: basis = '': must be one of 'printed'"),
        (CSV.replace("0.1,figure", "0.1,spec"), r"basis = 'spec'"),
        (CSV.replace("0.1,figure", ",figure"), r"row 2: tolerance = '': basis 'figure' needs"),
        (CSV.replace("6.9,paper-ci", ",paper-ci"), r"row 7: tolerance = '': basis 'paper-ci'"),
        (CSV.replace("0,$,,exact", "0,$,0.5,exact"), r"row 5: tolerance = '0.5': an exact quantity"),
        (CSV.replace(",,,,,Sec. 5", ",,,0.1,,Sec. 5"), r"row 4: tolerance = '0.1': a qualitative claim"),
        (CSV.replace(",,,,,Sec. 5", ",,,,spec,Sec. 5"), r"row 4: basis = 'spec': .* one of 'printed'"),
        (CSV.replace("0.1,figure", "-1,figure"), r"row 2: tolerance = '-1': must be >= 0"),
        (CSV.replace("0.1,figure", "inf,figure"), r"row 2: tolerance = 'inf': must be finite"),
    ]
    for text, msg in cases:
        bad.write_text(text)
        with pytest.raises(ConfigError, match=msg):
            paper_numbers("bad")


def test_repo_csvs_have_a_basis_for_every_number():
    """Every number in data/paper/ states where its tolerance comes from, and no source still
    quotes a spec's acceptance range as a tolerance."""
    folder = report.find_data_dir() / "paper"
    for path in sorted(folder.glob("[a-z]*.csv")):
        df = paper_numbers(path.stem)
        num = df[~df["qualitative"]]
        assert num["basis"].isin(report.BASES).all(), path.name
        assert not df["source"].str.contains(r"tolerance\s*=\s*spec", regex=True).any(), path.name


def test_repo_data_dir_default(monkeypatch):
    monkeypatch.delenv("INFSCHED_DATA", raising=False)
    assert report.find_data_dir() == report.Path(report.__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("paper, ours, tol, expected", [
    # the tolerance is absolute, in the paper's unit
    (2.0, 2.0, 0.1, "reproduced"), (2.0, 2.1, 0.1, "reproduced"), (2.0, 1.9, 0.1, "reproduced"),
    (2.0, 2.2, 0.1, "close"), (2.0, 2.3, 0.1, "close"), (2.0, 2.31, 0.1, "differs"),
    (-2.0, -2.1, 0.1, "reproduced"), (0.0, 0.04, 0.05, "reproduced"), (0.0, 0.2, 0.05, "differs"),
    (100.0, 103.0, 0.5, "differs"), (0.25, 0.25 + 1e-12, 0.0, "reproduced"), (9.0, 10.0, 0.0, "differs"),
    (math.nan, True, 0.05, "reproduced"), (math.nan, False, 0.05, "differs"),
    (2.0, NotReproducible("GPU"), 0.05, "not reproducible here"),
])
def test_verdict_rule(paper, ours, tol, expected):
    assert verdict(paper, ours, tol) == expected


def test_combined_tolerance():
    assert report.combined_tolerance(0.0005, "printed", 0.003) == pytest.approx(0.0035)
    assert report.combined_tolerance(0.1, "figure") == 0.1
    assert report.combined_tolerance(0.0, "exact", 0.01) == 0.01
    assert report.combined_tolerance(3.0, "paper-ci", 4.0) == pytest.approx(5.0)


def test_compare(data):
    t = compare("toy", "fig4", {"mean_latency": 2.25, "p99": 12.0, "tad_beats_jsq": True},
                notes={"p99": "our tail is heavier: exponential sizes"})
    assert list(t.columns) == list(report.TABLE_COLUMNS)
    assert list(t["verdict"]) == ["close", "differs", "reproduced"]
    assert t.loc[0, "ratio"] == pytest.approx(1.125) and t.loc[0, "unit"] == "s"
    assert t.loc[0, "basis"] == "figure reading ±0.1" and t.loc[1, "basis"] == "printed digits ±0.5"
    assert t.loc[1, "note"].startswith("our tail") and t.loc[2, "ours"] is True
    assert math.isnan(t.loc[2, "ratio"]) and t.loc[2, "basis"] == ""
    t2 = compare("toy", "ex1", {"cost": 0.0, "speedup": NotReproducible("needs 8 A100s"),
                                "share": 60.0}, notes={"speedup": "see Sec. 4"})
    assert list(t2["verdict"]) == ["reproduced", "not reproducible here", "reproduced"]
    assert t2.loc[1, "note"] == "needs 8 A100s; see Sec. 4" and t2.loc[1, "ours"] is None
    assert t2.loc[0, "basis"] == "exact"
    assert summary_line(pd.concat([t, t2])) == \
        "3 reproduced, 1 close, 1 differs, 0 on a substitute, 0 stand-in, 0 calibrated, " \
        "0 open, 1 not reproducible here"


def test_claim_rows_may_state_their_basis(data):
    """A true/false claim takes no tolerance but may say what it rests on (issue 32)."""
    (data / "paper" / "toy.csv").write_text(CSV.replace("tad_beats_jsq,,,,,Sec. 5",
                                                        "tad_beats_jsq,,,,figure,Sec. 5"))
    df = paper_numbers("toy")
    assert df.loc[2, "qualitative"] and df.loc[2, "basis"] == "figure"
    t = compare("toy", "fig4", {"mean_latency": 2.0, "p99": 10.0, "tad_beats_jsq": False})
    assert t.loc[2, "basis"] == "claim on a figure" and t.loc[2, "verdict"] == "differs"


def test_compare_confidence_intervals(data):
    """Our 95 % half-width widens the tolerance: added to a bound, in quadrature to a CI."""
    base = {"mean_latency": 2.0, "p99": 12.0, "tad_beats_jsq": True}
    assert compare("toy", "fig4", base)["verdict"][1] == "differs"          # |2| > 3 x 0.5
    t = compare("toy", "fig4", {**base, "p99": report.Measured(12.0, 1.5)})
    assert t.loc[1, "verdict"] == "reproduced" and t.loc[1, "tolerance"] == pytest.approx(2.0)
    assert t.loc[1, "basis"] == "printed digits ±0.5 + our 95 % CI ±1.5"
    t = compare("toy", "fig4", base, ci={"p99": 0.25})
    assert t.loc[1, "verdict"] == "close" and t.loc[1, "tolerance"] == pytest.approx(0.75)
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": report.Measured(67.0, 9.2)})
    assert t.loc[2, "tolerance"] == pytest.approx(11.5) and t.loc[2, "verdict"] == "reproduced"
    assert "⊕" in t.loc[2, "basis"]
    m = report.Measured(1.5, 0.1)
    assert m + 1 == 2.5 and f"{m:.2f}" == "1.50" and str(m) == "1.5"
    import pickle
    assert pickle.loads(pickle.dumps(m)).ci == 0.1
    with pytest.raises(ConfigError, match="ci = -1"):
        report.Measured(1.0, -1)


def test_compare_stand_in(data):
    """A number computed on a scaled-down stand-in is labelled and never counted as reproduced,
    whatever the rule would give; the note says what it would give."""
    good = {"mean_latency": 2.0, "p99": 10.0, "tad_beats_jsq": True}
    t = compare("toy", "fig4", good, stand_in="1,000 jobs per point, the paper's 10^6")
    assert (t["verdict"] == "stand-in").all()
    assert t.loc[0, "note"].startswith("scaled-down stand-in (1,000 jobs per point, the paper's "
                                       "10^6); at this scale the rule gives: reproduced")
    t = compare("toy", "fig4", {**good, "p99": 20.0}, stand_in={"p99": "short", "mean_latency": None})
    assert list(t["verdict"]) == ["reproduced", "stand-in", "reproduced"]
    assert "the rule gives: differs" in t.loc[1, "note"]
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": NotReproducible("GPU"), "share": 57.0},
                stand_in="small")
    assert list(t["verdict"]) == ["stand-in", "not reproducible here", "stand-in"]
    assert summary_line(t) == ("0 reproduced, 0 close, 0 differs, 0 on a substitute, 2 stand-in, "
                               "0 calibrated, 0 open, 1 not reproducible here")
    with pytest.raises(ConfigError, match=r"stand_in\['x'\]"):
        compare("toy", "fig4", good, stand_in={"x": "?"})


QUOTED = CSV.replace("item,quantity,paper_value,unit,tolerance,basis,source",
                     "item,quantity,paper_value,unit,tolerance,basis,source,quote,calibrated")
QUOTED = "\n".join(line + ("" if i == 0 else ",,") for i, line in enumerate(QUOTED.splitlines())) + "\n"
QUOTED = QUOTED.replace("Tab. 2,,", 'Tab. 2,"a speedup of 4.50 x … in Table 2",')
QUOTED = QUOTED.replace("trials,,", "trials,,our rate is fitted on this share")


def test_optional_quote_and_calibrated_columns(data):
    """The two optional columns are read when present and empty when absent."""
    df = paper_numbers("toy")
    assert (df["quote"] == "").all() and (df["calibrated"] == "").all()
    (data / "paper" / "toy.csv").write_text(QUOTED)
    df = paper_numbers("toy")
    assert df.loc[4, "quote"] == "a speedup of 4.50 x … in Table 2"
    assert df.loc[5, "calibrated"] == "our rate is fitted on this share" and df.loc[0, "calibrated"] == ""


def test_compare_calibrated(data):
    """A row whose number we fitted is never counted as reproduced, however well it matches;
    the note says what was fitted and what the rule would give."""
    (data / "paper" / "toy.csv").write_text(QUOTED)
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": 57.0})
    assert list(t["verdict"]) == ["reproduced", "reproduced", "calibrated"]
    assert t.loc[2, "note"] == ("calibrated: our rate is fitted on this share, so this is no test; "
                                "the rule gives: reproduced")
    # it outranks a stand-in and a substitute; a missing number stays not reproducible
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": 99.0}, stand_in="small",
                substitute={"share": "synthetic trace"}, notes={"share": "see Sec. 2"})
    assert list(t["verdict"]) == ["stand-in", "stand-in", "calibrated"]
    assert t.loc[2, "note"] == ("calibrated: our rate is fitted on this share, so this is no test; "
                                "scaled-down stand-in (small); on a substitute (synthetic trace); "
                                "the rule gives: differs; see Sec. 2")
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": NotReproducible("GPU")})
    assert t.loc[2, "verdict"] == "not reproducible here"
    assert summary_line(compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": 57.0})) == (
        "2 reproduced, 0 close, 0 differs, 0 on a substitute, 0 stand-in, 1 calibrated, "
        "0 open, 0 not reproducible here")


def test_compare_substitute(data):
    """A row computed on substitute data, a substitute model or a reader's own setting keeps the
    rule's verdict with the label, and the scorecard counts it apart, never as reproduced."""
    good = {"mean_latency": 2.0, "p99": 12.0, "tad_beats_jsq": True}
    t = compare("toy", "fig4", good, substitute="MAF-synth for the Azure trace")
    assert list(t["verdict"]) == ["reproduced (substitute)", "differs (substitute)",
                                  "reproduced (substitute)"]
    assert t.loc[0, "note"] == "on a substitute (MAF-synth for the Azure trace)"
    t = compare("toy", "fig4", {**good, "mean_latency": 2.25}, notes={"mean_latency": "heavier tail"},
                substitute={"mean_latency": report.changed_setting({"a*": 80.0}, {"a*": 76})})
    assert list(t["verdict"]) == ["close (substitute)", "differs", "reproduced"]
    assert t.loc[0, "note"] == "on a substitute (your setting: a* = 80 (paper: 76)); heavier tail"
    assert summary_line(t) == ("1 reproduced, 0 close, 1 differs, 1 on a substitute (1 close), "
                               "0 stand-in, 0 calibrated, 0 open, 0 not reproducible here")
    # a stand-in as well: the stand-in label wins and the note names both
    t = compare("toy", "fig4", good, stand_in={"p99": "short"}, substitute={"p99": "synthetic"})
    assert t.loc[1, "verdict"] == "stand-in"
    assert t.loc[1, "note"] == ("scaled-down stand-in (short); on a substitute (synthetic); "
                                "at this scale the rule gives: differs")
    with pytest.raises(ConfigError, match=r"substitute\['x'\]"):
        compare("toy", "fig4", good, substitute={"x": "?"})
    with pytest.raises(ConfigError, match="substitute = 3"):
        compare("toy", "fig4", good, substitute=3)
    assert report.substitute_verdict("close") == "close (substitute)"
    with pytest.raises(ConfigError, match="rule_verdict = 'stand-in'"):
        report.substitute_verdict("stand-in")


def test_changed_setting():
    paper = {"a_star": 76.0, "n": 4096}
    assert report.changed_setting({"a_star": 76, "n": 4096, "seed": 3}, paper) is None
    assert report.changed_setting({"a_star": 80.0, "n": 1024}, paper, {"a_star": "a*"}) == \
        "your setting: a* = 80 (paper: 76), n = 1024 (paper: 4096)"
    with pytest.raises(ConfigError, match="ours = 'n'"):
        report.changed_setting({"a_star": 76.0}, paper)


def test_quote_is_folded_into_the_quantity_cell(data):
    """The paper's words are in the table (and its CSV), but shown folded in a <details> of the
    quantity's cell, escaped, so the table is no wider than without them."""
    (data / "paper" / "toy.csv").write_text(QUOTED.replace("a speedup of 4.50 x", "x < 4.50 & y"))
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": 57.0})
    assert list(t.columns) == list(report.TABLE_COLUMNS) and t.loc[1, "quote"] == "x < 4.50 & y … in Table 2"
    html = report.style_table(t).to_html()
    assert ('<details class="infsched-quote"><summary>speedup</summary><span style="display: block; max-width: 24em; font-size: 0.9em; overflow-wrap: anywhere">'
            "“x &lt; 4.50 &amp; y … in Table 2” (Tab. 2)</span></details>") in html
    assert "<th" in html and ">quote<" not in html and ">source<" not in html
    assert "<summary>cost</summary>" in html     # no quote: the place alone
    assert "quote" not in repr(report.VerdictTable(t)).splitlines()[0]
    # a table without the two columns (an older verdicts.csv) still renders
    html = report.style_table(t.drop(columns=["quote", "source"])).to_html()
    assert '<details class="infsched-quote"' not in html and "speedup" in html


def test_verdict_rows_are_one_line_with_basis_and_note_folded(data):
    """A figure's verdict table shows quantity, numbers and verdict on one line per row; the
    basis and the note unfold from the verdict's cell, escaped; the item column is left out
    when every row has the same, kept when the items differ (a chapter's whole table); the
    table itself and its plain text keep every column."""
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": NotReproducible("needs 8 A100s & <NVLink>"),
                               "share": 57.0})
    html = report.style_table(t).to_html()
    heads = re.findall(r'<th [^>]*class="col_heading[^"]*"[^>]*>([^<]*)</th>', html)
    assert heads == ["quantity", "paper", "ours", "unit", "ratio", "tolerance", "verdict"]
    assert ('<details class="infsched-why"><summary>not reproducible here</summary>'
            in html) and "needs 8 A100s &amp; &lt;NVLink&gt;" in html
    assert "<em>basis</em>: exact" in html          # a row's basis, folded
    assert report.VERDICT_COLORS["not reproducible here"] in html  # coloured by the verdict
    assert set(report.FOLDED_COLUMNS) <= set(t.columns) and "basis" in repr(report.VerdictTable(t))
    both = pd.concat([t, compare("toy", "fig4", {"mean_latency": 2.0, "p99": 10.0, "tad_beats_jsq": True})], ignore_index=True)
    heads = re.findall(r'<th [^>]*class="col_heading[^"]*"[^>]*>([^<]*)</th>', report.style_table(both).to_html())
    assert heads[0] == "item"


def test_compare_errors(data):
    good = {"mean_latency": 2.0, "p99": 10.0, "tad_beats_jsq": True}
    with pytest.raises(ConfigError, match=r"item = 'fig9': not in toy.csv; items are 'fig4', 'ex1'"):
        compare("toy", "fig9", good)
    with pytest.raises(ConfigError, match=r"ours\['p50'\] = 1.0: .*known quantities: 'mean_latency', 'p99', 'tad_beats_jsq'"):
        compare("toy", "fig4", {**good, "p50": 1.0})
    with pytest.raises(ConfigError, match=r"ours: missing 'p99' for toy fig4"):
        compare("toy", "fig4", {"mean_latency": 2.0, "tad_beats_jsq": True})
    with pytest.raises(ConfigError, match=r"notes\['x'\]"):
        compare("toy", "fig4", good, notes={"x": "?"})
    with pytest.raises(ConfigError, match=r"ours\['tad_beats_jsq'\] = 1.0: .*qualitative claim"):
        compare("toy", "fig4", {**good, "tad_beats_jsq": 1.0})
    with pytest.raises(ConfigError, match=r"ours\['p99'\] = True: must be a finite number"):
        compare("toy", "fig4", {**good, "p99": True})
    with pytest.raises(ConfigError, match=r"ours\['p99'\] = nan"):
        compare("toy", "fig4", {**good, "p99": float("nan")})
    with pytest.raises(ConfigError, match="reason = ''"):
        NotReproducible("")


def test_style_table_html(data):
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": NotReproducible("needs 8 A100s"), "share": 57.0})
    html = report.style_table(t).to_html()
    assert report.VERDICT_COLORS["reproduced"] in html and report.VERDICT_COLORS["not reproducible here"] in html
    assert "needs 8 A100s" in html and "infsched-verdicts" in html
    vt = report.VerdictTable(t)
    assert "<table" in vt._repr_html_() and "speedup" in repr(vt)


def test_glue_verdicts(data, monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.update({name: (value, display)}))
    t = compare("toy", "fig4", {"mean_latency": 2.0, "p99": 10.0, "tad_beats_jsq": False})
    s = report.glue_verdicts("toy", t)
    assert s == ("2 reproduced, 0 close, 1 differs, 0 on a substitute, 0 stand-in, 0 calibrated, "
                 "0 open, 0 not reproducible here")
    assert glued["toy_summary"] == (s, False)
    assert isinstance(glued["toy_scorecard"][0], report.VerdictTable) and glued["toy_scorecard"][1] is False
    with pytest.raises(ConfigError, match="chapter = 'a-b'"):
        report.glue_verdicts("a-b", t)


def test_sphinx_hook_marks_pasting_pages_outdated():
    class Env:
        pass

    env = Env()
    env.infsched_glue_refs = {"book/scorecard": {"book/tad", "book/kairos"}, "book/other": {"book/x"}}
    assert report._on_get_outdated(None, env, set(), {"book/tad"}, set()) == ["book/scorecard"]
    assert report._on_get_outdated(None, env, set(), {"book/tad", "book/scorecard"}, set()) == []
    assert report._on_get_outdated(None, env, set(), {"intro"}, set()) == []


# ---------------------------------------------------------------- plotting (display helpers)

def test_plotting_helpers(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from infsched import plotting

    plotting.set_theme()
    assert plotting.policy_style("TAD-OP") == plotting.POLICY_COLORS["tadop"]
    assert plotting.policy_style("LP bound").linestyle == "-"      # theoretical bound: solid
    assert plotting.policy_style("R-JIQ").linestyle == "-."        # lambda-aware: dash-dot
    assert plotting.policy_style("JSQ").linestyle == "--"          # lambda-oblivious: dashed
    assert plotting.policy_color("some new policy") == plotting.policy_color("Some-New Policy")
    fig, ax = plt.subplots()
    plotting.label_axes(ax, "load ρ (-)", "mean latency [ms]")
    assert ax.get_ylabel() == "mean latency [ms]"
    with pytest.raises(ConfigError, match="y = 'latency': must name the unit"):
        plotting.label_axes(ax, "load (-)", "latency")
    monkeypatch.delenv("INFSCHED_FIGURES", raising=False)
    assert plotting.save(fig, "fig1") == []
    monkeypatch.setenv("INFSCHED_FIGURES", str(tmp_path / "figs"))
    [p] = plotting.save(fig, "fig1")
    assert p == tmp_path / "figs" / "fig1.png" and p.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ConfigError, match="name = '../x'"):
        plotting.save(fig, "../x")
    plt.close(fig)


@pytest.mark.parametrize("package, simulated, analytic", [
    ("tad", ["fig1", "fig4", "fig6", "fig7", "fig8", "fig9", "fig10"], "ex1"),
    ("ramsis", ["fig5", "fig6", "fig7", "fig8", "fig11", "fig12", "tab3", "tab4"], "fig3"),
    ("kvcache", ["fig2", "fig3", "sec52", "fig7", "fig8", "fig10", "fig11"], "thm41"),
    ("kairos", ["fig1", "fig2", "fig8", "fig9", "fig12", "fig14"], "fig5"),
    ("shepherd", ["fig2", "fig5", "fig7", "fig8", "fig9", "fig10", "fig11a", "fig11b"], "fig3"),
])
def test_stand_in_labels_follow_the_scale(package, simulated, analytic):
    """At the ``paper`` scale no item is a stand-in; at ``smoke`` every simulated one is, and
    says why; analytic items (worked examples) never are."""
    import importlib

    ex = importlib.import_module(f"infsched.{package}.experiments")
    for item in simulated:
        assert ex.stand_in(item, "paper") is None, item
        reason = ex.stand_in(item, "smoke")
        assert isinstance(reason, (str, dict)) and reason, item
    assert ex.stand_in(analytic, "smoke") is None


def test_setting_shortfall():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class S:
        d: int
        secs: float
        loads: tuple
        sizes: tuple

    paper = S(100, 30.0, (1.0, 2.0, 3.0), (40, 60))
    assert report.setting_shortfall(paper, paper, ("d", "secs", "loads", "sizes")) is None
    ours = S(20, 5.0, (1.0,), (8, 10))
    assert report.setting_shortfall(ours, paper, ("d", "secs", "loads", "sizes"), {"d": "FLD D"}) == (
        "FLD D 20 (paper: 100); secs 5 (paper: 30); loads: 1 value (paper: 3 values); "
        "sizes (8, 10) (paper: (40, 60))")
    assert report.setting_shortfall(ours, paper, ()) is None


def test_every_headline_is_a_row_of_its_paper():
    """The front page's headlines (infsched.headlines) name rows that exist in data/paper/."""
    from infsched import headlines

    for chapter, picks in headlines.HEADLINES.items():
        df = report.paper_numbers(chapter)
        keys = set(zip(df["item"], df["quantity"]))
        for item, quantity, _ in picks:
            assert (item, quantity) in keys, (chapter, item, quantity)


def test_substitute_column_labels_a_row_whatever_the_chapter_passes(data):
    csv = ("item,quantity,paper_value,unit,tolerance,basis,source,quote,calibrated,substitute\n"
           "fig7,gain,4.6,x,,printed,Fig. 7,,,MAF-synth for the Azure trace\n"
           "fig7,exact_count,3,,,exact,Fig. 7,,,\n")
    (data / "paper" / "sub.csv").write_text(csv)
    t = compare("sub", "fig7", {"gain": 4.6, "exact_count": 3.0})
    assert list(t["verdict"]) == ["reproduced (substitute)", "reproduced"]
    assert t.loc[0, "note"] == "on a substitute (MAF-synth for the Azure trace)"
    # a reader's own setting adds to the CSV's reason, once
    t = compare("sub", "fig7", {"gain": 9.0, "exact_count": 3.0},
                substitute={"gain": "your setting: n = 8 (paper: 12)"})
    assert t.loc[0, "verdict"] == "differs (substitute)"
    assert t.loc[0, "note"] == ("on a substitute (MAF-synth for the Azure trace; your setting: n = 8 "
                                "(paper: 12))")


def test_open_verdict_shows_the_bracket_and_is_counted_apart(data):
    with pytest.raises(ConfigError, match="low"):
        report.Open("x", low=2.0, high=1.0)
    with pytest.raises(ConfigError, match="reason"):
        report.Open(" ")
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": report.Open("no upper bound", low=4.1),
                               "share": 57.0})
    assert t.loc[1, "verdict"] == "open" and t.loc[1, "ours"] == "[4.1, —]"
    assert t.loc[1, "note"].startswith("open: our bracket [4.1, —] holds the paper's value; no upper")
    assert summary_line(t) == ("2 reproduced, 0 close, 0 differs, 0 on a substitute, 0 stand-in, "
                               "0 calibrated, 1 open, 0 not reproducible here")
    assert report.VERDICT_COLORS["open"] in report.style_table(t).to_html()


def test_pooled_prediction_and_mean_intervals():
    from scipy.stats import t as student_t

    runs = [4.02, 3.5, 3.9, 3.6, 3.8]
    one = report.pooled(runs, report.ONE_RUN)
    avg = report.pooled(runs, report.AVERAGE)
    sd = pd.Series(runs).std(ddof=1)
    tq = student_t.ppf(0.975, 4)
    assert float(one) == pytest.approx(sum(runs) / 5) and float(avg) == float(one)
    assert one.ci == pytest.approx(tq * sd * math.sqrt(1 + 1 / 5))
    assert avg.ci == pytest.approx(tq * sd / math.sqrt(5))
    assert "prediction interval of one run" in one.rule and "mean of 5 runs" in one.rule
    assert "CI of the mean" in avg.rule
    # NaN runs (undefined there) are left out; the search's own interval adds in quadrature
    with_nan = report.pooled(runs + [float("nan")], report.ONE_RUN, extra_ci=0.3)
    assert with_nan.ci == pytest.approx(math.hypot(one.ci, 0.3)) and "5 runs" in with_nan.rule
    with pytest.raises(ConfigError, match="runs"):
        report.pooled([1.0])
    with pytest.raises(ConfigError, match="paper"):
        report.pooled(runs, "both")


def test_the_basis_names_the_pooled_interval(data):
    m = report.pooled([2.0, 2.1, 1.9, 2.0], report.ONE_RUN)
    t = compare("toy", "fig4", {"mean_latency": m, "p99": 10.0, "tad_beats_jsq": True})
    assert t.loc[0, "basis"].startswith("figure reading ±0.1 + our 95 % prediction interval of one "
                                        "run (mean of 4 runs) ±")
    assert t.loc[0, "tolerance"] == pytest.approx(0.1 + m.ci)


def test_interval_tolerance_is_asymmetric_and_one_digit_is_named(data):
    # "1/2" stands for (1/3 + 1/2)/2 .. (1/2 + 1)/2: 0.060 differs, 0.7 is reproduced
    csv = ("item,quantity,paper_value,unit,tolerance,basis,source\n"
           "fig3,slope,0.5,,0.4167..0.75,printed,1/2\n"
           "fig3,twice,2,x,,printed,2x\n"
           "fig3,bad,0.5,,0.6..0.75,printed,lo above the value\n")
    (data / "paper" / "frac.csv").write_text(csv.rsplit("fig3,bad", 1)[0])
    df = paper_numbers("frac")
    assert df.loc[0, "tol_below"] == pytest.approx(0.0833) and df.loc[0, "tol_above"] == pytest.approx(0.25)
    t = compare("frac", "fig3", {"slope": 0.060, "twice": 2.4})
    assert t.loc[0, "verdict"] == "differs"  # a linearised ±0.17 would have called it close
    assert t.loc[0, "tolerance"] == "−0.083/+0.25"
    assert t.loc[0, "basis"] == "one printed digit −0.083/+0.25"
    assert t.loc[1, "basis"] == "one printed digit ±0.5" and t.loc[1, "verdict"] == "reproduced"
    assert compare("frac", "fig3", {"slope": 0.7, "twice": 2.0}).loc[0, "verdict"] == "reproduced"
    assert compare("frac", "fig3", {"slope": 0.3, "twice": 2.0}).loc[0, "verdict"] == "close"
    (data / "paper" / "frac.csv").write_text(csv)
    with pytest.raises(ConfigError, match="lo <= paper_value <= hi"):
        paper_numbers("frac")
    assert verdict(0.5, 0.7, (0.08, 0.25)) == "reproduced" and verdict(0.5, 0.3, (0.08, 0.25)) == "close"


def test_a_chapter_may_mark_an_echo_of_the_papers_data(data):
    t = compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": 57.0},
                calibrated={"speedup": "ours is the paper's table"})
    assert list(t["verdict"]) == ["reproduced", "calibrated", "reproduced"]
    assert t.loc[1, "note"].startswith("calibrated: ours is the paper's table, so this is no test")
    with pytest.raises(ConfigError, match="calibrated"):
        compare("toy", "ex1", {"cost": 0.0, "speedup": 4.5, "share": 57.0}, calibrated={"nope": "x"})
