"""The head-to-head chapter's arrival streams: Poisson, a two-state MMPP with the same mean rate,
and the Twitter trace replayed at a chosen mean rate (spec headtohead §2); for the sensitivity
sweep (issue 33, item 6) also Gamma renewal arrivals of a chosen CV and the MAF-synth stand-in
for the Azure Functions trace (the Shepherd chapter's generator, :mod:`infsched.shepherd.traces`),
and the MMPP's burst amplitude and sojourn as parameters."""

from __future__ import annotations

import numpy as np

from ..errors import one_of, require
from ..workload import PiecewiseRate, mmpp_arrivals, piecewise_poisson_arrivals, poisson_arrivals

__all__ = ["WORKLOADS", "EXTRA_WORKLOADS", "MMPP_BURST", "MMPP_SOJOURN_S", "MAF_STREAMS", "arrivals"]

WORKLOADS = ("poisson", "mmpp", "twitter")
#: streams only the sensitivity sweep draws (not in the chapter's load sweeps)
EXTRA_WORKLOADS = ("gamma", "maf")

#: MMPP stand-in for a bursty stream: two states at (1 ± BURST) × the mean rate, equally likely,
#: each lasting MMPP_SOJOURN_S seconds on average (same mean rate as the Poisson stream).
MMPP_BURST = 0.5
MMPP_SOJOURN_S = 1.0
#: MAF-synth's streams superposed into one (the Shepherd chapter's default population)
MAF_STREAMS = 1000


def _positive(name: str, x: float) -> float:
    require(isinstance(x, (int, float, np.floating)) and not isinstance(x, bool) and np.isfinite(x)
            and x > 0, name, x, "must be a finite number > 0")
    return float(x)


def arrivals(workload: str, rate_qps: float, n: int, rng: np.random.Generator, *,
             interval_s: float = 10.0, burst: float = MMPP_BURST, sojourn_s: float = MMPP_SOJOURN_S,
             cv: float = 1.0) -> np.ndarray:
    """Arrival times (ms, sorted) of a stream of mean rate ``rate_qps``.

    ``poisson``: ``n`` arrivals; ``mmpp``: ``n`` arrivals, two states at
    ``(1 ± burst) × rate``, equally likely, mean sojourn ``sojourn_s`` s each (``burst`` in
    [0, 1)); ``twitter``: the 27 ten-second QPS values of ``data/traces/twitter_2018_04_25.csv``
    scaled to mean ``rate_qps`` and played once, each interval lasting ``interval_s`` seconds
    (10: real time; less compresses time, the rates unchanged), whatever ``n``; ``gamma``:
    ``n`` arrivals of a renewal process with Gamma inter-arrival times of mean ``1/rate`` and
    coefficient of variation ``cv`` (1: Poisson; shape ``1/cv²``); ``maf``: ``n`` arrivals of
    MAF-synth's bursty variant (spec shepherd §4.2: :data:`MAF_STREAMS` streams of lognormal
    rates, each a 2-state MMPP within the minute), rates rescaled to sum to ``rate_qps``, seeded
    from ``rng``."""
    one_of("workload", workload, WORKLOADS + EXTRA_WORKLOADS)
    require(np.isfinite(rate_qps) and rate_qps > 0, "rate_qps", rate_qps, "must be > 0")
    lam = rate_qps / 1000.0  # per ms
    if workload == "poisson":
        return poisson_arrivals(lam, n=n, rng=rng)
    if workload == "mmpp":
        require(isinstance(burst, (int, float, np.floating)) and 0 <= burst < 1, "burst", burst,
                "must be in [0, 1) (the states' rates are (1 ± burst) × the mean)")
        sojourn_s = _positive("sojourn_s", sojourn_s)
        q = 1.0 / (sojourn_s * 1000.0)
        rates = [(1 + burst) * lam, (1 - burst) * lam]
        horizon = 1.5 * n / lam + 10 * sojourn_s * 1000.0
        t, _ = mmpp_arrivals(rates, [[-q, q], [q, -q]], horizon, rng)
        return t[:n]
    if workload == "gamma":
        k = 1.0 / _positive("cv", cv) ** 2
        return np.cumsum(rng.standard_gamma(k, size=n) / (k * lam))
    if workload == "maf":
        from ..shepherd.traces import maf_arrivals

        seed = int(rng.integers(2**63 - 1))
        horizon_s = 1.2 * n / rate_qps + 1.0
        while True:
            t = maf_arrivals(MAF_STREAMS, rate_qps, horizon_s, "bursty", seed=seed).arrival_ms
            if t.size >= n:
                return t[:n]
            horizon_s *= 1.5
    from ..ramsis.trace import load_twitter_trace

    require(np.isfinite(interval_s) and interval_s > 0, "interval_s", interval_s, "must be > 0 (s)")
    qps = load_twitter_trace()["qps"].to_numpy(float)
    piece = interval_s * 1000.0  # ms per interval
    sched = PiecewiseRate(tuple((np.arange(qps.size) * piece).tolist()),
                          tuple((qps / qps.mean() * lam).tolist()))
    return piecewise_poisson_arrivals(sched, qps.size * piece, rng)


def judged_rate_factor(workload: str, warmup: float = 0.1) -> float:
    """The expected arrival rate over the queries a run is judged on (after the first ``warmup``
    share, :func:`.contenders.judge`), as a multiple of the stream's mean rate. Stationary
    streams: 1. The Twitter trace rises through the day, so the window after its first 10 % of
    queries is busier than the trace's mean: with ``N`` queries over a trace of length ``T``,
    the window holds ``(1 - warmup) N`` queries in ``T - t_w``, where ``t_w`` is when the expected
    count reaches ``warmup N`` (independent of the rate and of how long an interval lasts). A
    judged goodput is on-time queries per second of that window, so this is where its ceiling
    lies."""
    one_of("workload", workload, WORKLOADS + EXTRA_WORKLOADS)
    require(isinstance(warmup, float) and 0 <= warmup < 1, "warmup", warmup, "must be in [0, 1)")
    if workload != "twitter":
        return 1.0
    from ..ramsis.trace import load_twitter_trace

    qps = load_twitter_trace()["qps"].to_numpy(float)
    cum = np.concatenate([[0.0], np.cumsum(qps)])  # expected queries at each interval's end (x 1 interval)
    target = warmup * cum[-1]
    i = int(np.searchsorted(cum, target, side="right")) - 1  # the interval holding the warm-up's end
    t_w = i + (target - cum[i]) / qps[i]                     # in intervals
    return float((1.0 - warmup) * qps.size / (qps.size - t_w))
