"""A chapter's registered experiments as one grid: the Python side of ``infsched sweep``.

Every paper package registers its figure and table functions in ``experiments.EXPERIMENTS``
(name -> ``fn(scale, seed, **params)``). :func:`sweep_chapter` runs some or all of them over the
cartesian product of a grid of their parameters and seeds, through
:func:`infsched.sweep.run_sweep`: points are cached, resumable, and run on local processes or a
Dask cluster. :func:`chapter_grid` checks every name and value before any point runs.

This module sits on top: it imports the paper packages (by name, when asked for a chapter), the
papermill runner's scales and the parameter schemas; the sweep machinery below it imports none
of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import config_error, nearest_name, require
from .runner import _env
from .sweep import (
    PROCESSES_ENV,
    _client,
    _dask_target,
    default_processes,
    inner_progress,
    run_sweep,
)

__all__ = ["CHAPTERS", "chapter_experiments", "chapter_grid", "experiment_parameters",
           "sweep_chapter"]

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
    from .params import CHAPTER_ALIASES
    from .runner import SCALES

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
    if isinstance(seeds, Sequence):  # counted before anything is expanded or checked one by one
        from .limits import check_grid

        combos = 1
        for values in params.values():
            combos *= len(values) if isinstance(values, Sequence) and not isinstance(values, (str, bytes)) else 1
        check_grid(chapter, len(table), len(names) * combos * len(seeds), scale)
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
                                   f"it takes {', '.join(taken) if taken else 'no parameters'}{hint}"
                                   + nearest_name(name, taken))
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
    global _INNER
    if len(grid) == 1:  # inline: the experiment's own sweeps get the processes or the cluster
        saved = _INNER
        _INNER = {PROCESSES_ENV: str(jobs if jobs > 0 else os.cpu_count() or 1),
                  "INFSCHED_DASK": "" if target is None else _dask_address(target)}
        try:
            with inner_progress(progress):  # the one point's own sweeps show their bars too
                df = run_sweep(chapter_point, grid, cache_dir=cache_dir, n_jobs=1, progress=progress,
                               version=version, dask=False, on_error=on_error)
        finally:
            _INNER = saved
    else:
        df = run_sweep(chapter_point, grid, cache_dir=cache_dir, n_jobs=jobs, progress=progress,
                       version=version, dask=target if target is not None else False,
                       on_error=on_error)
    return df
