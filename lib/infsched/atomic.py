"""Writing a file whole or not at all: a temporary file in the same folder, then a rename.

:func:`atomic_write` is how the sweep cache, the results store and ``infsched sweep --out`` write:
a reader (another run, a crash, a full disk) sees the old file or the new one, never half of one.
A write that fails (a full disk: ``ENOSPC``, a quota, a read-only folder) removes its temporary
file and raises :class:`WriteError`, an OSError whose message names the file, why, and the space
left on its filesystem."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["WriteError", "atomic_write", "free_space"]


class WriteError(OSError):
    """A file could not be written; ``str()`` names it, the cause and the free space."""

    def __init__(self, path: Path, exc: OSError, note: str = "") -> None:
        super().__init__(exc.errno, exc.strerror or str(exc), str(path))
        free = free_space(path)
        self.message = (f"cannot write {path}: {exc.strerror or exc}"
                        f" ({'free space unknown' if free is None else fmt_bytes(free) + ' free there'})"
                        f"{'; ' + note if note else ''}")

    def __str__(self) -> str:
        return self.message


def fmt_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps it >= 1 (as :func:`infsched.limits.fmt_bytes`,
    which this module, below the results store that limits reads, cannot import)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} TiB"  # pragma: no cover


def free_space(path: Path) -> int | None:
    """Bytes free on the filesystem holding ``path`` (or its nearest existing folder)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def _write(f: Any, data: bytes | str) -> None:
    f.write(data)


def atomic_write(path: Path, data: bytes | str | None = None, *, writer: Callable[[Path], None] | None = None,
                 mode: int = 0o644, note: str = "") -> None:
    """Write ``data`` (bytes or text, UTF-8) to ``path``, or let ``writer(tmp)`` write the
    temporary file, then rename it over ``path``. On failure nothing is left but the old file,
    and :class:`WriteError` is raised (``note`` is added to its message)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if writer is None:
            with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w",
                           **({} if isinstance(data, bytes) else {"encoding": "utf-8"})) as f:
                _write(f, data if data is not None else b"")
        else:
            os.close(fd)
            writer(Path(tmp))
        os.chmod(tmp, mode)  # mkstemp's 0o600 would follow the file into a checkout
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, WriteError):
            raise
        raise WriteError(path, exc, note) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
