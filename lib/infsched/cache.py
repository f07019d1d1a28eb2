"""The sweep cache: one checksummed, schema-checked pickle per computed point.

:func:`infsched.sweep.run_sweep` keeps each finished point under
``<cache_dir>/<module.qualname>/<key>.pkl``, the key hashing fn's module and qualified name, the
sorted parameters, an optional ``version`` string, the library's version
(``infsched.__version__``) and the entry format (:func:`point_key`). An entry is written
atomically (:func:`_save`) and carries the sha256 of its pickle and the schema of its value (a
table's columns, dtypes and rows; a dict's keys and value types); one that is truncated,
damaged, altered or does not unpickle is recomputed, with a one-line warning naming its file
(:func:`_load` never raises). Its header also records the seconds the point took and its text
parameters, by which a sweep estimates how long the points it has not computed will take.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import __version__

__all__ = ["CACHE_FORMAT", "PointError", "default_cache_dir", "point_key"]


def default_cache_dir() -> Path:
    """``$INFSCHED_CACHE`` if set, else ``~/.cache/infsched``."""
    env = os.environ.get("INFSCHED_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "infsched"


def _fn_name(fn: Callable[..., Any]) -> str:
    mod = getattr(fn, "__module__", None) or "unknown"
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{mod}.{qual}"


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return {"ndarray": v.tolist(), "dtype": str(v.dtype)}
    if isinstance(v, (set, frozenset)):
        return sorted(map(repr, v))
    return repr(v)


def point_key(fn: Callable[..., Any], point: Mapping[str, Any], version: str = "") -> str:
    """The cache key of one point: sha256 of fn's ``module.qualname``, the sorted parameters,
    ``version`` and the library's version (first 24 hex digits)."""
    blob = json.dumps({"fn": _fn_name(fn), "version": version, "infsched": __version__,
                       "format": CACHE_FORMAT, "params": dict(point)}, sort_keys=True, default=_jsonable)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _safe_dirname(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:120]


@dataclass(frozen=True)
class PointError:
    """A point that raised, under ``on_error="record"``: never cached, so a rerun retries it."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


#: the first bytes of a cache entry; then one line of JSON (format, length and sha256 of the
#: payload, and the schema of the value), then the payload: the pickled value
_MAGIC = b"INFSCHED-CACHE\n"
#: bumped when the entry layout changes; part of every key, so older entries are simply not found
CACHE_FORMAT = 2


def _schema(value: Any) -> dict[str, Any]:
    """What a cached value holds, checked again after loading it: a DataFrame's columns, dtypes
    and row count; a dict's keys and the type of each value."""
    if isinstance(value, pd.DataFrame):
        return {"type": "DataFrame", "columns": [repr(c) for c in value.columns],
                "dtypes": [str(t) for t in value.dtypes], "rows": int(len(value))}
    if isinstance(value, Mapping):
        return {"type": "dict", "keys": [repr(k) for k in value],
                "types": [type(v).__name__ for v in value.values()]}
    return {"type": type(value).__name__}


def _encode(result: Any, meta: Mapping[str, Any] | None = None) -> bytes:
    payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    header = {"format": CACHE_FORMAT, "length": len(payload),
              "sha256": hashlib.sha256(payload).hexdigest(), "schema": _schema(result),
              **(meta or {})}  # what the point took to compute (for estimates; see infsched.progress.estimate_points)
    return _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def _save(path: Path, result: Any, meta: Mapping[str, Any] | None = None) -> None:
    """Write ``result`` to ``path`` atomically (a temporary file, then a rename), with a header
    holding the checksum of its pickle and the schema of the value (see :func:`_load`), and
    ``meta``: the seconds the point took and its text parameters (see :func:`infsched.progress.estimate_points`)."""
    from .atomic import atomic_write

    blob = _encode(result, meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, blob, note="the points written before it are kept in the cache")


class _BadEntry(Exception):
    pass


def _decode(blob: bytes) -> Any:
    if not blob.startswith(_MAGIC):
        raise _BadEntry("not an infsched cache entry (no header)")
    head, sep, payload = blob[len(_MAGIC):].partition(b"\n")
    if not sep:
        raise _BadEntry("truncated header")
    try:
        header = json.loads(head)
    except ValueError:
        raise _BadEntry("damaged header") from None
    if not isinstance(header, dict) or header.get("format") != CACHE_FORMAT:
        raise _BadEntry("unknown entry format")
    if len(payload) != header.get("length"):
        raise _BadEntry(f"truncated: {len(payload)} of {header.get('length')} bytes")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise _BadEntry("checksum mismatch")
    value = pickle.loads(payload)
    if _schema(value) != header.get("schema"):
        raise _BadEntry("the value does not match its schema")
    if isinstance(value, PointError):
        raise _BadEntry("holds a failed point")
    return value


def _load(path: Path) -> Any:
    """The value cached at ``path``, or ``None`` when there is none or it cannot be trusted: a
    missing file is silently ``None``; an entry that is truncated, fails its checksum or its
    schema, or does not unpickle is ``None`` with a one-line warning naming the file (the point
    is then recomputed and the entry rewritten). Loading never raises."""
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn_entry(path, f"unreadable ({exc.strerror or exc})")
        return None
    try:
        return _decode(blob)
    except _BadEntry as exc:
        _warn_entry(path, str(exc))
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means: recompute
        _warn_entry(path, f"does not load ({type(exc).__name__})")
    return None


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (a chapter being executed)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _warn_entry(path: Path, why: str) -> None:
    msg = f"infsched cache: {path}: {why}; recomputing this point"
    if _in_kernel():
        # a chapter's cell: the line goes on the page, not to stderr, which fails the strict
        # book build (nb_output_stderr: error) for a cache that has just healed itself
        print(msg, flush=True)
    else:
        warnings.warn(msg, RuntimeWarning, stacklevel=3)


def _meta(point: Mapping[str, Any], seconds: float, cpu_s: float | None = None,
          version: str = "", results_version: int | None = None) -> dict[str, Any]:
    """What a cache entry's header records besides its checksum: the seconds the point took (in
    the process that computed it) and its text parameters, its *kind* (the experiment, scale,
    policy, ...), by which :func:`infsched.progress.estimate_points` times points not yet computed;
    and its provenance (:func:`provenance`: every parameter, the CPU seconds, the code version,
    the commit, the date and the machine), which the results store (:mod:`infsched.store`) keeps."""
    meta: dict[str, Any] = {"seconds": round(float(seconds), 4), "kind": _kind(point)}
    if cpu_s is not None:
        meta["provenance"] = provenance(point, seconds, cpu_s, version)
        if results_version is not None:
            meta["provenance"]["results_version"] = int(results_version)
    return meta


def provenance(point: Mapping[str, Any], seconds: float, cpu_s: float, version: str) -> dict[str, Any]:
    """Where a computed point comes from: its parameters (as JSON), the wall and CPU seconds it
    took in the process that computed it, the code version its sweep was keyed on, the commit of
    the checkout (``+dirty`` when lib/ had uncommitted changes), the UTC date, the machine and its
    load average when the point finished."""
    import datetime
    import platform

    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - not POSIX
        load = None
    return {"params": json.loads(json.dumps(dict(point), sort_keys=True, default=_jsonable)),
            "wall_s": round(float(seconds), 4), "cpu_s": round(float(cpu_s), 4),
            "code_version": version, "commit": _commit(),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores)",
            "load": load}


_COMMIT: str | None = None


def _commit() -> str:
    """The checkout's commit (short), with ``+dirty`` when lib/ has uncommitted changes; ``""``
    outside a git checkout. Read once per process."""
    global _COMMIT
    if _COMMIT is None:
        import subprocess

        root = Path(__file__).resolve().parents[2]
        try:
            head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "lib"],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
            _COMMIT = head + ("+dirty" if head and dirty else "")
        except (OSError, subprocess.SubprocessError):
            _COMMIT = ""
    return _COMMIT


def _kind(point: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sorted(point.items()) if isinstance(v, (str, bool))}


def _header(path: Path) -> dict[str, Any] | None:
    """The JSON header of a cache entry (its first line after the magic), or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_MAGIC) + 65536)
    except OSError:
        return None
    if not head.startswith(_MAGIC):
        return None
    try:
        header = json.loads(head[len(_MAGIC):].split(b"\n", 1)[0])
    except ValueError:
        return None
    return header if isinstance(header, dict) else None
