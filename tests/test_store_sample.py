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
import random

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


def test_a_function_the_sample_leaves_out_recomputes_its_cheapest_point():
    """A stored function whose every point costs more than the sample's budget leaves it (the
    TAD Figs. 9-10 runs at the paper's length: about 25 CPU s each) is still checked: its
    cheapest point (seeded among equals) is recomputed in full and must agree to round-off."""
    sampled = {e.fn for e in store.sample_entries(BUDGET_CPU_S, seed=SEED)}
    by_fn: dict[str, list] = {}
    for e in store.all_entries():
        if e.fn not in sampled:
            by_fn.setdefault(e.fn, []).append(e)
    diffs = {}
    for fn, entries in sorted(by_fn.items()):
        cheapest = min(float(e.provenance.get("cpu_s") or 0) for e in entries)
        pick = random.Random(SEED).choice(sorted(
            (e for e in entries if float(e.provenance.get("cpu_s") or 0) <= 1.1 * cheapest),
            key=lambda e: e.key))
        if d := results.recompute(pick):
            diffs[f"{fn} {pick.key}"] = d
    assert not diffs, f"stored points differ from today's code (bump and rebuild): {diffs}"
