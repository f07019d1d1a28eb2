"""The head-to-head system a sweep runs on, shared by :mod:`.experiments` and
:mod:`.sensitivity`: the zoo loader, the sweep points' code and profile versions, the contenders
as points carry them, and the checks of a sweep's loads and system."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import config_error, require
from ..profiles import PROFILE_NAMES
from .config import ServingConfig
from .labels import LABELS
from .plugins import UserPolicy, register, registered
from .zoo import Zoo

__all__ = ["load_zoo"]


def load_zoo(profile: str | os.PathLike[str] | Zoo) -> Zoo:
    if isinstance(profile, Zoo):
        return profile
    require(isinstance(profile, (str, os.PathLike)), "profile", profile,
            "must be a profile name, 'measured', or the path of a profile CSV")
    p = Path(profile)
    return _load_zoo(str(profile), p.stat().st_mtime if p.is_file() else 0.0)


@lru_cache(maxsize=8)
def _load_zoo(profile: str, mtime: float) -> Zoo:
    """The zoo of ``profile``: a published profile name (``"ramsis-image"``), ``"measured"``
    (the profile measured on this machine, ``data/profiles/measured_cpu.csv``), or the path of
    a raw profile CSV written by ``infsched profile`` (accuracies as published)."""
    if profile in PROFILE_NAMES:
        return Zoo.of(str(profile))
    from ..profiles import MEASURED, locate, measured_file, measured_profile

    # the profile registry's rules: a name, or a path from the working directory, then the repository root
    path = measured_file() if profile == MEASURED else locate(profile)[0]
    if path is None or not path.is_file():
        raise config_error("profile", profile, "is neither a profile name ("
                           + ", ".join(PROFILE_NAMES) + ", 'measured') nor an existing CSV file")
    return Zoo.of(measured_profile(path))


def _code_version() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("config.py", "engine.py", "policies.py", "sim.py", "zoo.py", "flex.py", "scales.py",
                 "streams.py", "labels.py", "contenders.py", "experiments.py", "plugins.py", "system.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def _profile_version(profile: str) -> str:
    """A point names its profile by name or by path; for a file (a reader's CSV, or "measured",
    which ``infsched profile`` rewrites) the key of its content joins the point's cache key, so
    a file rewritten in place is never served from points computed on its old content."""
    if profile in PROFILE_NAMES:
        return ""
    from ..profiles import MEASURED, content_key, locate, measured_file

    path = measured_file() if profile == MEASURED else locate(profile)[0]
    return "" if path is None or not path.is_file() else "+" + content_key(path.read_bytes())


def _entries(contenders) -> tuple:
    """The contenders of a sweep as its points carry them: a built-in's name, or a reader's
    policy itself (a :class:`~.plugins.UserPolicy`, given or registered by name), so that it
    reaches worker processes that never registered it, and its code's hash keys the cache."""
    require(not isinstance(contenders, str), "contenders", contenders,
            "must be a sequence of contender names or UserPolicy objects")
    out = []
    for c in contenders:
        if isinstance(c, UserPolicy):
            c = register(c)
        elif isinstance(c, str) and c in registered():
            from .plugins import get

            c = get(c)
        elif c not in LABELS:
            from .plugins import unknown_policy

            raise unknown_policy(c, "contenders", [x for x in LABELS if x not in registered()])
        out.append(c)
    return tuple(out)


def _name(c) -> str:
    return c.name if isinstance(c, UserPolicy) else c


def _loads(loads, default: tuple[float, ...]) -> tuple[float, ...]:
    """The loads of a sweep (shares of the capacity): the scale's, or the given ones, checked."""
    if loads is None:
        return default
    try:
        x = np.atleast_1d(np.asarray(loads, dtype=float)).ravel()
    except (TypeError, ValueError):
        raise config_error("loads", loads, "must be numbers (shares of the capacity)") from None
    require(x.size >= 1 and bool(np.all(np.isfinite(x)) and np.all(x > 0)), "loads", loads,
            "must be one or more finite shares of the capacity > 0")
    return tuple(float(v) for v in x)


def _system(profile, K, slo_ms):
    require(isinstance(K, (int, np.integer)) and K >= 1, "K", K, "must be an integer >= 1 (workers)")
    ServingConfig(load_zoo(profile), workers=int(K), slo_ms=slo_ms)  # fail early on a bad SLO
