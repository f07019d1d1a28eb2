"""Parameter sweeps with a per-point disk cache.

``run_sweep(fn, grid)`` evaluates ``fn(**point)`` for every point of ``grid`` (serially or with
``joblib.Parallel``) and stacks the results in one DataFrame. Each finished point is pickled at
once under ``<cache_dir>/<module.qualname>/<key>.pkl``, the key hashing fn's module and
qualified name, the sorted parameters and an optional ``version`` string. A sweep that is
interrupted (Ctrl-C, a crash, one failing point) therefore resumes where it stopped: a rerun
loads the finished points and computes only the missing ones. Bump ``version`` when fn's code
changes in a way that changes its results.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import ConfigError, require

__all__ = ["default_cache_dir", "default_processes", "point_key", "point_seed", "run_sweep"]


def default_cache_dir() -> Path:
    """``$INFSCHED_CACHE`` if set, else ``~/.cache/infsched``."""
    env = os.environ.get("INFSCHED_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "infsched"


def default_processes(n_jobs: int | None = None, *, name: str = "n_jobs") -> int:
    """``n_jobs`` for :func:`run_sweep` when a caller gives ``None``: ``$INFSCHED_WORKERS``, else
    ``min(2, cores)``; a given value must be a positive integer (``name`` is the caller's name
    for it, for the error)."""
    if n_jobs is None:
        n_jobs = int(os.environ.get("INFSCHED_WORKERS", min(2, os.cpu_count() or 1)))
    require(isinstance(n_jobs, int) and n_jobs >= 1, name, n_jobs, "must be a positive integer")
    return n_jobs


def point_seed(seed: int, *key: float) -> int:
    """A seed per sweep point, from the experiment's ``seed`` and the point's coordinates: every
    method simulated at that point shares it (common random numbers), and it does not depend on
    which other points the sweep holds."""
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
    """The cache key of one point: sha256 of fn's ``module.qualname``, the sorted parameters
    and ``version`` (first 24 hex digits)."""
    blob = json.dumps({"fn": _fn_name(fn), "version": version, "params": dict(point)},
                      sort_keys=True, default=_jsonable)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _safe_dirname(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:120]


def _evaluate(fn: Callable[..., Any], point: dict[str, Any], path: Path | None) -> Any:
    """Compute one point and, if ``path`` is given, persist it atomically before returning."""
    result = fn(**point)
    if isinstance(result, pd.Series):
        result = result.to_dict()
    if not isinstance(result, (Mapping, pd.DataFrame)):
        raise ConfigError(f"fn = {_fn_name(fn)}: must return a dict or a DataFrame, "
                          f"returned {type(result).__name__} for point {point!r}")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return result


def _load(path: Path) -> Any:
    try:
        with path.open("rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        return None  # unreadable: recompute


def _rows(point: dict[str, Any], result: Any) -> pd.DataFrame:
    if isinstance(result, pd.DataFrame):
        df = result.copy()
        for k, v in point.items():
            if k not in df.columns:
                df[k] = [v] * len(df)
        return df[list(point) + [c for c in df.columns if c not in point]]
    return pd.DataFrame([{**point, **dict(result)}])


def run_sweep(
    fn: Callable[..., Mapping[str, Any] | pd.DataFrame],
    grid: Sequence[Mapping[str, Any]],
    *,
    cache_dir: str | os.PathLike[str] | bool | None = None,
    n_jobs: int = 1,
    progress: bool = False,
    version: str = "",
) -> pd.DataFrame:
    """Evaluate ``fn(**point)`` for each point of ``grid``; one DataFrame in grid order.

    ``fn`` returns a dict (one row) or a DataFrame (its rows); the point's parameters are added
    as leading columns. ``cache_dir``: a folder, ``None`` for :func:`default_cache_dir`, or
    ``False`` to disable caching. ``n_jobs > 1`` (or -1 for all cores) runs points with
    ``joblib.Parallel``; results are identical to ``n_jobs=1`` when fn is seeded by its
    parameters. ``progress`` shows a tqdm bar.
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
    if cache_dir is False:
        folder = None
    else:
        folder = (default_cache_dir() if cache_dir is None else Path(cache_dir)) / _safe_dirname(_fn_name(fn))

    paths = [None if folder is None else folder / f"{point_key(fn, p, version)}.pkl" for p in points]
    results: list[Any] = [None] * len(points)
    todo: list[int] = []
    for i, path in enumerate(paths):
        if path is not None and path.exists():
            results[i] = _load(path)
        if results[i] is None:
            todo.append(i)

    if todo:
        bar = None
        if progress:
            from tqdm import tqdm  # a text bar: ipywidgets is not a dependency

            bar = tqdm(total=len(points), initial=len(points) - len(todo), desc=_fn_name(fn).split(".")[-1])
        try:
            if n_jobs == 1 or len(todo) == 1:
                for i in todo:
                    results[i] = _evaluate(fn, points[i], paths[i])
                    if bar is not None:
                        bar.update(1)
            else:
                from joblib import Parallel, delayed

                par = Parallel(n_jobs=n_jobs, return_as="generator")
                done = par(delayed(_evaluate)(fn, points[i], paths[i]) for i in todo)
                for i, res in zip(todo, done):
                    results[i] = res
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()

    if not points:
        return pd.DataFrame()
    return pd.concat([_rows(p, r) for p, r in zip(points, results)], ignore_index=True)
