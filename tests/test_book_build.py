"""The whole book builds with Sphinx warnings as errors (what `make book` runs), at smoke scale.

Catches what executing the chapters alone cannot: broken cross-references, a glue key the
scorecard pastes but no chapter defines, a `literalinclude` of a function that was renamed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    """The whole book built once at smoke scale, strict (``-W``), as `make book` builds it."""
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).with_name("jupyter-book")
    assert jb.exists(), f"jupyter-book is not installed beside {sys.executable}"
    env = {**os.environ, "INFSCHED_SCALE": "smoke", "INFSCHED_CACHE": str(out / "cache")}
    env.pop("INFSCHED_FIGURES", None)
    proc = subprocess.run(
        [str(jb), "build", "-W", "-n", "--keep-going", "--path-output", str(out), str(ROOT)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    shutil.rmtree(out / "_build" / ".jupyter_cache", ignore_errors=True)
    return proc, out / "_build" / "html"


def test_book_builds_without_warnings(built_book):
    proc, root = built_book
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    html = root / "book"
    scorecard = (html / "scorecard.html").read_text()
    # the summary line and the verdict table are pasted from the executed chapter by glue
    assert re.search(r"\d+ reproduced, \d+ close, \d+ differs?", scorecard), scorecard[-3000:]
    assert "waterfilling_equals_lp" in scorecard.replace("<wbr>", "")  # names break after "_"
    assert "stand-in" in scorecard  # the rule at the top, and the smoke build's scaled-down rows
    assert (html / "tad.html").exists()
    # the totals are summed from every chapter's glued counts, and every page names its commit
    intro = (html / "intro.html").read_text()
    assert "infsched-totals" in intro and "the whole book" in intro
    assert re.search(r"Across the 5 papers, \d+ rows set", intro)
    for page in ("intro", "tad", "scorecard"):
        assert "This page was built from commit" in (html / f"{page}.html").read_text(), page


#: the book's pages in its table of contents
PAGES = ["intro"] + [p.split("/")[-1] for p in re.findall(r"file:\s*(\S+)", (ROOT / "_toc.yml").read_text())]


@pytest.fixture(scope="module")
def browser_problems(built_book):
    import browser

    proc, root = built_book
    assert proc.returncode == 0, "the book did not build; see test_book_builds_without_warnings"
    assert Path(browser.CHROMIUM).exists(), (
        f"{browser.CHROMIUM} is missing: `make browser` installs Debian's chromium "
        "(or set INFSCHED_CHROMIUM to a Chromium binary)")
    return browser.check_pages(root)


@pytest.mark.parametrize("page", PAGES)
def test_page_reads_cleanly_in_a_browser(browser_problems, page):
    """Each page in headless Chromium at 1366×768 (tests/browser.py): no table that needs a
    sideways scroll, no figure under 120 px high, no NaN, no raw MyST or LaTeX, no words of the
    book's own making (issue numbers, audits, the spec, the machine it was built on)."""
    assert page in browser_problems, f"{page}.html was not built"
    assert browser_problems[page] == [], f"{page}:\n  " + "\n  ".join(browser_problems[page])


def test_stderr_in_a_cell_fails_the_build_and_no_stored_cell_has_any():
    """myst-nb turns stderr in an executed cell into an error (`make book` runs -W), and the
    stored smoke-scale outputs that nbval checks carry none (cheap; the conftest fails any cell
    that writes to stderr while `make test` executes the chapters)."""
    import nbformat
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["config"]["nb_output_stderr"] == "error"
    noisy = []
    for path in sorted((ROOT / "tests" / "nbval").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        noisy += [f"{path.name} cell {i}: {o.get('text', '')[:200]!r}"
                  for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  for o in c.get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    assert not noisy, "\n".join(noisy)


def test_no_code_cell_or_table_wider_than_the_content_column_by_construction():
    """What keeps pages inside their column (checked by hand in headless Chromium at 768 and
    1366 px): code and printed output wrap, output tables scroll inside the column at worst, and
    DataFrame headers may break; verdict tables are compact (report.style_table)."""
    css = (ROOT / "_static" / "infsched.css").read_text()
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    joined = {sel.strip(): body for sel, body in rules.items()}
    code = next(b for s, b in joined.items() if "div.cell_input pre" in s)
    assert "pre-wrap" in code and "div.cell_output .output.stream pre" in next(
        s for s in joined if "div.cell_input pre" in s)
    assert "overflow-x: auto" in joined["div.cell_output .output.text_html"]
    assert "overflow-wrap: anywhere" in joined["div.cell_output table.dataframe th"]
