"""The book's front page: what each paper leads with, its verdict here, and the book-wide count.

A chapter glues its headlines (:func:`glue_headlines`) from the verdict table it has just built,
so the front page shows the verdicts of this build, at the scale each chapter rendered, next to
the paper's own number and ours, in plain units and with the caveat each needs. The claims are
the ones each paper's abstract and conclusion lead with; the paper's own words for each are in
the chapter's table (its ``quote`` column).

Counts are summed across chapters by a Sphinx directive (``{verdict-totals}``, :func:`setup`):
each chapter glues its verdict counts (:func:`infsched.report.glue_verdicts` writes
``<chapter>_counts``), and the directive reads them from the executed chapters when pages are
written, as cross-document glue is. The pages that use it also paste glue from every chapter
they count, so an incremental build that re-reads a chapter re-reads them too
(:func:`infsched.report.setup`).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd
from docutils import (
    nodes as _nodes,  # Sphinx's: the totals' pending node must pickle by name
)

from .errors import require
from .report import COUNT_KEYS, RULE_VERDICTS, verdict_counts

__all__ = [
    "CHAPTER_NAMES",
    "HEADLINES",
    "PAPERS",
    "Headline",
    "counts_phrase",
    "finding",
    "glue_headlines",
    "headline_lines",
    "plain_number",
    "plain_pair",
    "setup",
    "totals_sentence",
]

#: how a number of a headline reads: "times" (1.13×), "above" (a ratio to an optimum as the
#: percentage above it), "pct", "points", "claim" (a qualitative claim: holds or not)
FORMS = ("times", "above", "pct", "points", "claim")


@dataclass(frozen=True)
class Headline:
    """One claim a paper leads with, and how the front page words it.

    ``item``/``quantity`` name the verdict row; ``claim`` is the paper's claim in plain words;
    ``form`` how its numbers read (:data:`FORMS`); ``short`` names it in a list of what holds and
    what does not; ``caveat`` is shown with the line whatever the verdict; ``why`` only when the
    row is not reproduced (what the chapter finds behind the difference); ``also`` is another
    row of the same table read beside it (a second reading of the paper's sentence)."""

    item: str
    quantity: str
    claim: str
    form: str
    short: str
    caveat: str = ""
    why: str = ""
    also: tuple[str, str, str] | None = None  # (item, quantity, what that reading is)

    def __post_init__(self) -> None:
        require(self.form in FORMS, "form", self.form, "must be one of " + ", ".join(FORMS))
        require(self.claim.strip() != "" and self.short.strip() != "", "claim", self.claim,
                "claim and short must be non-empty")

    # the tuple form older callers unpack: (item, quantity, claim)
    def __iter__(self):
        return iter((self.item, self.quantity, self.claim))


#: chapter -> the claims its paper leads with, in the paper's order of emphasis
HEADLINES: dict[str, list[Headline]] = {
    "tad": [
        Headline("fig7", "tadop_over_bound_max", "TAD-OP's mean latency equals the LP lower bound "
                 "at n = 4096, at every load (worst load, latency over the bound)", "times",
                 "TAD-OP on the LP bound at n = 4096",
                 why="the gap opens at the highest loads only (up to a load of 0.92 a separate "
                     "row of the chapter compares)"),
        Headline("fig6", "tadop_lowest_latency", "TAD-OP is the fastest of the three policies at "
                 "n = 64, for every accuracy target", "claim", "TAD-OP fastest at n = 64"),
        Headline("fig4", "rjiq_over_bound_n64_high_astar", "R-JIQ's latency converges to the LP "
                 "bound by n = 64 (latency over the bound)", "times",
                 "R-JIQ at the bound by n = 64",
                 caveat="the paper claims this for a high accuracy target only; ours is at "
                        "a* = 85, the highest of the sweep"),
        Headline("ex2", "improvement_pct", "Example 2: the optimal routing is faster than TAD's by",
                 "pct", "Example 2's 16.67 %"),
    ],
    "ramsis": [
        Headline("fig5", "ramsis_minus_jf_mean", "On the Twitter trace RAMSIS is more accurate "
                 "than Jellyfish+ on average by", "points", "the accuracy gain over Jellyfish+",
                 caveat="the paper's number is its artifact's simulation; ours the mean of 10 "
                        "replications"),
        Headline("fig5", "ramsis_minus_ms_mean", "… and more accurate than ModelSwitching by",
                 "points", "the gain over ModelSwitching"),
        Headline("fig6", "ramsis_ge_baselines", "RAMSIS is at least as accurate as both baselines "
                 "at every load it can serve", "claim", "at least both baselines at every load",
                 why="at some loads RAMSIS trails a baseline (the chapter shows where)"),
        Headline("fig5", "fewer_workers_vs_ms_max", "RAMSIS needs fewer workers than "
                 "ModelSwitching for equal accuracy, up to", "pct", "the worker savings",
                 caveat="the paper measured this on its prototype; ours is simulated"),
    ],
    "kvcache": [
        Headline("fig2", "model1_mean", "MC-SF's total latency is within 0.5 % of the hindsight "
                 "optimum on average (Arrival Model 1, n = 40–60)", "above",
                 "MC-SF within 0.5 % of the optimum",
                 caveat="ours is a lower bound: MC-SF over the best schedule found, which is no "
                        "worse than the optimum, so MC-SF is at least this far above it",
                 why="better schedules than MC-SF's are found in the paper's own trials"),
        Headline("fig2", "model1_exact_pct", "MC-SF's schedule is optimal in this share of those "
                 "trials", "pct", "MC-SF optimal in 57 % of trials"),
        Headline("fig3", "mcsf_lowest_everywhere", "MC-SF has the lowest average latency at every "
                 "n", "claim", "MC-SF fastest at every n"),
        Headline("tab1", "ratio_mc_benchmark", "Table 1: MC-Benchmark's average latency over "
                 "MC-SF's", "times", "Table 1's MC-Benchmark ratio"),
    ],
    "kairos": [
        Headline("fig8", "rm2_ratio", "KAIROS's throughput over a homogeneous pool of the same "
                 "cost, up to", "times", "up to 2× a homogeneous pool"),
        Headline("fig9", "kairos_over_ribbon_median_ribbon_own_best", "KAIROS's throughput over "
                 "Ribbon's, \"around\"", "times", "about 1.5× Ribbon",
                 caveat="two readings: this row runs Ribbon on its own best configuration; with "
                        "every scheme on the Oracle's best, Ribbon's first-come-first-served queue "
                        "collapses",
                 also=("fig9", "kairos_over_ribbon_median",
                       "with Ribbon on the Oracle's configuration")),
        Headline("fig9", "over_sota_max_ribbon_own_best", "KAIROS's throughput over the best of "
                 "the state of the art, up to", "times", "up to 70 % over the state of the art",
                 also=("fig9", "over_sota_max", "with Ribbon on the Oracle's configuration")),
        Headline("fig13", "optimum_in_top10", "the best configuration is among the ten with the "
                 "highest upper bound", "claim", "the optimum among the bound's top ten"),
    ],
    "shepherd": [
        Headline("fig7", "sh_over_nexus_bursty", "Shepherd's goodput over Nexus's under bursty "
                 "load", "times", "18.1× Nexus under bursty load",
                 why="the paper's Nexus leaves GPUs idle under overload; ours is a "
                     "work-conserving reading of the Nexus paper"),
        Headline("fig7", "sh_over_cw_bursty", "… and over Clockwork's", "times",
                 "5.2× Clockwork"),
        Headline("fig9", "sh_over_nexus_max", "Shepherd's goodput over Nexus's at tight SLOs, up "
                 "to", "times", "up to 38× Nexus",
                 why="as above: Nexus's idle GPUs under overload"),
        Headline("fig10", "sh_linear", "Shepherd's goodput grows linearly with the cluster",
                 "claim", "linear scaling"),
    ],
}

#: chapter -> its name on the front page and the scorecard
#: (the head to head checks claims of its own and glues no verdict counts: it is not summed)
CHAPTER_NAMES: dict[str, str] = {
    "tad": "TAD, TAD-OP, R-JIQ", "ramsis": "RAMSIS", "kvcache": "MC-SF (KV cache)",
    "kairos": "KAIROS", "shepherd": "Shepherd", "profiling": "Measuring your own hardware",
    "headtohead": "Head to head"}
#: the chapters that reproduce a paper (the others are counted in the book-wide total only)
PAPERS: tuple[str, ...] = ("tad", "ramsis", "kvcache", "kairos", "shepherd")


# --------------------------------------------------------------------------- numbers in words

def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, without a trailing ``.0`` or exponent for the
    sizes a headline shows."""
    if x == 0:
        return "0"
    s = f"{x:.{digits}g}"
    if "e" in s:
        s = f"{x:.{max(0, digits - 1 - math.floor(math.log10(abs(x))))}f}"
    return s


def plain_number(v: Any, form: str, digits: int = 3) -> str:
    """A headline's number in plain units: ``times`` 1.126 -> ``"1.13×"``; ``above`` 1.069 ->
    ``"6.9 % above"`` (1 -> ``"on it"``, below 1 -> ``"… below"``); ``pct`` 16.7 -> ``"16.7 %"``;
    ``points`` 5.7 -> ``"5.7 points"`` (1 -> ``"1 point"``); ``claim`` True/False -> ``"holds"``
    / ``"does not hold"``. A missing value is ``"—"``."""
    require(form in FORMS, "form", form, "must be one of " + ", ".join(FORMS))
    if _missing(v):
        return "—"
    if form == "claim" or isinstance(v, bool) or type(v).__name__ == "bool_":
        return "holds" if bool(v) else "does not hold"
    if isinstance(v, str):  # an open row's bracket, "[1.014, 1.081]" (a side may be "—")
        sides = [t.strip() for t in v.strip("[] ").split(",")]
        if len(sides) != 2:
            return v
        words = [plain_number(None if t in ("—", "") else float(t), form, digits) for t in sides]
        return f"between {words[0]} and {words[1]}"
    x = float(v)
    if form == "times":
        return f"{_sig(x, digits)}×"
    if form == "above":
        pct = (x - 1.0) * 100.0
        if round(pct, digits - 2) == 0:
            return "on it"
        return f"{_sig(abs(pct), digits - 1)} % {'above' if pct > 0 else 'below'}"
    if form == "pct":
        return f"{_sig(x, digits)} %"
    word = "point" if _sig(abs(x), digits) == "1" else "points"
    return f"{_sig(x, digits)} {word}"


def plain_pair(paper: Any, ours: Any, form: str) -> tuple[str, str]:
    """The paper's number and ours in plain units, with digits enough that two different values
    never read the same (``1×`` and ``1.0008×``, not ``1×`` twice); equal values read alike."""
    for digits in range(3, 8):
        p, o = plain_number(paper, form, digits), plain_number(ours, form, digits)
        if p != o or _missing(paper) or _missing(ours) or isinstance(ours, str) \
                or float(paper) == float(ours):
            return p, o
    return p, o


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


# --------------------------------------------------------------------------- counts

def counts_phrase(c: Mapping[str, int], brief: bool = False) -> str:
    """``"30 of 71 numbers reproduced (12 close, 29 differ); 67 of 70 claims hold; 40 rows
    counted apart (12 on a substitute, 6 stand-ins, 11 calibrated, 11 not reproducible here)"``:
    zero parts are left out, and a kind with no row says so (``"no numeric row"``); ``brief``
    leaves out what the rows counted apart are."""
    n_num = c.get("reproduced", 0) + c.get("close", 0) + c.get("differs", 0)
    n_claim = c.get("holds", 0) + c.get("fails", 0)
    apart = [(c.get("substitute", 0), "on a substitute", "on a substitute"),
             (c.get("stand-in", 0), "stand-in", "stand-ins"),
             (c.get("calibrated", 0), "calibrated", "calibrated"),
             (c.get("open", 0), "open", "open"),
             (c.get("not reproducible here", 0), "not reproducible here", "not reproducible here")]
    n_apart = sum(k for k, _, _ in apart)
    parts = []
    if n_num:
        rest = [f"{c['close']} close" if c.get("close") else "",
                (f"{c['differs']} {'differs' if c['differs'] == 1 else 'differ'}"
                 if c.get("differs") else "")]
        rest = [r for r in rest if r]
        parts.append(f"{c.get('reproduced', 0)} of {_plural(n_num, 'number', 'numbers')} reproduced"
                     + (f" ({', '.join(rest)})" if rest else ""))
    else:
        parts.append("no numeric row")
    if n_claim:
        held = c.get("holds", 0)
        parts.append(f"{held} of {_plural(n_claim, 'claim', 'claims')} "
                     f"{'holds' if held == 1 else 'hold'}")
    if n_apart:
        inner = ", ".join(f"{k} {one if k == 1 else many}" for k, one, many in apart if k)
        parts.append(f"{_plural(n_apart, 'row', 'rows')} counted apart" + ("" if brief else f" ({inner})"))
    return "; ".join(parts)


def totals_sentence(counts: Mapping[str, Mapping[str, int]], papers: tuple[str, ...] = PAPERS) -> str:
    """The book-wide sentence over ``counts`` (chapter -> :func:`verdict_counts`): the papers'
    rows summed, numbers and claims apart, and the whole book's total."""
    require(all(p in counts for p in papers), "counts", sorted(counts),
            "must hold the counts of every paper chapter: " + ", ".join(papers))
    tot = {k: sum(counts[p].get(k, 0) for p in papers) for k in (*COUNT_KEYS, "rows")}
    book = sum(c.get("rows", 0) for c in counts.values())
    n_papers = len(papers)
    head = (f"Across the {'paper' if n_papers == 1 else f'{n_papers} papers'}, "
            f"{_plural(tot['rows'], 'row sets', 'rows set')} a result of ours beside the paper's: ")
    text = head + counts_phrase(tot) + "."
    extra = [ch for ch in counts if ch not in papers]
    if extra and book != tot["rows"]:
        names = {"profiling": "the chapter measuring your own hardware", "headtohead": "the head to head"}
        text += f" With {_join([names.get(ch, ch) for ch in extra])}, the book holds {book} rows."
    return text


# --------------------------------------------------------------------------- lines and findings

def _row(card: pd.DataFrame, item: str, quantity: str) -> pd.Series | None:
    rows = card[(card["item"] == item) & (card["quantity"] == quantity)]
    return None if rows.empty else rows.iloc[0]


def _where(item: str) -> str:
    return item.replace("fig", "Fig. ").replace("tab", "Table ").replace("ex", "Example ")


def _verdict_words(v: str) -> str:
    return {"reproduced": "reproduced", "differs": "differs", "close": "close"}.get(v, v)


def headline_lines(chapter: str, card: pd.DataFrame) -> list[str]:
    """One markdown line per headline of ``chapter`` found in its verdict table ``card``: the
    claim, the paper's number and ours in plain units, the verdict, and the caveat (a headline
    missing from the table, as at a scale that skips its figure, is left out)."""
    require(chapter in HEADLINES, "chapter", chapter, "must be one of " + ", ".join(HEADLINES))
    out = []
    for h in HEADLINES[chapter]:
        r = _row(card, h.item, h.quantity)
        if r is None:
            continue
        if h.form == "claim" or _missing(r.get("paper")):
            said = f"ours: {'—' if _missing(r.get('ours')) else plain_number(r.get('ours'), 'claim')}"
        else:
            paper, ours = plain_pair(r.get("paper"), r.get("ours"), h.form)
            said = f"paper {paper}, ours {ours}"
        if h.also is not None:
            a = _row(card, h.also[0], h.also[1])
            if a is not None and not _missing(a.get("ours")):
                said += f"; {h.also[2]}: {plain_number(a.get('ours'), h.form)} (**{a['verdict']}**)"
        line = f"- {h.claim} ({_where(h.item)}): {said}. **{_verdict_words(r['verdict'])}**"
        notes = [h.caveat] if h.caveat else []
        if h.why and r["verdict"] in RULE_VERDICTS[1:]:  # a reason for a difference the rule found
            notes.append(h.why)
        if notes:
            text = "; ".join(notes)
            line += f". {text[0].upper()}{text[1:]}."
        out.append(line)
    return out


def finding(chapter: str, card: pd.DataFrame) -> str:
    """One or two sentences for the front page's first screen: how many of the chapter's numbers
    reproduce and how many of its claims hold, then which of its headlines hold and which do
    not, each with ours beside the paper's in plain units (headlines counted apart, on a
    substitute or a stand-in, are left to the headline lines)."""
    require(chapter in HEADLINES, "chapter", chapter, "must be one of " + ", ".join(HEADLINES))
    held, not_held = [], []
    for h in HEADLINES[chapter]:
        r = _row(card, h.item, h.quantity)
        if r is None:
            continue
        v = r["verdict"]
        if v == RULE_VERDICTS[0]:
            held.append(h.short)
        elif v in RULE_VERDICTS:
            said = ""
            if h.form != "claim":
                paper, ours = plain_pair(r.get("paper"), r.get("ours"), h.form)
                said = f": {ours} against {paper}"  # a second reading is in the headline lines
            not_held.append(f"{h.short} ({v}{said})")
    c = verdict_counts(card)
    n_num = c["reproduced"] + c["close"] + c["differs"]
    n_claim = c["holds"] + c["fails"]
    counts = [f"{c['reproduced']} of {_plural(n_num, 'number', 'numbers')} reproduced"] if n_num else []
    if n_claim:
        counts.append(f"{c['holds']} of {_plural(n_claim, 'claim', 'claims')} "
                      f"{'holds' if c['holds'] == 1 else 'hold'}")
    parts = [(_join(counts) or "no row judged by the rule") + "."]
    if held:
        parts.append(f"Holds: {_join(held)}.")
    if not_held:
        parts.append(f"Does not: {_join(not_held)}.")
    text = " ".join(parts)
    return text[0].upper() + text[1:]


def glue_headlines(chapter: str, card: pd.DataFrame, scale: str) -> str:
    """Glue ``<chapter>_headlines`` (markdown lines) and ``<chapter>_finding`` (one sentence),
    neither displayed, for the front page; returns the headlines."""
    from myst_nb import glue

    from .store import GluedMarkdown

    lines = headline_lines(chapter, card)
    text = "\n".join(lines) if lines else f"(no headline claim is computed at the `{scale}` scale)"
    glue(f"{chapter}_headlines", GluedMarkdown(text), display=False)  # pasted on the front page
    glue(f"{chapter}_finding", finding(chapter, card), display=False)
    return text


# --------------------------------------------------------------------------- sphinx: the totals

def totals_table_html(counts: Mapping[str, Mapping[str, int]], links: Mapping[str, str],
                      papers: tuple[str, ...] = PAPERS) -> str:
    """The totals as an HTML table: a row per chapter (linked), the papers' sum, the book's."""
    head = ("<thead><tr><th rowspan='2'>chapter</th><th colspan='3'>numbers</th>"
            "<th colspan='2'>claims</th><th colspan='5'>counted apart</th><th rowspan='2'>rows</th></tr>"
            "<tr><th>reproduced</th><th>close</th><th>differ</th><th>hold</th><th>fail</th>"
            "<th>on a substitute</th><th>stand-in</th><th>calibrated</th><th>open</th>"
            "<th>not reproducible here</th></tr></thead>")

    def row(name: str, c: Mapping[str, int], strong: bool = False) -> str:
        cells = "".join(f"<td>{c.get(k, 0)}</td>" for k in (*COUNT_KEYS, "rows"))
        tr = f"<tr><td>{name}</td>{cells}</tr>"
        return tr.replace("<td>", "<td><strong>").replace("</td>", "</strong></td>") if strong else tr

    def link(ch: str) -> str:
        name = html.escape(CHAPTER_NAMES.get(ch, ch))
        return f"<a href='{html.escape(links[ch])}'>{name}</a>" if ch in links else name

    body = [row(link(ch), counts[ch]) for ch in papers if ch in counts]
    tot = {k: sum(counts[p].get(k, 0) for p in papers if p in counts) for k in (*COUNT_KEYS, "rows")}
    body.append(row(f"the {len(papers)} papers", tot, strong=True))
    extra = [ch for ch in counts if ch not in papers]
    if extra:
        body += [row(link(ch), counts[ch]) for ch in extra]
        book = {k: sum(c.get(k, 0) for c in counts.values()) for k in (*COUNT_KEYS, "rows")}
        body.append(row("the whole book", book, strong=True))
    return (f"<table class='infsched-totals'>{head}<tbody>{''.join(body)}</tbody></table>")


def _sphinx_parts():  # imported only when Sphinx loads the extension
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives
    from sphinx.transforms.post_transforms import SphinxPostTransform
    from sphinx.util import logging

    log = logging.getLogger(__name__)

    class VerdictTotals(Directive):
        """``{verdict-totals}`` with ``:chapters: tad ramsis ...`` and ``:show: sentence|table``."""

        option_spec: ClassVar[dict[str, Any]] = {"chapters": directives.unchanged_required,
                       "show": lambda s: directives.choice(s, ("sentence", "table"))}

        def run(self):
            node = pending_totals()
            node["chapters"] = self.options.get("chapters", " ".join(CHAPTER_NAMES)).split()
            node["show"] = self.options.get("show", "table")
            return [node]

    class ResolveTotals(SphinxPostTransform):
        default_priority = 6  # just after myst-nb's cross-document glue (5)

        def run(self, **kwargs: Any) -> None:
            from myst_nb.ext.glue.crossref import read_glue_cache

            folder = self.env.mystnb_config.output_folder
            builder = self.app.builder
            for node in list(self.document.findall(pending_totals)):
                counts: dict[str, dict[str, int]] = {}
                links: dict[str, str] = {}
                for ch in node["chapters"]:
                    doc = f"book/{ch}"
                    data = read_glue_cache(folder, doc).get(f"{ch}_counts")
                    if data is None:
                        log.warning(f"verdict-totals: no {ch}_counts glued by {doc}", location=node)
                        continue
                    counts[ch] = json.loads(data["data"]["text/plain"])
                    if builder.format == "html":  # other builders get the names without links
                        links[ch] = builder.get_relative_uri(self.env.docname, doc)
                papers = tuple(p for p in PAPERS if p in counts)
                if node["show"] == "sentence":
                    if not papers:
                        node.replace_self(nodes.paragraph(text="No paper chapter was counted."))
                        continue
                    new = nodes.paragraph(text=totals_sentence(counts, papers))
                else:
                    new = nodes.raw("", totals_table_html(counts, links, papers), format="html")
                node.replace_self(new)

    return VerdictTotals, ResolveTotals, pending_totals


class pending_totals(_nodes.General, _nodes.Element):
    """Where ``{verdict-totals}`` goes, until the chapters' glued counts are read."""


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: the ``{verdict-totals}`` directive (``sphinx: extra_extensions``)."""
    directive, transform, node = _sphinx_parts()
    app.add_node(node)
    app.add_directive("verdict-totals", directive)
    app.add_post_transform(transform)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
