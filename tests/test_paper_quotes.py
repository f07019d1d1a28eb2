"""Every row of data/paper/*.csv carries the paper's own words, and they are the paper's.

The ``quote`` of a row is a verbatim span of the paper's text (``../shared/papers/``), or two
spans joined by `` … ``; this test finds each span in the text after collapsing runs of
whitespace to one space on both sides, and nothing else, and the spans in the paper's order. The papers' text is not shipped with
the book, so the test is skipped where ``../shared/papers`` is absent (a reader's checkout).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest

from infsched import report

#: the papers' text: ``../shared/papers`` beside the checkout (``$INFSCHED_PAPERS_DIR`` overrides,
#: for a checkout that is not beside it, such as a git worktree)
PAPERS_DIR = Path(os.environ.get("INFSCHED_PAPERS_DIR")
                  or Path(__file__).resolve().parents[1].parent / "shared" / "papers")
DATA = Path(__file__).resolve().parents[1] / "data" / "paper"

#: the paper text of each CSV (profiling.csv: by the item's prefix, ``tad_fig2`` -> tad)
PAPER_TEXT = {
    "tad": "tad-latency-accuracy.txt",
    "ramsis": "ramsis-model-selection.txt",
    "kvcache": "llm-kv-cache-scheduling.txt",
    "kairos": "kairos-heterogeneous.txt",
    "shepherd": "shepherd-serving.txt",
}
CSVS = sorted(p.stem for p in DATA.glob("*.csv") if not p.stem.startswith("_"))


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _paper_of(csv: str, item: str) -> str:
    if csv in PAPER_TEXT:
        return csv
    prefix = item.split("_", 1)[0]
    assert prefix in PAPER_TEXT, f"{csv}.csv item {item!r}: names no paper (tad_, ramsis_, ...)"
    return prefix


def test_every_paper_csv_has_a_paper():
    """A new CSV must say which paper's text its quotes come from (above, or by item prefix)."""
    assert set(PAPER_TEXT) <= set(CSVS) and "profiling" in CSVS


@pytest.mark.skipif(not PAPERS_DIR.is_dir(), reason="../shared/papers is not here (a reader's checkout)")
@pytest.mark.parametrize("csv", CSVS)
def test_quotes_are_the_papers_words(csv):
    df = pd.read_csv(DATA / f"{csv}.csv", dtype=str, keep_default_na=False)
    assert list(df.columns) == list(report.PAPER_COLUMNS) + list(report.OPTIONAL_COLUMNS), \
        f"{csv}.csv: the columns must be {report.PAPER_COLUMNS + report.OPTIONAL_COLUMNS}"
    texts = {p: _collapse((PAPERS_DIR / f).read_text(encoding="utf-8")) for p, f in PAPER_TEXT.items()}
    bad = []
    for _, r in df.iterrows():
        paper = _paper_of(csv, r["item"])
        quote = r["quote"].strip()
        where = f"{paper}: {r['item']}/{r['quantity']}"
        if not quote:
            bad.append(f"{where}: no quote")
            continue
        at = 0  # an elided quote keeps the paper's order: each span after the one before
        for span in quote.split(report.QUOTE_JOIN):
            span = _collapse(span).strip()
            if not span or span not in texts[paper]:
                bad.append(f"{where}: not in {PAPER_TEXT[paper]}: {span!r}")
                continue
            found = texts[paper].find(span, at)
            if found < 0:
                bad.append(f"{where}: out of the paper's order (it stands before the span that "
                           f"precedes it here): {span!r}")
                continue
            at = found + len(span)
    assert not bad, f"{len(bad)} row(s) of {csv}.csv:\n" + "\n".join(bad)


def test_the_collapse_is_only_whitespace():
    """The match forgives line breaks and doubled spaces, never a changed character."""
    text = _collapse("as quickly as $n = 64$ ;\n however,  the")
    assert _collapse("as quickly as $n = 64$ ; however, the") in text
    assert "as quickly as n = 64" not in text


def test_an_elided_quote_out_of_order_is_caught(tmp_path, monkeypatch):
    """The order check is a real check: the same two spans, swapped, fail."""
    text = _collapse("First sentence here. Then a second one. And a third.")
    spans = ["First sentence here.", "And a third."]

    def in_order(parts):
        at = 0
        for span in parts:
            found = text.find(span, at)
            if found < 0:
                return False
            at = found + len(span)
        return True

    assert in_order(spans) and not in_order(spans[::-1])
