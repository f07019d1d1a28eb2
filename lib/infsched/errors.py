"""The two errors a user of the library meets.

``ConfigError`` is raised for a parameter outside what is allowed; the message names the
parameter, the value given and what is allowed. ``InfeasibleError`` is raised when the inputs
are individually valid but no solution exists, and says why.
"""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A parameter outside its allowed range or set.

    Build it with :func:`config_error` so every message has the same shape:
    ``<name> = <value>: <what is allowed>``.
    """


class InfeasibleError(ValueError):
    """Valid inputs with no feasible solution (an LP, a target above the best model, ...)."""


def config_error(name: str, value: Any, allowed: str) -> ConfigError:
    """Return a ConfigError naming the parameter, the offending value and what is allowed."""
    return ConfigError(f"{name} = {value!r}: {allowed}")


def require(condition: bool, name: str, value: Any, allowed: str) -> None:
    """Raise ``ConfigError`` unless ``condition`` holds."""
    if not condition:
        raise config_error(name, value, allowed)


def as_float(value: Any) -> float:
    """``float(value)`` for a real number; ``TypeError`` for a string, bytes or a bool, which
    ``float`` would convert: a parameter is rejected, not coerced (``float("21")`` is 21)."""
    if isinstance(value, (str, bytes, bool)) or type(value).__name__ in ("bool_", "bool"):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def one_of(name: str, value: Any, allowed: "list[Any] | tuple[Any, ...]") -> Any:
    """Return ``value`` if it is in ``allowed``, else raise a ConfigError listing the choices."""
    if value not in allowed:
        raise config_error(name, value, "must be one of " + ", ".join(map(repr, allowed)))
    return value
