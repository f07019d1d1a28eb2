"""Parameter sweeps: parallel on local cores or on a Dask cluster, with a per-point disk cache.

``run_sweep(fn, grid)`` evaluates ``fn(**point)`` for every point of ``grid`` and stacks the
results in one DataFrame, in grid order. Points run serially, on local processes with
``joblib`` (``n_jobs``), or on a ``dask.distributed`` cluster when given its scheduler's address
(``dask="tcp://host:8786"``, or ``$INFSCHED_DASK``); the numbers are the same on all three.

Each finished point is written at once to the sweep cache (:mod:`infsched.cache`: one
checksummed pickle per point, keyed by fn's module and qualified name, the parameters, an optional
``version`` string and the library's version; an entry that cannot be trusted is recomputed). A
sweep that is interrupted (Ctrl-C, a killed worker, a killed process, a failing point) therefore
resumes where it stopped: a rerun loads the finished points and computes only the missing ones.
Bump ``version`` when fn's code changes in a way that changes its results.

A point missing from the cache is looked up in the committed results store
(:mod:`infsched.store`: paper-scale points keyed on fn's results version, not its code) before it
is computed; each cache entry records the point's provenance (parameters, CPU seconds, code
version, commit, date, machine), which ``infsched results build`` copies into the store.

On a Dask cluster each worker writes the points it computes into the same cache folder, so the
folder must be on a filesystem the workers share (always true for a ``LocalCluster``); where it
is not, the caller writes each point as its result arrives, and only points still in flight
when the caller dies are lost.

A chapter's registered experiments are swept by :func:`infsched.chapters.sweep_chapter`, the
Python side of ``infsched sweep``; this module sits below the paper packages, which call
:func:`run_sweep`, and imports none of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import store
from .cache import (
    PointError,
    _fn_name,
    _header,
    _in_kernel,
    _jsonable,
    _load,
    _meta,
    _safe_dirname,
    _save,
    default_cache_dir,
    point_key,
)
from .errors import ConfigError, config_error, require
from .progress import SweepProgress, estimate_points

__all__ = ["PointError", "default_cache_dir", "default_processes", "local_cluster", "point_key",
           "point_seed", "run_sweep"]

ON_ERROR = ("raise", "record")


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


def _evaluate(fn: Callable[..., Any], point: dict[str, Any], path: Path | None,
              version: str = "") -> Any:
    """Compute one point and, if ``path`` is given, persist it atomically before returning."""
    start, cpu = time.perf_counter(), time.process_time()
    result = _compute(fn, point)
    if path is not None:
        if _orphaned():
            os._exit(1)  # the sweep that asked for this point is gone: write nothing
        _save_or_warn(path, result, _meta(point, time.perf_counter() - start,
                                          time.process_time() - cpu, version, store.version_of(fn)))
    return result


def _save_or_warn(path: Path, result: Any, meta: Any = None) -> None:
    """Cache a computed point; when the write fails (a full disk), say so (a RuntimeWarning
    naming the file and the free space, :class:`infsched.atomic.WriteError`) and keep going: the
    point is returned to the sweep all the same, and the points written before stay cached."""
    from .atomic import WriteError

    try:
        _save(path, result, meta)
    except WriteError as exc:
        warnings.warn(f"infsched cache: {exc}; this point is kept in memory, not cached",
                      RuntimeWarning, stacklevel=2)


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
                     record: bool, version: str = "") -> Any:
    """:func:`_attempt` in a worker process, which stops when ``parent`` (the sweep) dies."""
    _worker_guard(parent)
    return _attempt(fn, point, path, record, version)


def _attempt(fn: Callable[..., Any], point: dict[str, Any], path: Path | None, record: bool,
             version: str = "") -> Any:
    """:func:`_evaluate`; with ``record``, an exception becomes a :class:`PointError`."""
    if not record:
        return _evaluate(fn, point, path, version)
    try:
        return _evaluate(fn, point, path, version)
    except Exception as exc:  # noqa: BLE001 - recorded with its type and message
        return PointError(type(exc).__name__, " ".join(str(exc).split()))


def _dask_task(fn: Callable[..., Any], point: dict[str, Any], path: Path | None, record: bool,
               version: str = "") -> Any:
    """One point on a Dask worker: computed, then written to the cache folder if the worker can
    write there (the caller writes it otherwise). A point already in the folder is loaded, not
    recomputed: Dask reruns a finished task whose result was held by a worker that died."""
    if path is not None and path.exists():
        cached = _load(path)
        if cached is not None:
            return cached
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = _compute(fn, point)
    except Exception as exc:  # noqa: BLE001
        if not record:
            raise
        return PointError(type(exc).__name__, " ".join(str(exc).split()))
    if path is not None:
        with contextlib.suppress(OSError):
            _save(path, result, _meta(point, time.perf_counter() - start,
                                      time.process_time() - cpu, version, store.version_of(fn)))
    return result


#: per cache folder: (the entry files indexed, parameters as JSON -> entry path)
_HARVEST: dict[Path, tuple[int, dict[str, Path]]] = {}


def _harvest(fn: Callable[..., Any], folder: Path, point: dict[str, Any],
             path: Path | None) -> tuple[Path | None, Any]:
    """While ``infsched results build`` runs: a cached point with the same parameters and results
    version as ``point`` but another code version (the code was refactored since: the results
    store's rule, :mod:`infsched.store`, holds a point current while its results version is),
    with the path it lies at; ``(path, None)`` when there is none. Entries whose provenance lacks
    a results version predate the versions, all of which started at 1."""
    rv = store.version_of(fn)
    if rv is None or not folder.is_dir():
        return path, None
    files = sorted(folder.glob("*.pkl"))
    seen = _HARVEST.get(folder)
    if seen is None or seen[0] != len(files):
        index: dict[str, Path] = {}
        for f in files:
            prov = _provenance(f)
            if prov and "params" in prov and int(prov.get("results_version", 1)) == rv:
                index[json.dumps(prov["params"], sort_keys=True)] = f
        _HARVEST[folder] = seen = (len(files), index)
    want = json.dumps(json.loads(json.dumps(point, sort_keys=True, default=_jsonable)), sort_keys=True)
    found = seen[1].get(want)
    if found is None:
        return path, None
    value = _load(found)
    return (found, value) if value is not None else (path, None)


def _provenance(path: Path | None) -> dict[str, Any] | None:
    """The provenance a cache entry's header recorded (None for an entry written before it was)."""
    header = _header(path) if path is not None else None
    prov = header.get("provenance") if header else None
    return prov if isinstance(prov, dict) else None


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


#: set while a one-point chapter sweep runs its point inline with a bar: the sweeps inside that
#: point show bars too (the outer bar alone would sit at 0/1 until the end)
_NESTED_PROGRESS = False


@contextlib.contextmanager
def inner_progress(enabled: bool) -> Iterator[None]:
    """While the block runs, every sweep shows its bar if ``enabled``: for a one-point chapter
    sweep (:func:`infsched.chapters.sweep_chapter`) that runs its point inline."""
    global _NESTED_PROGRESS
    saved, _NESTED_PROGRESS = _NESTED_PROGRESS, bool(enabled)
    try:
        yield
    finally:
        _NESTED_PROGRESS = saved


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
              bar: SweepProgress, version: str = "") -> None:
    from distributed import as_completed

    with _client(target) as client:
        name = _safe_dirname(_fn_name(fn).split(".")[-1])
        # earlier in ``todo`` (longest first when the caller gave costs) runs first
        futures = {client.submit(_dask_task, fn, points[i], paths[i], record, version, pure=False,
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
                    _save_or_warn(paths[i], res)  # no shared filesystem: the caller persists it
                results[i] = res
                bar.update(res)
        finally:
            if pending:  # Ctrl-C or an error: stop the rest; what finished is on disk
                with contextlib.suppress(Exception):
                    client.cancel(list(pending))


def _check_cache_folder(folder: Path, cache_dir: Any) -> None:
    """Create the cache folder of a sweep before its first point runs; a ConfigError naming the
    setting it comes from (an experiment's ``cache=``, ``run_sweep``'s ``cache_dir``, or
    ``$INFSCHED_CACHE``) where it cannot be created or written (was a bare FileNotFoundError
    after the first point)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ok = os.access(folder, os.W_OK | os.X_OK)
        why = "it cannot be written"
    except OSError as exc:
        ok, why = False, f"it cannot be created ({exc.strerror or exc})"
    if ok:
        return
    allowed = (f"the sweep cache folder {folder}: {why}; give a folder that can be written, None "
               "(the default cache) or False (no cache)")
    if cache_dir is not None:
        raise config_error("cache", os.fspath(cache_dir), allowed + " (cache_dir= of run_sweep, "
                           "cache= of an experiment)")
    if os.environ.get("INFSCHED_CACHE"):
        raise config_error("INFSCHED_CACHE", os.environ["INFSCHED_CACHE"], allowed)
    raise config_error("cache", None, allowed.replace("None (the default cache)",
                                                      "$INFSCHED_CACHE set to one"))


def _check_signature(fn: Callable[..., Any], points: Sequence[Mapping[str, Any]]) -> None:
    """Each set of parameter names the grid uses must bind to ``fn``'s signature (as keywords),
    checked before the first point (a function that cannot take them, ``abs`` or one missing a
    keyword, used to fail on the first point with its own TypeError). A function whose
    signature cannot be read is not checked."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    for names in dict.fromkeys(tuple(sorted(p)) for p in points):
        try:
            sig.bind(**dict.fromkeys(names))
        except TypeError as exc:
            raise config_error("fn", _fn_name(fn), f"cannot be called as fn(**point) with the grid's "
                               f"parameters {', '.join(names) or '(none)'}: {exc}; its signature is "
                               f"{fn.__name__ if hasattr(fn, '__name__') else 'fn'}{sig}") from None


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
    prepare: Callable[[list[dict[str, Any]]], None] | None = None,
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
    whose tail leaves a core idle). ``prepare``: called once, in this process, with the points
    about to be computed (never with ones loaded from the cache or the results store, and not
    at all when there are none), before any of them starts: where points share a costly input,
    the sweep's caller computes it there once instead of once per worker process.
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
    require(prepare is None or callable(prepare), "prepare", prepare,
            "must be None or a function of the list of points to compute")
    _check_signature(fn, points)
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
    recording = folder is not None and store.recording() is not None
    for i, path in enumerate(paths):
        if path is not None and path.exists():
            results[i] = _load(path)
            if recording and results[i] is not None and not _provenance(path):
                results[i] = None  # the store keeps only points whose origin is recorded
        if results[i] is None and folder is not None:
            results[i] = store.lookup(fn, points[i], version)  # the committed results store
        if results[i] is None and recording:
            paths[i], results[i] = _harvest(fn, folder, points[i], paths[i])
        if results[i] is None:
            if folder is not None:
                store.missing(fn, points[i])  # raises while the book renders strictly from the store
            todo.append(i)

    if todo and folder is not None and target is None:
        _check_cache_folder(folder, cache_dir)
    if cost is not None and len(todo) > 1:
        require(callable(cost), "cost", cost, "must be a function of a point returning a number")
        est = {i: float(cost(points[i])) for i in todo}
        todo.sort(key=lambda i: -est[i])          # longest first; ties keep grid order
    if todo and prepare is not None:
        prepare([dict(points[i]) for i in todo])
    if todo:
        estimate = estimate_points(folder, points, todo, None if target is not None else n_jobs) \
            if progress or (os.environ.get("INFSCHED_PROGRESS") and _in_kernel()) else None
        bar = SweepProgress(progress, len(points), len(points) - len(todo), _fn_name(fn).split(".")[-1],
                        estimate)
        try:
            if target is not None:
                _run_dask(target, fn, points, paths, todo, record, results, bar, version)
            elif n_jobs == 1 or len(todo) == 1:
                for i in todo:
                    results[i] = _attempt(fn, points[i], paths[i], record, version)
                    bar.update(results[i])
            else:
                from joblib import Parallel, delayed

                par = Parallel(n_jobs=n_jobs, return_as="generator", batch_size=1)
                done = par(delayed(_guarded_attempt)(os.getpid(), fn, points[i], paths[i], record,
                                                     version)
                           for i in todo)
                for i, res in zip(todo, done):
                    results[i] = res
                    bar.update(res)
        finally:
            bar.close()

    if recording:
        for i, (p, r) in enumerate(zip(points, results)):
            if not isinstance(r, PointError):
                prov = store.stored_provenance(fn, p) or _provenance(paths[i])
                store.record(fn, p, r, {k: v for k, v in (prov or {}).items() if k != "same_code"})
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
