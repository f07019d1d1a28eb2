"""The Twitter trace of RAMSIS §7.1 as a piecewise-constant arrival rate (spec ramsis §5.3).

The trace is 27 ten-second query rates (QPS) at t = 0, 10, ..., 260 s: the ArchiveTeam Twitter
stream of 2018-04-25, scaled by the RAMSIS authors from 24 h to 5 min
(``twitter_trace/twitter_04_25_norm.txt`` in their artifact; see ``data/traces/README.md``).
Arrivals within an interval are Poisson at that interval's rate [paper §7].

Time unit: the schedules here are in **milliseconds** (breakpoints in ms, rates in queries per
ms), the unit of the RAMSIS simulators.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from infsched.errors import ConfigError, config_error, one_of, require
from infsched.profiles import read_checked_csv
from infsched.workload import PiecewiseRate

__all__ = ["TRACE_FILE", "load_twitter_trace", "twitter_schedule", "artifact_per_second"]

#: the trace file under ``<data>/traces``
TRACE_FILE = "twitter_2018_04_25.csv"
_COLUMNS = ("t_s", "qps")
_INTERVAL_S = 10.0  # the trace's native interval


def load_twitter_trace(data_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The 27 ten-second QPS values: columns ``t_s`` (interval start, s) and ``qps``.

    ``data_dir`` defaults to the repository's ``data/`` (or ``$INFSCHED_DATA``). A malformed
    file (missing/unknown column, non-finite or negative rate, start times other than
    0, 10, 20, ...) raises a ConfigError naming the file.
    """
    from infsched.report import find_data_dir

    path = find_data_dir(data_dir) / "traces" / TRACE_FILE
    df = read_checked_csv(path, _COLUMNS, "trace file")
    if df.empty:
        raise ConfigError(f"trace file {path}: no rows")
    for col in _COLUMNS:
        vals = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(vals) | (vals < 0))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"trace file {path}: line {i + 2}: {col} = {str(df[col].iloc[i])!r} "
                              "must be a finite number >= 0")
        df[col] = vals
    expected = _INTERVAL_S * np.arange(len(df))
    if not np.array_equal(df["t_s"].to_numpy(), expected):
        raise ConfigError(f"trace file {path}: t_s must be 0, 10, 20, ... (one row per ten-second "
                          "interval, in order)")
    return df


def artifact_per_second(qps: np.ndarray | list[float]) -> np.ndarray:
    """The artifact's per-second rate list: each 10 s interval's QPS repeated for 10 s, except
    the last interval, which contributes only 1 s (27 intervals -> 261 entries)."""
    q = np.asarray(qps, dtype=float).ravel()
    require(q.size >= 1, "qps", qps, "must hold at least one rate")
    return np.append(np.repeat(q[:-1], int(_INTERVAL_S)), q[-1])


def _merged(starts_ms: np.ndarray, rates: np.ndarray, end_ms: float) -> PiecewiseRate:
    """A PiecewiseRate of ``rates[i]`` from ``starts_ms[i]``, zero from ``end_ms`` on, with
    adjacent equal rates merged (so a 300 s playback is ~30 pieces, not 300)."""
    keep = np.ones(starts_ms.size, dtype=bool)
    keep[1:] = rates[1:] != rates[:-1]
    bp = np.append(starts_ms[keep], end_ms)
    r = np.append(rates[keep], 0.0)  # the trace ends: no arrivals after end_ms
    return PiecewiseRate(tuple(bp.tolist()), tuple(r.tolist()))


def twitter_schedule(duration_s: float | None = 300.0, interval_s: float = 10.0,
                     playback: str = "artifact", *,
                     data_dir: str | os.PathLike[str] | None = None) -> PiecewiseRate:
    """The Twitter trace as a :class:`~infsched.workload.PiecewiseRate` in milliseconds.

    ``playback="artifact"`` (default) plays it as the RAMSIS artifact does (spec §5.3): the
    per-second list of length 261 (:func:`artifact_per_second`) indexed by ``floor(t) mod 261``
    for ``duration_s`` seconds, so with the default 300 s the first 39 s repeat at the end and
    the expected count is 791,796 arrivals. ``interval_s`` below 10 compresses time: each
    10 s interval lasts ``interval_s`` seconds (each per-second entry ``interval_s/10`` s); the
    rates (QPS) are unchanged. ``duration_s=None`` means 300 s.

    ``playback="intervals"`` plays the 27 intervals once each for ``interval_s`` seconds; the
    duration is ``27 * interval_s``, or ``duration_s`` if that is smaller (``None``: the full
    trace).

    Rates are in queries per ms and breakpoints in ms. The rate is 0 from the end of the
    playback onward, so arrivals never spill past ``duration_s``.
    """
    one_of("playback", playback, ("artifact", "intervals"))
    try:
        interval = float(interval_s)
    except (TypeError, ValueError):
        raise config_error("interval_s", interval_s, "must be a number > 0 (seconds)") from None
    require(bool(np.isfinite(interval) and interval > 0), "interval_s", interval_s,
            "must be a finite number > 0 (seconds per ten-second trace interval)")
    if duration_s is not None:
        try:
            dur = float(duration_s)
        except (TypeError, ValueError):
            raise config_error("duration_s", duration_s, "must be a number > 0 (seconds)") from None
        require(bool(np.isfinite(dur) and dur > 0), "duration_s", duration_s,
                "must be a finite number > 0 (seconds) or None")
    qps = load_twitter_trace(data_dir)["qps"].to_numpy(dtype=float)
    if playback == "artifact":
        dur = 300.0 if duration_s is None else dur
        per_s = artifact_per_second(qps)
        step_ms = 1000.0 * interval / _INTERVAL_S  # one artifact "second", compressed
        end_ms = 1000.0 * dur
        n = int(np.ceil(end_ms / step_ms - 1e-9))  # pieces that start before the end
        k = np.arange(n)
        starts = k * step_ms
        rates = per_s[k % per_s.size] / 1000.0
    else:
        full = qps.size * interval
        dur = full if duration_s is None else min(dur, full)
        end_ms = 1000.0 * dur
        starts = 1000.0 * interval * np.arange(qps.size)
        inside = starts < end_ms - 1e-9
        starts, rates = starts[inside], qps[inside] / 1000.0
    return _merged(starts, rates, end_ms)
