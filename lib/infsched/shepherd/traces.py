"""Workloads for the Shepherd chapter: per-minute count matrices, CV-versus-window analysis and
MAF-synth simulation slices; the loader for the Azure Functions 2019 trace is in :mod:`.azure`
(re-exported here).

Why one module of about 750 lines: the generator, its CV analyses (which re-draw sub-minute
arrivals from it) and its simulation slices share one seeding scheme, the keyed (stream block,
hour) tiles below, and must stay in step; split, each part would import the others' private
helpers.

The paper drives its experiments with the Azure Functions 2019 trace (MAF, spec §4.1), which
cannot be downloaded here. A seeded synthetic stand-in, **MAF-synth** (spec §4.2, every parameter
[ours]), replaces it:

- mean rates ``λ̄_i = w_i · R / Σ_j w_j`` with ``w_i ~ LogNormal(0, σ = 2.4)``;
- minute modulation ``λ_i(t) = λ̄_i (1 + a_i sin(2πt/1440 + φ_i)) X_{i,t}``, ``a_i ~ U(0, 0.5)``,
  ``φ_i ~ U(0, 2π)``, ``X_{i,t}`` iid Gamma of mean 1 and CV ``c_i ~ U(0.2, 1.0)``;
- per-minute counts ``N_{i,t} ~ Poisson(60 λ_i(t))``;
- within a minute: MAF-stable places arrivals uniformly (a Poisson process); MAF-bursty is a
  2-state MMPP per stream (``λ_H = 4λ̄``, ``λ_L = λ̄/4``, H→L 2/s, L→H 0.5/s, so P(H) = 0.2 and
  the mean is preserved); the gamma option is a stationary Gamma-renewal process per stream.

Simulations of a few seconds use one minute ``t0`` of the modulated rates (spec §4.2 item 5):
over the horizon each stream is stationary. Rates are in requests per second throughout;
counts are per minute.

Randomness (DESIGN.md): every draw comes from a ``numpy.random.Generator`` whose
``SeedSequence`` is a child of the one built from ``seed``. Children are addressed by an explicit
key, ``SeedSequence(root.entropy, spawn_key=root.spawn_key + key)``, which is exactly what
``root.spawn`` would hand out, so a tile of the (stream block, hour) grid can be regenerated on its
own: the slice at minute ``t0`` equals column ``t0`` of the full rate matrix (rescaled), and a
stream's numbers do not depend on how many minutes are generated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from infsched.errors import config_error, one_of, require

from .azure import AzureInvocations, load_azure_invocations
from .model import DEFAULT_SLO_MS, ModelSet, Requests

__all__ = [
    "MINUTES_PER_WEEK", "FIG2_WINDOWS_MIN", "SUBMINUTE_WINDOWS_S", "VARIANTS",
    "synthetic_poisson_counts", "MafSynth", "maf_minute_rates", "maf_counts",
    "cv_by_window", "group_cv", "subminute_cv",
    "StreamRates", "MafSlice", "maf_stream_rates", "maf_arrivals", "maf_requests",
    "AzureInvocations", "load_azure_invocations",
]

#: 7 days of minutes: the Fig. 2/5 horizon [ours; the paper uses MAF's two weeks]
MINUTES_PER_WEEK = 7 * 1440
#: Fig. 2's window grid in minutes [ours, spec §3 Fig 2]; every value divides 10,080
FIG2_WINDOWS_MIN = (1, 2, 5, 10, 30, 60, 120, 360, 720, 1440)
#: sub-minute windows in seconds [ours, spec §3 Fig 2: "0.1, 0.5 s-scale points"]
SUBMINUTE_WINDOWS_S = (0.1, 0.5, 1.0, 10.0, 60.0)
#: within-minute arrival processes of a simulation slice (spec §4.2 items 4 and 6)
VARIANTS = ("stable", "bursty", "gamma")

# Generation tiles: randomness is keyed by (stream block, hour block), so any minute of any stream
# can be regenerated without the rest. The sizes trade Python overhead against memory [ours].
_STREAM_BLOCK = 512
_MINUTE_BLOCK = 60
# target number of elements of a temporary block in the CV analyses (bounds memory) [ours]
_BLOCK_ELEMS = 1 << 22
_INT32_MAX = np.iinfo(np.int32).max

# Keys of the child SeedSequences (first element of spawn_key); one per independent use.
_K_SYNTH_RATE, _K_SYNTH_COUNTS = 0, 1
_K_STREAMS, _K_NOISE, _K_COUNTS = 2, 3, 4
_K_ARRIVALS, _K_SUBSET, _K_GROUPS = 5, 6, 7


# --------------------------------------------------------------------------------------------
# seeds and argument checks
# --------------------------------------------------------------------------------------------

def _root(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    """The run's root SeedSequence from an integer seed (or a SeedSequence handed down)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    require(isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0,
            "seed", seed, "must be an integer >= 0 or a numpy.random.SeedSequence")
    return np.random.SeedSequence(int(seed))


def _rng(root: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """The generator of child ``key`` of ``root``: the same child ``root.spawn`` would give."""
    child = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + key,
                                   pool_size=root.pool_size)
    return np.random.Generator(np.random.PCG64(child))


def _int_at_least(name: str, value: object, low: int) -> int:
    require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= low,
            name, value, f"must be an integer >= {low}")
    return int(value)  # type: ignore[arg-type]


def _positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise config_error(name, value, "must be a number") from None
    ok = math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    require(ok, name, value, "must be a finite number " + (">= 0" if allow_zero else "> 0"))
    return v


def _counts_matrix(counts: object) -> np.ndarray:
    """A streams × minutes matrix of non-negative integer counts (not copied when possible)."""
    c = np.asarray(counts)
    require(c.ndim == 2 and c.shape[0] >= 1 and c.shape[1] >= 1, "counts", getattr(c, "shape", c),
            "must be a 2-D (streams × minutes) array with at least one stream and one minute")
    require(np.issubdtype(c.dtype, np.integer), "counts", c.dtype,
            "must hold integer counts (int32/int64)")
    require(bool(c.min() >= 0), "counts", int(c.min()), "must be >= 0")
    return c


# --------------------------------------------------------------------------------------------
# Fig. 2 "synthetic": Poisson streams with exponentially distributed rates
# --------------------------------------------------------------------------------------------

def synthetic_poisson_counts(n_streams: int = 1000, minutes: int = MINUTES_PER_WEEK,
                             mean_per_min: float = 10.0, *,
                             seed: int | np.random.SeedSequence = 0) -> np.ndarray:
    """Per-minute counts of independent Poisson streams, rates ``λ_s ~ Exp(mean_per_min)``.

    Fig. 2 "synthetic" (spec §3; the paper does not give the mean, 10 req/min is [ours]).
    Returns an ``int32`` array (streams × minutes); 1k × 10,080 is 40 MB. Generated in blocks of
    streams so the int64 temporaries stay small.
    """
    n_streams = _int_at_least("n_streams", n_streams, 1)
    minutes = _int_at_least("minutes", minutes, 1)
    mean_per_min = _positive("mean_per_min", mean_per_min)
    root = _root(seed)
    lam = _rng(root, _K_SYNTH_RATE).exponential(mean_per_min, size=n_streams)
    out = np.empty((n_streams, minutes), dtype=np.int32)
    for b, lo in enumerate(range(0, n_streams, _STREAM_BLOCK)):
        hi = min(lo + _STREAM_BLOCK, n_streams)
        rng = _rng(root, _K_SYNTH_COUNTS, b)
        out[lo:hi] = rng.poisson(lam[lo:hi, None], size=(hi - lo, minutes))
    return out


# --------------------------------------------------------------------------------------------
# MAF-synth parameters and per-minute rates (spec §4.2)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MafSynth:
    """Parameters of MAF-synth (spec §4.2). Every default is [ours]: the paper gives none.

    - ``sigma``: σ of the lognormal stream weights (item 2; ±3.9σ ≈ 8 decades, approximate).
    - ``amp_max``, ``period_min``: diurnal sinusoid, ``a_i ~ U(0, amp_max)`` (item 3); below 1 so
      every rate stays positive.
    - ``noise_cv_min``, ``noise_cv_max``: per-minute Gamma noise of mean 1 and CV
      ``c_i ~ U(noise_cv_min, noise_cv_max)`` (item 3).
    - ``high_factor``, ``low_factor``, ``h_to_l``, ``l_to_h``: the MAF-bursty MMPP (item 4):
      ``λ_H = high_factor·λ̄``, ``λ_L = low_factor·λ̄``, switching rates per second. They must
      preserve the mean: ``P(H)·high + (1 − P(H))·low = 1`` with ``P(H) = l_to_h/(l_to_h+h_to_l)``.
    - ``gamma_cv``: CV of the inter-arrival times of the gamma-renewal option (item 6) before
      ``cv_scale``; 1.0 makes it Poisson-like, so ``cv_scale`` is the CV itself.
    """

    sigma: float = 2.4
    amp_max: float = 0.5
    period_min: float = 1440.0
    noise_cv_min: float = 0.2
    noise_cv_max: float = 1.0
    high_factor: float = 4.0
    low_factor: float = 0.25
    h_to_l: float = 2.0
    l_to_h: float = 0.5
    gamma_cv: float = 1.0

    def __post_init__(self) -> None:
        _positive("sigma", self.sigma, allow_zero=True)
        amp = _positive("amp_max", self.amp_max, allow_zero=True)
        require(amp < 1, "amp_max", self.amp_max, "must be in [0, 1): rates must stay positive")
        _positive("period_min", self.period_min)
        lo = _positive("noise_cv_min", self.noise_cv_min)
        hi = _positive("noise_cv_max", self.noise_cv_max)
        require(lo <= hi, "noise_cv_min/noise_cv_max", (self.noise_cv_min, self.noise_cv_max),
                "must satisfy noise_cv_min <= noise_cv_max")
        h = _positive("high_factor", self.high_factor)
        low = _positive("low_factor", self.low_factor, allow_zero=True)
        require(h >= low, "high_factor/low_factor", (self.high_factor, self.low_factor),
                "must satisfy high_factor >= low_factor")
        _positive("h_to_l", self.h_to_l)
        _positive("l_to_h", self.l_to_h)
        _positive("gamma_cv", self.gamma_cv)
        mean = self.p_high * h + (1 - self.p_high) * low
        require(abs(mean - 1) <= 1e-9, "high_factor/low_factor/h_to_l/l_to_h",
                (self.high_factor, self.low_factor, self.h_to_l, self.l_to_h),
                f"must preserve the mean rate: P(H)·high + (1−P(H))·low = {mean:.6g}, not 1 "
                f"(P(H) = l_to_h/(l_to_h+h_to_l) = {self.p_high:.6g})")

    @property
    def p_high(self) -> float:
        """Stationary probability of the MMPP's high state."""
        return self.l_to_h / (self.l_to_h + self.h_to_l)


@dataclass(frozen=True)
class _Streams:
    """Per-stream MAF-synth parameters: mean rate (req/s), amplitude, phase, noise CV."""

    mean_rate: np.ndarray
    amp: np.ndarray
    phase: np.ndarray
    noise_cv: np.ndarray


def _maf_params(params: MafSynth | None) -> MafSynth:
    if params is None:
        return MafSynth()
    require(isinstance(params, MafSynth), "params", params, "must be a MafSynth (or None)")
    return params


def _draw_streams(params: MafSynth, n_streams: int, total_rate: float,
                  root: np.random.SeedSequence) -> _Streams:
    """Spec §4.2 items 2–3: weights normalised so the mean rates sum to ``total_rate`` exactly.
    Each parameter has its own child so a stream's draws do not depend on ``n_streams``."""
    w = _rng(root, _K_STREAMS, 0).lognormal(0.0, params.sigma, size=n_streams)
    amp = _rng(root, _K_STREAMS, 1).uniform(0.0, params.amp_max, size=n_streams)
    phase = _rng(root, _K_STREAMS, 2).uniform(0.0, 2 * np.pi, size=n_streams)
    cv = _rng(root, _K_STREAMS, 3).uniform(params.noise_cv_min, params.noise_cv_max,
                                            size=n_streams)
    return _Streams(w * (total_rate / w.sum()), amp, phase, cv)


def _rate_tile(st: _Streams, params: MafSynth, root: np.random.SeedSequence, block: int,
               hour: int) -> np.ndarray:
    """``λ_i(t)`` (req/s) for stream block ``block`` and the 60 minutes of hour block ``hour``.

    Always the full 60 columns, so the draws of a minute do not depend on the horizon asked for.
    """
    lo, hi = block * _STREAM_BLOCK, min((block + 1) * _STREAM_BLOCK, st.mean_rate.size)
    shape = (1.0 / st.noise_cv[lo:hi] ** 2).astype(np.float32)  # Gamma shape k = 1/c²
    rng = _rng(root, _K_NOISE, block, hour)
    # float32 Gamma draws: half the time of float64, and 7 digits are ample for a noise factor
    x = rng.standard_gamma(np.broadcast_to(shape[:, None], (hi - lo, _MINUTE_BLOCK)),
                           dtype=np.float32)
    x /= shape[:, None]  # mean 1, CV c_i
    t = np.arange(hour * _MINUTE_BLOCK, (hour + 1) * _MINUTE_BLOCK, dtype=float)
    mod = 1.0 + st.amp[lo:hi, None] * np.sin(2 * np.pi * t / params.period_min
                                             + st.phase[lo:hi, None])
    return st.mean_rate[lo:hi, None] * mod * x


def _tiles(n_streams: int, minutes: int):
    """(block, hour, stream slice, column slice of the tile, column slice of the output)."""
    for b, lo in enumerate(range(0, n_streams, _STREAM_BLOCK)):
        hi = min(lo + _STREAM_BLOCK, n_streams)
        for h, m0 in enumerate(range(0, minutes, _MINUTE_BLOCK)):
            m1 = min(m0 + _MINUTE_BLOCK, minutes)
            yield b, h, slice(lo, hi), slice(0, m1 - m0), slice(m0, m1)


def _default_total(n_streams: int, total_rate: float | None) -> float:
    # [ours] 10 req/min per stream on average, the same mean as Fig. 2's synthetic streams
    return n_streams * 10.0 / 60.0 if total_rate is None else _positive("total_rate", total_rate)


def maf_minute_rates(params: MafSynth | None = None, n_streams: int = 1000,
                     minutes: int = MINUTES_PER_WEEK, total_rate: float | None = None, *,
                     seed: int | np.random.SeedSequence = 0,
                     dtype: type | np.dtype = np.float32) -> np.ndarray:
    """Per-minute expected rates ``λ_i(t)`` in req/s of MAF-synth (spec §4.2 items 2–3).

    ``total_rate`` (req/s) is ``Σ_i λ̄_i``; the modulation keeps it only on average over time.
    ``None`` means 10 req/min per stream [ours]. Returns a ``dtype`` (float32 by default, to bound
    memory: 10k × 10,080 is 400 MB) array, streams × minutes.
    """
    params = _maf_params(params)
    n_streams = _int_at_least("n_streams", n_streams, 1)
    minutes = _int_at_least("minutes", minutes, 1)
    total = _default_total(n_streams, total_rate)
    root = _root(seed)
    st = _draw_streams(params, n_streams, total, root)
    out = np.empty((n_streams, minutes), dtype=dtype)
    for b, h, rows, tcols, ocols in _tiles(n_streams, minutes):
        out[rows, ocols] = _rate_tile(st, params, root, b, h)[:, tcols]
    return out


def maf_counts(params: MafSynth | None = None, n_streams: int = 1000,
               minutes: int = MINUTES_PER_WEEK, total_rate: float | None = None, *,
               seed: int | np.random.SeedSequence = 0) -> np.ndarray:
    """Per-minute counts ``N_{i,t} ~ Poisson(60 λ_i(t))`` of MAF-synth (spec §4.2 item 3), int32,
    streams × minutes. The same ``seed`` gives the rates of :func:`maf_minute_rates`.

    Generated tile by tile (512 streams × 60 minutes) so only the int32 result is large.
    """
    params = _maf_params(params)
    n_streams = _int_at_least("n_streams", n_streams, 1)
    minutes = _int_at_least("minutes", minutes, 1)
    total = _default_total(n_streams, total_rate)
    root = _root(seed)
    st = _draw_streams(params, n_streams, total, root)
    out = np.empty((n_streams, minutes), dtype=np.int32)
    for b, h, rows, tcols, ocols in _tiles(n_streams, minutes):
        lam = _rate_tile(st, params, root, b, h)
        n = _rng(root, _K_COUNTS, b, h).poisson(60.0 * lam)
        if n.max(initial=0) > _INT32_MAX:
            raise config_error("total_rate", total, "is too large: a per-minute count overflows "
                               "int32; lower total_rate or use more streams")
        out[rows, ocols] = n[:, tcols]
    return out


# --------------------------------------------------------------------------------------------
# CV versus window (Figs 2 and 5, claim 9)
# --------------------------------------------------------------------------------------------

def _windows_min(windows_min: object, minutes: int) -> list[int]:
    try:
        ws = [int(w) for w in windows_min]  # type: ignore[union-attr]
        ok = all(float(w) == int(w) for w in windows_min)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise config_error("windows_min", windows_min, "must be a sequence of integers") from None
    require(ok and len(ws) >= 1 and all(w >= 1 for w in ws), "windows_min", windows_min,
            "must be a non-empty sequence of integers >= 1 (minutes)")
    bad = [w for w in ws if minutes // w < 2]
    require(not bad, "windows_min", bad,
            f"must leave at least 2 windows in the {minutes}-minute horizon")
    return ws


def _cv_rows(block: np.ndarray, windows: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """For each window: the sum of per-row CVs over rows with a positive mean, and their number.

    A window of ``w`` minutes sums consecutive minutes; a trailing partial window is dropped.
    CV uses the population std (ddof = 0), spec §3 Fig 2.
    """
    sums = np.zeros(len(windows))
    ns = np.zeros(len(windows), dtype=np.int64)
    n_rows, minutes = block.shape
    for k, w in enumerate(windows):
        nw = minutes // w
        agg = block[:, :nw * w].reshape(n_rows, nw, w).sum(axis=2, dtype=np.int64)
        agg = agg.astype(np.float64)
        mean = agg.mean(axis=1)
        pos = mean > 0
        if pos.any():
            sums[k] += float((agg[pos].std(axis=1) / mean[pos]).sum())
            ns[k] += int(pos.sum())
    return sums, ns


def cv_by_window(counts: np.ndarray,
                 windows_min: Sequence[int] = FIG2_WINDOWS_MIN) -> pd.DataFrame:
    """Mean per-stream CV of window counts, for each window size (Fig. 2, spec §3).

    ``counts`` is streams × minutes. A window of ``w`` minutes aggregates ``w`` consecutive
    minutes; when ``w`` does not divide the horizon the trailing partial window is dropped
    (truncation), and every window must leave at least 2 windows. Streams with zero mean in an
    aggregation are excluded (spec: "exclude streams with zero mean count"); std is ddof = 0.
    Returns columns ``window_min, mean_cv, n_streams, n_windows``.
    """
    c = _counts_matrix(counts)
    ws = _windows_min(windows_min, c.shape[1])
    sums, ns = np.zeros(len(ws)), np.zeros(len(ws), dtype=np.int64)
    step = max(1, _BLOCK_ELEMS // c.shape[1])
    for lo in range(0, c.shape[0], step):
        s, n = _cv_rows(c[lo:lo + step], ws)
        sums += s
        ns += n
    return pd.DataFrame({
        "window_min": ws,
        "mean_cv": np.divide(sums, ns, out=np.full(len(ws), np.nan), where=ns > 0),
        "n_streams": ns,
        "n_windows": [c.shape[1] // w for w in ws],
    })


def group_cv(counts: np.ndarray, group_sizes: Sequence[int] = (1, 10, 100, 1000),
             windows_min: Sequence[int] = (1,), *,
             seed: int | np.random.SeedSequence = 0) -> pd.DataFrame:
    """Mean CV of the aggregated counts of random groups of ``g`` streams (Fig. 5, spec §3).

    Streams are shuffled once per group size (seeded) and cut into ``n_streams // g`` groups of
    ``g``; the leftover streams are unused. With ``g = n_streams`` there is a single group, whose
    CV is reported as is (``n_groups`` says so). Windows as in :func:`cv_by_window`; groups with a
    zero mean are excluded. Returns ``group_size, window_min, mean_cv, n_groups``.
    """
    c = _counts_matrix(counts)
    n, minutes = c.shape
    ws = _windows_min(windows_min, minutes)
    try:
        gs = [int(g) for g in group_sizes]
    except (TypeError, ValueError):
        raise config_error("group_sizes", group_sizes, "must be a sequence of integers") from None
    require(len(gs) >= 1 and all(1 <= g <= n for g in gs), "group_sizes", group_sizes,
            f"must be integers in [1, n_streams = {n}]")
    root = _root(seed)
    rows = []
    for k, g in enumerate(gs):
        n_groups = n // g
        perm = _rng(root, _K_GROUPS, k).permutation(n)[:n_groups * g].reshape(n_groups, g)
        # chunks of groups so the gathered block (chunk × g × minutes) stays bounded
        chunk = max(1, _BLOCK_ELEMS // (g * minutes))
        sums, ns = np.zeros(len(ws)), np.zeros(len(ws), dtype=np.int64)
        for lo in range(0, n_groups, chunk):
            idx = perm[lo:lo + chunk]
            agg = c[idx.ravel()].reshape(idx.shape[0], g, minutes).sum(axis=1, dtype=np.int64)
            s, m = _cv_rows(agg, ws)
            sums += s
            ns += m
        for w, s, m in zip(ws, sums, ns):
            rows.append({"group_size": g, "window_min": w,
                         "mean_cv": s / m if m else np.nan, "n_groups": int(m)})
    return pd.DataFrame(rows)


def subminute_cv(counts: np.ndarray, windows_s: Sequence[float] = SUBMINUTE_WINDOWS_S, *,
                 variant: str = "stable", params: MafSynth | None = None,
                 n_streams: int = 200, n_minutes: int = 10, first_minute: int = 0,
                 min_mean_per_min: float = 0.0,
                 seed: int | np.random.SeedSequence = 0) -> pd.DataFrame:
    """Mean per-stream CV at sub-minute windows, from within-minute arrival placement.

    Spec §3 Fig 2 ("sub-minute τ using within-minute arrival placement", §4.2 item 4): a random
    subset of ``n_streams`` streams with at least one arrival in minutes
    ``[first_minute, first_minute + n_minutes)`` [ours: a subset keeps it cheap], and, if
    ``min_mean_per_min > 0``, a mean of at least that many arrivals per minute there (sparse
    streams have CV ≈ 1/√(λτ) whatever the process, which hides burstiness). ``"stable"``
    places each minute's ``N_{i,t}`` arrivals uniformly; ``"bursty"`` runs the MAF-bursty MMPP
    with mean rate ``N_{i,t}/60`` in minute ``t`` (its counts are then random around ``N``). The
    span is cut into windows of ``τ`` seconds; a trailing partial window is dropped. Returns
    ``window_s, mean_cv, n_streams, n_windows``.
    """
    c = _counts_matrix(counts)
    params = _maf_params(params)
    one_of("variant", variant, ("stable", "bursty"))
    n_streams = _int_at_least("n_streams", n_streams, 1)
    n_minutes = _int_at_least("n_minutes", n_minutes, 1)
    first_minute = _int_at_least("first_minute", first_minute, 0)
    require(first_minute + n_minutes <= c.shape[1], "first_minute + n_minutes",
            first_minute + n_minutes, f"must be <= the horizon, {c.shape[1]} minutes")
    span = 60.0 * n_minutes
    try:
        taus = [float(w) for w in windows_s]
    except (TypeError, ValueError):
        raise config_error("windows_s", windows_s, "must be a sequence of seconds") from None
    require(len(taus) >= 1 and all(math.isfinite(t) and 0 < t <= span / 2 for t in taus),
            "windows_s", windows_s, f"must be seconds in (0, {span / 2:g}] (at least 2 windows)")
    root = _root(seed)
    sub = c[:, first_minute:first_minute + n_minutes]
    floor = _positive("min_mean_per_min", min_mean_per_min, allow_zero=True)
    total = sub.sum(axis=1, dtype=np.int64)
    eligible = np.flatnonzero((total > 0) & (total >= floor * n_minutes))
    require(eligible.size > 0, "min_mean_per_min", min_mean_per_min,
            "leaves no stream: no stream has that many arrivals per minute in the chosen minutes")
    pick = np.sort(_rng(root, _K_SUBSET).choice(eligible, size=min(n_streams, eligible.size),
                                                replace=False))
    sub = np.asarray(sub[pick], dtype=np.int64)
    rng = _rng(root, _K_ARRIVALS)
    if variant == "stable":
        t, s = _uniform_in_pieces(sub, 60.0, rng)
    else:
        t, s = _mmpp_arrivals(sub / 60.0, 60.0, span, params, rng)
    rows = []
    for tau in taus:
        nb = int(math.floor(span / tau + 1e-9))
        b = np.floor(t / tau).astype(np.int64)
        keep = b < nb
        binned = np.bincount(s[keep] * nb + b[keep], minlength=pick.size * nb)
        cv, m = _cv_of(binned.reshape(pick.size, nb))
        rows.append({"window_s": tau, "mean_cv": cv, "n_streams": m, "n_windows": nb})
    return pd.DataFrame(rows)


def _cv_of(x: np.ndarray) -> tuple[float, int]:
    """Mean over rows (with a positive mean) of the population CV, and the number of such rows."""
    x = x.astype(np.float64)
    mean = x.mean(axis=1)
    pos = mean > 0
    if not pos.any():
        return float("nan"), 0
    return float((x[pos].std(axis=1) / mean[pos]).mean()), int(pos.sum())


# --------------------------------------------------------------------------------------------
# within-minute arrivals (vectorised over streams)
# --------------------------------------------------------------------------------------------

def _uniform_in_pieces(n: np.ndarray, piece_s: float,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n[i, p]`` arrivals placed uniformly in piece ``p`` (length ``piece_s``) of stream ``i``:
    given the counts, a Poisson process (MAF-stable, spec §4.2 item 4). Unsorted."""
    flat = n.ravel()
    cell = np.repeat(np.arange(flat.size), flat)
    piece = cell % n.shape[1]
    t = (piece + rng.random(cell.size)) * piece_s
    return t, cell // n.shape[1]


def _mmpp_states(n: int, horizon: float, params: MafSynth,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """State paths of ``n`` independent 2-state CTMCs on ``[0, horizon)``, started stationary.

    Returns segments ``(stream, start, end, high)``. Sojourns are exponential (H: mean
    1/h_to_l, L: mean 1/l_to_h), so a fresh sojourn at t = 0 is stationary too. A fixed number
    of sojourns is drawn for every stream at once; the few streams not yet past the horizon get
    another round.
    """
    p_h = params.p_high
    # expected switches on the horizon: 2·P(H)·h_to_l per second; 50% margin plus 4 [ours]
    k = int(math.ceil(1.5 * 2 * p_h * params.h_to_l * horizon)) + 4
    mean_soj = np.array([1.0 / params.l_to_h, 1.0 / params.h_to_l])  # index by high (0/1)
    state = rng.random(n) < p_h
    t0 = np.zeros(n)
    active = np.arange(n)
    parts = []
    alt = (np.arange(k) % 2).astype(bool)
    while active.size:
        st = state[active, None] ^ alt[None, :]  # states alternate along a stream's path
        soj = rng.exponential(size=(active.size, k)) * mean_soj[st.astype(np.int64)]
        end = t0[active, None] + np.cumsum(soj, axis=1)
        start = end - soj
        keep = start < horizon
        rows = np.broadcast_to(active[:, None], keep.shape)
        parts.append((rows[keep], start[keep], np.minimum(end[keep], horizon), st[keep]))
        more = end[:, -1] < horizon
        t0[active[more]] = end[more, -1]
        state[active[more]] = ~st[more, -1]
        active = active[more]
    s, a, e, h = (np.concatenate(x) for x in zip(*parts))
    return s, a, e, h


def _split_segments(s: np.ndarray, a: np.ndarray, e: np.ndarray, h: np.ndarray,
                    piece_s: float, n_pieces: int):
    """Cut segments at piece boundaries so each lies in one piece (rates change per piece)."""
    p0 = np.minimum((a // piece_s).astype(np.int64), n_pieces - 1)
    p1 = np.minimum(np.ceil(e / piece_s).astype(np.int64) - 1, n_pieces - 1)
    p1 = np.maximum(p1, p0)
    reps = p1 - p0 + 1
    if np.all(reps == 1):
        return s, a, e, h, p0
    seg = np.repeat(np.arange(s.size), reps)
    within = np.arange(seg.size) - np.repeat(np.cumsum(reps) - reps, reps)
    p = p0[seg] + within
    a2 = np.maximum(a[seg], p * piece_s)
    e2 = np.minimum(e[seg], (p + 1) * piece_s)
    return s[seg], a2, e2, h[seg], p


def _mmpp_arrivals(mean_rate: np.ndarray, piece_s: float, horizon: float, params: MafSynth,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """MAF-bursty (spec §4.2 item 4), vectorised over streams: a 2-state MMPP per stream with
    mean rate ``mean_rate[i, p]`` (req/s) in piece ``p`` of length ``piece_s``.

    Simulate the state path, cut it at piece boundaries, draw a Poisson count per segment
    (rate ``high_factor·λ̄`` or ``low_factor·λ̄``) and place it uniformly. Unsorted.
    """
    s, a, e, h, p = _split_segments(*_mmpp_states(mean_rate.shape[0], horizon, params, rng),
                                    piece_s, mean_rate.shape[1])
    factor = np.where(h, params.high_factor, params.low_factor)
    n = rng.poisson(mean_rate[s, p] * factor * (e - a))
    t = np.repeat(a, n) + rng.random(int(n.sum())) * np.repeat(e - a, n)
    return t, np.repeat(s, n)


def _gamma_renewal(rate: np.ndarray, cv: float, horizon: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stationary Gamma-renewal arrivals on ``[0, horizon)`` per stream (spec §4.2 item 6).

    Inter-arrivals are Gamma with mean ``1/rate_i`` and CV ``cv`` (shape ``k = 1/cv²``). To start
    in equilibrium the interval covering 0 is length-biased, Gamma(k + 1), and 0 falls uniformly
    inside it, so the first arrival is ``U·Gamma(k + 1)`` (without it the first window would be
    biased). Draws a budget of intervals per stream (mean plus 6 sd plus 4 [ours]) and tops up the
    rare streams that fall short.
    """
    k = 1.0 / cv ** 2
    n = rate.size
    mu = rate * horizon
    budget = np.ceil(mu + 6 * cv * np.sqrt(mu + 1) + 4).astype(np.int64)
    times, streams = [], []
    t0 = np.zeros(n)
    active = np.arange(n)
    first = True
    while active.size:
        b = budget[active]
        sid = np.repeat(active, b)
        start = np.cumsum(b) - b
        shape = np.full(sid.size, k)
        if first:
            shape[start] = k + 1.0
        x = rng.standard_gamma(shape) / (k * rate[sid])
        if first:
            x[start] *= rng.random(start.size)
        cs = np.cumsum(x)
        t = cs - np.repeat(cs[start] - x[start], b) + np.repeat(t0[active], b)
        keep = t < horizon
        times.append(t[keep])
        streams.append(sid[keep])
        last = t[start + b - 1]
        more = last < horizon
        t0[active[more]] = last[more]
        budget[active[more]] = np.maximum(b[more] // 2, 4)
        active = active[more]
        first = False
    return np.concatenate(times), np.concatenate(streams)


# --------------------------------------------------------------------------------------------
# simulation slices: requests for the simulators (spec §4.2 item 5)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class StreamRates:
    """Per-stream rates (req/s) of a simulation slice and the stream → model map (round-robin,
    stream ``i`` queries model ``i mod n_models``, spec §4.2 item 1)."""

    rate: np.ndarray
    model: np.ndarray
    n_models: int

    @property
    def n_streams(self) -> int:
        return int(self.rate.size)

    @property
    def total(self) -> float:
        """The total arrival rate (req/s)."""
        return float(self.rate.sum())

    @property
    def model_rate(self) -> np.ndarray:
        """Average arrival rate per model (req/s): what the planners consume."""
        return np.bincount(self.model, weights=self.rate, minlength=self.n_models)


@dataclass(frozen=True, eq=False)
class MafSlice:
    """Arrivals of one simulation slice: ``arrival_ms`` (sorted), ``stream`` (the stream of each
    arrival) and the slice's :class:`StreamRates`."""

    arrival_ms: np.ndarray
    stream: np.ndarray
    rates: StreamRates
    horizon_s: float
    variant: str

    @property
    def model(self) -> np.ndarray:
        return self.rates.model[self.stream]

    def requests(self, slo_ms: float = DEFAULT_SLO_MS) -> Requests:
        """The arrivals as :class:`Requests` with deadline ``arrival + slo_ms``."""
        slo = _positive("slo_ms", slo_ms)
        return Requests(self.arrival_ms, self.model, self.arrival_ms + slo)


def _n_models(models: ModelSet | int) -> int:
    if isinstance(models, ModelSet):
        return models.n
    return _int_at_least("models", models, 1)


def maf_stream_rates(n_streams: int, total_rate: float, models: ModelSet | int = 16, *,
                     params: MafSynth | None = None, minute: int = 0,
                     rate_scale: float = 1.0,
                     seed: int | np.random.SeedSequence = 0) -> StreamRates:
    """The rates (req/s) of minute ``minute`` of MAF-synth, rescaled so they sum to
    ``rate_scale · total_rate`` (spec §4.2 item 5), and the round-robin stream → model map.

    Column ``minute`` of :func:`maf_minute_rates` with the same seed, rescaled. ``rate_scale``
    mirrors AlpaServe's ``rate_scale_factor`` (spec §4.2 item 6).
    """
    params = _maf_params(params)
    n_streams = _int_at_least("n_streams", n_streams, 1)
    total = _positive("total_rate", total_rate)
    minute = _int_at_least("minute", minute, 0)
    scale = _positive("rate_scale", rate_scale)
    m = _n_models(models)
    root = _root(seed)
    st = _draw_streams(params, n_streams, total, root)
    hour, col = divmod(minute, _MINUTE_BLOCK)
    n_blocks = -(-n_streams // _STREAM_BLOCK)
    lam = np.concatenate([_rate_tile(st, params, root, b, hour)[:, col] for b in range(n_blocks)])
    rate = lam * (scale * total / lam.sum())
    return StreamRates(rate, np.arange(n_streams, dtype=np.int64) % m, m)


def maf_arrivals(n_streams: int, total_rate: float, horizon_s: float, variant: str = "stable",
                 models: ModelSet | int = 16, *, params: MafSynth | None = None,
                 minute: int = 0, rate_scale: float = 1.0, cv_scale: float = 1.0,
                 seed: int | np.random.SeedSequence = 0) -> MafSlice:
    """One simulation slice of MAF-synth on ``[0, horizon_s)`` (spec §4.2 items 4–6).

    Rates are :func:`maf_stream_rates` (one minute, stationary over the horizon). Within it:

    - ``"stable"``: a Poisson process per stream (a Poisson count placed uniformly);
    - ``"bursty"``: the 2-state MMPP per stream, mean rate preserved;
    - ``"gamma"``: stationary Gamma-renewal per stream, inter-arrival CV
      ``params.gamma_cv · cv_scale`` (AlpaServe's ``cv_scale_factor``); ``cv_scale`` is only
      meaningful here and must stay 1 for the other variants.
    """
    one_of("variant", variant, VARIANTS)
    horizon = _positive("horizon_s", horizon_s)
    cvs = _positive("cv_scale", cv_scale)
    require(variant == "gamma" or cvs == 1.0, "cv_scale", cv_scale,
            "applies only to variant 'gamma'; leave it at 1.0 for 'stable' and 'bursty'")
    params = _maf_params(params)
    rates = maf_stream_rates(n_streams, total_rate, models, params=params, minute=minute,
                             rate_scale=rate_scale, seed=seed)
    rng = _rng(_root(seed), _K_ARRIVALS)
    if variant == "stable":
        n = rng.poisson(rates.rate * horizon)
        t, s = _uniform_in_pieces(n[:, None], horizon, rng)
    elif variant == "bursty":
        t, s = _mmpp_arrivals(rates.rate[:, None], horizon, horizon, params, rng)
    else:
        t, s = _gamma_renewal(rates.rate, params.gamma_cv * cvs, horizon, rng)
    order = np.argsort(t, kind="stable")
    return MafSlice(t[order] * 1000.0, s[order].astype(np.int64), rates, horizon, variant)


def maf_requests(n_streams: int, total_rate: float, horizon_s: float, variant: str = "stable",
                 models: ModelSet | int = 16, slo_ms: float = DEFAULT_SLO_MS,
                 seed: int | np.random.SeedSequence = 0, *, minute: int = 0,
                 rate_scale: float = 1.0, cv_scale: float = 1.0,
                 params: MafSynth | None = None) -> Requests:
    """Requests of one MAF-synth simulation slice (see :func:`maf_arrivals`), arrival times in
    ms, stream ``i`` on model ``i mod n_models``, deadline ``arrival + slo_ms``.

    The per-stream and per-model rates of the same call are
    ``maf_stream_rates(n_streams, total_rate, models, minute=..., rate_scale=..., seed=...)``.
    """
    slo = _positive("slo_ms", slo_ms)
    return maf_arrivals(n_streams, total_rate, horizon_s, variant, models, params=params,
                        minute=minute, rate_scale=rate_scale, cv_scale=cv_scale,
                        seed=seed).requests(slo)
