"""Parameter sweeps: parallel on local cores or on a Dask cluster, with a per-point disk cache.

``run_sweep(fn, grid)`` evaluates ``fn(**point)`` for every point of ``grid`` and stacks the
results in one DataFrame, in grid order. Points run serially, on local processes with
``joblib`` (``n_jobs``), or on a ``dask.distributed`` cluster when given its scheduler's address
(``dask="tcp://host:8786"``, or ``$INFSCHED_DASK``); the numbers are the same on all three.

Each finished point is pickled at once under ``<cache_dir>/<module.qualname>/<key>.pkl``, the key
hashing fn's module and qualified name, the sorted parameters, an optional ``version`` string,
the library's version (``infsched.__version__``) and the entry format. An entry is written
atomically and carries the sha256 of its pickle and the schema of its value (a table's columns,
dtypes and rows; a dict's keys and value types); one that is truncated, damaged, altered or does
not unpickle is recomputed, with a one-line warning naming its file: loading never aborts a run. A sweep that is interrupted (Ctrl-C, a
killed worker, a killed process, a failing point) therefore resumes where it stopped: a rerun
loads the finished points and computes only the missing ones. Bump ``version`` when fn's code
changes in a way that changes its results.

On a Dask cluster each worker writes the points it computes into the same cache folder, so the
folder must be on a filesystem the workers share (always true for a ``LocalCluster``); where it
is not, the caller writes each point as its result arrives, and only points still in flight
when the caller dies are lost.

:func:`sweep_chapter` runs a chapter's registered experiments (``EXPERIMENTS``) over a grid of
their parameters and seeds: the Python side of ``infsched sweep``.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import json
import os
import pickle
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from . import __version__
from .errors import ConfigError, config_error, require
from .runner import _env

__all__ = ["CHAPTERS", "PointError", "chapter_experiments", "chapter_grid", "default_cache_dir",
           "default_processes", "local_cluster", "point_key", "point_seed", "run_sweep",
           "sweep_chapter"]

ON_ERROR = ("raise", "record")


def default_cache_dir() -> Path:
    """``$INFSCHED_CACHE`` if set, else ``~/.cache/infsched``."""
    env = os.environ.get("INFSCHED_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "infsched"


#: the environment variable that sets a sweep's number of processes; ``INFSCHED_WORKERS``, its
#: older name, is still read when it is not set
PROCESSES_ENV = "INFSCHED_PROCESSES"
_PROCESSES_ENV_OLD = "INFSCHED_WORKERS"


def processes_env() -> tuple[str, str | None]:
    """``(name, value)`` of the variable that sets the processes: ``$INFSCHED_PROCESSES``, else
    the older ``$INFSCHED_WORKERS``; the value is None when neither is set."""
    for name in (PROCESSES_ENV, _PROCESSES_ENV_OLD):
        raw = os.environ.get(name)
        if raw is not None and raw.strip():
            return name, raw
    return PROCESSES_ENV, None


def default_processes(n_jobs: int | None = None, *, name: str = "n_jobs") -> int:
    """``n_jobs`` for :func:`run_sweep` when a caller gives ``None``: ``$INFSCHED_PROCESSES``, else
    ``min(2, cores)``; a given value must be a positive integer (``name`` is the caller's name
    for it, for the error)."""
    if n_jobs is None:
        return env_processes()
    require(isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs >= 1,
            name, n_jobs, "must be a positive integer")
    return int(n_jobs)


def env_processes() -> int:
    """``$INFSCHED_PROCESSES`` (or the older ``$INFSCHED_WORKERS``), a positive integer, if set,
    else ``min(2, cores)``; a ConfigError naming the variable otherwise."""
    name, raw = processes_env()
    if raw is None:
        return min(2, os.cpu_count() or 1)
    try:
        n = int(raw.strip())
    except ValueError:
        n = 0
    require(n >= 1, name, raw, "must be a positive integer (the processes a sweep uses; unset "
            "it for the default, 2)")
    return n


def point_seed(seed: int, *key: float) -> int:
    """A seed per sweep point, from the experiment's ``seed`` and the point's coordinates: every
    method simulated at that point shares it (common random numbers), and it does not depend on
    which other points the sweep holds."""
    require(not isinstance(seed, bool) and isinstance(seed, (int, np.integer, float, np.floating))
            and float(seed).is_integer() and seed >= 0, "seed", seed,
            "must be a non-negative integer (a fractional seed is not truncated)")
    words = [int(seed)] + [int(round(k * 1000)) for k in key]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


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


#: (path, get_num_threads, set_num_threads) of every OpenBLAS loaded in this process
_BLAS: dict[str, tuple[Any, Any]] = {}
_BLAS_NAMES = [(f"{pre}get_num_threads{suf}", f"{pre}set_num_threads{suf}")
               for pre in ("scipy_openblas_", "openblas_") for suf in ("64_", "")]


def _blas_controls() -> list[tuple[Any, Any]]:
    """The thread getters and setters of the OpenBLAS libraries loaded now (numpy's, scipy's),
    found in ``/proc/self/maps``; none elsewhere than on Linux."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    for path in paths - set(_BLAS):
        _BLAS[path] = (None, None)
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, set_ in _BLAS_NAMES:
            if hasattr(lib, get) and hasattr(lib, set_):
                _BLAS[path] = (getattr(lib, get), getattr(lib, set_))
                break
    return [_BLAS[p] for p in sorted(paths) if _BLAS[p][0] is not None]


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Run the block with every OpenBLAS on one thread. A multithreaded BLAS sums in an order
    that depends on its thread count, so a point would otherwise differ in its last bits between
    the main process (every core's thread) and a worker (one thread, as joblib gives it on two
    cores): the RAMSIS MDP's stationary law differed by 5e-35 between one and two threads."""
    saved = []
    for get, set_ in _blas_controls():
        n = int(get())
        if n != 1:
            set_(1)
            saved.append((set_, n))
    try:
        yield
    finally:
        for set_, n in saved:
            set_(n)


def _compute(fn: Callable[..., Any], point: dict[str, Any]) -> Any:
    with _one_blas_thread():  # the same bits in any process (see _one_blas_thread)
        result = fn(**point)
    if isinstance(result, pd.Series):
        result = result.to_dict()
    if not isinstance(result, (Mapping, pd.DataFrame)):
        raise ConfigError(f"fn = {_fn_name(fn)}: must return a dict or a DataFrame, "
                          f"returned {type(result).__name__} for point {point!r}")
    return result


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
              **(meta or {})}  # what the point took to compute (for estimates; see _estimate)
    return _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def _save(path: Path, result: Any, meta: Mapping[str, Any] | None = None) -> None:
    """Write ``result`` to ``path`` atomically (a temporary file, then a rename), with a header
    holding the checksum of its pickle and the schema of the value (see :func:`_load`), and
    ``meta``: the seconds the point took and its text parameters (see :func:`_estimate`)."""
    blob = _encode(result, meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def _evaluate(fn: Callable[..., Any], point: dict[str, Any], path: Path | None) -> Any:
    """Compute one point and, if ``path`` is given, persist it atomically before returning."""
    start = time.perf_counter()
    result = _compute(fn, point)
    if path is not None:
        if _orphaned():
            os._exit(1)  # the sweep that asked for this point is gone: write nothing
        _save(path, result, _meta(point, time.perf_counter() - start))
    return result


#: in a worker process: the pid of the process that ran the sweep (set by :func:`_worker_guard`)
_PARENT: int | None = None


def _orphaned() -> bool:
    return _PARENT is not None and os.getppid() != _PARENT


def _worker_guard(parent: int) -> None:
    """In a worker process of a local sweep (``parent`` is the pid of the process that runs the
    sweep): once per process, a daemon thread that ends the worker as soon as that process is
    gone (a killed ``infsched run`` or kernel), so that no orphan goes on computing or writing
    to the cache; :func:`_evaluate` also checks before each write."""
    global _PARENT
    if os.getpid() == parent or _PARENT == parent:
        return
    _PARENT = parent
    if os.getppid() != parent:  # already orphaned, or not the sweep's own child
        if os.getppid() == 1 or not _alive(parent):
            os._exit(1)
        _PARENT = None  # started by something else (a forkserver): no guard
        return
    import threading
    import time

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.25)

    threading.Thread(target=watch, name="infsched-parent-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _guarded_attempt(parent: int, fn: Callable[..., Any], point: dict[str, Any], path: Path | None,
                     record: bool) -> Any:
    """:func:`_attempt` in a worker process, which stops when ``parent`` (the sweep) dies."""
    _worker_guard(parent)
    return _attempt(fn, point, path, record)


def _attempt(fn: Callable[..., Any], point: dict[str, Any], path: Path | None, record: bool) -> Any:
    """:func:`_evaluate`; with ``record``, an exception becomes a :class:`PointError`."""
    if not record:
        return _evaluate(fn, point, path)
    try:
        return _evaluate(fn, point, path)
    except Exception as exc:  # noqa: BLE001 - recorded with its type and message
        return PointError(type(exc).__name__, " ".join(str(exc).split()))


def _dask_task(fn: Callable[..., Any], point: dict[str, Any], path: Path | None, record: bool) -> Any:
    """One point on a Dask worker: computed, then written to the cache folder if the worker can
    write there (the caller writes it otherwise). A point already in the folder is loaded, not
    recomputed: Dask reruns a finished task whose result was held by a worker that died."""
    if path is not None and path.exists():
        cached = _load(path)
        if cached is not None:
            return cached
    start = time.perf_counter()
    try:
        result = _compute(fn, point)
    except Exception as exc:  # noqa: BLE001
        if not record:
            raise
        return PointError(type(exc).__name__, " ".join(str(exc).split()))
    if path is not None:
        with contextlib.suppress(OSError):
            _save(path, result, _meta(point, time.perf_counter() - start))
    return result


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


def _rows(point: dict[str, Any], result: Any) -> pd.DataFrame:
    if isinstance(result, PointError):
        return pd.DataFrame([{**point, "error": str(result)}])
    if isinstance(result, pd.DataFrame):
        df = result.copy()
        for k, v in point.items():
            if k not in df.columns:
                df[k] = [v] * len(df)
        return df[list(point) + [c for c in df.columns if c not in point]]
    return pd.DataFrame([{**point, **dict(result)}])


def _in_dask_worker() -> bool:
    if "distributed" not in sys.modules:
        return False
    try:
        sys.modules["distributed"].get_worker()
    except (ValueError, AttributeError):
        return False
    return True


def _dask_target(dask: Any) -> Any:
    """The cluster to use: ``dask`` (an address, a ``distributed.Client`` or a cluster object),
    else ``$INFSCHED_DASK``; ``None`` for local processes. A point that itself runs a sweep on a
    Dask worker runs it locally unless given an address explicitly (a task that waits on tasks
    of its own cluster can deadlock it)."""
    if dask is False:
        return None
    if dask is None:
        env = os.environ.get("INFSCHED_DASK", "").strip()
        if not env or _in_dask_worker():
            return None
        dask = env
    if isinstance(dask, str):
        require(bool(dask.strip()), "dask", dask, "must be a scheduler address such as "
                "'tcp://127.0.0.1:8786', a distributed.Client, None or False")
        return dask.strip()
    if hasattr(dask, "submit") or hasattr(dask, "scheduler_address"):
        return dask
    raise config_error("dask", dask, "must be a scheduler address such as 'tcp://127.0.0.1:8786', "
                       "a distributed.Client or cluster, None ($INFSCHED_DASK) or False (local)")


@contextlib.contextmanager
def _client(target: Any) -> Iterator[Any]:
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - distributed is pinned in requirements.txt
        raise ConfigError("dask: running a sweep on a Dask cluster needs dask[distributed], "
                          "which is not installed") from exc
    if hasattr(target, "submit"):
        yield target  # the caller's client: not ours to close
        return
    import dask.config

    address = getattr(target, "scheduler_address", target)
    try:  # Dask's own connect timeout (30 s unless configured)
        client = Client(address, set_as_default=False,
                        timeout=dask.config.get("distributed.comm.timeouts.connect", "30s"))
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"dask = {address!r}: no Dask scheduler answers there "
                          f"({' '.join(str(exc).split())}); start one with `dask scheduler` "
                          "and `dask worker ADDRESS`") from exc
    try:
        yield client
    finally:
        client.close()


def local_cluster(n_workers: int | None = None, **kwargs: Any) -> Any:
    """A ``dask.distributed.LocalCluster`` for sweeps on this machine: ``n_workers`` processes
    (default: every core) of one thread each, no dashboard; ``kwargs`` go to ``LocalCluster``.

    Dask's nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_=65536``, which turns off
    glibc's adaptive mmap threshold and makes the numpy-heavy simulators here about a quarter
    slower (Shepherd's Fig. 7 points: 40 s -> 50 s of CPU); this cluster's workers start without
    it. The nanny also sets its variables in the calling process; they are restored here, so that
    processes started later (joblib's) do not inherit them. Close the cluster when done (it is a
    context manager)."""
    import dask.config
    from distributed import LocalCluster

    opts: dict[str, Any] = dict(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1,
                                processes=True, dashboard_address=None)
    opts.update(kwargs)
    saved = dict(os.environ)
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            return LocalCluster(**opts)
    finally:
        for k in set(os.environ) - set(saved):
            del os.environ[k]
        os.environ.update(saved)


def _meta(point: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    """What a cache entry's header records besides its checksum: the seconds the point took (in
    the process that computed it) and its text parameters, its *kind* (the experiment, scale,
    policy, ...), by which :func:`_estimate` times points not yet computed."""
    return {"seconds": round(float(seconds), 4), "kind": _kind(point)}


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


def _estimate(folder: Path | None, points: list[dict[str, Any]], todo: list[int], jobs: int | None,
              limit: int = 5000) -> str:
    """One line saying how long the points ``todo`` will take, from the measured seconds of
    earlier points of the same kind (:func:`_kind`: the same text parameters, such as the
    experiment and the scale) in the cache folder (its ``limit`` newest entries). ``jobs``: the
    local processes (None: a Dask cluster)."""
    from .limits import fmt_duration

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
_ACTIVE: list["_Progress"] = []
#: set while a one-point chapter sweep runs its point inline with a bar: the sweeps inside that
#: point show bars too (the outer bar alone would sit at 0/1 until the end)
_NESTED_PROGRESS = False


class _Progress:
    """The tqdm bar of a sweep, with done (computed now), cached, failed and remaining points.

    Before the bar, when it is shown, one line says how long the points will take (``estimate``,
    from :func:`_estimate`). Inside a chapter's kernel run by ``infsched run`` (which sets
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


def _future_result(fut: Any, path: Path | None, record: bool) -> Any:
    """The result of a finished future, or its point's :class:`PointError` under ``record``.

    A finished future goes back to pending when the worker holding its result dies before it is
    fetched; Dask then reruns the task, which finds the point in the cache folder. Waiting in
    short steps and looking there as well avoids a rare lost wake-up in the client (a stall of
    the connect timeout, 30 s) where the folder is shared."""
    while True:
        try:
            return fut.result(timeout=2)
        except Exception as exc:  # noqa: BLE001
            if isinstance(exc, TimeoutError) and fut.status != "error":  # not done after all
                cached = _load(path) if path is not None and path.exists() else None
                if cached is not None:
                    return cached
                continue
            if not record:
                raise
            return PointError(type(exc).__name__, " ".join(str(exc).split()))


def _run_dask(target: Any, fn: Callable[..., Any], points: list[dict[str, Any]],
              paths: list[Path | None], todo: list[int], record: bool, results: list[Any],
              bar: _Progress) -> None:
    from distributed import as_completed

    with _client(target) as client:
        name = _safe_dirname(_fn_name(fn).split(".")[-1])
        # earlier in ``todo`` (longest first when the caller gave costs) runs first
        futures = {client.submit(_dask_task, fn, points[i], paths[i], record, pure=False,
                                 priority=len(todo) - rank,
                                 key=f"infsched-{name}-{i}-{os.urandom(4).hex()}"): i
                   for rank, i in enumerate(todo)}
        pending = set(futures)
        try:
            for fut in as_completed(list(futures), loop=client.loop):
                i = futures[fut]
                pending.discard(fut)
                res = _future_result(fut, paths[i], record)
                if paths[i] is not None and not isinstance(res, PointError) and not paths[i].exists():
                    _save(paths[i], res)  # no shared filesystem: the caller persists it
                results[i] = res
                bar.update(res)
        finally:
            if pending:  # Ctrl-C or an error: stop the rest; what finished is on disk
                with contextlib.suppress(Exception):
                    client.cancel(list(pending))


def run_sweep(
    fn: Callable[..., Mapping[str, Any] | pd.DataFrame],
    grid: Sequence[Mapping[str, Any]],
    *,
    cache_dir: str | os.PathLike[str] | bool | None = None,
    n_jobs: int = 1,
    progress: bool = False,
    version: str = "",
    dask: Any = None,
    on_error: str = "raise",
    cost: Callable[[Mapping[str, Any]], float] | None = None,
) -> pd.DataFrame:
    """Evaluate ``fn(**point)`` for each point of ``grid``; one DataFrame in grid order.

    ``fn`` returns a dict (one row) or a DataFrame (its rows); the point's parameters are added
    as leading columns. ``cache_dir``: a folder, ``None`` for :func:`default_cache_dir`, or
    ``False`` to disable caching. ``n_jobs > 1`` (or -1 for all cores) runs points with
    ``joblib.Parallel``; results are identical to ``n_jobs=1`` when fn is seeded by its
    parameters. ``dask``: a Dask scheduler address (``"tcp://host:8786"``), a
    ``distributed.Client`` or a cluster object; ``None`` reads ``$INFSCHED_DASK`` (unset or
    empty: local), ``False`` forces local. On a cluster ``n_jobs`` is ignored, fn must be
    importable on the workers, and the cache folder should be one they share. ``progress``
    shows a tqdm bar with the points done, loaded from the cache, failed and left, after one
    line saying how long the points will take (from the measured times of earlier points of the
    same kind in the cache, which each entry records); inside a chapter run by ``infsched run``
    the state goes to that command instead, never to the page.
    ``on_error="raise"`` stops at the first point that raises and re-raises its exception
    (points finished before it are cached); ``"record"`` computes every other point and returns
    the failed ones as rows with NaN results and an ``error`` column (``"Type: message"``, None
    where the point succeeded); failed points are not cached, so a rerun retries them.
    ``cost``: an estimate of a point's run time (any unit), ``cost(point) -> float``; the points
    then start longest first, so that on processes or a cluster no long point starts last while
    the other workers sit idle (the table is still in grid order). Local processes take
    one point at a time (joblib's automatic batching would group short points into batches
    whose tail leaves a core idle).
    """
    require(callable(fn), "fn", fn, "must be callable")
    require(isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)), "grid",
            type(grid).__name__, "must be a list of dicts (parameter name -> value)")
    points: list[dict[str, Any]] = []
    for i, p in enumerate(grid):
        require(isinstance(p, Mapping) and all(isinstance(k, str) for k in p), f"grid[{i}]", p,
                "must be a dict with str keys (parameter name -> value)")
        points.append(dict(p))
    require(isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and (n_jobs >= 1 or n_jobs == -1),
            "n_jobs", n_jobs, "must be an integer >= 1, or -1 for all cores")
    require(isinstance(version, str), "version", version, "must be a string")
    require(cache_dir is None or cache_dir is False or isinstance(cache_dir, (str, os.PathLike)),
            "cache_dir", cache_dir, "must be a path, None (default cache) or False (no cache)")
    require(on_error in ON_ERROR, "on_error", on_error, "must be 'raise' or 'record'")
    target = _dask_target(dask)
    record = on_error == "record"
    progress = bool(progress) or _NESTED_PROGRESS
    if cache_dir is False:
        folder = None
    else:
        base = default_cache_dir() if cache_dir is None else Path(cache_dir)
        folder = base.expanduser().absolute() / _safe_dirname(_fn_name(fn))

    paths = [None if folder is None else folder / f"{point_key(fn, p, version)}.pkl" for p in points]
    results: list[Any] = [None] * len(points)
    todo: list[int] = []
    for i, path in enumerate(paths):
        if path is not None and path.exists():
            results[i] = _load(path)
        if results[i] is None:
            todo.append(i)

    if cost is not None and len(todo) > 1:
        require(callable(cost), "cost", cost, "must be a function of a point returning a number")
        est = {i: float(cost(points[i])) for i in todo}
        todo.sort(key=lambda i: -est[i])          # longest first; ties keep grid order
    if todo:
        estimate = _estimate(folder, points, todo, None if target is not None else n_jobs) \
            if progress or (os.environ.get("INFSCHED_PROGRESS") and _in_kernel()) else None
        bar = _Progress(progress, len(points), len(points) - len(todo), _fn_name(fn).split(".")[-1],
                        estimate)
        try:
            if target is not None:
                _run_dask(target, fn, points, paths, todo, record, results, bar)
            elif n_jobs == 1 or len(todo) == 1:
                for i in todo:
                    results[i] = _attempt(fn, points[i], paths[i], record)
                    bar.update(results[i])
            else:
                from joblib import Parallel, delayed

                par = Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1)
                done = par(delayed(_guarded_attempt)(os.getpid(), fn, points[i], paths[i], record)
                           for i in todo)
                for i, res in zip(todo, done):
                    results[i] = res
                    bar.update(res)
        finally:
            bar.close()

    if not points:
        return pd.DataFrame()
    df = pd.concat([_rows(p, r) for p, r in zip(points, results)], ignore_index=True)
    if record:
        failed = [(p, r) for p, r in zip(points, results) if isinstance(r, PointError)]
        if "error" not in df.columns:
            df["error"] = None
        df = df[[c for c in df.columns if c != "error"] + ["error"]]
        df["error"] = df["error"].astype(object).where(df["error"].notna(), None)
        if failed:
            p, r = failed[0]
            warnings.warn(f"{_fn_name(fn)}: {len(failed)} of {len(points)} point(s) failed and were "
                          f"not cached (a rerun retries them); the first, {p!r}: {r}",
                          RuntimeWarning, stacklevel=2)
    return df


# ------------------------------------------------------------------ a chapter's experiments

#: the chapters whose package registers ``experiments.EXPERIMENTS``: name -> fn(scale, seed, **params)
CHAPTERS = ("tad", "ramsis", "kvcache", "kairos", "shepherd", "headtohead")
#: the package behind a chapter whose name is not its package's
_PACKAGE = {"headtohead": "serving"}
#: names a grid may not use: they are columns of :func:`sweep_chapter`'s table or its own knobs
_RESERVED = ("chapter", "experiment", "scale", "seed", "error")
#: what a chapter point sets for the sweeps inside it (``$INFSCHED_PROCESSES``, which takes
#: precedence over the older name, and ``$INFSCHED_DASK``);
#: in a worker process this default holds: one process, no cluster, so workers are not oversubscribed
_INNER: dict[str, str] = {PROCESSES_ENV: "1", "INFSCHED_DASK": ""}


def chapter_experiments(chapter: str) -> dict[str, Callable[..., Any]]:
    """The registered experiments of ``chapter`` (one of :data:`CHAPTERS`), by name."""
    import importlib

    if chapter not in CHAPTERS:
        raise config_error("chapter", chapter, "must be one of " + ", ".join(CHAPTERS))
    package = _PACKAGE.get(chapter, chapter)
    return dict(importlib.import_module(f"infsched.{package}.experiments").EXPERIMENTS)


def experiment_parameters(fn: Callable[..., Any]) -> tuple[list[str], bool]:
    """The keyword parameters an experiment takes besides ``scale`` and ``seed``, and whether it
    takes ``**kwargs`` too (then any name is passed on, and checked only when it runs)."""
    names, open_ = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            open_ = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in ("scale", "seed"):
            names.append(p.name)
    return names, open_


def _as_table(result: Any) -> pd.DataFrame:
    """An experiment's result as rows: a DataFrame as is; a Series or a dict of scalars as one
    row; a dict of dicts (``{"ex1": {"q": 1.0}}``) as (key, quantity, value) rows; a dict of
    DataFrames (``{"trace": ..., "phases": ...}``) as their rows stacked, with a ``table`` column."""
    if isinstance(result, pd.DataFrame):
        return result.reset_index(drop=True)
    if isinstance(result, pd.Series):
        return result.to_frame().T.reset_index(drop=True)
    if isinstance(result, Mapping) and result and all(isinstance(v, pd.DataFrame) for v in result.values()):
        return pd.concat([v.assign(table=k)[["table", *v.columns]] for k, v in result.items()],
                         ignore_index=True)
    if isinstance(result, Mapping):
        if result and all(isinstance(v, Mapping) for v in result.values()):
            return pd.DataFrame([{"key": k, "quantity": q, "value": v}
                                 for k, sub in result.items() for q, v in sub.items()])
        return pd.DataFrame([dict(result)])
    if isinstance(result, Sequence) and result and all(isinstance(r, Mapping) for r in result):
        return pd.DataFrame(list(result))
    raise TypeError(f"returned {type(result).__name__}, not a table (DataFrame or dict)")


def _same(col: pd.Series, value: Any) -> bool:
    try:
        return bool((col == value).all())
    except (TypeError, ValueError):
        return False


def chapter_point(chapter: str, experiment: str, scale: str, seed: int, **params: Any) -> pd.DataFrame:
    """One point of :func:`sweep_chapter`: ``EXPERIMENTS[experiment](scale=scale, seed=seed,
    **params)`` of ``chapter``, as a table. A result column named like a grid parameter is
    dropped when it repeats the parameter's value, else renamed ``<name>_result``."""
    fn = chapter_experiments(chapter)[experiment]
    with _env(**_INNER):
        df = _as_table(fn(scale=scale, seed=seed, **params)).copy()
    point = {"chapter": chapter, "experiment": experiment, "scale": scale, "seed": seed, **params}
    for name, value in point.items():
        if name in df.columns:
            if _same(df[name], value):
                df = df.drop(columns=name)
            else:
                df = df.rename(columns={name: f"{name}_result"})
    return df


def _source_version() -> str:
    """Hash of every library source and data CSV: a chapter point's cache key, so that editing
    any code or data an experiment may read recomputes it (the sweeps inside it keep their own,
    narrower keys, so their points are reused)."""
    lib = Path(__file__).resolve().parent
    files = sorted(lib.rglob("*.py"))
    data = lib.parent.parent / "data"
    if data.is_dir():
        files += sorted(data.rglob("*.csv"))
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(lib.parent.parent) if f.is_relative_to(lib.parent.parent)
                          else f.name).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def _dask_address(target: Any) -> str:
    if isinstance(target, str):
        return target
    if hasattr(target, "scheduler_address"):
        return str(target.scheduler_address)
    return str(target.scheduler.address)


def chapter_grid(chapter: str, params: Mapping[str, Sequence[Any]] | None = None, *,
                 experiments: Sequence[str] | None = None, scale: str = "default",
                 seeds: Sequence[int] = (0,)) -> list[dict[str, Any]]:
    """The points of :func:`sweep_chapter`, after checking every name and value: one per
    experiment, combination of ``params`` values (their cartesian product) and seed."""
    from .runner import SCALES

    from .params import CHAPTER_ALIASES

    table = chapter_experiments(chapter)
    params = dict(params or {})
    typed: dict[str, str] = {}  # keyword -> the name the caller used for it
    for alias, kw in CHAPTER_ALIASES.get(chapter, {}).items():  # the chapter's name for a keyword
        if alias in params:
            require(kw not in params, "parameter", alias, f"is {chapter}'s name for {kw}; give one of them")
            from .params import SCHEMAS

            check = SCHEMAS.get(chapter, {}).get(alias)
            if check is not None and isinstance(params[alias], Sequence) and \
                    not isinstance(params[alias], (str, bytes)):
                for v in params[alias]:  # under the name typed, before any point runs
                    check(alias, v)
            params = {(kw if k == alias else k): v for k, v in params.items()}
            typed[kw] = alias
    names = list(table) if experiments is None else list(experiments)
    require(len(names) > 0, "experiments", names, "name at least one experiment")
    for e in names:
        if e not in table:
            raise config_error("experiment", e, f"{chapter} has " + ", ".join(table))
    require(scale in SCALES, "scale", scale, "must be one of " + ", ".join(SCALES))
    seeds = list(seeds)
    require(len(seeds) > 0 and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                   and s >= 0 for s in seeds),
            "seeds", seeds, "must be one or more non-negative integers")
    for name, values in params.items():
        require(isinstance(name, str) and name.isidentifier(), "parameter", name,
                "must be a Python identifier")
        require(name not in _RESERVED, "parameter", name,
                "is set by the sweep itself (--scale and --seeds, or scale= and seeds=), not a grid parameter")
        require(isinstance(values, Sequence) and not isinstance(values, (str, bytes)) and len(values) > 0,
                name, values, "must be a non-empty list of values")
        for e in names:
            taken, open_ = experiment_parameters(table[e])
            if name not in taken and not open_:
                takers = [x for x in table if name in experiment_parameters(table[x])[0]]
                hint = (f"; experiments that take it: {', '.join(takers)}" if takers else "")
                raise config_error("parameter", typed.get(name, name),
                                   f"experiment {e} of {chapter} does not take it; "
                                   f"it takes {', '.join(taken) if taken else 'no parameters'}{hint}")
    combos = list(itertools.product(*params.values()))
    return [{"chapter": chapter, "experiment": e, "scale": scale, "seed": int(s),
             **dict(zip(params, combo))}
            for e in names for combo in combos for s in seeds]


def sweep_chapter(chapter: str, params: Mapping[str, Sequence[Any]] | None = None, *,
                  experiments: Sequence[str] | None = None, scale: str = "default",
                  seeds: Sequence[int] = (0,), n_jobs: int | None = None, dask: Any = None,
                  cache_dir: str | os.PathLike[str] | bool | None = None, progress: bool = False,
                  on_error: str = "record") -> pd.DataFrame:
    """Run ``chapter``'s experiments (all registered ones, or ``experiments``) at every point of
    the grid ``params`` (name -> values; their cartesian product) × ``seeds``, through
    :func:`run_sweep`, so points are cached, resumable and run on ``n_jobs`` local processes
    (``None``: :func:`default_processes`) or the Dask cluster ``dask``.

    Returns one tidy table: ``experiment``, ``scale``, ``seed`` and the grid parameters, then
    each experiment's own columns (experiments with different columns leave NaN in the others),
    and ``error`` under ``on_error="record"``. With several points, the points run in parallel
    and the sweeps inside each run in one process; a single point runs its inner sweeps on
    ``n_jobs`` processes or the cluster instead. The cache key of a point includes a hash of the
    library's sources and data (editing any recomputes it; the inner sweeps keep their own keys).
    """
    grid = chapter_grid(chapter, params, experiments=experiments, scale=scale, seeds=seeds)
    jobs = n_jobs if n_jobs == -1 else default_processes(n_jobs, name="n_jobs")
    target = _dask_target(dask)
    version = _source_version()
    with contextlib.ExitStack() as stack:
        if isinstance(target, str):  # connect once, now: a wrong address fails before any work
            target = stack.enter_context(_client(target))
        df = _sweep_grid(grid, jobs, target, version, cache_dir, progress, on_error)
    return df.drop(columns="chapter")


def _sweep_grid(grid: list[dict[str, Any]], jobs: int, target: Any, version: str, cache_dir: Any,
                progress: bool, on_error: str) -> pd.DataFrame:
    global _INNER, _NESTED_PROGRESS
    if len(grid) == 1:  # inline: the experiment's own sweeps get the processes or the cluster
        saved = _INNER, _NESTED_PROGRESS
        _INNER = {PROCESSES_ENV: str(jobs if jobs > 0 else os.cpu_count() or 1),
                  "INFSCHED_DASK": "" if target is None else _dask_address(target)}
        _NESTED_PROGRESS = bool(progress)  # the one point's own sweeps show their bars too
        try:
            df = run_sweep(chapter_point, grid, cache_dir=cache_dir, n_jobs=1, progress=progress,
                           version=version, dask=False, on_error=on_error)
        finally:
            _INNER, _NESTED_PROGRESS = saved
    else:
        df = run_sweep(chapter_point, grid, cache_dir=cache_dir, n_jobs=jobs, progress=progress,
                       version=version, dask=target if target is not None else False,
                       on_error=on_error)
    return df
