"""Query-size (batch-size) distributions of Section 7: the artifact's lognormal mix, the default,
and a clipped Gaussian for Figs. 12 and 16a.

The paper drives its evaluation with "the production trace of real query batches from Meta" and
calls the distribution log-normal; the artifact's sampler (``helper.random_samp``) is the exact
generator, and :func:`sample` draws from the same law (re-implemented, not copied). Every query is
rounded *up* to a multiple of 10, so sizes lie in {10, 20, …, 1000}.

The pmf over those 100 sizes is computed exactly (:func:`pmf`), which the upper bound of
Eqs. 9–15 needs: the lognormal part through its CDF, the uniform parts as point masses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from infsched.errors import one_of, require
from infsched.kairos.model import BATCHES

__all__ = ["BatchDist", "LOGNORMAL_MIX", "pmf", "sample", "DISTS"]

DISTS = ("lognormal-mix", "gauss")
# the artifact's mixture: lognormal(5.1, 0.2) kept when in [100, 200]; r ~ U{1..99} picks a branch
_LN_MU, _LN_SIGMA = 5.1, 0.2


@dataclass(frozen=True)
class BatchDist:
    """A query-size distribution: ``kind`` is ``"lognormal-mix"`` (the artifact's generator) or
    ``"gauss"`` (N(mu, sigma²) clipped to [1, 1000]; the paper gives no parameters, so
    μ = 250 and σ = 100 are this reproduction's choice)."""

    kind: str = "lognormal-mix"
    mu: float = 250.0
    sigma: float = 100.0

    def __post_init__(self) -> None:
        one_of("batch_dist", self.kind, DISTS)
        require(np.isfinite(self.mu) and 1 <= self.mu <= 1000, "gauss_mu", self.mu,
                "must lie in [1, 1000] (queries)")
        require(np.isfinite(self.sigma) and self.sigma > 0, "gauss_sigma", self.sigma,
                "must be > 0 (queries)")

    def pmf(self) -> np.ndarray:
        return pmf(self)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return sample(self, rng, n)


LOGNORMAL_MIX = BatchDist()


def _ceil10(s: np.ndarray) -> np.ndarray:
    return (10 * np.ceil(np.asarray(s, dtype=float) / 10)).astype(np.int64)


def _uniform_ints(lo: int, hi: int) -> np.ndarray:
    """pmf over BATCHES of ceil10(s) for s uniform on the integers lo..hi."""
    out = np.zeros(BATCHES.size)
    b = _ceil10(np.arange(lo, hi + 1))
    np.add.at(out, b // 10 - 1, 1.0 / (hi - lo + 1))
    return out


@lru_cache(maxsize=16)
def _pmf(dist: BatchDist) -> np.ndarray:
    from scipy import stats  # here, not at the top: it costs a sweep worker ~1 s to import

    if dist.kind == "gauss":
        edges = np.concatenate([[-np.inf], BATCHES[:-1].astype(float), [np.inf]])
        p = np.diff(stats.norm.cdf(edges, loc=dist.mu, scale=dist.sigma))
    else:
        # lognormal kept on [100, 200]: b = k for s in (k-10, k]; outside, s ~ U{190..199}
        ln = stats.lognorm(s=_LN_SIGMA, scale=np.exp(_LN_MU))
        keep = np.zeros(BATCHES.size)
        for b in range(110, 201, 10):
            keep[b // 10 - 1] = ln.cdf(b) - ln.cdf(b - 10)
        outside = 1.0 - (ln.cdf(200) - ln.cdf(100))
        p = (8 * _uniform_ints(1, 99) + 22 * _uniform_ints(200, 599)
             + 5 * _uniform_ints(600, 999)
             + 64 * (keep + outside * _uniform_ints(190, 199))) / 99
    p = p / p.sum()
    p.setflags(write=False)
    return p


def pmf(dist: BatchDist = LOGNORMAL_MIX) -> np.ndarray:
    """Exact probabilities of the 100 sizes in :data:`BATCHES` (10, 20, …, 1000)."""
    return _pmf(dist)


def sample(dist: BatchDist, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` query sizes from ``dist`` (int64, multiples of 10 in 10..1000)."""
    require(isinstance(n, (int, np.integer)) and n >= 0, "n", n, "must be an integer >= 0")
    if dist.kind == "gauss":
        return _ceil10(np.clip(rng.normal(dist.mu, dist.sigma, n), 1, 1000))
    s = rng.lognormal(_LN_MU, _LN_SIGMA, n)
    r = rng.integers(1, 100, n)
    small, mid, large = r <= 8, (r > 8) & (r <= 30), (r > 30) & (r <= 35)
    s = np.where(small, rng.integers(1, 100, n), s)
    s = np.where(mid, rng.integers(200, 600, n), s)
    s = np.where(large, rng.integers(600, 1000, n), s)
    clipped = (r > 35) & ((s > 200) | (s < 100))
    s = np.where(clipped, rng.integers(190, 200, n), s)
    return _ceil10(s)
