"""Chapter parameters and environment variables, checked before a chapter runs.

:func:`check_chapter_parameters` is what :func:`infsched.runner.run_chapter` calls before
papermill starts a kernel: every parameter the reader gives (``-p name=value``) is checked
against the chapter's schema in :data:`SCHEMAS`, so a bad value fails at once with a
:class:`~infsched.errors.ConfigError` that names the parameter as the reader typed it, the
value, and what is allowed, instead of failing in some cell minutes later with a numpy message
about an internal name. Values are rejected, not coerced: a string where a number belongs, a
fractional or negative seed, an empty list, a non-finite number. Sizes that cannot fit in
memory (:mod:`infsched.limits`) are refused here too, with the estimate.

After each value passes its own check, :data:`CROSS` checks a chapter's parameters together,
as its cells will meet them (defaults filled in, at the run's scale): the head to head's profile
loads as a zoo, its SLO (and the decision table's tighter one) is at least the fastest model's
batch-1 latency and TAD reaches ``a_star`` under it, through the serving package's own
validators (:class:`~infsched.serving.ServingConfig`, ``tad_split``); Shepherd's ``workers``
scale a request trace that must fit in memory. A profile path goes through the one raw-profile
validator (:func:`infsched.profiling.timing.read_raw`), whose error names the file, the line,
the column and the value.

A chapter without a schema (or a parameter missing from its schema) gets the generic rule: the
value must have the type of the default (a number for a number, a string for a string, a bool
for a bool), and ``seed``, ``processes`` and ``scale`` follow their shared rules.

:func:`check_environment` checks the variables every chapter and sweep reads
(``INFSCHED_PROCESSES``, ``INFSCHED_SCALE``, ``INFSCHED_MEMORY_LIMIT``).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .book import DefaultExpr, book_dir
from .errors import ConfigError, config_error, require

__all__ = ["SCHEMAS", "check_chapter_parameters", "check_environment", "CHAPTER_ALIASES"]

Check = Callable[[str, Any], Any]  # (name as typed, value) -> the value to run with

SCALES = ("smoke", "default", "paper")


def _is_int(v: Any) -> bool:
    import numpy as np

    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    import numpy as np

    return isinstance(v, (numbers.Real, np.floating, np.integer)) and not isinstance(v, (bool, np.bool_))


def _kind(v: Any) -> str:
    return "a string" if isinstance(v, str) else "a bool" if isinstance(v, bool) else \
        f"a {type(v).__name__}"


def integer(lo: int | None = None, hi: int | None = None, *, none: bool = False, what: str = "",
            multiple: int = 1, memory: Callable[[int], tuple[float, str]] | None = None) -> Check:
    """An integer in [lo, hi] (a multiple of ``multiple``), or None when ``none``; ``memory``
    maps it to (bytes needed, what for), checked against :func:`infsched.limits.memory_limit`."""
    span = (f" >= {lo}" if hi is None else f" in [{lo}, {hi}]") if lo is not None else \
        (f" <= {hi}" if hi is not None else "")
    allowed = f"must be an integer{span}" + (" or None" if none else "") + \
        (f", a multiple of {multiple}" if multiple > 1 else "") + (f" ({what})" if what else "")

    def check(name: str, v: Any) -> Any:
        if v is None and none:
            return v
        require(_is_int(v) and (lo is None or v >= lo) and (hi is None or v <= hi)
                and v % multiple == 0, name, v, allowed)
        if memory is not None:
            from .limits import check_memory

            need, why = memory(int(v))
            check_memory(name, v, need, why)
        return v
    return check


def real(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
         none: bool = False, what: str = "") -> Check:
    """A finite real number in [lo, hi] ((lo, hi] with ``lo_open``), or None when ``none``."""
    if lo is not None and hi is not None:
        span = f" in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
    elif lo is not None:
        span = f" {'>' if lo_open else '>='} {lo:g}"
    else:
        span = f" <= {hi:g}" if hi is not None else ""
    allowed = f"must be a finite number{span}" + (" or None" if none else "") + \
        (f" ({what})" if what else "")

    def check(name: str, v: Any) -> Any:
        if v is None and none:
            return v
        ok = _is_real(v) and math.isfinite(float(v))
        if ok and lo is not None:
            ok = float(v) > lo if lo_open else float(v) >= lo
        if ok and hi is not None:
            ok = float(v) <= hi
        require(ok, name, v, allowed)
        return v
    return check


def choice(*options: Any, none: bool = False) -> Check:
    allowed = "must be one of " + ", ".join(map(repr, options)) + (" or None" if none else "")

    def check(name: str, v: Any) -> Any:
        if v is None and none:
            return v
        require(isinstance(v, (str, int, float)) and v in options, name, v, allowed)
        return v
    return check


def boolean(*, none: bool = False) -> Check:
    def check(name: str, v: Any) -> Any:
        require(isinstance(v, bool) or (none and v is None), name, v,
                "must be True or False" + (" or None" if none else ""))
        return v
    return check


def reals(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
          length: int | None = None, scalar: bool = False, none: bool = False, what: str = "") -> Check:
    """A non-empty list or tuple of finite numbers in the range (``length`` of them when given);
    a single number too when ``scalar``; None when ``none``."""
    one = real(lo, hi, lo_open=lo_open)
    shape = f"{length} numbers" if length else "a non-empty list of numbers"
    allowed = ("None, " if none else "") + ("a number or " if scalar else "") + shape + \
        (f" in {'(' if lo_open else '['}{lo:g}, {hi:g}]" if lo is not None and hi is not None else
         f" {'>' if lo_open else '>='} {lo:g}" if lo is not None else "") + (f" ({what})" if what else "")

    def check(name: str, v: Any) -> Any:
        if v is None and none:
            return v
        if scalar and _is_real(v):
            try:
                one(name, v)
            except ConfigError:
                raise config_error(name, v, "must be " + allowed) from None
            return v
        ok = isinstance(v, (list, tuple)) and len(v) > 0 and (length is None or len(v) == length)
        if ok:
            try:
                for x in v:
                    one(name, x)
            except ConfigError:
                ok = False
        require(ok, name, v, "must be " + allowed)
        return v
    return check


def strings(*, none: bool = False, what: str = "") -> Check:
    def check(name: str, v: Any) -> Any:
        if v is None and none:
            return v
        require(isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(x, str) and x.strip()
                                                                      for x in v),
                name, v, "must be a non-empty list of names" + (" or None" if none else "")
                + (f" ({what})" if what else ""))
        return v
    return check


def _locate(given: Path) -> tuple[Path | None, list[Path]]:
    """Where a chapter's kernel (running in the book's folder) finds the profile path
    ``given``: the first existing of the places it looks, and those places."""
    places = [given] if given.is_absolute() else \
        [book_dir() / given, book_dir().parent / given, Path.cwd() / given]
    return next((p for p in places if p.is_file()), None), places


def profile_source(*names: str, none: bool = False) -> Check:
    """One of ``names``, or the path of a raw profile CSV (``infsched profile``) that exists
    where the chapter looks (the book's folder, the repository root; a path relative to the
    current folder is made absolute) and passes :func:`infsched.profiles.read_raw`."""
    allowed = (("None, " if none else "") + (", ".join(map(repr, names)) + " or " if names else "")
               + "the path of a raw profile CSV written by `infsched profile`")

    def check(name: str, v: Any) -> Any:
        if v is None and none:
            return v
        require(isinstance(v, (str, os.PathLike)) and str(v).strip() != "", name, v, "must be " + allowed)
        if str(v) in names:
            return v
        found, places = _locate(Path(os.fspath(v)).expanduser())
        if found is None:
            raise config_error(name, os.fspath(v), "no such file (looked in "
                               + ", ".join(dict.fromkeys(str(p.parent) for p in places))
                               + "); must be " + allowed)
        from .profiles import read_raw

        try:
            read_raw(found)
        except ConfigError as exc:
            raise config_error(name, os.fspath(v), f"{exc}") from None
        # the kernel runs in the book's folder: hand it a path it finds
        return v if found in places[:2] else str(found.resolve())
    return check


def _serving_profile(name: str, v: Any) -> Any:
    """The head-to-head chapter's profile: a published profile's name, ``measured`` (this
    machine's, ``data/profiles/measured_cpu.csv``) or a raw profile CSV, checked by the shared
    validator (:func:`profile_source`)."""
    from .profiles import PROFILE_NAMES

    return profile_source(*PROFILE_NAMES, "measured")(name, v)


def _distinct(check: Check) -> Check:
    """``check``, and a list's values distinct (a load given twice would be run twice)."""
    def distinct(name: str, v: Any) -> Any:
        v = check(name, v)
        if isinstance(v, (list, tuple)):
            seen = [float(x) for x in v]
            require(len(set(seen)) == len(seen), name, v, "must not repeat a value")
        return v
    return distinct


def _ascending(check: Check) -> Check:
    def ascending(name: str, v: Any) -> Any:
        v = check(name, v)
        require(list(v) == sorted(v), name, v, "must be the low target, then the high one")
        return v
    return ascending


def _tad_memory(n: int) -> tuple[float, str]:
    return 40.0 * n, f"simulating {n} servers (40 bytes of engine state each)"


def _shepherd_memory(n: int) -> tuple[float, str]:
    return 8.0 * (3 * 128 + 5) * n, f"simulating {n} GPUs ({8 * (3 * 128 + 5)} bytes of engine state each)"


def _kairos_budget(name: str, v: Any) -> Any:
    real(0.526, lo_open=False, what="$/hour; at least one g4dn.xlarge, 0.526 $/hour")(name, v)
    from .kairos.model import PRICES
    from .limits import check_memory

    cells = math.prod(math.floor((float(v) + 1e-9) / p) + 1.0 for p in PRICES)
    check_memory(name, v, 2 * cells * 4 * 8, f"enumerating the configurations within {float(v):g} $/hour")
    return v


#: per chapter: parameter name (as in the chapter's parameters cell) -> its check
SCHEMAS: dict[str, dict[str, Check]] = {
    "tad": {
        "n_servers": integer(4, multiple=4, memory=_tad_memory,
                             what="servers; the paper's four classes each hold a quarter"),
        "a_star": real(0.0, 100.0, lo_open=True, what="accuracy target, %; the best model has 100"),
    },
    "ramsis": {
        "workers": integer(1, 100_000, what="K, the workers of the main experiments"),
        "slo_ms": real(0.0, 3_600_000.0, lo_open=True, what="latency SLO in ms"),
        "profile": profile_source("published"),
    },
    "kvcache": {
        "demand": choice("high", "low"),
        "n_requests": integer(1, 10_000, what="requests per run, drawn from the 10,000-request sample"),
        "kappa": real(0.0, 100.0, lo_open=True, none=True,
                      what="batch-time scale; None calibrates it on Table 1"),
    },
    "kairos": {
        "model": choice("ncf", "rm2", "wnd", "mtwnd", "dien"),
        "budget": _kairos_budget,
        "service": choice("mean", "empirical", "gauss"),
    },
    "shepherd": {
        "workers": integer(1, memory=_shepherd_memory, what="GPUs of the load experiment"),
        "slo_ms": real(0.0, 3_600_000.0, lo_open=True, what="latency SLO in ms"),
        "lam": real(1.0, lo_open=True, what="FLEX's preemption threshold λ"),
        "model_set": choice("cv16", "all17"),
        "profile": profile_source("published"),
    },
    "headtohead": {
        "K": integer(1, 100_000, what="workers"),
        "slo_ms": real(0.0, 3_600_000.0, lo_open=True, what="latency SLO in ms"),
        "a_star": real(0.0, 100.0, lo_open=True, what="TAD's accuracy target, %"),
        "load": _distinct(reals(0.0, 10.0, lo_open=True, scalar=True, none=True,
                                what="loads as a share of capacity")),
        "targets": _ascending(reals(0.0, 100.0, lo_open=True, length=2,
                                    what="low and high accuracy targets, %")),
        "profile": _serving_profile,
    },
    "profiling": {
        "device": choice("auto", "cpu", "cuda"),
        "threads": integer(1, 1024, none=True, what="torch threads"),
        "models": strings(none=True, what="zoo model names"),
        "profile": profile_source(none=True),
        "rerun": boolean(none=True),
        "rerun_scale": choice(*SCALES),
    },
}

#: parameters every chapter that has them shares
COMMON: dict[str, Check] = {
    "seed": integer(0, 2**63 - 1, what="the seed of every random stream"),
    "processes": integer(1, 1024, none=True, what="processes for the sweeps; None: $INFSCHED_PROCESSES or 2"),
    "scale": choice(*SCALES),
}

#: names a reader may use in ``infsched sweep CHAPTER -p NAME=...`` for an experiment keyword
#: of another name: the chapter's parameter -> the experiments' keyword
CHAPTER_ALIASES: dict[str, dict[str, str]] = {
    "kvcache": {"n_requests": "n"},
}


def _generic(default: Any) -> Check | None:
    """The type rule for a parameter without a schema: that of its default."""
    if isinstance(default, bool):
        return boolean()
    if _is_real(default):
        return real()
    if isinstance(default, str) and type(default) is str:  # a DefaultExpr (an expression) is not
        def check(name: str, v: Any) -> Any:
            require(isinstance(v, str), name, v, f"must be a string (the default is {default!r}), "
                    f"not {_kind(v)}")
            return v
        return check
    return None


def _headtohead(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The head-to-head chapter's parameters together, as its first cell and its sweeps would
    meet them, through the serving package's own validators: the profile loads as a zoo; the
    SLO is at least the fastest model's batch-1 latency (:class:`~infsched.serving.ServingConfig`),
    and so is the decision table's tight SLO (the scale's smallest ``regime_slo_factors`` ×
    ``slo_ms``); TAD's split exists at ``a_star`` under both (:func:`~infsched.serving.experiments.tad_split`)."""
    from .errors import InfeasibleError
    from .serving import ServingConfig, experiments as sx

    def named(name: str) -> str:  # "slo_ms = 150.0 (the default)" when the reader did not set it
        return f"{name} = {values[name]!r}" + ("" if name in given else " (the default)")

    from .profiles import PROFILE_NAMES

    if not {"K", "slo_ms", "a_star", "profile"} <= set(values):
        return
    profile = values["profile"]
    if str(profile) not in (*PROFILE_NAMES, "measured"):  # a path: where the kernel finds it
        found, _ = _locate(Path(os.fspath(profile)).expanduser())
        profile = str(found) if found is not None else profile
    try:
        zoo = sx.load_zoo(profile)
    except ConfigError as exc:
        raise ConfigError(f"profile = {values['profile']!r}: cannot be used as the head to head's "
                          f"zoo: {exc}") from None
    K, slo, a_star = int(values["K"]), float(values["slo_ms"]), float(values["a_star"])
    fastest = zoo.names[zoo.fastest]
    b1 = float(zoo.latency_ms[:, 0].min())
    where = "" if values["profile"] == "ramsis-image" and "profile" not in given else \
        f" of profile {values['profile']!r}"
    tight_f = min(sx.get_scale(scale).regime_slo_factors)
    for slo_at, what in ((slo, "slo_ms"), (tight_f * slo, f"the decision table's tight SLO, "
                                                          f"{tight_f:.3g} × slo_ms = {tight_f * slo:.4g} ms,")):
        try:
            ServingConfig(zoo, workers=K, slo_ms=slo_at)
        except ConfigError:
            raise ConfigError(f"{named('slo_ms')}: {'it' if what == 'slo_ms' else what} is below every "
                              f"model's batch-1 latency{where} (the fastest, {fastest}, takes "
                              f"{b1:g} ms): no query could meet it; choose slo_ms >= "
                              f"{b1 / (1.0 if what == 'slo_ms' else tight_f):.4g}") from None
        try:
            sx.tad_split(zoo, K, a_star, slo_at)
        except InfeasibleError as exc:
            raise ConfigError(f"{named('a_star')}: TAD cannot reach it"
                              + ("" if what == "slo_ms" else " under the decision table's tight SLO "
                                 f"({tight_f:.3g} × slo_ms = {slo_at:.4g} ms)")
                              + f": {exc}; lower a_star or raise slo_ms") from None


def _shepherd(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The load experiment's largest trace at this scale (its top rate scaled by workers / 12),
    checked against the memory limit (:func:`infsched.shepherd.experiments.check_trace_memory`)."""
    if "workers" not in given:
        return
    from .shepherd import experiments as sx

    sc = sx.get_scale(scale)
    w = int(values["workers"])
    sx.check_trace_memory(w, max(sc.rates) * w / 12, sc.warmup_s + sc.measure_s)


def _published(values: Mapping[str, Any], given: set[str]) -> bool:
    """True when the chapter runs on its published profile (the checks below read it; a
    reader's profile is checked in the chapter's first cell, against that profile)."""
    return str(values.get("profile", "published")) == "published"


def _tad(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The TAD chapter's first cell: a* against the models (``SystemParams.check_target``) and
    ``n_servers`` split into the four classes (``class_sizes``)."""
    from .tad.model import MAIN

    if "a_star" in given:
        MAIN.check_target(values["a_star"])
    if "n_servers" in given:
        MAIN.class_sizes(values["n_servers"])


def _ramsis(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The RAMSIS chapter's first cell: the SLO against the fastest image model
    (``check_feasible``) and the pool against the lowest load of the sweeps (``check_workers``),
    on the published profile."""
    if not ({"workers", "slo_ms"} & given) or not _published(values, given) or \
            not {"workers", "slo_ms"} <= set(values):
        return
    from .ramsis import experiments as rx
    from .ramsis.model import MDPConfig, check_feasible

    if rx.profile_key("image") != "image":  # this process runs RAMSIS on another profile now
        return
    check_feasible(rx.get_profile("image"), MDPConfig(values["slo_ms"], values["workers"], 1.0))
    rx.check_workers(values["workers"], values["slo_ms"], rx.get_scale(scale))


def _kvcache(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The KV-cache chapter's own check (``check_parameters``: κ below 100, ...)."""
    if {"demand", "n_requests", "kappa"} <= set(values) and {"demand", "n_requests", "kappa"} & given:
        from .kvcache import experiments as kx

        kx.check_parameters(values["demand"], values["n_requests"], values["kappa"])


def _kairos(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The KAIROS chapter's own check (``check_parameters``)."""
    if {"model", "budget", "service"} <= set(values) and {"model", "budget", "service"} & given:
        from .kairos import experiments as kx

        kx.check_parameters(values["model"], values["budget"], values["service"])


def _shepherd_first_cell(values: Mapping[str, Any], given: set[str], scale: str) -> None:
    """The Shepherd chapter's first cell (``check_parameters``: the SLO against the model set's
    fastest batch-1 latency, λ), on the published profile; then the load experiment's trace."""
    keys = {"workers", "slo_ms", "model_set", "lam"}
    if keys <= set(values) and keys & given and _published(values, given):
        from .shepherd import experiments as sx

        if sx.active_profile().published:
            sx.check_parameters(values["workers"], values["slo_ms"], values["model_set"], values["lam"])
    _shepherd(values, given, scale)


#: per chapter: a check of its parameters together (every value, the reader's or the default;
#: the names the reader gave; the scale), run after each has passed its own check
CROSS: dict[str, Callable[[Mapping[str, Any], set[str], str], None]] = {
    "headtohead": _headtohead,
    "shepherd": _shepherd_first_cell,
    "tad": _tad,
    "ramsis": _ramsis,
    "kvcache": _kvcache,
    "kairos": _kairos,
}


def check_chapter_parameters(chapter: str, params: Mapping[str, Any],
                             defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Check the parameters given to ``chapter`` (name -> value, as the reader typed them);
    returns them, with a relative profile path made absolute where the kernel would not find
    it. ``defaults``: the chapter's parameters and their defaults (for the generic rule, and
    for the checks of several parameters together, :data:`CROSS`). Raises ConfigError naming
    the first bad parameter."""
    schema = SCHEMAS.get(chapter, {})
    out = dict(params)
    for name, value in params.items():
        check = schema.get(name) or COMMON.get(name)
        if check is None and defaults is not None and name in defaults:
            check = _generic(defaults[name])
        if check is not None:
            out[name] = check(name, value)
    cross = CROSS.get(chapter)
    if cross is not None:
        values = {k: v for k, v in (defaults or {}).items() if not isinstance(v, DefaultExpr)}
        values.update(out)
        scale = out.get("scale") or os.environ.get("INFSCHED_SCALE") or "default"
        cross(values, set(params), scale if scale in SCALES else "default")
    return out


def check_environment() -> None:
    """The environment variables a run reads, checked now (ConfigError naming the variable)."""
    from .limits import memory_limit
    from .sweep import env_processes

    env_processes()  # $INFSCHED_PROCESSES (or the older $INFSCHED_WORKERS)
    scale = os.environ.get("INFSCHED_SCALE")
    if scale is not None and scale.strip():
        require(scale in SCALES, "INFSCHED_SCALE", scale, "must be one of " + ", ".join(SCALES))
    memory_limit()
