"""The library's module map, ``lib/infsched/README.md`` (linked from the README's "Where things
are"), names every module of the library, each in its package's row (issue 25: the layout matches
the tree). A module added, moved or renamed without the map following fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "infsched"


def _rows() -> dict[str, str]:
    text = (LIB / "README.md").read_text(encoding="utf-8")
    rows: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\| `([^`]+)`[^|]*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = rows.get(m.group(1), "") + m.group(2)
    return rows


def test_every_module_is_named_in_its_packages_row():
    rows = _rows()
    missing = []
    for path in sorted(LIB.rglob("*.py")):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(LIB)
        folder = "lib/infsched/" + ("" if len(rel.parts) == 1 else rel.parts[0] + "/")
        row = rows.get(folder, "")
        if f"`{path.stem}`" not in row and f"`{path.stem} " not in row:
            missing.append(str(rel))
    assert missing == [], f"modules lib/infsched/README.md does not name in their row: {missing}"


def test_every_package_row_is_a_folder():
    for folder in _rows():
        if folder.startswith("lib/"):
            assert (ROOT / folder).is_dir(), f"lib/infsched/README.md lists {folder}, which does not exist"


def test_the_readme_links_the_module_map():
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Where things are", 1)[1]
    assert "(lib/infsched/README.md)" in section.split("\n## ", 1)[0]


def test_the_readme_is_a_front_door():
    """What the book is, then the two commands within the first 40 lines, then a short "What
    holds up" that points to the front page, then where things are; 150 lines at most."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines (at most 150)"
    first = "\n".join(lines[:40])
    assert "make book" in first and "make test" in first, "the two commands must be in the first 40 lines"
    heads = [ln[3:].strip() for ln in lines if ln.startswith("## ")]
    assert heads[:3] == ["Two commands", "What holds up", "Where things are"], heads
    text = "\n".join(lines)
    holds = text.split("## What holds up", 1)[1].split("\n## ", 1)[0]
    assert "book/intro.md" in holds and len(holds.strip().splitlines()) <= 15
