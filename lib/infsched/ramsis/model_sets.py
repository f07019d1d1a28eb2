"""The RAMSIS chapter's model sets (``profile`` keys) and where their latencies come from.

Keys: ``"image"`` the 9 Pareto models of the 26 image models, ``"text"`` the 5 BERTs,
``"image-60"`` the synthetic 60-model set of Fig. 8, ``"image-3"`` the 3 models of Fig. 12,
``"image-all"`` all 26. By default they come from the published RAMSIS profiles;
:func:`use_profile` switches every experiment to a raw profile CSV chosen through the profile
registry (:mod:`infsched.profiles.registry`): the same sets, built from the measured models
that have a published accuracy. The registry's content-addressed copy travels inside the keys
handed to the point functions (``"image@/.../raw-<hash>.csv"``), so worker processes load
exactly what the main process validated, and the sweep cache never mixes published and
measured results, nor two contents of one file.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from infsched.errors import ConfigError, config_error, one_of, require
from infsched.profiles import (
    PUBLISHED,
    Profile,
    interpolate_models,
    load_profile,
    locate,
    measured_profile,
    raw_profile,
    read_copy,
)
from infsched.ramsis.model import capacity_qps
from infsched.ramsis.scales import FIG12_MODELS, Scale

# --------------------------------------------------------------------------- model sets

#: the model-set keys of :func:`get_profile`
PROFILE_KEYS = ("image", "text", "image-60", "image-3", "image-all")
_PROFILE_ALLOWED = ('"published" (the RAMSIS artifact\'s profiles) or the path of a raw profile CSV '
                    'written by `infsched profile` (relative to the working directory or to the '
                    'repository root) that holds at least one of RAMSIS\'s image models')
#: the source every bare key resolves to: PUBLISHED, or the path of a content-addressed copy
_source: str = PUBLISHED
#: copy -> the path the reader gave, for messages (main process only)
_origins: dict[str, str] = {}


def use_profile(source: str | os.PathLike[str] = PUBLISHED) -> str:
    """Run every experiment of this module on ``source``: ``"published"`` (the default) or the
    path of a raw profile CSV, chosen through the profile registry
    (:mod:`infsched.profiles.registry`: relative to the working directory or to the repository
    root, checked by :func:`~infsched.profiles.read_raw`, and copied under its content hash, so
    a file rewritten later, or still being written, does not change this run), holding at least
    one RAMSIS image model with a published accuracy. Returns the source: ``"published"`` or
    the copy's path. ``ConfigError`` naming ``profile`` on a bad source."""
    global _source
    if isinstance(source, str) and source.strip() == PUBLISHED:
        _source = PUBLISHED
        return _source
    if not isinstance(source, (str, os.PathLike)) or str(source).strip() == "":
        raise config_error("profile", source, "must be " + _PROFILE_ALLOWED)
    found, places = locate(source)
    if found is None:
        raise config_error("profile", os.fspath(source),
                           "no such file (looked for " + ", ".join(dict.fromkeys(map(str, places)))
                           + "); must be " + _PROFILE_ALLOWED)
    try:
        held = raw_profile(found)
        _origins[held.path] = str(found)
        _measured(held.path, "image")
    except (ValueError, KeyError) as e:             # ConfigError, or a file pandas cannot read
        raise config_error("profile", os.fspath(source), f"{e}; must be " + _PROFILE_ALLOWED) from None
    _source = held.path
    return _source


def profile_source() -> str:
    """``"published"``, or the path of the raw profile :func:`use_profile` was given."""
    return _source if _source == PUBLISHED else _origins.get(_source, _source)


def profile_key(key: str) -> str:
    """``key`` bound to the current source: unchanged for the published profiles, else
    ``"<key>@<path of the content-addressed copy>"``; a key already bound is returned as is.
    The point functions get bound keys, so worker processes load the same model set."""
    if isinstance(key, str) and "@" in key:
        return key
    one_of("profile", key, PROFILE_KEYS)
    return key if _source == PUBLISHED else f"{key}@{_source}"


def get_profile(key: str) -> Profile:
    """The model set behind a profile key (see the module docstring), from the current source
    (:func:`use_profile`) or from the source a bound key names."""
    return _model_set(profile_key(key))


@functools.cache
def _measured(path: str, task: str) -> Profile:
    """The ``task`` models of the raw profile at ``path`` (a content-addressed copy of the
    profile registry, :func:`infsched.profiles.raw_profile`)."""
    return measured_profile(read_copy(path, _origins.get(path, "")), task, name=f"measured-{task}")


@functools.cache
def _model_set(key: str) -> Profile:
    name, _, src = key.partition("@")
    one_of("profile", name, PROFILE_KEYS)
    if not src:
        if name == "text":
            return load_profile("ramsis-text")
        full = load_profile("ramsis-image")
    else:
        where = _origins.get(src, src)
        try:
            full = _measured(src, "text" if name == "text" else "image")
        except ConfigError as e:
            raise config_error("profile", where, f"{e}; the {name!r} model set needs them") from None
        if name == "text":
            return full
    if name == "image-all":
        return full
    front = full.pareto_front()
    if name == "image-60":
        return interpolate_models(front, step=0.5)
    if name == "image-3":
        missing = [m for m in FIG12_MODELS if m not in full.models]
        if missing:
            raise config_error("profile", _origins.get(src, src),
                               f"has no measurement of {', '.join(missing)}; Fig. 12's model set "
                               f"('image-3') needs {', '.join(FIG12_MODELS)}")
        return full.subset(list(FIG12_MODELS))
    return front


def check_workers(workers: int, slo_ms: float, sc: Scale) -> None:
    """The chapter's main experiments sweep ``sc.loads``: the pool must at least carry the lowest
    of them within the SLO (``ConfigError`` naming ``workers`` otherwise)."""
    require(isinstance(slo_ms, (int, float, np.integer, np.floating)) and not isinstance(slo_ms, bool)
            and np.isfinite(slo_ms) and slo_ms > 0, "slo_ms", slo_ms, "must be a finite number > 0 (ms)")
    require(isinstance(workers, (int, np.integer)) and not isinstance(workers, bool) and workers >= 1,
            "workers", workers, "must be an integer >= 1")
    prof = get_profile("image")
    need = min(sc.loads)
    per_worker = capacity_qps(prof, 1, slo_ms)
    if per_worker <= 0:
        fastest = float(prof.latency_table(1)[:, 0].min())
        raise config_error("slo_ms", slo_ms, f"no image model serves even one query within it (the "
                           f"fastest takes {fastest:g} ms at batch 1): no number of workers can")
    k_min = int(np.floor(need / per_worker)) + 1  # capacity is linear in the workers
    require(isinstance(workers, int) and workers >= k_min, "workers", workers,
            f"at SLO {slo_ms:g} ms the image models need at least {k_min} workers to serve the "
            f"lowest load of the sweep ({need:g} QPS) within the SLO")
