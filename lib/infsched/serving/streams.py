"""The head-to-head chapter's arrival streams: Poisson, a two-state MMPP with the same mean rate,
and the Twitter trace replayed at a chosen mean rate (spec headtohead §2)."""

from __future__ import annotations

import numpy as np

from ..errors import one_of, require
from ..workload import PiecewiseRate, mmpp_arrivals, piecewise_poisson_arrivals, poisson_arrivals

__all__ = ["WORKLOADS", "MMPP_BURST", "MMPP_SOJOURN_S", "arrivals"]

WORKLOADS = ("poisson", "mmpp", "twitter")

#: MMPP stand-in for a bursty stream: two states at (1 ± BURST) × the mean rate, equally likely,
#: each lasting MMPP_SOJOURN_S seconds on average (same mean rate as the Poisson stream).
MMPP_BURST = 0.5
MMPP_SOJOURN_S = 1.0


def arrivals(workload: str, rate_qps: float, n: int, rng: np.random.Generator, *,
             interval_s: float = 10.0) -> np.ndarray:
    """Arrival times (ms, sorted) of a stream of mean rate ``rate_qps``.

    ``poisson``: ``n`` arrivals; ``mmpp``: ``n`` arrivals, two states at
    ``(1 ± MMPP_BURST) × rate``, equally likely, mean sojourn ``MMPP_SOJOURN_S`` s; ``twitter``:
    the 27 ten-second QPS values of ``data/traces/twitter_2018_04_25.csv`` scaled to mean
    ``rate_qps`` and played once, each interval lasting ``interval_s`` seconds (10: real time;
    less compresses time, the rates unchanged), whatever ``n``."""
    one_of("workload", workload, WORKLOADS)
    require(np.isfinite(rate_qps) and rate_qps > 0, "rate_qps", rate_qps, "must be > 0")
    lam = rate_qps / 1000.0  # per ms
    if workload == "poisson":
        return poisson_arrivals(lam, n=n, rng=rng)
    if workload == "mmpp":
        q = 1.0 / (MMPP_SOJOURN_S * 1000.0)
        rates = [(1 + MMPP_BURST) * lam, (1 - MMPP_BURST) * lam]
        horizon = 1.5 * n / lam + 10 * MMPP_SOJOURN_S * 1000.0
        t, _ = mmpp_arrivals(rates, [[-q, q], [q, -q]], horizon, rng)
        return t[:n]
    from ..ramsis.trace import load_twitter_trace

    require(np.isfinite(interval_s) and interval_s > 0, "interval_s", interval_s, "must be > 0 (s)")
    qps = load_twitter_trace()["qps"].to_numpy(float)
    piece = interval_s * 1000.0  # ms per interval
    sched = PiecewiseRate(tuple((np.arange(qps.size) * piece).tolist()),
                          tuple((qps / qps.mean() * lam).tolist()))
    return piecewise_poisson_arrivals(sched, qps.size * piece, rng)
