"""The book's chapters on disk: where the book is, and each chapter's ``parameters`` cell.

A *chapter* is any ``book/*.md`` with a jupytext header and a code cell tagged ``parameters``;
its name is the file stem (``book/tad.md`` -> ``tad``). The parameters cell is parsed with
``ast`` (never executed) to list the knobs and their defaults. :func:`list_chapters` gives them
in the order of ``_toc.yml``.

Locations: the book is ``lib/infsched/../../book`` unless ``$INFSCHED_BOOK`` is set; nbval
references go to ``<book>/../tests/nbval`` unless ``$INFSCHED_NBVAL_DIR`` is set.

Both the runner (:mod:`infsched.runner`) and the parameter schemas (:mod:`infsched.params`)
read chapters through this module, so neither imports the other to find them.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, config_error, require

__all__ = ["CHECK_MARKER", "CHECK_TAG", "SCALES", "ChapterInfo", "DefaultExpr", "book_dir", "list_chapters",
           "is_checked", "nbval_dir", "read_chapter"]

SCALES: tuple[str, ...] = ("smoke", "default", "paper")
CHECK_MARKER = "NBVAL_CHECK_OUTPUT"
#: the cell tag with the same meaning (nbval reads both); chapters use the tag, so that the
#: rendered page shows no marker comment
CHECK_TAG = "nbval-check-output"


def is_checked(cell: Any) -> bool:
    """True for a code cell whose outputs nbval compares: tagged ``nbval-check-output`` or
    holding a ``# NBVAL_CHECK_OUTPUT`` comment."""
    if cell.get("cell_type") != "code":
        return False
    tags = (cell.get("metadata") or {}).get("tags") or []
    return CHECK_TAG in tags or CHECK_MARKER in cell.get("source", "")


class DefaultExpr(str):
    """A parameter default that is an expression, not a literal (kept as its source text).

    ``repr`` shows the source unquoted, e.g. ``os.environ.get('INFSCHED_SCALE', 'default')``.
    """

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class ChapterInfo:
    """A runnable chapter: its file, title, and parameters (name -> default).

    A default is the literal value when the source is a Python literal, else a
    :class:`DefaultExpr` holding its source. ``help`` holds each parameter's trailing comment.
    """

    name: str
    path: Path
    title: str
    parameters: dict[str, Any]
    help: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- locations

def book_dir() -> Path:
    """``$INFSCHED_BOOK`` if set, else the repository's ``book/``."""
    env = os.environ.get("INFSCHED_BOOK")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "book"


def nbval_dir() -> Path:
    """Where nbval reference notebooks live: ``$INFSCHED_NBVAL_DIR`` or ``<book>/../tests/nbval``."""
    env = os.environ.get("INFSCHED_NBVAL_DIR")
    return Path(env) if env else book_dir().parent / "tests" / "nbval"


# --------------------------------------------------------------------------- discovery

_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


def has_jupytext_header(path: Path) -> bool:
    """True if the file's YAML front matter carries a jupytext header."""
    try:
        head = path.read_text(encoding="utf-8")[:4000]
    except OSError:
        return False
    m = _FRONT_MATTER.match(head)
    return bool(m and re.search(r"^jupytext\s*:", m.group(1), re.M))


def _parse_parameters(source: str, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ConfigError(f"{where}: parameters cell is not valid Python: {exc}") from None
    lines = source.splitlines()
    params: dict[str, Any] = {}
    helps: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            continue
        try:
            default: Any = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            default = DefaultExpr(ast.get_source_segment(source, value) or ast.unparse(value))
        comment = ""
        last = lines[(node.end_lineno or node.lineno) - 1]
        if "#" in last:
            # a trailing comment after the statement on its last line
            tail = last[(node.end_col_offset or 0):]
            if "#" in tail:
                comment = tail.split("#", 1)[1].strip()
        for n in names:
            params[n] = default
            if comment:
                helps[n] = comment
    return params, helps


def read_chapter(path: str | os.PathLike[str]) -> ChapterInfo | None:
    """Parse one MyST notebook; ``None`` unless it has a jupytext header and a parameters cell."""
    import jupytext

    p = Path(path)
    if not has_jupytext_header(p):
        return None
    nb = jupytext.read(p)
    cell = next((c for c in nb.cells if c.cell_type == "code"
                 and "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return None
    params, helps = _parse_parameters(cell.source, str(p))
    title = p.stem
    for c in nb.cells:
        if c.cell_type == "markdown":
            m = re.search(r"^#\s+(.+?)\s*$", c.source, re.M)
            if m:
                title = m.group(1)
                break
    return ChapterInfo(p.stem, p, title, params, helps)


def _toc_order(folder: Path) -> list[str]:
    """Chapter names in the order of ``_toc.yml`` beside the book folder (empty if none)."""
    toc = folder.parent / "_toc.yml"
    try:
        text = toc.read_text(encoding="utf-8")
    except OSError:
        return []
    prefix = folder.name + "/"
    names = [m.strip().strip("'\"") for m in re.findall(r"(?:file|root)\s*:\s*(\S+)", text)]
    return [Path(n[len(prefix):] if n.startswith(prefix) else n).stem for n in names]


def list_chapters() -> dict[str, ChapterInfo]:
    """Every runnable chapter of the book, by name: in the order of ``_toc.yml``, then any
    chapter it does not list, sorted."""
    folder = book_dir()
    require(folder.is_dir(), "book directory", str(folder),
            "must exist (set INFSCHED_BOOK to the folder holding the chapters)")
    found: dict[str, ChapterInfo] = {}
    for p in sorted(folder.glob("*.md")):
        info = read_chapter(p)
        if info is not None:
            found[info.name] = info
    order = [n for n in _toc_order(folder) if n in found]
    return {n: found[n] for n in order + [n for n in found if n not in order]}


def _get_chapter(name: str) -> ChapterInfo:
    chapters = list_chapters()
    if name not in chapters:
        raise config_error("chapter", name, "must be one of " + (", ".join(chapters) or
                           f"(none: no runnable chapter in {book_dir()})"))
    return chapters[name]
