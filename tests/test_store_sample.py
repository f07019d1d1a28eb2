"""The committed results store (data/results/) is current and agrees with today's code.

A seeded random sample of stored points, about two CPU minutes of their recorded cost, is
recomputed with the current code and must agree to float round-off (``infsched.results.RTOL``/``ATOL``);
the fields a point function declares volatile (wall-clock solve times) are not compared. Set
``INFSCHED_STORE_SAMPLE_SEED`` to draw another sample. A change that alters a stored function's
numbers must bump its results version (``@results_version``) and rebuild the store
(``infsched results build CHAPTER``); a bump without the rebuild fails ``test_store_is_current``.
"""

from __future__ import annotations

import os

import pytest

from infsched import results, store
from infsched.book import list_chapters

#: recorded CPU seconds of the sample (the points' own cost, measured when they were stored)
BUDGET_CPU_S = 100.0
SEED = int(os.environ.get("INFSCHED_STORE_SAMPLE_SEED", "0"))


def _stored_chapters() -> list[str]:
    return [c for c in list_chapters() if store.load_manifest(c) is not None]


def test_the_store_holds_paper_scale_builds():
    assert _stored_chapters(), "data/results/ holds no chapter: run `infsched results build`"


@pytest.mark.parametrize("chapter", _stored_chapters())
def test_store_is_current(chapter):
    st = store.status(chapter)
    assert st["current"], (f"{chapter}: the stored build is stale ({'; '.join(st['stale'])}; "
                           f"{st['absent']} points missing): run `infsched results build {chapter}`")
    assert st["scale"] == "paper"


def test_every_stored_point_is_under_its_current_results_version():
    for e in store.all_entries():
        assert e.results_version == store.version_of(store.resolve(e.fn)), e.fn


def test_a_sample_of_stored_points_recomputes_identically():
    sample = store.sample_entries(BUDGET_CPU_S, seed=SEED)
    assert sample
    diffs = {f"{e.fn} {e.key}": d for e in sample if (d := results.recompute(e))}
    assert not diffs, (f"{len(diffs)} of {len(sample)} stored points differ from today's code "
                       f"(bump the results version and rebuild): {diffs}")
