"""A loader for the Azure Functions 2019 trace (MAF, spec §4.1), the trace the Shepherd paper
drives its experiments with. It cannot be downloaded here, so nothing calls this at run time:
the chapter runs on MAF-synth (:mod:`.traces`); a reader who has the day files can load them.
Never downloads anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from infsched.errors import ConfigError, one_of, require

__all__ = ["AzureInvocations", "load_azure_invocations"]

_INT32_MAX = np.iinfo(np.int32).max
_ID_COLUMNS = ("HashOwner", "HashApp", "HashFunction", "Trigger")
_MINUTES_PER_DAY = 1440


@dataclass(frozen=True, eq=False)
class AzureInvocations:
    """Per-minute invocation counts from the Azure Functions 2019 trace.

    ``counts`` is int32, streams × (1440 · days), the days in the order the files were given;
    ``ids`` has one row per stream (HashOwner, HashApp, HashFunction, Trigger, or only
    HashOwner/HashApp when aggregated by app); ``files`` are the day files read.
    """

    counts: np.ndarray
    ids: pd.DataFrame
    files: tuple[str, ...]

    @property
    def n_streams(self) -> int:
        return int(self.counts.shape[0])


def _read_day(path: str) -> pd.DataFrame:
    """One ``invocations_per_function_md.anon.dNN.csv`` file, checked (spec §4.1 format)."""
    if not os.path.isfile(path):
        raise ConfigError(f"path = {path!r}: no such file (the Azure trace is never downloaded; "
                          "give the path of a local invocations_per_function_md.anon.dNN.csv)")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ConfigError(f"path = {path!r}: not a readable CSV ({exc})") from None
    missing = [c for c in _ID_COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"path = {path!r}: missing column(s) {missing}; expected "
                          f"{list(_ID_COLUMNS)} then minute columns '1'..'1440'")
    minute_cols = [c for c in df.columns if c not in _ID_COLUMNS]
    expected = [str(i) for i in range(1, _MINUTES_PER_DAY + 1)]
    if minute_cols != expected:
        if len(minute_cols) != _MINUTES_PER_DAY:
            why = f"has {len(minute_cols)} minute columns"
        else:
            why = f"has minute columns {minute_cols[:3]}..., not in order"
        raise ConfigError(f"path = {path!r}: {why}; expected exactly 1440 named '1'..'1440'")
    if df.empty:  # a header alone: no stream to build a workload from (refused here, by file)
        raise ConfigError(f"path = {path!r}: holds no rows (the header only); a day file lists "
                          "every function that ran that day, one row each")
    return df


def _day_counts(df: pd.DataFrame, path: str) -> np.ndarray:
    """The minute columns as int64, with the first bad cell named when any is not a count."""
    minute_cols = [str(i) for i in range(1, _MINUTES_PER_DAY + 1)]
    raw = df[minute_cols]
    num = raw.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(num)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise ConfigError(f"path = {path!r}: non-numeric count {raw.iat[r, c]!r} in row {r + 1}, "
                          f"minute column {minute_cols[c]!r}")
    for test, what in ((num < 0, "negative"), (num != np.round(num), "non-integer"),
                       (num > _INT32_MAX, "too large (over int32)")):
        if test.any():
            r, c = map(int, np.argwhere(test)[0])
            raise ConfigError(f"path = {path!r}: {what} count {raw.iat[r, c]!r} in row {r + 1}, "
                              f"minute column {minute_cols[c]!r}")
    return num.astype(np.int64)


def load_azure_invocations(path_or_paths: str | os.PathLike | Iterable[str | os.PathLike], *,
                           by: str = "function") -> AzureInvocations:
    """Read Azure Functions 2019 ``invocations_per_function_md.anon.dNN.csv`` day files.

    Layout (spec §4.1): HashOwner, HashApp, HashFunction, Trigger, then minute columns
    ``"1".."1440"``. Days are concatenated along minutes in the order given. A function absent
    from a day file (the trace lists a function only on days it ran) counts 0 there; rows
    repeating a key within one day are summed. ``by="app"`` sums functions per
    (HashOwner, HashApp), the paper's ~46k "applications". Raises ``ConfigError`` naming the file
    and the problem: missing file, missing columns, wrong minute columns, non-numeric, negative
    or non-integer counts. Never downloads anything.
    """
    one_of("by", by, ("function", "app"))
    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [os.fspath(path_or_paths)]
    else:
        paths = [os.fspath(p) for p in path_or_paths]
    require(len(paths) >= 1, "path_or_paths", path_or_paths, "must name at least one day file")
    key_cols = ["HashOwner", "HashApp"] + (["HashFunction"] if by == "function" else [])
    days, triggers = [], []
    for d, path in enumerate(paths):
        df = _read_day(path)
        cols = pd.RangeIndex(d * _MINUTES_PER_DAY, (d + 1) * _MINUTES_PER_DAY)
        counts = pd.DataFrame(_day_counts(df, path), columns=cols)
        keys = df[key_cols].reset_index(drop=True)
        days.append(pd.concat([keys, counts], axis=1).groupby(key_cols, sort=False).sum())
        triggers.append(df[key_cols + ["Trigger"]].drop_duplicates(key_cols).set_index(key_cols))
    # outer join on the key: a function absent on a day gets NaN there, i.e. 0 invocations
    wide = pd.concat(days, axis=1, join="outer", sort=False).fillna(0)
    total = wide.to_numpy(dtype=np.int64)
    require(bool(total.max(initial=0) <= _INT32_MAX), "counts", int(total.max(initial=0)),
            "must fit in int32 after summing rows of one key")
    ids = wide.index.to_frame(index=False)
    if by == "function":
        trig = pd.concat(triggers)
        trig = trig[~trig.index.duplicated(keep="first")]  # the first day's trigger wins
        ids["Trigger"] = trig.reindex(wide.index)["Trigger"].to_numpy()
    return AzureInvocations(total.astype(np.int32), ids, tuple(paths))
