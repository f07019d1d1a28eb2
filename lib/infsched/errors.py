"""The two errors a user of the library meets.

``ConfigError`` is raised for a parameter outside what is allowed; the message names the
parameter, the value given and what is allowed. ``InfeasibleError`` is raised when the inputs
are individually valid but no solution exists, and says why.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


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


def one_of(name: str, value: Any, allowed: list[Any] | tuple[Any, ...]) -> Any:
    """Return ``value`` if it is in ``allowed``, else raise a ConfigError listing the choices."""
    if value not in allowed:
        raise config_error(name, value, "must be one of " + ", ".join(map(repr, allowed)))
    return value


#: letters of other scripts drawn like a Latin one (Unicode's confusables, the ones a keyboard
#: layout or a copied text brings into a parameter name), mapped to it
_LOOK_ALIKE = str.maketrans("аеорсухіјѕԁһԛԝАВЕКМНОРСТХІЈЅαβεικνορτυχΑΒΕΗΙΚΜΝΟΡΤΥΧ",
                            "aeopcyxijsdhqwABEKMHOPCTXIJSabeikvoptuxABEHIKMNOPTYX")


def nearest_name(name: str, allowed: Iterable[str]) -> str:
    """A hint for an unknown parameter name: ``"; did you mean 'seed'?"`` when one allowed name is
    close, and, where the name holds a letter outside ASCII, which letters (a look-alike such as
    Cyrillic 'е' reads as 'e' but is another name); empty when there is nothing to say."""
    import difflib
    import unicodedata

    names = list(allowed)
    foreign = [c for c in dict.fromkeys(name) if ord(c) > 127]
    latin = name.translate(_LOOK_ALIKE)
    latin = unicodedata.normalize("NFKD", latin).encode("ascii", "ignore").decode() or latin
    best = [latin] if latin in names else difflib.get_close_matches(latin, names, n=1, cutoff=0.75)
    out = ""
    if foreign:
        out += ("; it holds the non-ASCII letter" + ("s " if len(foreign) > 1 else " ")
                + ", ".join(f"{c!r} (U+{ord(c):04X} {unicodedata.name(c, '?')})" for c in foreign))
    if best and best[0] != name:
        out += f"; did you mean {best[0]!r}?"
    return out


def unknown_keyword(name: str, where: str, takes: Iterable[str]) -> ConfigError:
    """The ConfigError for a keyword ``name`` that ``where`` (``"experiment fig7 of shepherd"``)
    does not take, listing the keywords it does: the message of the sweep's own name check
    (:func:`infsched.chapters.chapter_grid`)."""
    names = list(takes)
    return config_error("parameter", name, f"{where} does not take it; it takes "
                        + (", ".join(names) if names else "no parameters") + nearest_name(name, names))


def check_keywords(fn: F, where: str) -> F:
    """``fn`` (an experiment), rejecting a keyword it does not take with :func:`unknown_keyword`
    (a ConfigError listing the keywords it takes besides ``scale`` and ``seed``) instead of
    Python's TypeError, before anything runs. ``inspect.signature`` of the result is ``fn``'s
    own, so the sweep's name check sees the keywords it really takes."""
    sig = inspect.signature(fn)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return fn  # any name is passed on: checked where it is taken
    named = [n for n, p in sig.parameters.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes = [n for n in named if n not in ("scale", "seed")]

    @functools.wraps(fn)
    def checked(*args: Any, **kw: Any) -> Any:
        for k in kw:
            if k not in named:
                raise unknown_keyword(k, where, takes)
        return fn(*args, **kw)
    return checked  # type: ignore[return-value]
