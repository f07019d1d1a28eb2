"""The results store: the paper-scale sweep points the rendered book shows, committed as text.

A sweep's points (:func:`infsched.sweep.run_sweep`) are cached per machine as pickles keyed on
the code that computed them. The *store* is the part of that work the book renders: every point
a chapter needs at the ``paper`` scale, committed under ``data/results/`` in plain JSON lines,
each with its provenance (the commit and code version that computed it, its parameters and
seed, its CPU and wall seconds, the date, the machine and its load). Only the project's own
command writes it (``infsched results build CHAPTER``, :func:`infsched.results.build`); nothing in it is typed by
hand; the command lives in :mod:`infsched.results`, above the runner, since it runs chapters.

Keys and staleness. A stored point is keyed on its function's ``module.qualname``, its
parameters and its function's *results version* (:func:`results_version`), an integer that a
change altering the function's numbers must bump. The key does not hash the code: a refactor
that keeps the numbers does not force hours of recomputation. What guards a change that alters
numbers without a bump is ``tests/test_store_sample.py``: it recomputes a seeded random sample of the
stored points with the current code (about two CPU minutes) and fails on any difference beyond
float round-off, and it fails when a stored entry's results version is not its function's
current one (a bump without a rebuild). Entries computed by an earlier code version with the same
results version are counted on the page (:func:`page_note`).

Layout (``data/results/``)::

    points/<module.qualname>.jsonl   one stored point per line, sorted by key (over 4 MB: 16
                                     shards <module.qualname>@<0-f>.jsonl by the key's first digit)
    <chapter>.json                   a chapter's manifest: the scale, the keys it reads, when and
                                     where it was built, its CPU seconds

A point's value is encoded exactly (:func:`encode`: floats by ``repr``, numpy arrays and scalars,
DataFrames with their dtypes, tuples, dicts with non-string keys); a value that would not come
back identical is refused when recorded, never stored approximately.

Reading: :func:`lookup` (called by ``run_sweep`` after its own cache) serves a stored point when
its key matches. With ``$INFSCHED_STORE=off`` nothing is served. Under ``make book`` a chapter whose
manifest is current renders at ``paper`` scale (:func:`book_scale`), strictly: a point it needs
that the store lacks raises instead of starting hours of computation.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import glob
import hashlib
import importlib
import json
import math
import os
import platform
import random
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .cache import _jsonable  # the sweep cache's key encoding: one parameter, one text
from .errors import ConfigError, require

__all__ = ["Entry", "book_scale", "check_intact", "commit_records", "integrity", "line_digest", "seal", "decode", "encode", "load_manifest", "lookup",
           "page_note", "results_version", "sample_entries", "store_dir",
           "version_of"]

#: the JSON layout of an entry; bumped only when the layout changes
STORE_FORMAT = 1
#: an encoded value or parameter set longer than this (JSON characters) is stored zlib'd
PACK_ABOVE = 1024
#: a function's points file larger than this (bytes) is written as 16 shards by key
SHARD_ABOVE = 4_000_000
#: numeric arrays larger than this many bytes are stored zlib-compressed (exact, like the rest)
ZLIB_ABOVE = 1024
#: environment: ``off`` disables serving from the store
STORE_ENV = "INFSCHED_STORE"
#: environment: a folder where run_sweep appends a record of every point it returns (set by build)
RECORD_ENV = "INFSCHED_STORE_RECORD"
#: environment: set by ``make book``; a chapter rendered from the store at ``paper`` scale then
#: refuses to compute a point the store lacks
STRICT_ENV = "INFSCHED_STORE_STRICT"
#: environment: where the store lives (default: the repository's data/results)
DIR_ENV = "INFSCHED_RESULTS"


def store_dir() -> Path:
    """``$INFSCHED_RESULTS`` if set, else ``data/results`` beside the library's checkout."""
    env = os.environ.get(DIR_ENV, "").strip()
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data" / "results"


# --------------------------------------------------------------------------- results versions

def results_version(version: int, *, volatile: Iterable[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a sweep point function's results version: ``@results_version(1)``.

    Bump it in the same commit as any change that alters what the function returns for the same
    parameters (a kernel's arithmetic, a default, a random stream), then rebuild the store
    (``infsched results build``). ``volatile`` names the fields (dict keys or DataFrame columns)
    that measure this machine rather than the model (wall-clock solve times): they are stored
    but never compared when a stored point is recomputed."""
    require(isinstance(version, int) and not isinstance(version, bool) and version >= 1,
            "version", version, "must be a positive integer")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__results_version__ = int(version)  # type: ignore[attr-defined]
        fn.__results_volatile__ = tuple(volatile)  # type: ignore[attr-defined]
        return fn

    return mark


def version_of(fn: Callable[..., Any]) -> int | None:
    """The results version ``fn`` declares, or None (its points are never stored)."""
    return getattr(fn, "__results_version__", None)


def fn_name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def resolve(name: str) -> Callable[..., Any]:
    """The function named ``module.qualname`` (as stored)."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ConfigError(f"fn = {name!r}: no such function")


# --------------------------------------------------------------------------- exact encoding

def encode(value: Any) -> Any:
    """``value`` as JSON that :func:`decode` turns back into an identical value: plain floats,
    ints, strings, bools and None as themselves (non-finite floats tagged), numpy scalars and
    arrays and DataFrames and Series with their dtypes, tuples, sets, dicts with non-string keys
    and the library's own dataclasses (by class name and fields) tagged. Raises TypeError for
    anything else."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, np.integer):
        return value
    if isinstance(value, float) and not isinstance(value, np.floating):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, np.generic):
        if isinstance(value, np.datetime64) or isinstance(value, np.timedelta64):
            raise TypeError(f"cannot store {type(value).__name__}")
        return {"$np": value.dtype.str, "v": encode(value.item())}
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            raw = np.ascontiguousarray(value).tobytes()
            if len(raw) > ZLIB_ABOVE:  # RAMSIS's policy tables: 40 MB as base64, 0.6 MB zlib'd
                return {"$nd": value.dtype.str, "shape": list(value.shape),
                        "z64": base64.b64encode(zlib.compress(raw, 9)).decode()}
            return {"$nd": value.dtype.str, "shape": list(value.shape),
                    "b64": base64.b64encode(raw).decode()}
        if value.dtype.kind in "OU":
            return {"$nd": value.dtype.str, "shape": list(value.shape),
                    "items": [encode(v) for v in value.ravel().tolist()]}
        raise TypeError(f"cannot store an array of dtype {value.dtype}")
    if isinstance(value, pd.DataFrame):
        return {"$df": {"columns": [encode(c) for c in value.columns],
                        "dtypes": [str(t) for t in value.dtypes],
                        "index": encode(value.index),
                        "data": [encode(_column(value.iloc[:, j])) for j in range(value.shape[1])]}}
    if isinstance(value, pd.Series):
        return {"$series": {"name": encode(value.name), "dtype": str(value.dtype),
                            "index": encode(value.index), "data": encode(_column(value))}}
    if isinstance(value, pd.RangeIndex):
        return {"$range": [value.start, value.stop, value.step], "name": encode(value.name)}
    if isinstance(value, pd.Index):
        return {"$index": encode(_column(pd.Series(value))), "dtype": str(value.dtype),
                "name": encode(value.name)}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return {"$set": [encode(v) for v in sorted(value, key=repr)], "frozen": isinstance(value, frozenset)}
    ref = _ref(value)
    if ref is not None:
        return ref
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not cls.__module__.startswith("infsched."):
            raise TypeError(f"cannot store a {cls.__name__}: only the library's own dataclasses")
        return {"$dc": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(value, f.name))
                           for f in dataclasses.fields(value) if f.init}}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(f"cannot store a value of type {type(value).__name__}")


def _ref(value: Any) -> dict[str, Any] | None:
    """A library object that holds code (a plug-in policy, :class:`infsched.serving.plugins.UserPolicy`)
    stored by reference: its class by module and name and the state its ``_store_state()`` gives
    (for a policy: its select function's module and name, its fields and the key of its code),
    which the class's ``_from_store_state`` turns back into the object (checking the key). None if
    ``value`` is no such object; the class raises TypeError for one it cannot refer to (a
    notebook's policy)."""
    cls = type(value)
    if not (hasattr(cls, "_store_state") and cls.__module__.startswith("infsched.")):
        return None
    return {"$ref": f"{cls.__module__}:{cls.__qualname__}", "state": encode(value._store_state())}


def _column(s: pd.Series) -> Any:
    """One column's values: a numeric column as a typed array, anything else item by item."""
    if s.dtype.kind in "biuf" and not isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
        return s.to_numpy()
    return [None if v is None else v for v in s.astype(object).tolist()]


def _library_class(ref: str) -> Any:
    module, _, qual = ref.partition(":")
    if not module.startswith("infsched."):
        raise ValueError(f"not one of the library's classes: {ref}")
    cls: Any = importlib.import_module(module)
    for part in qual.split("."):
        cls = getattr(cls, part)
    return cls


def decode(obj: Any) -> Any:
    """The value :func:`encode` encoded."""
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "$f" in obj:
        return float(obj["$f"])
    if "$np" in obj:
        return np.dtype(obj["$np"]).type(decode(obj["v"]))
    if "$nd" in obj:
        dt, shape = np.dtype(obj["$nd"]), tuple(obj["shape"])
        if "b64" in obj:
            return np.frombuffer(base64.b64decode(obj["b64"]), dtype=dt).reshape(shape).copy()
        if "z64" in obj:
            raw = zlib.decompress(base64.b64decode(obj["z64"]))
            return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
        arr = np.empty(len(obj["items"]), dtype=dt)
        arr[:] = [decode(v) for v in obj["items"]]
        return arr.reshape(shape)
    if "$df" in obj:
        d = obj["$df"]
        cols = [decode(c) for c in d["columns"]]
        data = {}
        for j, (raw, dt) in enumerate(zip(d["data"], d["dtypes"])):
            data[j] = _series(decode(raw), dt)
        df = pd.DataFrame(data)
        df.columns = pd.Index(cols) if cols else df.columns
        if not cols:
            df = pd.DataFrame(index=decode(d["index"]))
        else:
            df.index = decode(d["index"])
        return df
    if "$series" in obj:
        d = obj["$series"]
        s = _series(decode(d["data"]), d["dtype"])
        s.index = decode(d["index"])
        s.name = decode(d["name"])
        return s
    if "$range" in obj:
        a, b, c = obj["$range"]
        return pd.RangeIndex(a, b, c, name=decode(obj["name"]))
    if "$index" in obj:
        s = _series(decode(obj["$index"]), obj["dtype"])
        return pd.Index(s, dtype=s.dtype, name=decode(obj["name"]))
    if "$tuple" in obj:
        return tuple(decode(v) for v in obj["$tuple"])
    if "$set" in obj:
        items = [decode(v) for v in obj["$set"]]
        return frozenset(items) if obj["frozen"] else set(items)
    if "$dict" in obj:
        return {decode(k): decode(v) for k, v in obj["$dict"]}
    if "$ref" in obj:
        cls = _library_class(obj["$ref"])
        return cls._from_store_state(decode(obj["state"]))
    if "$dc" in obj:
        cls = _library_class(obj["$dc"])
        return cls(**{k: decode(v) for k, v in obj["fields"].items()})
    return {k: decode(v) for k, v in obj.items()}


def _series(values: Any, dtype: str) -> pd.Series:
    if isinstance(values, np.ndarray):
        return pd.Series(values, dtype=values.dtype)
    return pd.Series(values, dtype=dtype) if dtype != "object" else pd.Series(values, dtype=object)


def same(a: Any, b: Any, *, rtol: float = 0.0, atol: float = 0.0, skip: Iterable[str] = (),
         where: str = "value") -> list[str]:
    """Where ``a`` and ``b`` differ (an empty list when they agree): floats within
    ``atol + rtol * |b|`` (NaN equal to NaN), everything else exactly, in the same types; dict
    keys and DataFrame columns named in ``skip`` are not compared."""
    skip = set(skip)
    out: list[str] = []
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        if not (isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame)):
            return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            return [f"{where}: columns/rows {list(a.columns)}x{len(a)} vs {list(b.columns)}x{len(b)}"]
        if not a.index.equals(b.index):
            out.append(f"{where}: index differs")
        for c in a.columns:
            if c in skip:
                continue
            out += _same_array(a[c].to_numpy(), b[c].to_numpy(), rtol, atol, f"{where}[{c!r}]")
        return out
    if isinstance(a, pd.Series) or isinstance(b, pd.Series):
        if not (isinstance(a, pd.Series) and isinstance(b, pd.Series)) or len(a) != len(b):
            return [f"{where}: series differ in type or length"]
        return _same_array(a.to_numpy(), b.to_numpy(), rtol, atol, where)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return [f"{where}: arrays differ in type or shape"]
        return _same_array(a, b, rtol, atol, where)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if list(a) != list(b):
            return [f"{where}: keys {list(a)} vs {list(b)}"]
        for k in a:
            if k not in skip:
                out += same(a[k], b[k], rtol=rtol, atol=atol, where=f"{where}[{k!r}]")
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return [f"{where}: {type(a).__name__}[{len(a)}] vs {type(b).__name__}[{len(b)}]"]
        for i, (x, y) in enumerate(zip(a, b)):
            out += same(x, y, rtol=rtol, atol=atol, where=f"{where}[{i}]")
        return out
    if _is_float(a) and _is_float(b):
        fa, fb = float(a), float(b)
        if (math.isnan(fa) and math.isnan(fb)) or fa == fb or abs(fa - fb) <= atol + rtol * abs(fb):
            return []
        return [f"{where}: {fa!r} vs {fb!r}"]
    if type(a) is not type(b) and not (_is_number(a) and _is_number(b)):
        return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
    if hasattr(type(a), "_store_state") and type(a) is type(b):  # by what is stored of them
        equal = encode(a._store_state()) == encode(b._store_state())
        return [] if equal else [f"{where}: {a!r} vs {b!r}"]
    try:
        equal = bool(a == b)
    except Exception:  # noqa: BLE001 - incomparable: differ
        equal = False
    return [] if equal else [f"{where}: {a!r} vs {b!r}"]


def _is_float(x: Any) -> bool:
    return isinstance(x, (float, np.floating))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _same_array(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, where: str) -> list[str]:
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        try:
            fa, fb = a.astype(float), b.astype(float)
        except (TypeError, ValueError):
            return [f"{where}: not numbers"]
        ok = np.isclose(fa, fb, rtol=rtol, atol=atol, equal_nan=True) | (fa == fb)
        if ok.all():
            return []
        i = int(np.flatnonzero(~ok.ravel())[0])
        return [f"{where}: {int((~ok).sum())} of {ok.size} differ, first {fa.ravel()[i]!r} vs {fb.ravel()[i]!r}"]
    if a.dtype.kind == "O" or b.dtype.kind == "O":
        out: list[str] = []
        for i, (x, y) in enumerate(zip(a.ravel().tolist(), b.ravel().tolist())):
            out += same(x, y, rtol=rtol, atol=atol, where=f"{where}[{i}]")
            if out:
                break
        return out
    return [] if np.array_equal(a, b) else [f"{where}: arrays differ"]


# --------------------------------------------------------------------------- entries and keys

def store_key(name: str, point: Mapping[str, Any], version: int) -> str:
    """sha256 of the function's name, its sorted parameters and its results version (24 hex)."""
    blob = json.dumps({"fn": name, "results_version": int(version), "format": STORE_FORMAT,
                       "params": dict(point)}, sort_keys=True, default=_jsonable)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


@dataclass
class Entry:
    """One stored point: its key, function, results version, parameters, value and provenance."""

    key: str
    fn: str
    results_version: int
    params: dict[str, Any]
    value: Any
    provenance: dict[str, Any] = field(default_factory=dict)
    #: the stored line this entry was read from (without its newline): rewritten as it was, so
    #: that a rebuild of one chapter leaves another chapter's points, and their digests, untouched
    line: str | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> str:
        # not sort_keys: a dict's key order is part of the value (a table's column order)
        return json.dumps({"key": self.key, "fn": self.fn, "results_version": self.results_version,
                           "params": _pack(encode(self.params)),
                           "provenance": dict(sorted(self.provenance.items())),
                           "value": _pack(encode(self.value))}, allow_nan=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Entry:
        d = json.loads(line)
        return cls(d["key"], d["fn"], int(d["results_version"]), decode(_unpack(d["params"])),
                   decode(_unpack(d["value"])), d.get("provenance") or {}, line.rstrip("\n"))


def _pack(obj: Any) -> Any:
    """An encoded value or parameter set whose JSON exceeds PACK_ABOVE characters, zlib'd and
    base64'd (``{"$z": ...}``): the head to head's per-point tables repeat their column and
    contender names, and packed they take a third of the room, which keeps the store under 20 MB.
    Small ones stay readable in the file."""
    text = json.dumps(obj, allow_nan=False, separators=(",", ":"))
    if len(text) <= PACK_ABOVE:
        return obj
    return {"$z": base64.b64encode(zlib.compress(text.encode(), 9)).decode()}


def _unpack(obj: Any) -> Any:
    if isinstance(obj, dict) and set(obj) == {"$z"}:
        return json.loads(zlib.decompress(base64.b64decode(obj["$z"])).decode())
    return obj


def _points_dir(root: Path | None = None) -> Path:
    return (root or store_dir()) / "points"


def read_points(name: str, root: Path | None = None, *, skip_damaged: bool = False) -> dict[str, Entry]:
    """Every stored point of the function ``name``, by key. A line that does not load raises
    ConfigError naming the file and line, or with ``skip_damaged`` (a rebuild, which replaces
    it) is left out."""
    out: dict[str, Entry] = {}
    for path in _files(name, root):
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    e = Entry.from_json(line)
                except (ValueError, KeyError, TypeError, zlib.error) as exc:
                    if skip_damaged:
                        continue
                    raise ConfigError(f"results store: {path}, line {n}: not a stored point ({exc}); "
                                      "rebuild it with `infsched results build`") from None
                out[e.key] = e
    return out


def _files(name: str, root: Path | None = None) -> list[Path]:
    """The function's points files: ``<name>.jsonl``, or its shards ``<name>@<c>.jsonl``."""
    folder = _points_dir(root)
    one = folder / f"{name}.jsonl"
    return ([one] if one.exists() else []) + sorted(folder.glob(f"{glob.escape(name)}@*.jsonl"))


def _stored_names(root: Path | None = None) -> list[str]:
    """The functions with stored points (a sharded function once)."""
    return sorted({p.name[:-len(".jsonl")].split("@")[0] for p in _points_dir(root).glob("*.jsonl")})


@dataclass
class _Scan:
    """A function's points files read as raw lines: each loadable-looking line by key (with its
    file and line number), and the lines that are not stored points at all (cut or garbled)."""

    lines: dict[str, str]
    where: dict[str, tuple[Path, int]]
    bad: list[str]


#: a stored line starts with its key, 24 hex digits (Entry.to_json writes "key" first)
_KEY_HEAD = re.compile(r'\{"key":"([0-9a-f]{24})","fn":"')
_SCANS: dict[tuple[str, str], tuple[tuple[Any, ...], _Scan]] = {}


def line_digest(line: str) -> str:
    """The content digest of one stored line (without its newline): sha256, 16 hex digits. The
    chapter's manifest keeps it for every point the chapter reads (written by ``infsched results
    build``); any change to the line, a digit or a cut, changes it."""
    return hashlib.sha256(line.rstrip("\n").encode("utf-8")).hexdigest()[:16]


def _scan(name: str, root: Path | None = None) -> _Scan:
    """The function's points files as raw lines (:class:`_Scan`), re-read only when a file
    changed. Nothing is decoded: a line is a point's when it starts with a key and ends a JSON
    object; its content is vouched for by its digest (:func:`integrity`)."""
    files = _files(name, root)
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    cache_key = (str(root or store_dir()), name)
    hit = _SCANS.get(cache_key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    scan = _Scan({}, {}, [])
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                text = line.rstrip("\n")
                if not text.strip():
                    continue
                m = _KEY_HEAD.match(text)
                if m is None or not text.endswith("}"):
                    scan.bad.append(f"{path.name}, line {n}: {name}: not a stored point (a cut or "
                                    f"garbled line{', key ' + m.group(1) if m else ''})")
                    continue
                scan.lines[m.group(1)] = text
                scan.where[m.group(1)] = (path, n)
    _SCANS[cache_key] = (stamp, scan)
    return scan


def _index(name: str, root: Path | None = None) -> dict[str, str]:
    """The function's stored points as raw JSON lines by key (decoded only when served: a
    sweep that misses its cache looks here first, and most of what is stored is never read by
    it). Each line starts with its key (:meth:`Entry.to_json`)."""
    return _scan(name, root).lines


def integrity(chapter: str, root: Path | None = None,
              m: Mapping[str, Any] | None = None) -> list[str]:
    """Each damaged or altered point the chapter reads, one line each (empty: intact): a line of
    its functions' files that is not a stored point (cut, garbled), a stored point whose content
    digest differs from the one its manifest recorded (file, line, function, key), and a
    manifest without digests (not sealed). Milliseconds for the whole store: it hashes lines and
    decodes none."""
    m = load_manifest(chapter, root) if m is None else m
    if m is None:
        return []
    digests = m.get("digests")
    out: list[str] = []
    if not isinstance(digests, Mapping):
        out.append(f"{chapter}: the manifest holds no content digests (not sealed); seal it with "
                   f"`infsched results build --seal {chapter}`")
        digests = {}
    for name, keys in m.get("points", {}).items():
        scan = _scan(name, root)
        out += scan.bad
        want = digests.get(name, {}) if isinstance(digests.get(name, {}), Mapping) else {}
        for k in keys:
            line = scan.lines.get(k)
            if line is None or not want:
                continue
            if want.get(k) != line_digest(line):
                path, n = scan.where[k]
                out.append(f"{path.name}, line {n}: {name}, key {k}: altered (its content digest "
                           "is not the one the build recorded)")
    return out


def _seals(root: Path | None = None) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Every manifest's digests: function -> key -> [(chapter, digest)]."""
    root = root or store_dir()
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for path in sorted(root.glob("*.json")):
        try:
            m = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        for name, by_key in (m.get("digests") or {}).items():
            for k, d in by_key.items():
                out.setdefault(name, {}).setdefault(k, []).append((path.stem, d))
    return out


_SEALS: dict[str, tuple[tuple[Any, ...], dict[str, dict[str, list[tuple[str, str]]]]]] = {}


def _seals_cached(root: Path) -> dict[str, dict[str, list[tuple[str, str]]]]:
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.glob("*.json")))
    hit = _SEALS.get(str(root))
    if hit is None or hit[0] != stamp:
        hit = _SEALS[str(root)] = (stamp, _seals(root))
    return hit[1]


def write_points(name: str, entries: Mapping[str, Entry], root: Path | None = None) -> None:
    """Write the function's points (sorted by key, one JSON line each) atomically; none: remove.
    Over SHARD_ABOVE bytes they go to 16 shards ``<name>@<c>.jsonl`` by the key's first hex digit,
    so that no committed file grows past a few MB."""
    folder = _points_dir(root)
    old = set(_files(name, root))
    if not entries:
        for p in old:
            p.unlink(missing_ok=True)
        return
    folder.mkdir(parents=True, exist_ok=True)
    lines = {k: (entries[k].line or entries[k].to_json()) + "\n" for k in sorted(entries)}
    if sum(map(len, lines.values())) <= SHARD_ABOVE:
        parts = {folder / f"{name}.jsonl": list(lines)}
    else:
        parts = {}
        for k in lines:
            parts.setdefault(folder / f"{name}@{k[0]}.jsonl", []).append(k)
    for path, keys in parts.items():
        _atomic_write(path, "".join(lines[k] for k in keys))
    for p in old - set(parts):
        p.unlink(missing_ok=True)


def _atomic_write(path: Path, text: str) -> None:
    from .atomic import atomic_write

    atomic_write(path, text, note="the store's files are as they were; the points computed are "
                 "in the sweep cache, and a rerun of `infsched results build` stores them")


# --------------------------------------------------------------------------- serving

_LOADED: dict[tuple[str, str], dict[str, str]] = {}
#: the entries served in this process: (fn, key) -> provenance; read by page_note
_SERVED: dict[tuple[str, str], dict[str, Any]] = {}
#: points this process computed or took from its own cache while the book rendered from the store
_LIVE: dict[str, int] = {}
#: the scale the running chapter renders at, when book_scale chose it
_BOOK: dict[str, str] = {}


def enabled() -> bool:
    return os.environ.get(STORE_ENV, "").strip().lower() not in ("off", "0", "false", "no")


def lookup(fn: Callable[..., Any], point: Mapping[str, Any], version: str = "") -> Any:
    """The stored value of ``fn(**point)``, or None: only when ``fn`` declares a results version
    and the store holds that point under it. Served entries are remembered for
    :func:`page_note`; ``version`` (the caller's code version) is compared with the entry's
    to count points computed by earlier code."""
    rv = version_of(fn)
    if rv is None or not enabled():
        return None
    name = fn_name(fn)
    root = store_dir()
    scan = _scan(name, root)
    building = recording() is not None
    key = store_key(name, point, rv)
    line = scan.lines.get(key)
    if line is None:
        if scan.bad and not building:  # the point asked for may be the damaged line
            raise ConfigError(f"results store: {scan.bad[0]}"
                              f"{f' (and {len(scan.bad) - 1} more)' if len(scan.bad) > 1 else ''}; "
                              f"rebuild with `infsched results build {_chapters_of(name, root)}`")
        return None
    seals = _seals_cached(root).get(name, {}).get(key, [])
    digest = line_digest(line)
    wrong = [c for c, d in seals if d != digest]
    if wrong or (not seals and not building):
        if building and wrong:  # a rebuild replaces an altered point: computed, not served
            return None
        path, n = scan.where[key]
        why = ("altered: its content digest is not the one `infsched results build` recorded in "
               f"{', '.join(c + '.json' for c in wrong)}" if wrong else
               "not sealed: no chapter's manifest records its content digest")
        chapters = " ".join(wrong) or _chapters_of(name, root)
        raise ConfigError(f"results store: {path.name}, line {n}: {name}, key {key}: {why}; "
                          f"refusing to serve it; rebuild with `infsched results build {chapters}`"
                          + ("" if wrong else f" (or seal: `infsched results build --seal {chapters}`)"))
    try:
        e = Entry.from_json(line)
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        raise ConfigError(f"results store: {name}: a stored point does not load ({exc}); "
                          "rebuild it with `infsched results build`") from None
    prov = dict(e.provenance)
    prov["same_code"] = bool(version) and prov.get("code_version") == version
    _SERVED[(name, e.key)] = prov
    return e.value


def _chapters_of(name: str, root: Path | None = None) -> str:
    """The chapters whose manifests list the function ``name`` (for the rebuild command)."""
    root = root or store_dir()
    out = []
    for path in sorted(root.glob("*.json")):
        try:
            if name in json.loads(path.read_text(encoding="utf-8")).get("points", {}):
                out.append(path.stem)
        except ValueError:
            continue
    return " ".join(out) or "CHAPTER"


def strict() -> bool:
    """True while a chapter renders from the store at ``paper`` scale under ``make book``."""
    return bool(os.environ.get(STRICT_ENV)) and _BOOK.get("scale") == "paper"


def missing(fn: Callable[..., Any], point: Mapping[str, Any]) -> None:
    """Called by run_sweep for a point that neither its cache nor the store holds: in strict
    mode, raise (rendering the book must never start hours of computation); else count it."""
    name = fn_name(fn)
    if strict() and version_of(fn) is not None:
        raise ConfigError(
            f"results store: {name} at {dict(point)!r} is not stored (the chapter "
            f"{_BOOK.get('chapter')!r} renders at paper scale from data/results/); rebuild it "
            f"with `infsched results build {_BOOK.get('chapter')}`, or build the book at default "
            f"scale with `make book-default`")
    _LIVE[name] = _LIVE.get(name, 0) + 1


def book_scale(chapter: str) -> str:
    """The scale a chapter's ``parameters`` cell defaults to: ``$INFSCHED_SCALE`` when set (the
    tests, ``infsched run``); else ``paper`` when the store holds a current build of the chapter
    (:func:`status`), else ``default``."""
    env = os.environ.get("INFSCHED_SCALE", "").strip()
    if env:
        scale = env
    else:
        st = status(chapter)
        if st is not None and st["damaged"] and enabled():
            check_intact(chapter)  # refuse, naming the damaged points, rather than quietly fall back
        scale = "paper" if st is not None and st["current"] and enabled() else "default"
    _BOOK.clear()
    _BOOK.update(chapter=chapter, scale=scale)
    return scale


# --------------------------------------------------------------------------- manifests

def manifest_path(chapter: str, root: Path | None = None) -> Path:
    return (root or store_dir()) / f"{chapter}.json"


def load_manifest(chapter: str, root: Path | None = None) -> dict[str, Any] | None:
    path = manifest_path(chapter, root)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"results store: {path}: not a manifest ({exc})") from None


def status(chapter: str, root: Path | None = None) -> dict[str, Any] | None:
    """A chapter's stored build: its manifest's summary and ``current`` (every key it lists is
    stored, under its function's current results version); None when the chapter has none."""
    m = load_manifest(chapter, root)
    if m is None:
        return None
    stale: list[str] = []
    absent = 0
    for name, keys in m.get("points", {}).items():
        try:
            fn = resolve(name)
        except (ConfigError, AttributeError):
            stale.append(f"{name} (no longer exists)")
            continue
        want = version_of(fn)
        have = m.get("results_versions", {}).get(name)
        if want is None or have != want:
            stale.append(f"{name} (results version {have} stored, {want} now)")
            continue
        stored = _index(name, root)
        absent += sum(1 for k in keys if k not in stored)
    damaged = integrity(chapter, root, m)
    return {**{k: v for k, v in m.items() if k not in ("points", "digests")},
            "n_points": sum(len(v) for v in m.get("points", {}).values()),
            "stale": stale, "absent": absent, "damaged": damaged,
            "current": not stale and absent == 0 and not damaged}


def check_intact(chapter: str, root: Path | None = None) -> None:
    """Raise ConfigError naming each damaged or altered point the chapter's stored build holds
    (:func:`integrity`) and the command that rebuilds it; nothing when the chapter has no stored
    build or the store is off. ``make book`` (:func:`book_scale`) and ``infsched run`` call it
    before a chapter is served from the store."""
    if not enabled() or recording() is not None:  # a rebuild is what repairs it
        return
    damaged = integrity(chapter, root)
    if damaged:
        more = f" (and {len(damaged) - 5} more)" if len(damaged) > 5 else ""
        raise ConfigError(f"results store: the stored build of {chapter!r} is damaged: "
                          f"{'; '.join(damaged[:5])}{more}; refusing to serve it; rebuild it with "
                          f"`infsched results build {chapter}` (or see `infsched results status`)")


def page_note(chapter: str, scale: str) -> str:
    """One paragraph for the top of a chapter: which scale it shows and where its numbers come
    from (the store entries served in this kernel: how many, computed at which commits and dates,
    their CPU-hours, and how many points were computed live)."""
    served = [p for (n, k), p in _SERVED.items()]
    live = sum(_LIVE.values())
    if scale != "paper":
        what = {"default": "the `default` scale (shorter runs and smaller instances than the "
                           "paper's, so its simulated numbers are stand-ins)",
                "smoke": "the `smoke` scale (seconds, for tests; its simulated numbers are "
                         "stand-ins)"}
        text = f"This page shows {what.get(scale, repr(scale))}, computed live"
        m = load_manifest(chapter)
        if m is None:
            text += "; the results store holds no paper-scale build of this chapter yet."
        else:
            st = status(chapter)
            text += ("; the results store's paper-scale build of this chapter is stale "
                     f"({'; '.join(st['stale']) or str(st['absent']) + ' points missing'})."
                     if st and not st["current"] else ".")
        return text
    if not served:
        return (f"This page shows the paper's setting (`paper` scale); {live} sweep points were "
                "computed live, none came from the results store.")
    commits = sorted({str(p.get("commit", "?")).split("+")[0][:7] for p in served})
    dates = sorted(str(p.get("date", ""))[:10] for p in served)
    cpu_h = sum(float(p.get("cpu_s") or 0.0) for p in served) / 3600
    older = sum(1 for p in served if not p.get("same_code"))
    dirty = sum(1 for p in served if str(p.get("commit", "")).endswith("+dirty"))
    text = (f"This page shows the paper's setting (`paper` scale). Its {len(served):,} simulated "
            f"points come from the results store (`data/results/`), computed at commit"
            f"{'s' if len(commits) > 1 else ''} {', '.join(commits)} on "
            f"{dates[0]}{' to ' + dates[-1] if dates[-1] != dates[0] else ''}"
            f"{f' ({dirty:,} of them with uncommitted changes to lib/ on top)' if dirty else ''}, "
            f"{cpu_h:.2f} CPU-hours in all")
    if older:
        text += (f"; {older:,} of them by an earlier version of the code with the same results "
                 "version (the tests recompute a sample of stored points with today's code)")
    text += f"; {live} points were computed live." if live else "."
    return text


# --------------------------------------------------------------------------- recording and building

def recording() -> Path | None:
    raw = os.environ.get(RECORD_ENV, "").strip()
    return Path(raw) if raw else None


def record(fn: Callable[..., Any], point: Mapping[str, Any], value: Any,
           provenance: Mapping[str, Any] | None) -> None:
    """While ``infsched results build`` runs a chapter: append one point it used to this process's
    record file. A point without provenance, or whose value does not encode exactly, is refused
    (ConfigError): the store keeps nothing whose origin or digits it cannot vouch for."""
    folder = recording()
    rv = version_of(fn)
    if folder is None or rv is None:
        return
    name = fn_name(fn)
    if "<locals>" in name:
        raise ConfigError(f"fn = {name}: a nested function cannot be stored (it cannot be "
                          "recomputed by name); make it a module-level function")
    if not provenance:
        raise ConfigError(f"results store: {name} at {dict(point)!r} has no provenance")
    try:
        back = decode(json.loads(json.dumps(encode(value), allow_nan=False)))
        pback = decode(json.loads(json.dumps(encode(dict(point)), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"results store: {name}: its value cannot be stored exactly ({exc})") from None
    diff = same(back, value) + same(pback, dict(point))
    if diff:
        raise ConfigError(f"results store: {name}: its value does not survive encoding "
                          f"({diff[0]})")
    e = Entry(store_key(name, point, rv), name, rv, dict(point), value,
              {k: v for k, v in dict(provenance).items() if k != "params"})
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
        f.write(e.to_json() + "\n")


def stored_provenance(fn: Callable[..., Any], point: Mapping[str, Any]) -> dict[str, Any] | None:
    """The provenance of a point served from the store in this process (to re-record it)."""
    rv = version_of(fn)
    if rv is None:
        return None
    return _SERVED.get((fn_name(fn), store_key(fn_name(fn), point, rv)))


def machine() -> str:
    return f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores)"


def commit_records(chapter: str, rec: Path, root: Path | None = None, *, wall_s: float = 0.0,
                   cpu_s: float = 0.0) -> dict[str, Any]:
    """Merge the records a chapter's run left in ``rec`` into the store: the points files, the
    chapter's manifest (what it reads, when, where, at which commit, at what cost), then drop the
    stored points no manifest lists. ``rec`` is emptied and removed. Returns the manifest."""
    root = root or store_dir()
    entries: dict[str, dict[str, Entry]] = {}
    for path in sorted(rec.glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                e = Entry.from_json(line)
                entries.setdefault(e.fn, {})[e.key] = e
    for path in rec.glob("*.jsonl"):
        path.unlink()
    rec.rmdir()
    for name, new in entries.items():
        old = read_points(name, root, skip_damaged=True)  # a damaged line is dropped, or replaced
        old.update(new)
        write_points(name, old, root)
    _SCANS.clear()
    point_cpu = sum(float(e.provenance.get("cpu_s") or 0) for d in entries.values() for e in d.values())
    manifest = {
        "chapter": chapter, "scale": "paper", "format": STORE_FORMAT,
        "built": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(), "commit": _commit_now(),
        "build_wall_s": round(wall_s, 1), "build_cpu_s": round(cpu_s, 1),
        "points_cpu_s": round(point_cpu, 1),
        "results_versions": {name: version_of(resolve(name)) for name in sorted(entries)},
        "points": {name: sorted(d) for name, d in sorted(entries.items())},
        "digests": _digests({name: sorted(d) for name, d in entries.items()}, root),
    }
    root.mkdir(parents=True, exist_ok=True)
    _atomic_write(manifest_path(chapter, root), json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    prune(root)
    _LOADED.clear()
    _SCANS.clear()
    return manifest


def _digests(points: Mapping[str, Iterable[str]], root: Path) -> dict[str, dict[str, str]]:
    """The content digest of each listed point's stored line (:func:`line_digest`)."""
    out: dict[str, dict[str, str]] = {}
    for name, keys in sorted(points.items()):
        scan = _scan(name, root)
        out[name] = {k: line_digest(scan.lines[k]) for k in sorted(keys) if k in scan.lines}
    return out


def seal(chapter: str, root: Path | None = None) -> dict[str, Any]:
    """Record in the chapter's manifest the content digest of every point it lists, as stored
    now, keeping the rest of the manifest (its build's provenance) as it is: ``infsched results
    build --seal CHAPTER``, for a store whose points are all present and current but whose
    manifest holds no digests (or digests of lines that were replaced, as when branches that
    each rebuilt points are merged). Every listed line is decoded first: a point that does not
    load, or whose key or function disagrees with its line, is refused (ConfigError) and must be
    rebuilt (``infsched results build CHAPTER``). Returns the manifest. Sealing vouches for the
    lines as they are, as a commit does: git shows what changed since the last seal."""
    root = root or store_dir()
    m = load_manifest(chapter, root)
    if m is None:
        raise ConfigError(f"chapter = {chapter!r}: the store holds no build of it to seal; build it "
                          f"with `infsched results build {chapter}`")
    _SCANS.clear()
    st = status(chapter, root)
    assert st is not None
    if st["stale"] or st["absent"]:
        raise ConfigError(f"results store: {chapter}: cannot seal a stale build "
                          f"({'; '.join(st['stale']) or str(st['absent']) + ' points missing'}); "
                          f"rebuild it with `infsched results build {chapter}`")
    problems: list[str] = []
    for name, keys in m.get("points", {}).items():
        scan = _scan(name, root)
        problems += scan.bad
        for k in keys:
            try:
                e = Entry.from_json(scan.lines[k])
                if e.key != k or e.fn != name:
                    raise ValueError(f"the line holds {e.fn} {e.key}")
            except (ValueError, KeyError, TypeError, zlib.error) as exc:
                path, n = scan.where[k]
                problems.append(f"{path.name}, line {n}: {name}, key {k}: does not load ({exc})")
    if problems:
        raise ConfigError(f"results store: {chapter}: cannot seal: {'; '.join(problems[:5])}; "
                          f"rebuild it with `infsched results build {chapter}`")
    m["digests"] = _digests(m.get("points", {}), root)
    m["sealed"] = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "commit": _commit_now()}
    _atomic_write(manifest_path(chapter, root), json.dumps(m, indent=1, sort_keys=True) + "\n")
    return m


def _children_cpu() -> float:
    """CPU seconds of this process and its finished children (the kernel, the sweep's workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _commit_now() -> str:
    from .cache import _commit

    return _commit()


def prune(root: Path | None = None) -> int:
    """Drop stored points that no chapter's manifest lists; returns how many were dropped."""
    root = root or store_dir()
    wanted: dict[str, set[str]] = {}
    for path in sorted(root.glob("*.json")):
        m = json.loads(path.read_text(encoding="utf-8"))
        for name, keys in m.get("points", {}).items():
            wanted.setdefault(name, set()).update(keys)
    dropped = 0
    for name in _stored_names(root):
        entries = read_points(name, root, skip_damaged=True)
        keep = {k: e for k, e in entries.items() if k in wanted.get(name, set())}
        if len(keep) != len(entries):
            dropped += len(entries) - len(keep)
            write_points(name, keep, root)
    return dropped


# --------------------------------------------------------------------------- sampling (tests)

def all_entries(root: Path | None = None) -> list[Entry]:
    out: list[Entry] = []
    for name in _stored_names(root):
        out += read_points(name, root).values()
    return out


def sample_entries(budget_cpu_s: float, seed: int = 0, root: Path | None = None) -> list[Entry]:
    """A seeded random sample of stored points whose recorded CPU seconds sum to at most
    ``budget_cpu_s``: functions taken in turn (so each with a point that fits is sampled), a
    random point of each that still fits the budget left."""
    rng = random.Random(seed)
    by_fn: dict[str, list[Entry]] = {}
    for e in all_entries(root):
        by_fn.setdefault(e.fn, []).append(e)
    for lst in by_fn.values():
        rng.shuffle(lst)
    left, out = float(budget_cpu_s), []
    names = sorted(by_fn)
    while names:
        for name in list(names):
            lst = by_fn[name]
            while lst and float(lst[-1].provenance.get("cpu_s") or 0) > left:
                lst.pop()
            if not lst:
                names.remove(name)
                continue
            e = lst.pop()
            left -= float(e.provenance.get("cpu_s") or 0)
            out.append(e)
    return out


class GluedMarkdown:
    """A markdown text to glue: markdown where its own page pastes it (``{glue:md}``), HTML where
    another page does (``{glue:any}`` with ``:doc:``, which pastes a rich output, not markdown)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        from markdown_it import MarkdownIt

        return MarkdownIt("commonmark").render(self.text)

    def __repr__(self) -> str:
        return self.text


def glue_provenance(chapter: str, scale: str) -> str:
    """Glue :func:`page_note` as ``<chapter>_provenance`` (not displayed), for the note at the
    top of the chapter and for the scorecard; returns the note."""
    from myst_nb import glue

    note = page_note(chapter, scale)
    glue(f"{chapter}_provenance", GluedMarkdown(note), display=False)
    return note
