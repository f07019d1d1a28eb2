"""The bibliography: every {cite} key in the book is in references.bib, each of the five papers
is cited at the top of its chapter, and the references page is in the table of contents."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_KEY = {"tad": "tad2023", "ramsis": "ramsis2024", "kvcache": "kvcache2025",
               "kairos": "kairos2023", "shepherd": "shepherd2023"}


def _bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(), re.M))


def test_every_cited_key_is_in_the_bibliography():
    keys = _bib_keys()
    assert set(CHAPTER_KEY.values()) <= keys
    for page in sorted((ROOT / "book").glob("*.md")):
        for role in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text()):
            for key in role.split(","):
                assert key.strip() in keys, f"{page.name}: {{cite}}`{key.strip()}` is not in references.bib"


@pytest.mark.parametrize("chapter, key", sorted(CHAPTER_KEY.items()))
def test_each_paper_is_cited_at_the_top_of_its_chapter(chapter, key):
    head = (ROOT / "book" / f"{chapter}.md").read_text().split("```{code-cell}")[0]
    assert f"{{cite}}`{key}`" in head


def test_the_bibliography_is_a_page_and_the_config_reads_it():
    assert "bibliography" in (ROOT / "book" / "references.md").read_text()
    assert "book/references" in (ROOT / "_toc.yml").read_text()
    assert re.search(r"^bibtex_bibfiles:\s*\n\s*-\s*references\.bib", (ROOT / "_config.yml").read_text(), re.M)
    # the entries parse as BibTeX (the parser sphinxcontrib-bibtex uses)
    from pybtex.database import parse_file

    assert set(parse_file(str(ROOT / "references.bib")).entries) == _bib_keys()


def test_every_entry_of_the_bibliography_is_cited_where_the_book_names_it():
    """No entry is listed only because the references page prints ``:all:``: each work is cited
    (``{cite}``) on some page, where the book names the system, trace, dataset or artifact."""
    cited = set()
    for page in sorted((ROOT / "book").glob("*.md")):
        for role in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text()):
            cited |= {k.strip() for k in role.split(",")}
    assert sorted(_bib_keys() - cited) == []
