"""Run a chapter of the book with new parameters (papermill), and refresh nbval references.

A *chapter* is any ``book/*.md`` with a jupytext header and a code cell tagged ``parameters``
(:mod:`infsched.book` finds them and parses that cell; its names are re-exported here).

``run_chapter("tad", {"n_servers": 1024}, scale="paper")`` converts the chapter to ``.ipynb``
(jupytext), executes it with papermill in the book directory, writes the executed notebook to
``_build/runs/tad-<hash of parameters>/tad.ipynb`` and every PNG output to ``figures/`` beside
it. The kernel sees ``INFSCHED_FIGURES`` (so :func:`infsched.plotting.save` writes there too),
``INFSCHED_RUN_DIR`` (so :func:`infsched.report.glue_verdicts` writes the chapter's verdict
table there as ``verdicts.csv``) and, when ``scale`` is given, ``INFSCHED_SCALE``.

Every parameter given is checked against the chapter's schema (:mod:`infsched.params`) before a
kernel starts. SIGINT or SIGTERM while a chapter runs interrupts its kernel, stops every process
the run started (the kernel's sweep workers too) and raises :class:`ChapterInterrupted`;
``infsched run`` prints it as one line and exits with status 130. Finished sweep points stay in
the cache. The kernel's own stdout and stderr go to ``kernel.log`` in the run folder (removed
when empty).

Refresh the stored outputs that nbval checks (cells tagged ``nbval-check-output``)::

    python -m infsched.runner --refresh-nbval [chapter ...]

"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .book import (
    CHECK_MARKER,
    SCALES,
    ChapterInfo,
    DefaultExpr,
    _get_chapter,
    book_dir,
    is_checked,
    list_chapters,
    nbval_dir,
    read_chapter,
)
from .errors import ConfigError, config_error, nearest_name, require
from .interrupts import ChapterInterrupted, stop_on_signal

__all__ = [
    "SCALES",
    "ChapterInfo",
    "ChapterFailed",
    "ChapterInterrupted",
    "DefaultExpr",
    "book_dir",
    "nbval_dir",
    "list_chapters",
    "read_chapter",
    "run_chapter",
    "refresh_nbval",
    "CHECK_MARKER",
]

class ChapterFailed(RuntimeError):
    """A chapter raised while executing; the partly executed notebook is kept (``notebook``)."""

    notebook: Path | None = None


# --------------------------------------------------------------------------- running

@contextlib.contextmanager
def _env(**values: str | None) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _param_hash(params: Mapping[str, Any], scale: str | None) -> str:
    blob = json.dumps({"params": dict(params), "scale": scale}, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def _extract_pngs(nb: Any, folder: Path, stem: str) -> list[Path]:
    paths = []
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        k = 0
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png") if hasattr(out, "get") else None
            if png:
                folder.mkdir(parents=True, exist_ok=True)
                k += 1
                p = folder / f"{stem}-cell{ci:02d}-{k}.png"
                p.write_bytes(base64.b64decode(png if isinstance(png, str) else "".join(png)))
                paths.append(p)
    return paths


def _kernel_config(runtime: Path | None = None) -> Any:
    """The kernel talks to papermill over IPC sockets, not TCP: a TCP kernel warns on stderr
    that it is unencrypted, and a chapter that runs another (the profiling chapter) would show
    that warning in its own output.

    ``runtime``: this run's own folder for the kernel's connection file and IPC sockets. Left to
    jupyter_client, the sockets are ``kernel-ipc-1``, ``-2``, ... relative to the working folder,
    each number taken when no file of that name exists yet: two runs starting together take the
    same ones, and one kernel answers the other's client (``Invalid Signature``, ``Kernel didn't
    respond``). In a folder of its own each run's names are its own."""
    from traitlets.config import Config

    c = Config()
    c.KernelManager.transport = "ipc"
    if runtime is not None:
        runtime.mkdir(parents=True, exist_ok=True)
        c.KernelManager.connection_file = str(runtime / "kernel.json")
        c.KernelManager.ip = str(runtime / "kernel-ipc")
    return c


def run_chapter(
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    scale: str | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    kernel: str = "python3",
    timeout: float | None = None,
    on_start: Any = None,
    progress: Any = None,
) -> Path:
    """Execute chapter ``name`` with ``params`` and return the executed notebook's path.

    ``scale`` (smoke | default | paper) is passed as the ``scale`` parameter when the chapter
    has one, and as ``INFSCHED_SCALE`` to the kernel. ``out_dir`` defaults to
    ``<book>/../_build/runs/<name>-<hash of params and scale>/``. The notebook is written as
    ``<out_dir>/<name>.ipynb``, PNG outputs as ``<out_dir>/figures/*.png``. Raises ConfigError
    for an unknown chapter, parameter or scale, ChapterFailed if a cell raises.

    ``on_start(params, scale)`` is called once every value has passed its checks, just before
    the kernel starts (``infsched run`` says there how long the run will take). ``progress``,
    an object with ``update(state, elapsed_s)`` and ``close()``, is given about every half
    second the state of the sweeps running in the kernel (``state["bars"]``: each sweep's
    ``desc``, ``total``, ``cached``, ``done``, ``failed``, ``left``, ``start``; see
    :class:`infsched.progress.SweepProgress`; None before the first) and the seconds since the start;
    nothing is printed inside the kernel.
    """
    import nbformat

    info = _get_chapter(name)
    params = dict(params or {})
    require(all(isinstance(k, str) for k in params), "params", params, "must map names (str) to values")
    allowed = list(info.parameters)
    for k in params:
        if k not in info.parameters:
            raise config_error("parameter", k, f"chapter {name!r} has parameters "
                               + (", ".join(allowed) or "(none)") + nearest_name(k, allowed))
    if scale is not None:
        require(scale in SCALES, "scale", scale, "must be one of " + ", ".join(SCALES))
    if "scale" in params:
        require(params["scale"] in SCALES, "scale", params["scale"], "must be one of " + ", ".join(SCALES))
        require(scale is None or scale == params["scale"], "scale", scale,
                f"conflicts with parameter scale = {params['scale']!r}")
        scale = params["scale"]
    if scale is not None and "scale" in info.parameters:
        params["scale"] = scale
    require(isinstance(kernel, str) and kernel != "", "kernel", kernel, "must be a kernel name")
    # every value checked now, before a kernel starts (infsched.params: the chapter's schema)
    from .params import check_chapter_parameters, check_environment

    check_environment()
    params = check_chapter_parameters(name, params, info.parameters)
    from .cache import default_cache_dir
    from .sweep import _check_cache_folder

    _check_cache_folder(default_cache_dir(), None)  # the chapter's sweeps write there: checked now
    if (scale or os.environ.get("INFSCHED_SCALE", "").strip() or "paper") == "paper":
        from . import store

        store.check_intact(name)  # a chapter served from a damaged store: refused before a kernel
    if on_start is not None:
        on_start(params, scale)

    out = Path(out_dir) if out_dir is not None else \
        book_dir().parent / "_build" / "runs" / f"{name}-{_param_hash(params, scale)}"
    out = out.resolve()
    figures = out / "figures"
    created = not out.exists()
    figures.mkdir(parents=True, exist_ok=True)
    out_nb = out / f"{name}.ipynb"
    try:
        _execute(info, params, kernel, timeout, scale, out, figures, out_nb, progress)
    except BaseException:
        # keep the partly executed notebook (it holds the traceback); remove what holds nothing
        with contextlib.suppress(OSError):
            figures.rmdir()               # only if empty
        if created and not _ran_any_cell(out_nb):
            shutil.rmtree(out, ignore_errors=True)
        raise
    if not any(figures.glob("*.png")):
        # the chapter saved no named figures (plotting.save): keep every PNG output instead
        _extract_pngs(nbformat.read(out_nb, as_version=4), figures, name)
    return out_nb


def _ran_any_cell(path: Path) -> bool:
    """True if ``path`` is a notebook in which at least one code cell was executed."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return False
    return any(c.cell_type == "code" and c.get("execution_count") for c in nb.cells)


def _logged_kernel_manager(log: Path) -> type:
    """A kernel manager whose kernel writes its own stdout and stderr (and its sweep workers')
    to ``log``, not to this process's terminal: what a cell prints is in the notebook, and the
    kernel's messages while it is stopped (asyncio's, loky's) would otherwise follow the one
    line that ``infsched run`` prints on an interrupt. The file is removed when empty."""
    from jupyter_client import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "ab") as f:  # the kernel holds its own copy of the descriptor
                kw.setdefault("stdout", f)
                kw.setdefault("stderr", f)
                await super()._async_launch_kernel(kernel_cmd, **kw)

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            with contextlib.suppress(OSError):
                if log.stat().st_size == 0:
                    log.unlink()

    return LoggedKernelManager


@contextlib.contextmanager
def _watch(path: Path, progress: Any, every: float = 0.5) -> Iterator[None]:
    """While the block runs, hand ``progress.update`` the state the kernel's sweeps write to
    ``path`` (see :class:`infsched.progress.SweepProgress`) every ``every`` seconds; ``close()`` it
    after the block (before an interrupt's message is printed)."""
    import threading
    import time

    if progress is None:
        yield
        return
    start, stop = time.monotonic(), threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            state = None
            with contextlib.suppress(OSError, ValueError):
                state = json.loads(path.read_text())
            with contextlib.suppress(Exception):  # a display never stops a run
                progress.update(state if isinstance(state, dict) else None, time.monotonic() - start)

    thread = threading.Thread(target=loop, name="infsched-run-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2 * every + 1)
        with contextlib.suppress(Exception):
            progress.close()


def _execute(info: ChapterInfo, params: dict[str, Any], kernel: str, timeout: float | None,
             scale: str | None, out: Path, figures: Path, out_nb: Path, progress: Any = None) -> None:
    import jupytext
    import nbformat
    import papermill as pm

    name = info.name
    with tempfile.TemporaryDirectory(prefix="infsched-run-") as tmp:
        src = Path(tmp) / f"{name}.ipynb"
        nbformat.write(jupytext.read(info.path), src)
        runtime = Path(tmp) / "runtime"  # this run's kernel files (_kernel_config)
        env = {"INFSCHED_FIGURES": str(figures), "INFSCHED_RUN_DIR": str(out),
               "JUPYTER_RUNTIME_DIR": str(runtime)}
        if scale is not None:
            env["INFSCHED_SCALE"] = scale
        state = Path(tmp) / "progress.json"
        if progress is not None:  # the kernel's sweeps write their state there (infsched.sweep)
            env["INFSCHED_PROGRESS"] = str(state)
        with _env(**env), stop_on_signal(name), _watch(state, progress):
            try:
                pm.execute_notebook(
                    str(src), str(out_nb), parameters=params, kernel_name=kernel,
                    cwd=str(info.path.parent), progress_bar=False, log_output=False,
                    execution_timeout=timeout, config=_kernel_config(runtime),
                    kernel_manager_class=_logged_kernel_manager(out / "kernel.log"),
                )
            except pm.PapermillExecutionError as exc:
                failed = ChapterFailed(
                    f"chapter {name!r} failed at cell [{exc.exec_count}]: {exc.ename}: "
                    f"{exc.evalue.strip().splitlines()[0] if exc.evalue.strip() else ''} "
                    f"(the partly executed notebook, with the traceback, is kept: {out_nb})")
                failed.notebook = out_nb  # what its cells printed (infsched run repeats some)
                raise failed from None


# --------------------------------------------------------------------------- nbval references

def _strip_unchecked(nb: Any) -> Any:
    """Keep outputs only of cells tagged ``nbval-check-output`` or marked
    ``# NBVAL_CHECK_OUTPUT`` (the ones nbval compares)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and not is_checked(cell):
            cell.outputs = []
            cell.execution_count = None
    return nb


def refresh_nbval(chapters: Sequence[str] | None = None, *, out_dir: str | os.PathLike[str] | None = None,
                  kernel: str = "python3") -> list[Path]:
    """Execute chapters at smoke scale (``INFSCHED_SCALE=smoke``, no injected parameters) and
    store them as ``<nbval_dir>/<chapter>.ipynb``, keeping only the checked cells' outputs."""
    import nbformat

    known = list_chapters()
    names = list(chapters) if chapters else list(known)
    for n in names:
        if n not in known:
            raise config_error("chapter", n, "must be one of " + (", ".join(known) or "(none)"))
    dest = Path(out_dir) if out_dir is not None else nbval_dir()
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="infsched-nbval-") as tmp:
        for n in names:
            with _env(INFSCHED_SCALE="smoke"):
                executed = run_chapter(n, {}, out_dir=Path(tmp) / n, kernel=kernel)
            nb = _strip_unchecked(nbformat.read(executed, as_version=4))
            nb.metadata.pop("papermill", None)
            for cell in nb.cells:
                cell.metadata.pop("papermill", None)
                cell.metadata.pop("execution", None)
            target = dest / f"{n}.ipynb"
            nbformat.write(nb, target)
            written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m infsched.runner --refresh-nbval [chapter ...]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m infsched.runner", description=__doc__.split("\n")[0])
    ap.add_argument("--refresh-nbval", nargs="*", metavar="CHAPTER", required=True,
                    help="re-execute these chapters (default: all) at smoke scale and store them "
                         "as nbval references")
    args = ap.parse_args(argv)
    try:
        for p in refresh_nbval(args.refresh_nbval):
            print(p)
    except (ConfigError, ChapterFailed) as exc:
        print(f"infsched: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
