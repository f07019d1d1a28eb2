"""The parameters of one RAMSIS worker MDP, validated, and what they imply (spec §1, §2.1).

``MDPConfig`` holds what is independent of the model set: SLO, number of workers ``K``, load,
slack discretisation (FLD with ``D`` intervals, or MD) and the largest modelled queue ``N``.
:func:`check_feasible` tests a configuration against a profile and raises the errors a user
meets (an SLO no model can meet, a load the pool cannot serve), and :func:`slack_grid` builds
the grid ``T_w``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from infsched.errors import ConfigError, InfeasibleError, config_error, one_of, require

__all__ = ["MDPConfig", "DISCRETISATIONS", "BATCHING", "slack_grid", "capacity_qps",
           "check_feasible"]

DISCRETISATIONS = ("fld", "md")
BATCHING = ("max", "variable")


def _positive(name: str, value: object) -> float:
    if isinstance(value, (str, bytes, bool, np.bool_)):  # rejected, not converted
        raise config_error(name, value, "must be a number")
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise config_error(name, value, "must be a number") from None
    require(math.isfinite(v) and v > 0, name, value, "must be a finite number > 0")
    return v


def _int_at_least(name: str, value: object, low: int) -> int:
    require(isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= low,
            name, value, f"must be an integer >= {low}")
    return int(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class MDPConfig:
    """One worker MDP: ``K`` workers fed round-robin from Poisson arrivals at ``load_qps``.

    ``discretisation``: ``"fld"`` (fixed length, ``T_w = {0, SLO/D, …, SLO}``, §4.2.2) or ``"md"``
    (model based: every distinct ``l(m, b) ≤ SLO`` with ``b ≤ N``, plus 0 and SLO, §4.2.1).
    ``n_max`` is ``N_w``, the largest queue the MDP tracks (32 in the paper's evaluation).
    ``batching``: ``"max"`` (``b = n``, the paper's default) or ``"variable"`` (any ``1 ≤ b ≤ n``,
    §4.3.2; :mod:`infsched.ramsis.variable`).
    """

    slo_ms: float
    workers: int
    load_qps: float
    discretisation: str = "fld"
    d: int = 100
    n_max: int = 32
    batching: str = "max"

    def __post_init__(self) -> None:
        object.__setattr__(self, "slo_ms", _positive("slo_ms", self.slo_ms))
        object.__setattr__(self, "load_qps", _positive("load_qps", self.load_qps))
        _int_at_least("workers", self.workers, 1)
        _int_at_least("d", self.d, 1)
        _int_at_least("n_max", self.n_max, 1)
        one_of("discretisation", self.discretisation, DISCRETISATIONS)
        one_of("batching", self.batching, BATCHING)

    @property
    def lam(self) -> float:
        """The central arrival rate in queries per ms."""
        return self.load_qps / 1000.0


def slack_grid(profile, cfg: MDPConfig) -> np.ndarray:
    """The slack grid ``T_w`` (ms), increasing from 0 to SLO (spec §2.1)."""
    slo = cfg.slo_ms
    if cfg.discretisation == "fld":
        check_mdp_memory(cfg, len(profile.accuracy), cfg.d + 1, "d")
        return np.linspace(0.0, slo, cfg.d + 1)
    lat = profile.latency_table(cfg.n_max)
    inner = lat[(lat > 0) & (lat < slo)]
    return np.unique(np.concatenate([[0.0, slo], inner]))


def check_mdp_memory(cfg: MDPConfig, n_models: int, n_grid: int, name: str = "d") -> None:
    """Refuse (a ConfigError naming ``name``) an MDP whose arrays cannot fit: per state
    ``(n, T_j)``, ``N·J + 1`` of them, its action table holds latency, validity, reward and
    τ index per model (25 bytes each) and its phase law 8 bytes per worker; the transition
    kernels come on top, so this is a lower bound."""
    from infsched.limits import check_memory

    states = cfg.n_max * float(n_grid) + 1
    per_state = 25 * (n_models + 1) + 8 * cfg.workers
    from infsched.limits import memory_limit

    paper_n = min(cfg.n_max, 32)  # the paper's N: beyond it, n_max is what makes the MDP large
    if cfg.n_max > paper_n and (paper_n * float(n_grid) + 1) * per_state <= memory_limit():
        check_memory("n_max", cfg.n_max, states * per_state, f"the worker MDP's {states:.3g} "
                     f"states ({n_grid} slack levels for each queue length up to n_max)")
    if states * 25 * (n_models + 1) <= memory_limit():  # the grid alone fits: the workers do not
        check_memory("workers", cfg.workers, states * per_state, f"the worker MDP's {states:.3g} "
                     f"states with a phase law of 8 bytes per worker each")
    check_memory(name, getattr(cfg, name, n_grid), states * per_state,
                 f"the worker MDP's {states:.3g} states")
    from infsched.limits import warn_long

    warn_long(f"solving the worker MDP's {states:.3g} states ({name} = {getattr(cfg, name, n_grid)!r}, "
              f"workers = {cfg.workers})", states * SECONDS_PER_STATE)


#: seconds of one core per state of the worker MDP's solve, on the fast side of what was measured
#: here (0.29-0.37 ms a state for the 9 image models at D = 100-800, maximal batching; 1-7 ms with
#: variable batching), so that the time a long solve is announced to take is a lower bound
SECONDS_PER_STATE = 1e-4


def capacity_qps(profile, workers: int, slo_ms: float | None = None, n_max: int = 32) -> float:
    """The largest load ``K`` workers can sustain with the fastest model:
    ``K · max_{b ≤ N} b / l(m_min, b)`` queries per second (spec §6, Fig. 7 note).

    With ``slo_ms`` given, only batch sizes meeting the SLO count (the capacity *within* the SLO,
    which the paper calls peak capacity); without it, any batch up to ``N``.
    """
    lat = profile.latency_table(n_max)[0]
    b = np.arange(1, n_max + 1)
    ok = np.ones(n_max, bool) if slo_ms is None else lat <= slo_ms
    if not ok.any():
        return 0.0
    return float(workers * np.max(b[ok] / lat[ok]) * 1000.0)


def check_feasible(profile, cfg: MDPConfig) -> None:
    """Raise a clear error if no policy can exist for ``cfg`` on ``profile``.

    * ``ConfigError`` for an SLO below the fastest model's batch-1 latency: no query could meet it.
    * ``InfeasibleError`` for a load above what the pool can serve at all (the fastest model at
      its best batch size up to ``N``): every queue would grow without bound.
    """
    if not all(hasattr(profile, a) for a in ("models", "accuracy", "latency_ms", "n_models")):
        shown = profile if profile is None or isinstance(profile, (str, int, float)) else \
            type(profile).__name__
        raise config_error("profile", shown, "must be a Profile (the models' accuracies and latency "
                           "tables), e.g. infsched.ramsis.experiments.get_profile('image')")
    require(profile.n_models >= 1, "models", profile.models,
            "the model set is empty: give at least one model")
    fastest = float(profile.latency(0, 1))
    if cfg.slo_ms < fastest:
        raise ConfigError(
            f"slo_ms = {cfg.slo_ms:g}: below the fastest model's batch-1 latency "
            f"({profile.models[0]}, {fastest:g} ms), so no query could ever meet it; "
            f"use slo_ms >= {fastest:g}")
    cap = capacity_qps(profile, cfg.workers, None, cfg.n_max)
    if cfg.load_qps >= cap:
        raise InfeasibleError(
            f"load_qps = {cfg.load_qps:g} exceeds what workers = {cfg.workers} can serve at all: "
            f"{cap:.0f} QPS with the fastest model ({profile.models[0]}) at its best batch size "
            f"up to n_max = {cfg.n_max}; add workers or lower the load")
