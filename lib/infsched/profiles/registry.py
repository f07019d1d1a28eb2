"""Choosing a profile: one registry for every chapter that takes ``-p profile=...``.

A chapter's ``profile`` is a *name* or the path of a reader's raw profile CSV (``infsched
profile``). The names are the published profiles (:data:`PROFILE_NAMES`, the RAMSIS artifact's
model sets), ``"measured"`` (the profile measured on this machine,
``data/profiles/measured_cpu.csv``) and a chapter's own word for its paper's numbers
(:data:`PUBLISHED`). A path is looked up where a reader expects it (:func:`locate`: as given,
else from the working directory, then the repository root) and checked by
:func:`~infsched.profiles.raw.read_raw`, whose errors name the file, the line, the column and
the value.

A raw profile is then held as a :class:`RawProfile`: a copy of the file's bytes stored under
their hash (:func:`snapshot`), so that a file rewritten later, or still being written, does not
change a run; its :attr:`~RawProfile.key` (the content hash) is what a sweep's cache key sees,
so two files with different contents never share a cached point and the same content under
another name does; and a worker process loads the same profile from the copy's path
(:meth:`RawProfile.read` checks the copy still has the content its name says).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from infsched.errors import ConfigError
from infsched.profiles.raw import read_raw
from infsched.profiles.tables import PROFILE_NAMES

__all__ = ["PUBLISHED", "MEASURED", "PROFILE_NAMES", "REPO_ROOT", "measured_file", "locate",
           "content_key", "snapshot", "RawProfile", "raw_profile", "read_copy"]

#: a chapter's word for its paper's own profile (RAMSIS: the artifact's; Shepherd: Table 4)
PUBLISHED = "published"
#: the name of the profile measured on this machine (``data/profiles/measured_cpu.csv``)
MEASURED = "measured"
_MEASURED_FILE = "measured_cpu.csv"
#: where a relative path is looked up after the working directory
REPO_ROOT = Path(__file__).resolve().parents[3]
#: the prefix of a content-addressed copy's file name
_COPY_PREFIX = "raw-"


def measured_file(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The profile measured on this machine: ``<data>/profiles/measured_cpu.csv``."""
    from infsched.report import find_data_dir

    return find_data_dir(data_dir) / "profiles" / _MEASURED_FILE


def locate(source: str | os.PathLike[str],
           roots: tuple[Path, ...] | None = None) -> tuple[Path | None, list[Path]]:
    """Where the path ``source`` is: the first existing of the places looked (an absolute path
    as is; a relative one under each of ``roots``, by default the working directory, then
    :data:`REPO_ROOT`), resolved, or None; and those places, for a message."""
    given = Path(os.fspath(source)).expanduser()
    if given.is_absolute():
        places = [given]
    else:
        places = [r / given for r in (roots if roots is not None else (Path.cwd(), REPO_ROOT))]
    found = next((p for p in places if p.is_file()), None)
    return (found.resolve() if found is not None else None), places


def content_key(data: bytes) -> str:
    """The cache key of a profile file's content: the first 16 hex digits of its sha256."""
    return hashlib.sha256(data).hexdigest()[:16]


def snapshot(data: bytes) -> Path:
    """Write ``data`` once under its content key (atomically) and return the copy's path: in the
    sweep cache's ``profiles`` folder, else the system's temporary folder."""
    from infsched.sweep import default_cache_dir

    name = f"{_COPY_PREFIX}{content_key(data)}.csv"
    for folder in (default_cache_dir() / "profiles", Path(tempfile.gettempdir()) / "infsched-profiles"):
        path = folder / name
        try:
            if path.is_file() and path.read_bytes() == data:
                return path.resolve()
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            return path.resolve()
        except OSError:
            continue
    raise ConfigError(f"profile: could not store a copy of the raw profile in {default_cache_dir()} "
                      f"or {tempfile.gettempdir()}")


@dataclass(frozen=True)
class RawProfile:
    """A reader's raw profile CSV, held by content: ``path`` is the content-addressed copy
    (:func:`snapshot`), ``key`` its content hash, ``origin`` the file the reader named (for
    messages; it stays out of equality, so the same content anywhere is the same profile)."""

    path: str
    key: str
    origin: str = field(default="", compare=False)

    def read(self) -> pd.DataFrame:
        """The raw profile, checked (:func:`~infsched.profiles.raw.read_raw`); an error names the
        reader's file, not the copy, and a copy whose content no longer matches its key fails."""
        p = Path(self.path)
        if p.is_file() and content_key(p.read_bytes()) != self.key:
            raise ConfigError(f"profile file {p}: its content no longer matches its hash "
                              f"({self.key}); choose the profile again")
        try:
            return read_raw(p)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(self.path, self.origin or self.path)) from None


def read_copy(path: str | os.PathLike[str], origin: str = "") -> pd.DataFrame:
    """The raw profile at ``path``, checked: a registry copy (:func:`snapshot`) through its
    :class:`RawProfile` (its content must still match its name), any other file as it is. A
    worker process that was handed a copy's path loads the caller's profile this way."""
    p = Path(path)
    if p.name.startswith(_COPY_PREFIX) and len(p.stem) == len(_COPY_PREFIX) + 16:
        return RawProfile(str(p), p.stem[len(_COPY_PREFIX):], origin).read()
    return read_raw(p)


def raw_profile(path: str | os.PathLike[str]) -> RawProfile:
    """The :class:`RawProfile` of the existing file ``path``: its bytes copied under their hash
    and checked (a ConfigError naming the file, the line, the column and the value)."""
    data = Path(path).read_bytes()
    raw = RawProfile(str(snapshot(data)), content_key(data), str(Path(path).resolve()))
    try:
        raw.read()
    except ConfigError:
        Path(raw.path).unlink(missing_ok=True)   # keep no copy of a file that is refused
        raise
    return raw
