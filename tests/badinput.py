"""The shared body of the bad-input tables (``tests/*/test_bad_inputs.py``, issue 21).

A table is a list of ``(name, call)``: ``call`` (with the module's fixture value, if it takes
one) must raise the expected error (a :class:`~infsched.errors.ConfigError` unless the row
says otherwise, as ``(name, call, InfeasibleError)``) whose message starts with
``"<name> = "``: the parameter as the user typed it, then its value. ``table(CASES)`` is the
``pytest.mark.parametrize`` of such a table, with readable ids; ``check(name, call, *args)``
is the assertion::

    from tests.badinput import check, table

    @table(CASES)
    def test_bad_input_names_its_parameter(name, call, error):
        check(name, call, error=error)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest

from infsched.errors import ConfigError


def _rows(cases: Sequence[tuple]) -> list[tuple[str, Callable[..., Any], type]]:
    return [(c[0], c[1], c[2] if len(c) > 2 else ConfigError) for c in cases]


def table(cases: Sequence[tuple]) -> Any:
    """``pytest.mark.parametrize("name, call, error", ...)`` over ``cases``."""
    rows = _rows(cases)
    return pytest.mark.parametrize("name, call, error", rows,
                                   ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(rows)])


def check(name: str, call: Callable[..., Any], *args: Any, error: type = ConfigError) -> str:
    """Assert ``call(*args)`` raises ``error`` whose message starts with ``"<name> = "``;
    return the message."""
    with pytest.raises(error) as info:
        call(*args)
    msg = str(info.value)
    assert type(info.value) is error or isinstance(info.value, error), type(info.value)
    assert msg.startswith(f"{name} = "), msg
    return msg
