"""Paper-vs-ours tables: CSV reading, verdict rule, errors, glue, styling, Sphinx hook."""

import math

import pandas as pd
import pytest

from infsched import report
from infsched.errors import ConfigError
from infsched.report import NotReproducible, compare, paper_numbers, summary_line, verdict

CSV = """item,quantity,paper_value,unit,tolerance,source
fig4,mean_latency,2.0,s,0.1,Sec. 5 p. 7
fig4,p99,10,ms,,Fig. 4
fig4,tad_beats_jsq,,,,Sec. 5
ex1,cost,0,$,0.5,Ex. 1
ex1,speedup,4,x,,Tab. 2
"""


@pytest.fixture
def data(tmp_path, monkeypatch):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "toy.csv").write_text(CSV)
    monkeypatch.setenv("INFSCHED_DATA", str(tmp_path))
    return tmp_path


def test_paper_numbers(data):
    df = paper_numbers("toy")
    assert list(df.columns[:6]) == list(report.PAPER_COLUMNS)
    assert df.loc[1, "tolerance"] == 0.05 and df.loc[0, "tolerance"] == 0.1
    assert math.isnan(df.loc[2, "paper_value"]) and df.loc[2, "qualitative"]
    assert df.loc[0, "source"] == "Sec. 5 p. 7"
    assert len(paper_numbers("toy", data_dir=data)) == 5


def test_paper_numbers_errors(data):
    with pytest.raises(ConfigError, match=r"paper = 'nope': no file .*nope.csv; papers with numbers: 'toy'"):
        paper_numbers("nope")
    (data / "paper" / "bad.csv").write_text("item,quantity,paper_value\nfig1,x,1\n")
    with pytest.raises(ConfigError, match="missing column.*unit, tolerance, source"):
        paper_numbers("bad")
    (data / "paper" / "bad.csv").write_text(CSV.replace("2.0,s", "two,s"))
    with pytest.raises(ConfigError, match=r"row 2: paper_value = 'two'"):
        paper_numbers("bad")
    (data / "paper" / "bad.csv").write_text(CSV + "fig4,p99,1,s,,x\n")
    with pytest.raises(ConfigError, match="duplicate quantity 'p99'"):
        paper_numbers("bad")


def test_repo_data_dir_default(monkeypatch):
    monkeypatch.delenv("INFSCHED_DATA", raising=False)
    assert report.find_data_dir() == report.Path(report.__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("paper, ours, tol, expected", [
    (2.0, 2.0, 0.05, "reproduced"), (2.0, 2.1, 0.05, "reproduced"), (2.0, 1.9, 0.05, "reproduced"),
    (2.0, 2.2, 0.05, "close"), (2.0, 2.3, 0.05, "close"), (2.0, 2.31, 0.05, "differs"),
    (-2.0, -2.1, 0.05, "reproduced"), (0.0, 0.04, 0.05, "reproduced"), (0.0, 0.2, 0.05, "differs"),
    (math.nan, True, 0.05, "reproduced"), (math.nan, False, 0.05, "differs"),
    (2.0, NotReproducible("GPU"), 0.05, "not reproducible here"),
])
def test_verdict_rule(paper, ours, tol, expected):
    assert verdict(paper, ours, tol) == expected


def test_compare(data):
    t = compare("toy", "fig4", {"mean_latency": 2.25, "p99": 12.0, "tad_beats_jsq": True},
                notes={"p99": "our tail is heavier: exponential sizes"})
    assert list(t.columns) == list(report.TABLE_COLUMNS)
    assert list(t["verdict"]) == ["close", "differs", "reproduced"]
    assert t.loc[0, "ratio"] == pytest.approx(1.125) and t.loc[0, "unit"] == "s"
    assert t.loc[1, "note"].startswith("our tail") and t.loc[2, "ours"] is True
    assert math.isnan(t.loc[2, "ratio"])
    t2 = compare("toy", "ex1", {"cost": 0.2, "speedup": NotReproducible("needs 8 A100s")},
                 notes={"speedup": "see Sec. 4"})
    assert list(t2["verdict"]) == ["reproduced", "not reproducible here"]
    assert t2.loc[1, "note"] == "needs 8 A100s; see Sec. 4" and t2.loc[1, "ours"] is None
    assert summary_line(pd.concat([t, t2])) == "2 reproduced, 1 close, 1 differs, 1 not reproducible here"


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
    t = compare("toy", "ex1", {"cost": 0.2, "speedup": NotReproducible("needs 8 A100s")})
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
    assert s == "2 reproduced, 0 close, 1 differs, 0 not reproducible here"
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
