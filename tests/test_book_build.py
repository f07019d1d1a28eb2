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

ROOT = Path(__file__).resolve().parents[1]


def test_book_builds_without_warnings(tmp_path):
    jb = Path(sys.executable).with_name("jupyter-book")
    assert jb.exists(), f"jupyter-book is not installed beside {sys.executable}"
    env = {**os.environ, "INFSCHED_SCALE": "smoke", "INFSCHED_CACHE": str(tmp_path / "cache")}
    env.pop("INFSCHED_FIGURES", None)
    proc = subprocess.run(
        [str(jb), "build", "-W", "-n", "--keep-going", "--path-output", str(tmp_path), str(ROOT)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    html = tmp_path / "_build" / "html" / "book"
    scorecard = (html / "scorecard.html").read_text()
    # the summary line and the verdict table are pasted from the executed chapter by glue
    assert re.search(r"\d+ reproduced, \d+ close, \d+ differs?", scorecard), scorecard[-3000:]
    assert "waterfilling_equals_lp" in scorecard.replace("<wbr>", "")  # names break after "_"
    assert "stand-in" in scorecard  # the rule at the top, and the smoke build's scaled-down rows
    assert (html / "tad.html").exists()
    shutil.rmtree(tmp_path / "_build" / ".jupyter_cache", ignore_errors=True)


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
