"""Generated sentences that stay true at their edge cases: an empty list, one item, equal values.

A chapter glues phrases built from its numbers into its prose; a phrase written for the usual
case ("only at a = 1, b = 2") reads wrong when the list is empty ("only at none"). These helpers
take the empty case as an argument, so the sentence is written for it too.
"""

from __future__ import annotations

from typing import Iterable

from .errors import require

__all__ = ["and_list", "at_points"]


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
