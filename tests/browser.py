"""Open the rendered book in headless Chromium, as a reader would at 1366×768, and list what a
reader would trip on, page by page.

Used by ``tests/test_book_build.py`` on the smoke build it makes, and runnable by hand on any
build: ``python tests/browser.py _build/html [--shots DIR]`` prints the problems of every page
(and saves a screenshot of each page's first screen with ``--shots``).

Checks, on every page of the book, with every fold (``<details>``, dropdowns) opened:

- a table wider than the text column, or a box around one that scrolls sideways;
- a figure (an image in the page's article) rendered under :data:`MIN_FIGURE_PX` high;
- a display equation wider than its block (MathJax cuts it at the column's edge);
- ``NaN`` in the page's text;
- raw MyST or LaTeX left in the text: a role or directive (``{glue``, ``{math}``, ``{doc}`` ...),
  a code fence, ``$...$`` holding TeX, or a TeX command outside rendered maths;
- development-history words in the prose: issue numbers, audits, "the spec", remarks about the
  machine the book was built on.

Code (cell inputs, code blocks) is exempt from the text checks. Chromium is Debian's
``chromium`` package (``/usr/bin/chromium``, or ``$INFSCHED_CHROMIUM``), driven by Playwright;
``make browser`` installs it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

CHROMIUM = os.environ.get("INFSCHED_CHROMIUM", "/usr/bin/chromium")
#: the flags a root user in a container needs, and nothing that reaches the network
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1366, "height": 768}
#: a figure shorter than this cannot be read (RAMSIS's Fig. 5 rendered 105 px high)
MIN_FIGURE_PX = 120

#: raw markup a renderer left in the text
RAW = [
    (re.compile(r"\{(?:glue(?::\w+)?|math|eq|doc|ref|cite(?::\w+)?|numref|code-cell|figure|"
                r"literalinclude|dropdown|note|admonition)\}"), "a MyST role or directive"),
    (re.compile(r"```"), "a code fence"),
    (re.compile(r"(?<![\w$])\$[^$\n]{0,200}?(?:\\[A-Za-z]+|[_^]\{|[_^][A-Za-z0-9])[^$\n]{0,200}?\$"),
     "TeX between dollar signs"),
    (re.compile(r"\\(?:frac|mathrm|mathcal|text|left|right|sum|le|ge|lambda|alpha|beta|rho|"
                r"tfrac|cdot|times|operatorname|begin|end)\b"), "a TeX command"),
]
#: words of the book's making, not of its subject
HISTORY = [
    (re.compile(r"\bissues? #?\d+", re.IGNORECASE), "an issue number"),
    (re.compile(r"\baudit", re.IGNORECASE), "an audit"),
    (re.compile(r"\bthe spec(?:s|'s)?\b|\bspecs?\s*(?:§|\d|[A-Z]\d)|reproduction specs?\b", re.IGNORECASE),
     "the spec"),
    (re.compile(r"\bthis (?:\d+[- ](?:core|GB)\s+)?machine\b|\bour machine\b|"
                r"\bother engineers\b", re.IGNORECASE), "the book's own machine or authors"),
]

_JS_PREPARE = """() => {
  for (const d of document.querySelectorAll('details')) d.open = true;
  for (const b of document.querySelectorAll('.toggle-hidden, .tag_hide-input .toggle-hidden')) b.classList.remove('toggle-hidden');
}"""

_JS_MEASURE = """(minFig) => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const right = art.getBoundingClientRect().right;
  const out = {tables: [], figures: [], equations: [], text: '', height: document.documentElement.scrollHeight};
  const label = (el) => {
    const cap = el.closest('figure, div.cell, section');
    const h = cap && cap.querySelector('h1, h2, h3, figcaption, caption');
    return (h ? h.textContent.trim().slice(0, 60) : '') || el.tagName.toLowerCase();
  };
  for (const t of art.querySelectorAll('table')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;
    let box = t.parentElement, scrolls = false;
    while (box && box !== art) {
      const s = getComputedStyle(box);
      if (/(auto|scroll)/.test(s.overflowX) && box.scrollWidth > box.clientWidth + 1) { scrolls = true; break; }
      box = box.parentElement;
    }
    if (scrolls || r.right > right + 1)
      out.tables.push(`${label(t)}: ${Math.round(r.width)} px wide, ${scrolls ? 'scrolls sideways' : 'past the column'}`);
  }
  for (const img of art.querySelectorAll('img')) {
    const r = img.getBoundingClientRect();
    if (img.naturalWidth > 0 && r.height > 0 && r.height < minFig)
      out.figures.push(`${img.getAttribute('alt') || img.src.split('/').pop()}: ${Math.round(r.height)} px high`);
  }
  for (const eq of art.querySelectorAll('mjx-container[display="true"]')) {
    const box = eq.closest('div.math') || eq.parentElement;
    if (eq.scrollWidth > box.clientWidth + 1)
      out.equations.push(`${box.id || label(eq)}: ${eq.scrollWidth} px wide in ${box.clientWidth} px`);
  }
  const copy = art.cloneNode(true);
  for (const el of copy.querySelectorAll('div.cell_input, div.highlight, pre, code, mjx-container, .MathJax, script, style, .headerlink'))
    el.remove();
  out.text = copy.textContent.replace(/\\s+/g, ' ');
  return out;
}"""


def problems_of(measure: dict) -> list[str]:
    """The problems in one page's measurements (see :data:`_JS_MEASURE`)."""
    out = [f"table needs horizontal scrolling: {t}" for t in measure["tables"]]
    out += [f"figure under {MIN_FIGURE_PX} px high: {f}" for f in measure["figures"]]
    out += [f"equation wider than the column: {e}" for e in measure.get("equations", [])]
    text = measure["text"]

    def ctx(m: re.Match) -> str:
        return text[max(0, m.start() - 40):m.end() + 40].strip()

    for m in list(re.finditer(r"\bNaN\b", text))[:3]:
        out.append(f"NaN: …{ctx(m)}…")
    for rx, what in RAW:
        for m in list(rx.finditer(text))[:3]:
            out.append(f"raw markup ({what}): …{ctx(m)}…")
    for rx, what in HISTORY:
        for m in list(rx.finditer(text))[:3]:
            out.append(f"development history ({what}): …{ctx(m)}…")
    return out


def check_pages(html_dir: Path, pages: list[str] | None = None, shots: Path | None = None,
                timeout_ms: int = 30_000) -> dict[str, list[str]]:
    """Problems per page of the book built in ``html_dir`` (the folder holding ``book/``).
    ``pages`` names them (``"tad"``), default every page; ``shots`` saves each first screen."""
    from playwright.sync_api import sync_playwright

    html_dir = Path(html_dir)
    files = sorted((html_dir / "book").glob("*.html")) if pages is None else \
        [html_dir / "book" / f"{p}.html" for p in pages]
    result: dict[str, list[str]] = {}
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport=VIEWPORT,
            device_scale_factor=1)
        try:
            page = ctx.new_page()
            for f in files:
                page.goto(f.resolve().as_uri(), wait_until="load", timeout=timeout_ms)
                page.evaluate("""() => (window.MathJax && MathJax.startup && MathJax.startup.promise)
                                 ? MathJax.startup.promise : null""")
                if shots is not None:
                    shots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(shots / f"{f.stem}.png"))
                page.evaluate(_JS_PREPARE)
                m = page.evaluate(_JS_MEASURE, MIN_FIGURE_PX)
                result[f.stem] = problems_of(m)
        finally:
            ctx.close()
    return result


_JS_SIZE = """() => {
  const art = document.querySelector('article.bd-article') || document.body;
  let code = 0;
  for (const pre of art.querySelectorAll('div.cell_input pre, div.highlight pre')) {
    if (pre.offsetParent === null || pre.getBoundingClientRect().height === 0) continue;  // folded
    code += pre.innerText.replace(/\\n$/, '').split('\\n').length;
  }
  return {screens: document.documentElement.scrollHeight / window.innerHeight, code_lines: code};
}"""


def measure_pages(html_dir: Path, pages: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Per page, as a reader meets it at 1366×768 with every fold closed: its length in screens
    and the lines of code in view (cell inputs and code blocks that are not folded)."""
    from playwright.sync_api import sync_playwright

    html_dir = Path(html_dir)
    files = sorted((html_dir / "book").glob("*.html")) if pages is None else \
        [html_dir / "book" / f"{p}.html" for p in pages]
    out: dict[str, dict[str, float]] = {}
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport=VIEWPORT)
        try:
            page = ctx.new_page()
            for f in files:
                page.goto(f.resolve().as_uri(), wait_until="load")
                page.evaluate("""() => (window.MathJax && MathJax.startup && MathJax.startup.promise)
                                 ? MathJax.startup.promise : null""")
                out[f.stem] = page.evaluate(_JS_SIZE)
        finally:
            ctx.close()
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", type=Path, help="the built HTML folder (holding book/)")
    ap.add_argument("pages", nargs="*", help="pages to check (default: all)")
    ap.add_argument("--shots", type=Path, help="save each page's first screen here")
    ap.add_argument("--measure", action="store_true",
                    help="print each page's screens and visible code lines instead")
    a = ap.parse_args()
    if a.measure:
        for name, m in measure_pages(a.html, a.pages or None).items():
            print(f"{name}: {m['screens']:.1f} screens, {m['code_lines']} code lines in view")
        sys.exit(0)
    res = check_pages(a.html, a.pages or None, a.shots)
    for name, probs in res.items():
        print(f"{name}: {len(probs)} problem(s)")
        for p in probs:
            print("   ", p)
    sys.exit(1 if any(res.values()) else 0)
