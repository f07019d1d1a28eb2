"""Refuse work that cannot fit, before allocating it; warn about work that is only long.

``check_memory(name, value, need, what)`` raises a :class:`~infsched.errors.ConfigError` naming
the parameter when the memory a computation is estimated to need, ``need`` bytes, exceeds
:func:`memory_limit`: half of this machine's physical memory, or ``$INFSCHED_MEMORY_LIMIT``
(bytes, or a number with a K, M, G or T suffix). The estimates are the sizes of the arrays
the computation allocates, from its parameters; they are lower bounds, so a refused run would
certainly not have fit. ``warn_long(what, seconds)`` warns, with the estimate, when a run is
expected to take more than an hour.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .errors import ConfigError, config_error

__all__ = ["check_memory", "fmt_bytes", "memory_limit", "physical_memory", "warn_long"]

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def physical_memory() -> int:
    """This machine's physical memory in bytes (16 GiB where it cannot be read)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def memory_limit() -> int:
    """The most memory one computation may plan to use: ``$INFSCHED_MEMORY_LIMIT`` if set
    (``"8G"``, ``"512M"``, bytes), else half of the physical memory."""
    raw = os.environ.get("INFSCHED_MEMORY_LIMIT", "").strip()
    if not raw:
        return physical_memory() // 2
    text = raw.upper().removesuffix("B").removesuffix("I")
    unit = text[-1] if text and text[-1] in _UNITS else ""
    try:
        value = float(text[:-1] if unit else text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise config_error("INFSCHED_MEMORY_LIMIT", raw, "must be a positive size in bytes, or "
                           "with a K, M, G or T suffix (e.g. 8G)")
    return int(value * _UNITS[unit])


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
    limit = memory_limit()
    if need > limit:
        source = ("$INFSCHED_MEMORY_LIMIT" if os.environ.get("INFSCHED_MEMORY_LIMIT", "").strip()
                  else f"half of this machine's {fmt_bytes(physical_memory())}")
        raise ConfigError(f"{name} = {value!r}: {what} would need about {fmt_bytes(need)} of memory, "
                          f"more than the limit of {fmt_bytes(limit)} ({source}); choose a smaller "
                          f"{name}")


def warn_long(what: str, seconds: float, *, threshold: float = 3600.0) -> None:
    """Warn (RuntimeWarning) when ``what`` is expected to take more than ``threshold`` seconds."""
    if seconds > threshold:
        if seconds < 86400 * 2:
            took = f"{seconds / 3600:.3g} hours"
        elif seconds < 86400 * 730:
            took = f"{seconds / 86400:.3g} days"
        else:
            took = f"{seconds / (86400 * 365):.3g} years"
        warnings.warn(f"{what} will take about {took} on one core (an estimate)", RuntimeWarning,
                      stacklevel=3)
