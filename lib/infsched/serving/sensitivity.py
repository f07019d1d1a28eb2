"""Burstiness and overheads (issue 33, item 6): which of the head-to-head's rankings survive
burstier arrivals and the costs the common ground sets to zero (spec headtohead §1: switching
models, preempting and dispatching cost nothing).

A *setting* changes one thing against the baseline (Poisson arrivals, no overheads): the
arrival process (an MMPP of burst amplitude ``a`` and mean sojourn ``s`` relative to the
monitor's 500 ms window, Gamma renewal arrivals of CV 1 to 8, MAF-synth, the Shepherd chapter's
stand-in for the Azure Functions trace: :mod:`.streams`), or one overhead
(:class:`~.config.ServingConfig`'s ``switch_ms``, ``dispatch_ms``, ``preempt_ms``). Every
contender runs at its default knob (it plans for the SLO it is judged on; TAD at ``a_star``) and
is judged on the share of queries on time, a drop counting as a miss.

:func:`sensitivity_point` is one (setting, load, seed) point of :func:`infsched.sweep.run_sweep`:
every contender on the same arrivals. The overhead settings draw the baseline's arrivals (their
seed does not depend on the setting), so each is the baseline's runs with one cost added.
:func:`sensitivity_table` ranks the contenders per setting and says, for every pair the
baseline orders (its paired difference over seeds, on common arrivals, has a Student-t interval
that excludes 0, as :func:`.tables.recommend` compares contenders), whether the setting keeps
that order, loses it (the interval holds 0) or reverses it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import require
from ..store import results_version
from ..sweep import default_processes, point_seed, run_sweep
from .contenders import CONTENDERS, LABELS, check_plans, contender_config, judge, plan_versions
from .scales import get_scale
from .sim import simulate
from .streams import arrivals

__all__ = ["Setting", "SETTINGS", "sensitivity_point", "sensitivity_runs", "sensitivity_table",
           "pair_orders"]


@dataclass(frozen=True)
class Setting:
    """One departure from the baseline: ``stream`` (keyword arguments of :func:`.streams.arrivals`,
    with ``workload``) and ``overheads`` (ms; :class:`~.config.ServingConfig`'s fields), each a
    tuple of ``(name, value)`` pairs so the setting keys the sweep cache as it reads."""

    name: str
    group: str
    stream: tuple = (("workload", "poisson"),)
    overheads: tuple = ()

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name, "name", self.name, "must be a non-empty string")
        keys = dict(self.stream)
        require("workload" in keys, "stream", self.stream, "must name its workload")
        for k, v in self.overheads:
            require(k in ("switch_ms", "dispatch_ms", "preempt_ms"), "overheads", k,
                    "must be switch_ms, dispatch_ms or preempt_ms")
            require(isinstance(v, (int, float)) and np.isfinite(v) and v >= 0, "overheads", v,
                    "must be a finite number of ms >= 0")


#: the monitor's window (ms) the MMPP sojourns are set against
WINDOW_MS = 500.0

#: the baseline first; then burstiness (MMPP amplitude x sojourn / window, Gamma CV, MAF-synth)
#: and the overheads, each at a small and a large value [ours]
SETTINGS: tuple[Setting, ...] = (
    Setting("Poisson, no overheads", "baseline"),
    *(Setting(f"MMPP a = {a:g}, sojourn = {s / WINDOW_MS:g} x window", "MMPP",
              (("workload", "mmpp"), ("burst", a), ("sojourn_s", s / 1000.0)))
      for a in (0.5, 0.9) for s in (100.0, 500.0, 5000.0)),
    *(Setting(f"Gamma CV = {cv:g}", "Gamma", (("workload", "gamma"), ("cv", cv))) for cv in (1.0, 2.0, 4.0, 8.0)),
    Setting("MAF-synth (Azure Functions stand-in)", "MAF", (("workload", "maf"),)),
    *(Setting(f"model switch {v:g} ms", "switch", overheads=(("switch_ms", v),)) for v in (5.0, 20.0)),
    *(Setting(f"dispatch {v:g} ms", "dispatch", overheads=(("dispatch_ms", v),)) for v in (2.0, 10.0)),
    *(Setting(f"preemption {v:g} ms (FLEX)", "preemption", overheads=(("preempt_ms", v),)) for v in (5.0, 20.0)),
)


@results_version(1)
def sensitivity_point(stream: tuple, overheads: tuple, load: float, slo_ms: float, seed: int, n: int,
                      workers: int, profile: str, contenders: tuple, a_star: float = 76.0,
                      scale: str = "default", plans: tuple = ()) -> pd.DataFrame:
    """One point: ``n`` arrivals of ``stream`` at ``load`` x the capacity, served by every
    contender at its default knob with ``overheads``, each judged on ``slo_ms``
    (:func:`.contenders.judge`). A reader's policy (a :class:`~.plugins.UserPolicy` in
    ``contenders``) is registered here, on whichever process runs the point; its loop has no
    switch or dispatch overheads, so a setting that charges one runs without it (no row).
    ``plans``: the plan versions of ``contenders`` (:func:`.contenders.plan_versions`; checked)."""
    from .plugins import UserPolicy, register
    from .system import load_zoo

    check_plans(contenders, plans)
    zoo = load_zoo(profile)
    rate = load * zoo.capacity_qps(workers, slo_ms)
    kw = dict(stream)
    arr = arrivals(kw.pop("workload"), rate, n, np.random.default_rng(seed), **kw)
    rows = []
    for name in contenders:
        if isinstance(name, UserPolicy):
            if _skips(name, overheads):
                continue
            name = register(name).name
        cfg = contender_config(name, zoo, workers, slo_ms, rate_qps=rate, a_star=a_star, profile=profile,
                               scale=scale, overheads=dict(overheads))
        rows.append({"contender": name, **judge(simulate(cfg, arrivals=arr, seed=seed), slo_ms)})
    return pd.DataFrame(rows)


def _skips(c, overheads) -> bool:
    """A reader's policy sits out a setting that charges a switch or dispatch overhead."""
    from .plugins import UserPolicy

    return isinstance(c, UserPolicy) and any(k != "preempt_ms" and v > 0 for k, v in overheads)


def sensitivity_runs(scale: str = "default", seed: int = 0, *, slo_ms: float = 150.0, K: int = 60,
                     profile: str = "ramsis-image", a_star: float = 76.0,
                     contenders: Sequence[str] = CONTENDERS, settings: Sequence[Setting] = SETTINGS,
                     loads=None, workers: int | None = None, cache=None) -> pd.DataFrame:
    """Every setting at the scale's ``sens_loads`` (or ``loads``), ``sens_seeds`` seeds of
    ``sens_n`` queries: one row per (setting, load, seed, contender), with ``setting`` (its
    name), ``group`` and ``seed``. The seed of a point depends on its load and replicate only,
    so the overhead settings serve the baseline's arrivals. ``contenders`` may hold a reader's
    policy (a registered name or a :class:`~.plugins.UserPolicy`): it runs in every stream
    setting and sits out the switch and dispatch overheads, which its loop does not charge."""
    from .system import _code_version, _entries, _loads, _system

    s = get_scale(scale)
    _system(profile, K, slo_ms)
    entries = _entries(contenders)
    require(len(settings) >= 1 and all(isinstance(x, Setting) for x in settings), "settings", settings,
            "must be one or more Setting objects")
    loads = _loads(loads, s.sens_loads)
    pv = plan_versions(entries)  # only the points that run a contender with one carry them
    plans = {"plans": pv} if pv else {}
    keys, points = [], []
    for st in settings:
        for r in loads:
            for k in range(s.sens_seeds):
                sd = point_seed(seed, 50, r, slo_ms, k)
                keys.append((st.name, st.group, float(r), sd))
                points.append(dict(stream=st.stream, overheads=st.overheads, load=float(r),
                                   slo_ms=float(slo_ms), seed=sd, n=s.sens_n, workers=int(K),
                                   profile=str(profile), contenders=entries, a_star=float(a_star),
                                   scale=scale, **plans))
    if workers is None and scale == "smoke":
        workers = 1
    here = Path(__file__).resolve()  # this module's code keys the cache too
    version = _code_version() + "+" + hashlib.sha256(here.read_bytes()).hexdigest()[:8]
    df = run_sweep(sensitivity_point, points, cache_dir=cache, version=version,
                   n_jobs=default_processes(workers, name="workers")).drop(columns="plans", errors="ignore")
    # run_sweep adds each point's parameters; the setting's name says what they are
    per = [sum(not _skips(c, st.overheads) for c in entries)
           for st in settings for _ in loads for _ in range(s.sens_seeds)]
    df["setting"] = np.repeat([k[0] for k in keys], per)
    df["group"] = np.repeat([k[1] for k in keys], per)
    return df


def pair_orders(runs: pd.DataFrame, value: str = "attainment", level: float = 0.95) -> pd.DataFrame:
    """Per (setting, load) and ordered pair of contenders (``first`` above ``second`` by mean
    ``value``): the mean paired difference over seeds (common arrivals) and its Student-t
    interval at ``level``; ``order`` is ``">"`` where the interval excludes 0, else ``"="``."""
    from scipy import stats

    rows = []
    for (st, load), g in runs.groupby(["setting", "load"], sort=False):
        v = g.pivot_table(index="seed", columns="contender", values=value)
        names = list(v.mean().sort_values(ascending=False).index)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                d = (v[a] - v[b]).dropna().to_numpy()
                sd = d.std(ddof=1) if d.size >= 2 else np.nan
                if d.size >= 2 and sd > 0:
                    hw = stats.t.ppf(0.5 + level / 2, d.size - 1) * sd / np.sqrt(d.size)
                else:  # identical on every seed (or one seed): resolved only by a non-zero gap
                    hw = 0.0 if d.size >= 2 else np.inf
                lo, hi = d.mean() - hw, d.mean() + hw
                rows.append({"setting": st, "load": load, "first": a, "second": b,
                             "gap": float(d.mean()), "low": float(lo), "high": float(hi),
                             "order": ">" if lo > 0 else "="})
    return pd.DataFrame(rows)


def _ranking(g: pd.DataFrame, orders: pd.DataFrame, top: int) -> str:
    """The contenders by mean share on time, ``>`` where the next one is resolved below, ``=``
    where not, the first ``top`` of them."""
    names = list(g.groupby("contender")["attainment"].mean().sort_values(ascending=False).index)
    o = orders.set_index(["first", "second"])["order"]
    out = LABELS[names[0]]
    for a, b in zip(names[:top - 1], names[1:top]):
        out += f" {o.get((a, b), '=')} {LABELS[b]}"
    return out + (" ..." if len(names) > top else "")


def sensitivity_table(runs: pd.DataFrame, baseline: str = SETTINGS[0].name, level: float = 0.95,
                      top: int = 4) -> pd.DataFrame:
    """Per setting and load: the first ``top`` contenders by share on time (``>``: resolved by
    the paired interval, ``=``: not) and, of the pairs the baseline orders at that load, how many
    the setting keeps, loses (tied) and reverses, with the first reversed pair."""
    orders = pair_orders(runs, level=level)
    rows = []
    for load in sorted(runs["load"].unique()):
        base = orders[(orders["setting"] == baseline) & (orders["load"] == load) & (orders["order"] == ">")]
        pairs = list(zip(base["first"], base["second"]))
        for st in dict.fromkeys(runs["setting"]):
            g = runs[(runs["setting"] == st) & (runs["load"] == load)]
            o = orders[(orders["setting"] == st) & (orders["load"] == load)]
            gt = {(a, b) for a, b, x in zip(o["first"], o["second"], o["order"]) if x == ">"}
            kept = [p for p in pairs if p in gt]
            rev = [p for p in pairs if (p[1], p[0]) in gt]
            rows.append({"setting": st, "group": g["group"].iloc[0], "load": load,
                         "ranking (share on time)": _ranking(g, o, top),
                         "baseline pairs": len(pairs), "kept": len(kept),
                         "tied": len(pairs) - len(kept) - len(rev), "reversed": len(rev),
                         "first reversed": (f"{LABELS[rev[0][0]]} > {LABELS[rev[0][1]]}" if rev else "-")})
    return pd.DataFrame(rows)
