"""Repository-wide pytest set-up: MyST chapters as nbval notebooks, and a clean test env.

Run the unit tests and every chapter (the command that was checked to work)::

    INFSCHED_SCALE=smoke .venv/bin/python -m pytest -n 2 --dist loadfile --nbval-lax --nbval-current-env tests book

* ``--dist loadfile`` is required with xdist: every cell of a notebook must run on the same
  worker (one kernel per notebook).
* ``--nbval-lax`` executes every code cell and compares outputs only for cells tagged
  ``nbval-check-output`` (or whose source contains ``# NBVAL_CHECK_OUTPUT``). ``--nbval-current-env`` runs the kernel from the Python
  running pytest (this conftest also turns it on when neither it nor ``--nbval-kernel-name``
  is given).
* A ``.md`` file is collected as a notebook when its front matter has a jupytext header; other
  Markdown (intro.md, scorecard.md without code) is ignored.

Expected outputs cannot live in a ``.md`` file, so for the marked cells they are taken from a
stored executed copy, ``tests/nbval/<chapter>.ipynb``, matched by cell source (the stored copies
are references only, not collected as tests themselves). A marked cell
with no stored counterpart (new or edited cell) fails with a message to refresh them::

    .venv/bin/python -m infsched.runner --refresh-nbval <chapter>

which executes the chapter at smoke scale and stores it (outputs of marked cells only).

For the whole session this conftest sets ``INFSCHED_SCALE=smoke`` (unless already set) and
points ``INFSCHED_CACHE`` at a fresh temporary folder, so no notebook or test reads a stale
sweep cache. The folder is one for the whole run, shared by the xdist workers (the cache is safe
under concurrent writers, see tests/test_sweep_dask.py): a sweep point that a chapter's nbval run
computed is read, not recomputed, by the book build test, and the other way round.
``INFSCHED_FIGURES`` is unset so figures are not written anywhere, and ``INFSCHED_STORE=off``
keeps the committed results store from serving a point a test means to compute (the store's
own tests turn it back on).

With xdist, files are handed to the two workers longest first (``_SLOW_FILES``, then collection
order). xdist would otherwise order them by their number of tests, which sent the book build (3
tests, the longest file) last and left one worker idle for minutes at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path(__file__).resolve().parent
_SESSION_TMP: list[str] = []

#: ``tests/nbval/*.ipynb`` hold the reference outputs that each chapter in ``book/`` is checked
#: against when it runs; they are not tests of their own (executing them too ran every chapter
#: twice per ``make test``)
collect_ignore_glob = ["tests/nbval/*.ipynb"]


#: the test files that take longest (seconds on a quiet 2-core machine, `--durations`), handed
#: out first; a file not listed is short. Only the order depends on these numbers, never a result.
_SLOW_FILES = {
    "tests/test_book_build.py": 200,
    "tests/kvcache/test_acceptance.py": 140,
    "tests/shepherd/test_experiments.py": 130,
    "tests/kvcache/test_hindsight.py": 75,
    "tests/profiling/test_chapter_reruns.py": 65,
    "tests/ramsis/test_experiments.py": 35,
    "tests/ramsis/test_variable.py": 33,
    "book/ramsis.md": 26,
}
#: the variable through which the controller hands its cache folder to the xdist workers
_SHARED_CACHE_VAR = "INFSCHED_TEST_SESSION_CACHE"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("INFSCHED_SCALE", "smoke")
    shared = os.environ.get(_SHARED_CACHE_VAR)
    if hasattr(config, "workerinput") and shared and os.path.isdir(shared):
        os.environ["INFSCHED_CACHE"] = shared      # the controller made it and removes it
    else:
        tmp = tempfile.mkdtemp(prefix="infsched-test-cache-")
        _SESSION_TMP.append(tmp)
        os.environ["INFSCHED_CACHE"] = os.environ[_SHARED_CACHE_VAR] = tmp
    os.environ.pop("INFSCHED_FIGURES", None)
    # the tests exercise computing and caching points: a point that a paper-scale chapter also
    # reads would otherwise come from the results store (tests/test_store*.py turn it on)
    os.environ.setdefault("INFSCHED_STORE", "off")
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False   # keep the order of pytest_collection_modifyitems
    opt = config.option
    if (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)) \
            and not getattr(opt, "nbval_kernel_name", None) and not getattr(opt, "current_env", False):
        opt.nbval_current_env = True


def pytest_unconfigure(config: pytest.Config) -> None:
    while _SESSION_TMP:
        shutil.rmtree(_SESSION_TMP.pop(), ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest files first (stable otherwise), so that ``--dist loadfile`` balances two workers."""
    def cost(item: pytest.Item) -> float:
        path = Path(str(item.path)).resolve()
        return _SLOW_FILES.get(path.relative_to(_ROOT).as_posix(), 0.0) \
            if path.is_relative_to(_ROOT) else 0.0

    items.sort(key=lambda item: -cost(item))


def _nbval_active(config: pytest.Config) -> bool:
    o = config.option
    return bool(getattr(o, "nbval", False) or getattr(o, "nbval_lax", False))


try:
    from nbval.plugin import IPyNbFile
except ImportError:  # pragma: no cover - nbval is a pinned dependency
    IPyNbFile = None  # type: ignore[assignment,misc]


def _reference_dir() -> Path:
    env = os.environ.get("INFSCHED_NBVAL_DIR")
    return Path(env) if env else _ROOT / "tests" / "nbval"


def _merge_reference(nb: Any, chapter: str) -> list[int]:
    """Copy stored outputs into the checked cells (tag ``nbval-check-output`` or comment
    ``# NBVAL_CHECK_OUTPUT``); return the indices (among code cells) of checked cells that have
    no stored counterpart."""
    import nbformat

    from infsched.book import is_checked

    ref_path = _reference_dir() / f"{chapter}.ipynb"
    stored: dict[str, Any] = {}
    if ref_path.is_file():
        ref = nbformat.read(ref_path, as_version=4)
        stored = {c.source.strip(): c for c in ref.cells if c.cell_type == "code"}
    missing = []
    code_index = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if is_checked(cell):
            ref_cell = stored.get(cell.source.strip())
            if ref_cell is None:
                missing.append(code_index)
            else:
                cell.outputs = ref_cell.get("outputs", [])
                # nbval refuses a reference cell with outputs but no execution count
                cell.execution_count = ref_cell.get("execution_count") or 1
        code_index += 1
    return missing


if IPyNbFile is not None:

    class JupytextNbFile(IPyNbFile):
        """nbval collector for a MyST-markdown notebook with stored reference outputs."""

        def collect(self):  # type: ignore[override]
            import jupytext
            import nbval.plugin as nbval_plugin

            path = Path(str(self.fspath))
            nb = jupytext.read(path, as_version=4)
            missing = set(_merge_reference(nb, path.stem))
            real_read = nbval_plugin.nbformat.read
            nbval_plugin.nbformat.read = lambda *a, **k: nb
            try:
                items = list(super().collect())
            finally:
                nbval_plugin.nbformat.read = real_read
            for item in items:
                if item.cell_num in missing:
                    _fail_after_run(item, path)
                _fail_on_stderr(item, path)
                yield item


def _fail_on_stderr(item: Any, path: Path) -> None:
    """Fail a cell that writes to stderr (a warning, a progress bar): the rendered page would
    show it, and the book build (``nb_output_stderr: error``) fails on it."""
    run = item.runtest

    def runtest() -> None:
        run()
        err = "".join(o.get("text", "") for o in getattr(item, "test_outputs", None) or []
                      if o.get("output_type") == "stream" and o.get("name") == "stderr")
        if err:
            pytest.fail(f"{path.name} cell {item.cell_num} wrote to stderr (the page would show it):\n"
                        f"{err[:2000]}", pytrace=False)

    item.runtest = runtest


def _fail_after_run(item: Any, path: Path) -> None:
    """Run the cell (later cells may need it), then fail: it has no stored expected output."""
    run = item.runtest
    ref = _reference_dir() / f"{path.stem}.ipynb"

    def runtest() -> None:
        run()
        pytest.fail(
            f"{path.name} cell {item.cell_num} is tagged nbval-check-output but {ref} has no "
            f"cell with the same source; run: python -m infsched.runner --refresh-nbval {path.stem}",
            pytrace=False,
        )

    item.runtest = runtest


def pytest_collect_file(file_path: Path, parent: pytest.Collector):  # type: ignore[no-untyped-def]
    if IPyNbFile is None or file_path.suffix != ".md" or not _nbval_active(parent.config):
        return None
    from infsched.book import has_jupytext_header

    if has_jupytext_header(file_path):
        return JupytextNbFile.from_parent(parent, path=file_path)
    return None
