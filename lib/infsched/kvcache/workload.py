"""The real-data workload and its offline substitute (Section 5.2, spec §5).

The paper samples 10,000 conversations of LMSYS-Chat-1M and counts **words**: the first user
question is the prompt, the response the output. The dataset is gated on the Hugging Face hub and
cannot be fetched here, so we draw prompt and output lengths from independent discretised
lognormals fitted to the two statistics the paper reports, mean and median (prompt 40.62 / 11,
output 85.32 / 45): ``μ = ln(median)``, ``σ² = 2 ln(mean / median)``, rounded and clipped to
``[1, 4096]``. This reproduces those four numbers, not the shape of the paper's Fig. 5, and the
independence of the two lengths is our assumption. The "dataset" is one such sample of 10,000
drawn with a fixed seed; runs draw their requests from it as the paper draws from its sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from infsched.errors import require

__all__ = ["LengthModel", "PAPER_PROMPT", "PAPER_OUTPUT", "substitute_dataset", "poisson_requests"]


@dataclass(frozen=True)
class LengthModel:
    """A discretised lognormal fitted to a ``mean`` and ``median`` (words), clipped to
    ``[1, cap]``."""

    mean: float
    median: float
    cap: int = 4096

    def __post_init__(self) -> None:
        require(isinstance(self.median, (int, float)) and self.median >= 1, "median", self.median,
                "must be a number >= 1")
        require(isinstance(self.mean, (int, float)) and self.mean > self.median, "mean", self.mean,
                f"must exceed the median ({self.median}) for a lognormal fit")
        require(isinstance(self.cap, int) and self.cap >= self.median, "cap", self.cap,
                "must be an integer >= the median")

    @property
    def mu(self) -> float:
        return math.log(self.median)

    @property
    def sigma(self) -> float:
        return math.sqrt(2.0 * math.log(self.mean / self.median))

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        x = np.rint(np.exp(rng.normal(self.mu, self.sigma, size)))
        return np.clip(x, 1, self.cap).astype(np.int64)


#: The statistics of the paper's 10k LMSYS-Chat-1M sample (Section 5.2, Fig. 5), in words.
PAPER_PROMPT = LengthModel(mean=40.62, median=11.0)
PAPER_OUTPUT = LengthModel(mean=85.32, median=45.0)
DATASET_SEED = 20250211      # fixed: the substitute sample is our stand-in "dataset"


def substitute_dataset(size: int = 10_000, seed: int = DATASET_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The frozen substitute sample: ``(prompt, output)`` word counts of ``size`` requests."""
    require(isinstance(size, int) and size >= 1, "size", size, "must be a positive integer")
    rng = np.random.default_rng(seed)
    return PAPER_PROMPT.sample(rng, size), PAPER_OUTPUT.sample(rng, size)


def poisson_requests(n: int, rate_per_s: float, rng: np.random.Generator,
                     dataset: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` requests drawn without replacement from ``dataset`` (the substitute sample by
    default), arriving as a Poisson process of ``rate_per_s``: ``(arrival_s, prompt, output)``."""
    prompt, output = substitute_dataset() if dataset is None else dataset
    require(isinstance(n, int) and 1 <= n <= prompt.size, "n", n,
            f"must be an integer in [1, {prompt.size}] (the dataset's size)")
    require(isinstance(rate_per_s, (int, float)) and rate_per_s > 0, "rate_per_s", rate_per_s,
            "must be a positive number of requests per second")
    require(isinstance(rng, np.random.Generator), "rng", type(rng).__name__,
            "must be a numpy Generator")
    pick = rng.choice(prompt.size, size=n, replace=False)
    arrival = np.cumsum(rng.exponential(1.0 / rate_per_s, size=n))
    return arrival, prompt[pick], output[pick]
