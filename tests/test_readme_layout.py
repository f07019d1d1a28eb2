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
