"""Stopping a running chapter cleanly on SIGINT or SIGTERM (``infsched run``'s Ctrl-C).

A chapter runs in a Jupyter kernel whose sweeps start worker processes of their own. On the first
signal, :func:`stop_on_signal` interrupts the kernel (its cell stops and its sweep stops its
workers), lets papermill shut it down, then terminates every process the run started that is
still alive, and raises one :class:`ChapterInterrupted`. Points a sweep finished are in its cache,
so a rerun resumes from them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["ChapterInterrupted", "stop_on_signal"]


class ChapterInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a running chapter. Its kernel and every process the kernel
    started (sweep workers) have been stopped; points a sweep finished are in its cache, so a
    rerun resumes from them. ``str()`` is one line saying so."""


def _descendants(exclude: set[int]) -> list[Any]:
    import psutil

    try:
        kids = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    return [p for p in kids if p.pid not in exclude]


def _terminate(procs: list[Any]) -> None:
    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()


def _ppid(p: Any) -> int | None:
    import psutil

    try:
        return int(p.ppid())
    except psutil.Error:
        return None


def _interrupt(procs: list[Any]) -> None:
    import signal

    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.send_signal(signal.SIGINT)


def _reap(procs: list[Any], grace: float = 5.0) -> None:
    """Wait up to ``grace`` seconds for ``procs`` to end after SIGTERM, then SIGKILL the rest."""
    import time

    import psutil

    def running(p: Any) -> bool:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                with contextlib.suppress(psutil.Error, ChildProcessError):
                    p.wait(timeout=0)  # reap our own child
                return False
            return bool(p.is_running())
        except psutil.Error:
            return False

    for kill in (False, True):
        if kill:
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    p.kill()
        end = time.monotonic() + grace
        while (procs := [p for p in procs if running(p)]) and time.monotonic() < end:
            time.sleep(0.05)  # psutil.wait_procs polls non-children ever more slowly


@contextlib.contextmanager
def stop_on_signal(name: str) -> Iterator[None]:
    """Run the block (a chapter's execution) so that SIGINT or SIGTERM stops it cleanly: the
    first signal interrupts the kernel (in its own session, so a terminal's Ctrl-C does not
    reach it) and stops the block; papermill shuts the kernel down; every process started inside
    the block that is still alive then (the kernel's sweep workers) gets SIGTERM, and SIGKILL
    after a grace period; the block's exceptions are replaced by one :class:`ChapterInterrupted`.
    A second signal while stopping terminates them at once. Outside the main thread this does
    nothing (Python delivers signals only there)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {p.pid for p in _descendants(set())}
    state: dict[str, Any] = {"signal": None, "procs": []}

    def handler(signum: int, frame: Any) -> None:
        if state["signal"] is not None:  # a second signal while stopping: stop at once
            _terminate(state["procs"] + _descendants(before))
            return
        state["signal"] = signum
        state["procs"] = _descendants(before)  # now, before the kernel's children are orphaned
        # the kernel (our new direct child) gets SIGINT: its cell stops, its sweep stops its
        # workers and cleans up; papermill then shuts the kernel down (killing its process
        # group if it does not answer), and whatever is left is terminated below
        _interrupt([p for p in state["procs"] if _ppid(p) == os.getpid()])
        raise KeyboardInterrupt

    signals = [signal.SIGINT, signal.SIGTERM]
    old = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    except BaseException:
        if state["signal"] is None:
            raise
    else:
        if state["signal"] is None:
            return
    finally:
        if state["signal"] is not None:
            try:  # still ignoring further signals while the rest is stopped
                _reap(state["procs"] + [p for p in _descendants(before)
                                        if p.pid not in {q.pid for q in state["procs"]}])
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
        else:
            for s, h in old.items():
                signal.signal(s, h)
    import logging

    # nbclient leaves a task whose exception (the interrupted cell) asyncio would log at exit
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    # infsched.sweep.default_cache_dir, without importing pandas here
    cache = os.environ.get("INFSCHED_CACHE") or str(Path.home() / ".cache" / "infsched")
    raise ChapterInterrupted(
        f"chapter {name!r} interrupted by {signal.Signals(state['signal']).name}: its kernel and "
        f"workers are stopped; finished sweep points are kept in the cache ({cache}) "
        "and a rerun reuses them") from None
