"""What a sweep tells its user while it runs: how long its points will take, and a bar.

:func:`estimate_points` reads the seconds earlier points of the same kind took (each cache entry
records them, :mod:`infsched.cache`). :class:`SweepProgress` is a sweep's tqdm bar; inside a
chapter's kernel run by ``infsched run`` it writes the state of every running sweep to the file
``$INFSCHED_PROGRESS`` instead (stderr in a cell would land on the page), which ``infsched run``
reads and shows on its own terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .cache import PointError, _header, _in_kernel, _kind
from .limits import fmt_duration

__all__ = ["SweepProgress", "estimate_points"]


def estimate_points(folder: Path | None, points: list[dict[str, Any]], todo: list[int], jobs: int | None,
              limit: int = 5000) -> str:
    """One line saying how long the points ``todo`` will take, from the measured seconds of
    earlier points of the same kind (:func:`_kind`: the same text parameters, such as the
    experiment and the scale) in the cache folder (its ``limit`` newest entries). ``jobs``: the
    local processes (None: a Dask cluster)."""
    what = f"{len(todo)} point(s) to compute" + (f" ({len(points) - len(todo)} cached)"
                                                  if len(points) > len(todo) else "")
    times: dict[str, list[float]] = {}
    if folder is not None and folder.is_dir():
        def mtime(f: Path) -> float:
            try:
                return f.stat().st_mtime
            except OSError:  # removed meanwhile (another run healing its cache)
                return 0.0

        files = sorted(folder.glob("*.pkl"), key=mtime, reverse=True)[:limit]
        for f in files:
            h = _header(f)
            if h is not None and isinstance(h.get("seconds"), (int, float)) and isinstance(h.get("kind"), dict):
                times.setdefault(json.dumps(h["kind"], sort_keys=True), []).append(float(h["seconds"]))
    kinds = [json.dumps(_kind(points[i]), sort_keys=True) for i in todo]
    known = [float(np.mean(times[k])) for k in kinds if k in times]
    if not known:
        return (what + "; no estimate of their time yet (no earlier point of the same kind in the "
                "cache to time them by): the remaining time shows once points finish")
    total = sum(known)
    timed = sum(len(times[k]) for k in set(kinds) if k in times)
    procs = None if jobs is None else min(max(1, jobs if jobs > 0 else os.cpu_count() or 1), len(todo))
    msg = (what + f"; about {fmt_duration(total / procs)} on {procs} process"
           + ("es" if procs > 1 else "") if procs else
           what + f"; about {fmt_duration(total)} of work, divided among the cluster's workers")
    msg += (f" (the mean time of {timed} earlier point(s) of the same kind, measured when they "
            "were computed and kept in the cache")
    unknown = len(todo) - len(known)
    return msg + (f"; {unknown} point(s) of a kind never timed here are not counted)" if unknown else ")")


#: the bars of the sweeps running now in this process, outermost first (a kernel reports them)
_ACTIVE: list[SweepProgress] = []
class SweepProgress:
    """The tqdm bar of a sweep, with done (computed now), cached, failed and remaining points.

    Before the bar, when it is shown, one line says how long the points will take (``estimate``,
    from :func:`estimate_points`). Inside a chapter's kernel run by ``infsched run`` (which sets
    ``$INFSCHED_PROGRESS`` to a file), nothing is printed (a cell's stderr would land on the page
    and fail the strict book build): the state of every running sweep is written to that file
    instead, and ``infsched run`` shows it on its own terminal."""

    def __init__(self, enabled: bool, total: int, cached: int, desc: str, estimate: str | None = None):
        self.done, self.cached, self.failed, self.left = 0, cached, 0, total - cached
        self.total, self.desc, self.estimate, self.start = total, desc, estimate, time.time()
        self.bar = None
        sink = os.environ.get("INFSCHED_PROGRESS", "").strip()
        self.sink = Path(sink) if sink and _in_kernel() else None
        if self.sink is not None:
            _ACTIVE.append(self)
            self._report()
        elif enabled:
            from tqdm import tqdm  # a text bar: ipywidgets is not a dependency

            if estimate:
                tqdm.write(f"{desc}: {estimate}", file=sys.stderr)
            self.bar = tqdm(total=total, initial=cached, desc=desc)
            self._postfix()

    def _postfix(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"done {self.done}, cached {self.cached}, "
                                     f"failed {self.failed}, left {self.left}", refresh=False)

    def _report(self) -> None:
        """Write every running sweep's state to the sink (atomically; never raises)."""
        if self.sink is None:
            return
        state = {"now": time.time(), "bars": [
            {"desc": b.desc, "total": b.total, "cached": b.cached, "done": b.done, "failed": b.failed,
             "left": b.left, "start": b.start, "estimate": b.estimate} for b in _ACTIVE]}
        with contextlib.suppress(OSError):
            tmp = self.sink.with_name(f"{self.sink.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.sink)

    def update(self, result: Any) -> None:
        self.left -= 1
        if isinstance(result, PointError):
            self.failed += 1
        else:
            self.done += 1
        self._report()
        if self.bar is not None:
            self._postfix()
            self.bar.update(1)

    def close(self) -> None:
        if self.sink is not None:
            with contextlib.suppress(ValueError):
                _ACTIVE.remove(self)
            self._report()
        if self.bar is not None:
            self.bar.close()
