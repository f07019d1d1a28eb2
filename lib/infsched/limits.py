"""Refuse work that cannot fit, before allocating it; warn about work that is only long.

``check_memory(name, value, need, what)`` raises a :class:`~infsched.errors.ConfigError` naming
the parameter when the memory a computation is estimated to need, ``need`` bytes, exceeds
:func:`memory_limit`: half of this machine's physical memory, or the limit the process really
runs under where that is smaller (:func:`effective_limit`: its address-space limit,
``RLIMIT_AS``, as ``prlimit --as`` or ``ulimit -v`` set it, or its container's cgroup memory
limit, v2 ``memory.max`` or v1 ``memory.limit_in_bytes``), or ``$INFSCHED_MEMORY_LIMIT`` (bytes,
or a number with a K, M, G or T suffix), which overrides both. The estimates are the sizes of the arrays
the computation allocates, from its parameters; they are lower bounds, so a refused run would
certainly not have fit. ``warn_long(what, seconds)`` warns, with the estimate, when a run is
expected to take more than an hour, and refuses it (``check_budget``) when more than the CPU
budget, 24 CPU-hours unless ``$INFSCHED_MAX_CPU_H`` (``--max-cpu-hours``) says otherwise; the
simulators call it with lower bounds from the rates measured here (TAD, Shepherd, KV-cache,
KAIROS). ``check_grid`` bounds a sweep the same way from its counted points, before listing them.
The memory limit of a cgroup is read from the process's own cgroup and each above it
(``/proc/self/cgroup``), not only the root's.

``chapter_estimate(chapter, params, scale, processes)`` says how long ``infsched run`` will take
and what that rests on: the README's measured CPU seconds per chapter at ``default`` scale
(:data:`DEFAULT_CPU_S`), its paper-scale figures (:data:`PAPER_S`; the head to head's derived
from its scale settings), and how a size parameter larger than its default raises it
(:data:`SIZE_PARAMS`). Update the tables when the README's measurements are re-taken.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import Any

from .errors import ConfigError, config_error

__all__ = ["chapter_estimate", "check_budget", "check_grid", "check_memory", "cpu_budget", "effective_limit", "fmt_bytes", "fmt_duration",
           "memory_limit", "physical_memory", "warn_long"]

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def physical_memory() -> int:
    """This machine's physical memory in bytes (16 GiB where it cannot be read)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 16 * 2**30


#: the cgroup files that hold a container's memory limit: v2 (unified), then v1; "max" or a
#: number of bytes (v1 writes a huge number for "no limit")
CGROUP_MEMORY_FILES = (Path("/sys/fs/cgroup/memory.max"),
                       Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


#: where this process's cgroup is named, and where the cgroup filesystem is mounted
CGROUP_PROC, CGROUP_ROOT = Path("/proc/self/cgroup"), Path("/sys/fs/cgroup")


def cgroup_memory_files(proc: Path | None = None, root: Path | None = None) -> list[Path]:
    """The cgroup files whose memory limit applies to this process: those of its own cgroup (as
    ``/proc/self/cgroup`` names it, v2 ``0::/path`` or v1 ``N:memory:/path``) and of each cgroup
    above it, whose limits hold for everything below them, then the root's
    (:data:`CGROUP_MEMORY_FILES`). A container usually sees its own cgroup as the root; a systemd
    service or a batch job's step sees its limit only in its own cgroup's folder."""
    proc, root = proc or CGROUP_PROC, root or CGROUP_ROOT
    out: list[Path] = []
    try:
        lines = proc.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[2].startswith("/"):
            continue
        hid, controllers, rel = parts
        if hid == "0" and controllers == "":
            base, leaf = root, "memory.max"
        elif "memory" in controllers.split(","):
            base, leaf = root / "memory", "memory.limit_in_bytes"
        else:
            continue
        folder = Path(rel)
        while folder != folder.parent:
            out.append(base / folder.relative_to("/") / leaf)
            folder = folder.parent
    return list(dict.fromkeys(out + [Path(p) for p in CGROUP_MEMORY_FILES]))


def effective_limit() -> tuple[int, str] | None:
    """The smallest memory limit this process runs under, and where it comes from: its
    address-space limit (``RLIMIT_AS``, ``resource.getrlimit``) or its cgroup's
    (:func:`cgroup_memory_files`); None where none is set below the machine's physical memory
    (cgroup v1 writes a number near 2^63 for "no limit") or the platform gives none."""
    found: list[tuple[int, str]] = []
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            found.append((int(soft), "this process's address-space limit, RLIMIT_AS"))
    except (ImportError, AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    for path in cgroup_memory_files():
        value = _cgroup_limit(Path(path))
        if value is not None:
            found.append((value, f"this container's cgroup memory limit, {path}"))
    found = [f for f in found if f[0] < physical_memory()]
    return min(found) if found else None


@functools.lru_cache(maxsize=16)
def _cgroup_limit(path: Path) -> int | None:
    """The limit a cgroup file holds (None: "max", absent, unreadable), read once per process
    (a check may run in a loop, and reading sysfs costs more than the check)."""
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def _limit() -> tuple[int, str]:
    """:func:`memory_limit` and where it comes from (said in a refusal)."""
    raw = os.environ.get("INFSCHED_MEMORY_LIMIT", "").strip()
    if not raw:
        half = physical_memory() // 2
        eff = effective_limit()
        if eff is not None and eff[0] < half:
            return eff
        return half, f"half of this machine's {fmt_bytes(physical_memory())}"
    text = raw.upper().removesuffix("B").removesuffix("I")
    unit = text[-1] if text and text[-1] in _UNITS else ""
    try:
        value = float(text[:-1] if unit else text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise config_error("INFSCHED_MEMORY_LIMIT", raw, "must be a positive size in bytes, or "
                           "with a K, M, G or T suffix (e.g. 8G)")
    return int(value * _UNITS[unit]), "$INFSCHED_MEMORY_LIMIT"


def memory_limit() -> int:
    """The most memory one computation may plan to use: ``$INFSCHED_MEMORY_LIMIT`` if set
    (``"8G"``, ``"512M"``, bytes), else half of the physical memory, or the process's effective
    limit (:func:`effective_limit`) where that is smaller."""
    return _limit()[0]


def fmt_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps it >= 1 (``7.0 GiB``, ``8.0 TiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} EiB"  # pragma: no cover


def check_memory(name: str, value: Any, need: float, what: str) -> None:
    """Raise a ConfigError naming ``name = value`` when ``need`` bytes (the estimated memory of
    ``what``) exceed :func:`memory_limit`."""
    limit, source = _limit()
    if need > limit:
        raise ConfigError(f"{name} = {value!r}: {what} would need about {fmt_bytes(need)} of memory, "
                          f"more than the limit of {fmt_bytes(limit)} ({source}); choose a smaller "
                          f"{name}")


#: environment: the most CPU-hours one request may be estimated to take (``--max-cpu-hours``)
MAX_CPU_H_ENV = "INFSCHED_MAX_CPU_H"
#: the default budget: a day of one core, twenty-four times the one-hour warning below and about
#: six times the 3.8 CPU-hours the whole results store costs to compute (README), so that nothing the book
#: does comes near it and a mistyped size (n_jobs = 10**13: 11.6 days) is refused
DEFAULT_MAX_CPU_H = 24.0


def cpu_budget() -> tuple[float, str]:
    """The CPU-seconds budget of one request and where it comes from: ``$INFSCHED_MAX_CPU_H``
    (hours; ``inf`` for none) if set, else :data:`DEFAULT_MAX_CPU_H`."""
    raw = os.environ.get(MAX_CPU_H_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_CPU_H * 3600.0, f"the default {DEFAULT_MAX_CPU_H:g} CPU-hours"
    try:
        hours = float(raw)
    except ValueError:
        hours = float("nan")
    if not hours > 0:
        raise config_error(MAX_CPU_H_ENV, raw, "must be a positive number of CPU-hours (or inf)")
    return hours * 3600.0, f"{MAX_CPU_H_ENV} = {raw}"


def fmt_long(seconds: float) -> str:
    """``seconds`` in hours, days or years, three significant digits."""
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.3g} hours"
    if seconds < 86400 * 730:
        return f"{seconds / 86400:.3g} days"
    return f"{seconds / (86400 * 365):.3g} years"


def check_budget(what: str, cpu_seconds: float, basis: str = "an estimate") -> None:
    """Raise ConfigError, before any work, when ``what`` is estimated to take more than the
    CPU budget (:func:`cpu_budget`): the estimate, what it rests on, and how to raise the budget."""
    budget, source = cpu_budget()
    if cpu_seconds > budget:
        raise ConfigError(f"{what} would take about {fmt_long(cpu_seconds)} of CPU ({basis}), more "
                          f"than the budget of {budget / 3600:.3g} CPU-hours ({source}); ask for "
                          f"less, or raise the budget with --max-cpu-hours H or {MAX_CPU_H_ENV}=H")


def warn_long(what: str, seconds: float, *, threshold: float = 3600.0) -> None:
    """Warn (RuntimeWarning) when ``what`` is expected to take more than ``threshold`` seconds;
    refuse it (ConfigError, :func:`check_budget`) when more than the CPU budget."""
    check_budget(what, seconds, "an estimate, on one core")
    if seconds > threshold:
        warnings.warn(f"{what} will take about {fmt_long(seconds)} on one core (an estimate)",
                      RuntimeWarning, stacklevel=3)


# ------------------------------------------------------------------ how long a chapter takes

#: CPU seconds of each chapter at ``default`` scale with its default parameters, from an empty
#: sweep cache and an empty numba cache, the results store off: the kernel and every process it
#: started (README, book/guide.md; measured on the quiet 2-core machine at b292ce6, the KV-cache
#: chapter again with its time-indexed bound, RAMSIS and the head to head again at 0e6f128 after
#: RAMSIS's solver moved to sparse kernels)
DEFAULT_CPU_S: dict[str, float] = {"tad": 60.0, "ramsis": 288.0, "kvcache": 396.0, "kairos": 56.0,
                                   "shepherd": 155.0, "profiling": 145.0, "headtohead": 255.0}
#: when they were measured (said in every estimate); a chapter re-measured later has its own date
MEASURED_ON = "2026-11-26"
MEASURED_ON_BY: dict[str, str] = {"ramsis": "2026-11-29", "headtohead": "2026-11-29", "kvcache": "2026-11-29"}


def _measured_on(chapter: str) -> str:
    return MEASURED_ON_BY.get(chapter, MEASURED_ON)

#: at ``paper`` scale: (low, high) seconds of wall time, and what they rest on: the chapter's
#: build from empty by ``infsched results build``, on 2 processes (low: its wall time; high: its
#: CPU seconds, one core), in the whole store's regeneration (2026-11-28, README) or, for a
#: chapter rebuilt since, alone (:func:`_alone`)
REGENERATED_ON = "2026-11-28"


def _measured(cpu_s: float, wall_s: float, extra: str = "") -> tuple[float, float, str]:
    return (wall_s, cpu_s, f"{cpu_s:,.0f} CPU s and {wall_s / 60:.0f} min wall on 2 cores, measured "
            f"by the results store's regeneration from empty ({REGENERATED_ON}, README){extra}")


def _alone(cpu_s: float, wall_s: float, extra: str = "") -> tuple[float, float, str]:
    return (wall_s, cpu_s, f"{cpu_s:,.0f} CPU s and {wall_s / 60:.0f} min wall on 2 cores, measured: "
            f"the chapter's results built alone from empty by the one command (2026-11-29, README){extra}")


#: a chapter rendered from the results store (what ``make book`` does): (wall s, CPU s) of
#: ``infsched run CHAPTER`` with every sweep point served by the store, on the quiet machine
#: (README's table; measured on :data:`STORE_RENDER_ON`)
STORE_RENDER_S: dict[str, tuple[float, float]] = {
    "tad": (13.0, 13.0), "ramsis": (22.0, 22.0), "kvcache": (33.0, 34.0), "kairos": (24.0, 23.0),
    "shepherd": (35.0, 35.0), "headtohead": (33.0, 33.0)}
STORE_RENDER_ON = "2026-11-26"
#: a chapter re-measured later, with its own date
STORE_RENDER_ON_BY: dict[str, str] = {"kvcache": "2026-11-29"}

PAPER_S: dict[str, tuple[float, float, str]] = {
    "tad": _alone(3566.2, 1810.2, ", Figs. 9-10 at the paper's length"),
    "ramsis": _alone(1504.7, 899.0, "; 4.8 GB peak"),
    "kvcache": _alone(2998.7, 1546.6, "; Fig. 2's 400 paper-size trials with the local search (no "
                      "CP-SAT, no LP at these sizes: kvcache/scales.py), the time-indexed bound and "
                      "iterated search on 100 of those trials and the 80 small ones"),
    "kairos": _measured(1516.1, 794.1),
    "shepherd": _measured(1193.2, 645.9),
    "headtohead": _alone(2994.3, 1557.1),
}

#: a chapter parameter its time grows with: (its default, how it grows)
SIZE_PARAMS: dict[str, dict[str, tuple[float, str]]] = {
    "tad": {"n_servers": (4096, "linear")},       # paper: n x 10^5 jobs per point; Figs. 9-10: n servers
    "shepherd": {"workers": (12, "linear")},      # the load experiment's streams and GPUs
    "kvcache": {"n_requests": (1000, "linear")},  # Table 1 and the alpha/beta sweeps
    "ramsis": {"workers": (60, "grows")},         # the MDP's states and the simulations
    "headtohead": {"K": (60, "grows")},
    "kairos": {"budget": (2.5, "grows")},         # the configurations within the budget
}


def fmt_duration(seconds: float) -> str:
    """``95`` -> ``"1.6 min"``: seconds, minutes, hours or days, two significant digits."""
    seconds = max(0.0, float(seconds))
    if seconds < 90:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.2g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.2g} hours"
    return f"{seconds / 86400:.3g} days"


def _span(lo: float, hi: float) -> str:
    a, b = fmt_duration(lo), fmt_duration(hi)
    if a == b:
        return a
    ua, ub = a.split(" ", 1)[1], b.split(" ", 1)[1]
    return f"{a.split(' ', 1)[0]}-{b}" if ua == ub else f"{a} to {b}"


def chapter_estimate(chapter: str, params: dict[str, Any], scale: str | None,
                     processes: int | None = None) -> tuple[float, float, str] | None:
    """How long ``infsched run chapter`` will take: ``(low, high, message)`` in seconds of wall
    time, or None where nothing was measured (``smoke`` scale, a chapter not in the table). The
    message says what the estimate rests on: the README's measured CPU seconds at ``default``
    scale, divided among ``processes`` (at most 2 counted: the measurement's machine had 2
    cores); at ``paper`` scale the README's paper-scale figures or, for the head to head, the
    scale settings; and, where a size parameter is larger than its default, how the time grows
    with it. A cached sweep point is not recomputed, so a rerun takes less."""
    if scale is None and not os.environ.get("INFSCHED_SCALE", "").strip():
        from . import store  # the chapter's parameters cell picks paper when the store holds it

        st = store.status(chapter) if store.enabled() else None
        if st is not None and st["current"]:
            head = (f"{chapter} at paper scale from the results store ({st['n_points']:,} stored "
                    f"points, built {str(st.get('built', ''))[:10]}): only what is not a stored "
                    "sweep point is computed: ")
            if chapter not in STORE_RENDER_S:
                return (0.0, float("inf"), head + "not measured")
            wall, cpu = STORE_RENDER_S[chapter]
            return (wall, wall, head + f"{wall:.0f} s wall and {cpu:.0f} CPU s when measured "
                    f"({STORE_RENDER_ON_BY.get(chapter, STORE_RENDER_ON)}, README)")
    scale = scale or os.environ.get("INFSCHED_SCALE") or "default"
    if chapter not in DEFAULT_CPU_S or scale not in ("default", "paper"):
        return None
    if scale == "default":
        cpu = DEFAULT_CPU_S[chapter]
        p = max(1, min(int(processes or 2), 2))
        lo, hi = cpu / p, cpu
        basis = (f"{cpu:.0f} CPU s measured at default scale with the default parameters on the "
                 f"project's 2-core machine ({_measured_on(chapter)}, README); on {p} process"
                 + ("es the wall time is between half of that and all of it" if p > 1
                    else " the wall time is about all of it"))
    elif chapter in PAPER_S:
        lo, hi, basis = PAPER_S[chapter]
    else:
        cpu = DEFAULT_CPU_S[chapter]
        return (cpu / 2, float("inf"), f"{chapter} at paper scale: no estimate (its time depends on "
                f"how fast this machine runs the models it times); at default scale it took "
                f"{cpu:.0f} CPU s ({_measured_on(chapter)}, README)")
    notes = []
    for name, (default, how) in SIZE_PARAMS.get(chapter, {}).items():
        v = params.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and default and v > default:
            k = float(v) / default
            if how == "linear":
                notes.append(f"{name} = {v!r} is {k:.3g}x its default {default:g}, and the parts "
                             f"that simulate it grow in proportion (the upper end above is {k:.3g}x that at the default)")
                hi *= k
            else:
                notes.append(f"{name} = {v!r} is {k:.3g}x its default {default:g}: the time grows "
                             "with it, by how much is not estimated")
    msg = f"{chapter} at {scale} scale: about {_span(lo, hi)} ({basis})"
    if notes:
        msg += "; " + "; ".join(notes)
    if scale == "paper":
        from . import store

        st = store.status(chapter) if store.enabled() else None
        if st is not None and st["current"]:
            msg += (f"; the results store holds this chapter's paper-scale points (built "
                    f"{st['built'][:10]}): points whose parameters match are read from it, not "
                    "computed, so with the default parameters the run takes minutes")
    return lo, hi, msg


#: CPU seconds the sweep machinery spends on one point that computes nothing (key, cache look-up,
#: pickle written), measured on the 2-core machine (2026-11-28, loaded): the least a point of any
#: scale costs, the estimate where nothing was measured (``smoke`` scale)
SWEEP_POINT_CPU_S = 0.0018


def check_grid(chapter: str, n_experiments: int, n_points: int, scale: str) -> None:
    """Refuse (ConfigError, :func:`check_budget`), before the grid is expanded, a sweep of
    ``n_points`` points of ``chapter`` whose estimate exceeds the CPU budget: at ``default`` or
    ``paper`` scale each point costs its chapter's measured CPU seconds at that scale shared
    among its ``n_experiments`` experiments; elsewhere, at least the sweep's own cost of a point
    (:data:`SWEEP_POINT_CPU_S`)."""
    if scale == "default" and chapter in DEFAULT_CPU_S:
        each = DEFAULT_CPU_S[chapter] / max(1, n_experiments)
        basis = (f"{each:.3g} CPU s a point: {chapter}'s {DEFAULT_CPU_S[chapter]:.0f} CPU s at "
                 f"default scale ({_measured_on(chapter)}, README) over its {n_experiments} experiments")
    elif scale == "paper" and chapter in PAPER_S:
        each = PAPER_S[chapter][1] / max(1, n_experiments)
        basis = (f"{each:.3g} CPU s a point: {chapter}'s {PAPER_S[chapter][1]:,.0f} CPU s at paper "
                 f"scale ({REGENERATED_ON}, README) over its {n_experiments} experiments")
    else:
        each = SWEEP_POINT_CPU_S
        basis = f"at least {each * 1000:.2g} ms of CPU a point, the sweep's own work"
    check_budget(f"a sweep of {n_points:,} points", n_points * each, basis)
    check_memory("points", n_points, n_points * GRID_POINT_BYTES, "the sweep's list of points")


#: bytes one point of a chapter's sweep grid takes before it runs (its dict of chapter,
#: experiment, scale, seed and one parameter, measured by tracemalloc: 224 B), a lower bound on
#: what listing the grid needs
GRID_POINT_BYTES = 224

