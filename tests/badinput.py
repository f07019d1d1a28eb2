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

``bad_profile_files(folder)`` writes the bad raw profile CSVs (empty, binary, an absurd latency,
a fractional batch size) that every chapter taking ``-p profile=...`` is checked against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


def bad_profile_files(folder: Path, absurd_column: str = "p95_ms") -> Path:
    """Write the bad raw profiles every chapter that takes ``-p profile=...`` is tested with,
    each a copy of the stored CPU profile with one fault, into ``folder``, and return it:
    ``empty.csv`` (no bytes), ``binary.csv`` (not text), ``absurd.csv`` (``absurd_column`` of
    the first row is 1e300 ms) and ``fractional.csv`` (a batch size of 2.5)."""
    import pandas as pd

    from infsched.profiles import measured_file

    raw = pd.read_csv(measured_file())
    (folder / "empty.csv").write_bytes(b"")
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 4)
    absurd = raw.copy()
    absurd.loc[0, absurd_column] = 1e300
    absurd.to_csv(folder / "absurd.csv", index=False)
    frac = raw.copy()
    frac["batch"] = frac["batch"].astype(float)
    frac.loc[0, "batch"] = 2.5
    frac.to_csv(folder / "fractional.csv", index=False)
    return folder
