"""Generated sentences that stay true at their edge cases: an empty list, one item, equal values.

A chapter glues phrases built from its numbers into its prose; a phrase written for the usual
case ("only at a = 1, b = 2") reads wrong when the list is empty ("only at none"). These helpers
take the empty case as an argument, so the sentence is written for it too.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from .errors import require

__all__ = ["and_list", "at_points", "shared_parts", "verdicts_once"]


def and_list(items: Iterable[object]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``; ``""`` for no items."""
    words = [str(i) for i in items]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def at_points(points: Iterable[object], *, some: str, none: str) -> str:
    """``some`` with ``{}`` replaced by the points joined as :func:`and_list` does, or ``none``
    when there are no points (e.g. ``some="only at {}"``, ``none="at no point"``)."""
    require(isinstance(some, str) and some.count("{}") == 1, "some", some,
            "must be a phrase holding one {} for the points")
    require(isinstance(none, str) and none != "", "none", none, "must be a non-empty phrase")
    words = and_list(points)
    return some.replace("{}", words) if words else none


def shared_parts(notes: Iterable[str], sep: str = "; ") -> tuple[str, list[str]]:
    """The ``sep``-separated parts that every one of two or more notes holds, joined (in the
    first note's order), and each note without them; ``("", notes)`` when nothing is shared or
    there are fewer than two notes."""
    notes = ["" if n is None else str(n) for n in notes]
    if len(notes) < 2:
        return "", notes
    split = [[x for x in n.split(sep) if x] for n in notes]
    common = [x for x in dict.fromkeys(split[0]) if all(x in parts for parts in split[1:])]
    if not common:
        return "", notes
    return sep.join(common), [sep.join(x for x in parts if x not in common) for parts in split]


def verdicts_once(table: Any) -> tuple[str, Any]:
    """A verdict table for display with a note every row repeats said once: returns the shared
    text as an HTML paragraph (``""`` if none) and the table with it cut from each row's note.
    Only the display changes; the table a chapter keeps (and glues) is not touched."""
    if "note" not in getattr(table, "columns", ()):
        return "", table
    shared, rest = shared_parts(table["note"].tolist())
    if not shared:
        return "", table
    return (f'<p class="infsched-shared-note"><em>Every row below</em>: {html.escape(shared)}</p>',
            table.assign(note=rest))
