"""System parameters of Section 2: K server classes with rates μ, accuracies a, fractions α."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from infsched.errors import InfeasibleError, config_error, require


def _as_tuple(name: str, values) -> tuple[float, ...]:
    """``values`` as floats; a string, or an element that is not a real number (a string, a
    bool), is rejected rather than converted."""
    def real(v) -> bool:
        return isinstance(v, (numbers.Real, np.floating, np.integer)) and not isinstance(v, (bool, np.bool_))

    try:
        ok = not isinstance(values, (str, bytes)) and all(real(v) for v in values)
    except TypeError:
        ok = False
    if not ok:
        raise config_error(name, values, "must be a sequence of numbers (not strings or booleans)")
    out = tuple(float(v) for v in values)
    require(len(out) >= 1, name, values, "must hold at least one class")
    require(all(math.isfinite(v) for v in out), name, values, "must be finite numbers")
    return out


@dataclass(frozen=True)
class SystemParams:
    """K classes of servers (Section 2, eq. 1).

    Class k holds a fraction ``alpha[k]`` of the n servers, serves at rate ``mu[k]`` and earns
    accuracy ``a[k]``. Classes are ordered fastest first: μ strictly decreasing and a strictly
    increasing, as the paper assumes (class 1 fastest, class K most accurate).
    """

    mu: tuple[float, ...]
    a: tuple[float, ...]
    alpha: tuple[float, ...]

    def __post_init__(self) -> None:
        mu = _as_tuple("mu", self.mu)
        a = _as_tuple("a", self.a)
        alpha = _as_tuple("alpha", self.alpha)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "alpha", alpha)
        require(len(mu) == len(a) == len(alpha), "mu/a/alpha", (len(mu), len(a), len(alpha)),
                "mu, a and alpha must have the same length K")
        require(all(m > 0 for m in mu), "mu", mu, "service rates must be positive")
        require(all(x > 0 for x in alpha), "alpha", alpha, "class fractions must be positive")
        require(abs(sum(alpha) - 1.0) <= 1e-9, "alpha", alpha,
                f"class fractions must sum to 1 (they sum to {sum(alpha):.12g})")
        require(all(m1 > m2 for m1, m2 in zip(mu, mu[1:])), "mu", mu,
                "must be strictly decreasing (class 1 is the fastest)")
        require(all(a1 < a2 for a1, a2 in zip(a, a[1:])), "a", a,
                "must be strictly increasing (class K is the most accurate)")

    @property
    def K(self) -> int:
        return len(self.mu)

    @property
    def mu_arr(self) -> np.ndarray:
        return np.asarray(self.mu, dtype=float)

    @property
    def a_arr(self) -> np.ndarray:
        return np.asarray(self.a, dtype=float)

    @property
    def alpha_arr(self) -> np.ndarray:
        return np.asarray(self.alpha, dtype=float)

    @property
    def capacity(self) -> np.ndarray:
        """μα: the normalised service capacity of each class (eq. 1)."""
        return self.mu_arr * self.alpha_arr

    def check_target(self, a_star: float) -> float:
        """Validate an accuracy target a*; raise InfeasibleError when no class reaches it."""
        try:
            a_star = float(a_star)
        except (TypeError, ValueError):
            raise config_error("a_star", a_star, "must be a number") from None
        require(math.isfinite(a_star), "a_star", a_star, "must be a finite number")
        if a_star > self.a[-1]:
            raise InfeasibleError(
                f"a* = {a_star:g} exceeds the most accurate model, {self.a[-1]:g}: "
                "no routing can meet it")
        return a_star

    def class_sizes(self, n: int) -> np.ndarray:
        """n_k = α_k n servers per class; every class must get at least one server."""
        require(isinstance(n, (int, np.integer)) and n >= 1, "n", n, "must be a positive integer")
        sizes = np.rint(self.alpha_arr * n).astype(np.int64)
        require(np.all(np.abs(sizes - self.alpha_arr * n) < 1e-9), "n", n,
                f"α_k·n must be a whole number of servers for every class (α = {self.alpha})")
        require(np.all(sizes >= 1), "n", n, "every class needs at least one server")
        return sizes


#: The configuration of every simulation in the paper (Sections 3.3 and 7).
MAIN = SystemParams(mu=(2.0, 1.0, 0.9, 0.1), a=(70.0, 75.0, 80.0, 100.0), alpha=(0.25,) * 4)

#: Examples 1 and 2 (Sections 3.4 and 4) share this system; Example 1 uses a* = 52, Example 2 a* = 45.
EXAMPLE_1_2 = SystemParams(mu=(1.0, 0.5, 0.25), a=(40.0, 50.0, 100.0), alpha=(1 / 3, 1 / 3, 1 / 3))

#: Example 3 (Section 6), a* = 52.
EXAMPLE_3 = SystemParams(mu=(1.0, 0.5, 0.25), a=(40.0, 50.0, 100.0), alpha=(0.025, 0.95, 0.025))
