"""Where the Shepherd chapter's batch latencies come from: Table 4 (the paper's V100 ``α, β``),
or ``α, β`` fitted to a reader's raw profile CSV (``infsched profile``, chosen through the
profile registry :mod:`infsched.profiles.registry`).

:func:`use_profile` sets the profile every experiment uses; the fitted profile is a plain value,
:class:`ProfileSource`, that each simulated point carries as its ``profile`` parameter, so worker
processes rebuild the same models (:func:`profile_models`) and the sweep cache keeps profiles
apart by content.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import ConfigError, config_error, require
from infsched.profiles import (  # PUBLISHED: Table 4's V100 α, β
    PUBLISHED,
    linear_fit,
    locate,
    raw_profile,
)
from infsched.shepherd.model import DEFAULT_SLO_MS, TABLE4, ModelSet, model_set as paper_set

__all__ = ["PUBLISHED", "SHEPHERD_NAMES", "ProfileSource", "load_profile", "use_profile",
           "active_profile", "profile_models", "profile_table", "measured_model_set"]

#: Shepherd's Table 4 short names -> the zoo's names (:mod:`infsched.profiling.zoo`), under which
#: a raw profile lists the models
SHEPHERD_NAMES: dict[str, str] = {
    "RN18": "resnet18", "RN34": "resnet34", "RN50": "resnet50", "RN101": "resnet101",
    "RN152": "resnet152", "RS50": "resnest50d", "RS101": "resnest101e", "RS200": "resnest200e",
    "RS269": "resnest269e", "DN121": "densenet121", "DN161": "densenet161",
    "DN169": "densenet169", "DN201": "densenet201", "GN": "googlenet", "I3": "inception_v3",
    "RCNN": "fasterrcnn_resnet50_fpn", "BERT": "bert_base_fp32",
}


def measured_model_set(raw: pd.DataFrame | str | os.PathLike[str], model_set: str = "cv16",
                       stat: str = "mean_ms", max_batch: int | None = None):
    """Shepherd's models (Table 4's ``model_set``) with α and β fitted to a measured profile.

    Returns ``(ModelSet, dropped)``: the models of the set that were measured, with the fitted
    α, β and Table 4's exit points (a property of the architecture, not the hardware), and the
    short names of those that were not (for example R-CNN where torchvision's compiled operators
    are missing)."""
    base = paper_set(model_set)
    fits = linear_fit(raw, stat=stat, max_batch=max_batch).set_index("model")
    keep, alpha, beta, dropped = [], [], [], []
    for i, short in enumerate(base.names):
        zoo_name = SHEPHERD_NAMES[short]
        if zoo_name in fits.index:
            keep.append(i)
            alpha.append(fits.loc[zoo_name, "alpha_ms"])
            beta.append(fits.loc[zoo_name, "beta_ms"])
        else:
            dropped.append(short)
    if not keep:
        raise ConfigError(f"raw profile: none of Shepherd's models ({', '.join(base.names)}) was "
                          "measured; profile them with `infsched profile shepherd`")
    idx = np.array(keep)
    return ModelSet(tuple(base.names[i] for i in idx), np.array(alpha), np.array(beta),
                    base.exit_points[idx]), dropped


_PROFILE_ALLOWED = (f"must be {PUBLISHED!r} (Table 4's V100 α, β) or the path of a raw profile "
                    "CSV written by `infsched profile` (a relative path is looked up from the "
                    "working directory, then the repository root)")


@dataclass(frozen=True, repr=False)
class ProfileSource:
    """Where the models' batch latencies come from: Table 4 (``sha256 == ""``) or ``α, β``
    fitted to a raw profile CSV (:func:`load_profile`).

    A plain, picklable value, so it travels in sweep points: ``fits`` holds ``(short name, α, β)``
    of every measured Table 4 model, and a worker process rebuilds the same models from it
    (:func:`profile_models`) without reading the file, which may have changed since. Its repr, the
    file's content hash, the statistic fitted and the fits, is what a sweep's cache key sees:
    two files with different contents never share a cached point, and the published profile
    never shares one with a measured one. ``path``, ``dropped`` (Table 4 models not measured),
    ``quality`` (``(short, r2, max_rel_residual, n_batches, b_max)`` per fit) and ``where`` (the
    machine) are for display and stay out of the key.
    """

    sha256: str = ""
    stat: str = "mean_ms"
    fits: tuple[tuple[str, float, float], ...] = ()
    path: str = field(default="", compare=False)
    dropped: tuple[str, ...] = field(default=(), compare=False)
    quality: tuple[tuple[str, float, float, int, int], ...] = field(default=(), compare=False)
    where: str = field(default="", compare=False)

    @property
    def published(self) -> bool:
        return self.sha256 == ""

    @property
    def label(self) -> str:
        """``"published"`` or the file's path."""
        return PUBLISHED if self.published else self.path

    def __repr__(self) -> str:
        if self.published:
            return f"ProfileSource({PUBLISHED!r})"
        return f"ProfileSource(sha256={self.sha256!r}, stat={self.stat!r}, fits={self.fits!r})"


_PUBLISHED_SOURCE = ProfileSource()
_ACTIVE: ProfileSource = _PUBLISHED_SOURCE


def _find_profile_file(source: str | os.PathLike[str]) -> Path:
    found, tried = locate(source)
    if found is None:
        raise config_error("profile", str(source), _PROFILE_ALLOWED + "; no such file: "
                           + ", ".join(str(c) for c in dict.fromkeys(tried)))
    return found


def load_profile(source: str | os.PathLike[str] | ProfileSource = PUBLISHED,
                 stat: str = "mean_ms") -> ProfileSource:
    """The :class:`ProfileSource` of ``source``: ``"published"`` (Table 4), a ProfileSource (as
    it is), or the path of a raw profile CSV chosen through the profile registry
    (:func:`infsched.profiles.raw_profile`), whose models' ``α, β`` are fitted to ``stat`` by
    :func:`measured_model_set`. The file is fitted from the content-addressed copy its key is the
    hash of. A bad source is a ConfigError naming ``profile``."""
    if isinstance(source, ProfileSource):
        return source
    require(isinstance(source, (str, os.PathLike)) and str(source).strip() != "", "profile",
            source, _PROFILE_ALLOWED)
    if str(source) == PUBLISHED:
        return _PUBLISHED_SOURCE
    path = _find_profile_file(source)
    try:
        held = raw_profile(path)
        raw = held.read()
        ms, dropped = measured_model_set(raw, "all17", stat=stat)
    except ConfigError as exc:
        raise config_error("profile", str(source), "must be a raw profile CSV written by "
                           f"`infsched profile` with some of Table 4's models: {exc}") from None
    fit = linear_fit(raw, stat=stat).set_index("model")
    quality = tuple((s, float(fit.loc[SHEPHERD_NAMES[s], "r2"]),
                     float(fit.loc[SHEPHERD_NAMES[s], "max_rel_residual"]),
                     int(fit.loc[SHEPHERD_NAMES[s], "n_batches"]),
                     int(fit.loc[SHEPHERD_NAMES[s], "b_max"])) for s in ms.names)
    where = ""
    if {"device", "device_name", "threads", "precision"} <= set(raw.columns):
        d = raw.iloc[0]
        where = f"{d['device_name']} ({d['device']}, {d['threads']} threads, {d['precision']})"
    return ProfileSource(sha256=held.key, stat=stat,
                         fits=tuple((n, float(a), float(b))
                                    for n, a, b in zip(ms.names, ms.alpha, ms.beta)),
                         path=str(path), dropped=tuple(dropped), quality=quality, where=where)


def use_profile(source: str | os.PathLike[str] | ProfileSource = PUBLISHED,
                stat: str = "mean_ms") -> ProfileSource:
    """Run every experiment of this module on ``source``'s latencies (see :func:`load_profile`)
    from now on, in this process and in the sweeps' workers; returns the ProfileSource.
    ``use_profile("published")`` restores Table 4."""
    global _ACTIVE
    _ACTIVE = load_profile(source, stat)
    return _ACTIVE


def active_profile() -> ProfileSource:
    """The profile the experiments use now (:func:`use_profile`)."""
    return _ACTIVE


def _profile(profile) -> ProfileSource:
    return _ACTIVE if profile is None else load_profile(profile)


def profile_models(model_set_name: str = "cv16", profile=None) -> ModelSet:
    """The models of ``model_set_name`` under ``profile`` (None: the active one): Table 4's, or
    those of the set that were measured, with the fitted ``α, β`` and Table 4's exit points."""
    p = _profile(profile)
    base = paper_set(model_set_name)
    if p.published:
        return base
    fits = {n: (a, b) for n, a, b in p.fits}
    keep = [i for i, n in enumerate(base.names) if n in fits]
    if not keep:
        raise config_error("profile", p.label, f"measures none of {model_set_name}'s models "
                           f"({', '.join(base.names)})")
    names = tuple(base.names[i] for i in keep)
    return ModelSet(names, np.array([fits[n][0] for n in names]),
                    np.array([fits[n][1] for n in names]), base.exit_points[np.array(keep)])


def profile_table(model_set_name: str = "cv16", slo_ms: float = DEFAULT_SLO_MS,
                  profile=None) -> pd.DataFrame:
    """Table 4's ``α, β`` beside the profile's, per model of the set: the fit's R² and largest
    relative residual, the batch sizes it rests on, ``ℓ(1)`` both ways and, at ``slo_ms``, the
    largest feasible batch under the profile (0: unservable); models not measured say so."""
    p = _profile(profile)
    base = paper_set(model_set_name)
    fits = {n: (a, b) for n, a, b in p.fits} if not p.published else \
        {n: (a, b) for n, a, b in zip(base.names, base.alpha, base.beta)}
    quality = {q[0]: q[1:] for q in p.quality}
    long = {v[0]: k for k, v in TABLE4.items()}
    rows = []
    for n, a4, b4 in zip(base.names, base.alpha, base.beta):
        row = {"model": long[n], "short": n, "Table 4 alpha (ms)": a4, "Table 4 beta (ms)": b4}
        if n in fits:
            a, b = fits[n]
            r2, resid, nb, bmax = quality.get(n, (np.nan,) * 4)
            b_slo = int(ModelSet((n,), np.array([a]), np.array([b]), np.array([1]))
                        .max_batch(slo_ms)[0])
            row.update({"alpha (ms)": a, "beta (ms)": b, "r2": r2, "max rel. residual": resid,
                        "batches fitted": nb, "largest batch fitted": bmax,
                        "l(1) / Table 4's": (a + b) / (a4 + b4),
                        f"b_max at {slo_ms:g} ms": b_slo,
                        "status": "measured" if b_slo > 0 else f"unservable at {slo_ms:g} ms"})
        else:
            row["status"] = "not measured"
        rows.append(row)
    out = pd.DataFrame(rows)
    ints = [c for c in ("batches fitted", "largest batch fitted", f"b_max at {slo_ms:g} ms")
            if c in out.columns]
    out[ints] = out[ints].astype("Int64")
    return out
