"""``infsched results``: build the results store from the chapters, report its state, check it.

:func:`build` runs a chapter at ``paper`` scale with its default parameters (through
:func:`infsched.runner.run_chapter`, so exactly the points the chapter reads) while every sweep
records the points it returns, then commits them to the store (:mod:`infsched.store`).
:func:`recompute` checks one stored point against today's code (``infsched results verify`` and
``tests/test_store_sample.py`` run it on a seeded sample).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from . import store
from .runner import _env, run_chapter
from .sweep import _compute

__all__ = ["ATOL", "NOT_STORED", "RTOL", "build", "recompute", "require_storable",
           "stored_chapters"]

#: chapters with no paper-scale results to store, and why: the book renders them at `default`
NOT_STORED = {"profiling": "it measures the machine it runs on, so its numbers are this "
                           "machine's, not results to store; the book renders it at default scale"}


def stored_chapters() -> list[str]:
    """The chapters ``infsched results build`` builds when none is named: every chapter of the
    book but those in :data:`NOT_STORED`, in the book's order."""
    from .book import list_chapters

    return [name for name in list_chapters() if name not in NOT_STORED]


def require_storable(chapter: str) -> None:
    """Raise ConfigError naming ``chapter`` unless ``infsched results build`` can store it."""
    from .errors import ConfigError

    if chapter in NOT_STORED:
        raise ConfigError(f"chapter = {chapter!r}: has no paper-scale results to store "
                          f"({NOT_STORED[chapter]})")
    known = stored_chapters()
    if chapter not in known:
        raise ConfigError(f"chapter = {chapter!r}: must be one of {', '.join(sorted(known))}")


def build(chapter: str, *, out_dir: Path | None = None, progress: Any = None,
          root: Path | None = None) -> dict[str, Any]:
    """Run ``chapter`` at ``paper`` scale with its default parameters and store every sweep
    point it used (``infsched results build CHAPTER``).

    Points already stored under their current results version are served, not recomputed;
    points in the sweep cache (``$INFSCHED_CACHE``) are taken with the provenance their entry
    recorded; the rest are computed (locally, or on the Dask cluster ``$INFSCHED_DASK`` names).
    Interrupted, it resumes from the sweep cache. Writes ``points/*.jsonl`` and the chapter's
    manifest, then drops stored points no manifest lists. Returns the manifest."""
    require_storable(chapter)
    root = root or store.store_dir()
    rec = Path(tempfile.mkdtemp(prefix=f"infsched-store-{chapter}-"))
    t0, c0 = time.perf_counter(), store._children_cpu()
    try:
        with _env(**{store.RECORD_ENV: str(rec), store.DIR_ENV: str(root), store.STRICT_ENV: None}):
            run_chapter(chapter, {}, scale="paper", out_dir=out_dir, progress=progress)
    except BaseException:
        shutil.rmtree(rec, ignore_errors=True)  # the finished points stay in the sweep cache
        raise
    return store.commit_records(chapter, rec, root, wall_s=time.perf_counter() - t0,
                                cpu_s=store._children_cpu() - c0)


#: the agreement a recomputed point must reach: float round-off, not modelling noise
RTOL, ATOL = 1e-9, 1e-12


def recompute(entry: store.Entry) -> list[str]:
    """Recompute one stored point with the current code (no cache) and list where it
    differs from the stored value beyond float round-off (empty: it agrees). The function's
    ``volatile`` fields are not compared; a changed results version is itself a difference."""
    fn = store.resolve(entry.fn)
    if store.version_of(fn) != entry.results_version:
        return [f"results version {entry.results_version} stored, {store.version_of(fn)} now"]
    # the point itself is computed (not looked up); a sweep nested in it (RAMSIS's replications
    # read their policies through one) reads the store as the chapter did, never a local cache:
    # each stored input is checked in its own right when the sample draws it, and the recorded
    # CPU seconds, which budget the sample, are the point's own work
    with tempfile.TemporaryDirectory(prefix="infsched-recompute-") as tmp, \
            _env(**{"INFSCHED_CACHE": tmp, store.STORE_ENV: None, store.RECORD_ENV: None}):
        value = _compute(fn, dict(entry.params))
    return store.same(value, entry.value, rtol=RTOL, atol=ATOL,
                      skip=getattr(fn, "__results_volatile__", ()), where=entry.fn.rsplit(".", 1)[-1])
