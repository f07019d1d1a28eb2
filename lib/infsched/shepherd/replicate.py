"""Run-to-run noise of the Shepherd chapter's simulated numbers (issue 32).

Every simulated number of the chapter's verdicts (the goodput and utilisation multiples of
Figs. 7, 9, 10 and 11b, §7.1-7.2) is computed from **one** draw of the MAF-synth workload: one
stream population and one arrival stream per point (``seeds`` of them averaged at the ``paper``
scale). The simulators themselves are deterministic given the requests (``α b + β`` ms batches,
Table 4), so the workload is the only source of noise. Fig. 11a's workload is periodic and
deterministic, and its rows have none.

:func:`fig7_replications`, :func:`fig9_replications` and :func:`fig10_replications` measure it
by **independent replications**: they rerun the chapter's figure on ``replications`` further
workloads, each drawn from a base seed the chapter's own run never uses
(:func:`replica_seed`), with every other setting the chapter's (the scale's horizon, streams,
runs averaged per point, the profile), and apply the chapter's own claim functions
(:func:`~infsched.shepherd.experiments.claims_fig7` etc.) to each replicated figure, one row per
replication with every numeric quantity. :func:`gain_noise` collects them (and ``sd``, the standard
deviation of one run's number over the replications); :func:`measured` applies the book's
statistical rule (:func:`infsched.report.pooled`): ours is the mean over the chapter's run and
every replication, and, since the paper's Figs. 7-11 come from one testbed or emulation run each
(on the Azure trace, not our simulation), it is judged with the 95 % prediction interval of one
run, ``t sd sqrt(1 + 1/n)``. The paper states no spread, so nothing is added on its side.

Each replication computes only the points the figure's *numbers* read (the highest load of
Fig. 7; every SLO of Fig. 9; the largest cluster, and Clockwork from 200 workers up, of Fig. 10),
serially inside one sweep point (:func:`~infsched.shepherd.systems.run_system` called directly, so
a SHEPHERD cluster of many groups draws its workload once, not once per group), so the
replications run in parallel as points of their own and are cached and stored as such. A
replication whose extra seed coordinate is dropped (``r=None``) is the chapter's own run, number
for number (``tests/shepherd/test_replicate.py``).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import require
from infsched.shepherd import experiments as ex
from infsched.shepherd.profile import _profile
from infsched.shepherd.scales import get_scale
from infsched.shepherd.systems import SYSTEMS, _sim_version, run_system
from infsched.store import results_version
from infsched.sweep import default_processes, point_seed, run_sweep

__all__ = ["REPLICATIONS", "REPLICA_KEY", "fig10_replica", "fig10_replications", "fig7_replica",
           "fig7_replications", "fig9_replica", "fig9_replications", "gain_noise", "measured", "noise_notes",
           "replica_seed"]

#: replications per scale. Ten where the book is built (``paper``): the sd of ten runs is good
#: to about a quarter of itself (relative standard error 1/sqrt(2 (n - 1)) = 0.24), enough to say
#: whether noise decides a verdict, for about 45 CPU s a replication of the three figures (449
#: CPU s in all, measured in the store's build on the project's 2-core machine, loaded). Five at
#: ``default`` (0.35 of itself), the
#: most that keep a reader's rerun within about 30 CPU s more (about 6 CPU s a replication on a
#: loaded machine, Fig. 10's 400 workers most of it); three at ``smoke``, the fewest that give an
#: sd with any meaning.
REPLICATIONS = {"smoke": 3, "default": 5, "paper": 10}
#: added to a replication's index in its seed key, so that no replication reuses a workload of
#: the chapter's own run (whose seeds have no such coordinate)
REPLICA_KEY = 1_000_003

_VARIANTS = ("stable", "bursty")


def replica_seed(seed: int, r: int | None) -> int:
    """The base seed of replication ``r``: a 32-bit seed keyed on ``(seed, REPLICA_KEY + r)``,
    from which, as from the chapter's ``seed``, a point averaging ``k`` runs takes ``+0..k-1``;
    ``r=None`` drops the coordinate and gives the chapter's own ``seed``."""
    if r is None:
        return int(seed)
    require(isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 0, "r", r,
            "must be an integer >= 0 (a replication's index) or None (the chapter's run)")
    return point_seed(seed, REPLICA_KEY + int(r))


def _check(replications: int) -> None:
    require(isinstance(replications, (int, np.integer)) and not isinstance(replications, bool)
            and replications >= 2, "replications", replications,
            "must be an integer >= 2 (a standard deviation needs two runs)")


def _numbers(claims: dict) -> dict:
    """The numeric quantities of a claim dict (claims that hold or not, and numbers the profile
    leaves undefined, NotReproducible, have no noise to measure)."""
    return {q: float(v) for q, v in claims.items()
            if isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)) and math.isfinite(float(v))}


def _systems_frame(scale: str, points: list[tuple[float, float]], by: str, seed: int,
                   workers: int, lam: float, model_set_name: str, profile) -> pd.DataFrame:
    """What :func:`~infsched.shepherd.systems._systems_sweep` returns for ``points``, computed
    in this process: every system on both workloads, the scale's runs (``seed + k``) averaged."""
    sc = get_scale(scale)
    rows = []
    for s in SYSTEMS:
        for v in _VARIANTS:
            for rate, slo in points:
                for k in range(sc.seeds):
                    res = run_system(s, v, rate, workers, slo, seed + k, sc.warmup_s, sc.measure_s,
                                     sc.streams, lam, model_set_name, profile=profile)
                    rows.append({"system": s, "variant": v, "rate": rate, "slo_ms": slo, **res})
    return pd.DataFrame(rows).groupby(["system", "variant", by], as_index=False).mean(
        numeric_only=True)


def fig7_frame(scale: str, seed: int, r: int | None, workers: int = 12, slo_ms: float = 250.0,
               lam: float = 3.03, model_set_name: str = "cv16", profile=None) -> pd.DataFrame:
    """Replication ``r`` of Fig. 7 at its highest load (the only load its multiples read)."""
    top = max(get_scale(scale).rates) * workers / 12
    return _systems_frame(scale, [(top, slo_ms)], "rate", replica_seed(seed, r), workers, lam,
                          model_set_name, _profile(profile))


def fig9_frame(scale: str, seed: int, r: int | None, workers: int = 12, rate: float = 3e3,
               lam: float = 3.03, model_set_name: str = "cv16", profile=None) -> pd.DataFrame:
    """Replication ``r`` of Fig. 9: every SLO of the scale (its largest multiple over Clockwork
    is taken over all of them)."""
    sc = get_scale(scale)
    return _systems_frame(scale, [(rate * workers / 12, slo) for slo in sc.slos], "slo_ms",
                          replica_seed(seed, r), workers, lam, model_set_name, _profile(profile))


#: Fig. 10's systems: (system, group size or None for all N, label), as
#: :func:`~infsched.shepherd.experiments.fig10` runs them
_FIG10_LABELS = (("SHEPHERD", 12, "SHEPHERD"), ("Clockwork", 12, "Clockwork"), ("Nexus", 12, "Nexus"),
                 ("SHEPHERD", 1, "SHEPHERD G=1"), ("SHEPHERD", None, "SHEPHERD G=inf"))


def fig10_frame(scale: str, seed: int, r: int | None, slo_ms: float = 250.0, lam: float = 3.03,
                profile=None) -> pd.DataFrame:
    """Replication ``r`` of Figs. 10 and 11b at the points their numbers read: every label at
    the largest cluster, Clockwork from 200 workers up (its saturation)."""
    sc = get_scale(scale)
    prof = _profile(profile)
    big = max(sc.workers)
    s = replica_seed(seed, r)
    rows = []
    for n in sc.workers:
        for v in _VARIANTS:
            for system, g_bar, label in _FIG10_LABELS:
                if not (n == big or (label == "Clockwork" and n >= 200)):
                    continue
                if g_bar is None and n <= 12:
                    continue  # as fig10: one group of n <= 12 GPUs is the G = 12 case
                g = n if g_bar is None else g_bar
                res = run_system(system, v, ex.PER_WORKER_RATE * n, n, slo_ms, s,
                                 sc.scal_warmup_s, sc.scal_measure_s, max(sc.streams, 10 * n), lam,
                                 controller_us=0.0 if system == "Nexus" else ex.CONTROLLER_US,
                                 g_bar=g, instances=True, profile=prof)
                rows.append({"system": system, "variant": v, "workers": n, "g_bar": g,
                             "label": label, "goodput": res["goodput"],
                             "utilization": res["utilization"]})
    return pd.DataFrame(rows)


def _version() -> str:
    """The replication points' sweep-cache version: this module, the claims and every module a
    simulated point runs."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(_sim_version().encode())
    for name in ("replicate.py", "experiments.py", "scales.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


@results_version(1)
def fig7_replica(scale: str, seed: int, r: int, workers: int, slo_ms: float, lam: float,
                 model_set_name: str, profile) -> dict:
    """Replication ``r`` of Fig. 7: the numeric quantities of
    :func:`~infsched.shepherd.experiments.claims_fig7` on :func:`fig7_frame`."""
    f = fig7_frame(scale, seed, r, workers, slo_ms, lam, model_set_name, profile)
    return {"replication": r, **_numbers(ex.claims_fig7(f))}


@results_version(2)
def fig9_replica(scale: str, seed: int, r: int, workers: int, lam: float, model_set_name: str,
                 profile) -> dict:
    """Replication ``r`` of Fig. 9: the numeric quantities of
    :func:`~infsched.shepherd.experiments.claims_fig9` on :func:`fig9_frame`."""
    f = fig9_frame(scale, seed, r, workers, 3e3, lam, model_set_name, profile)
    return {"replication": r, **_numbers(ex.claims_fig9(f))}


@results_version(1)
def fig10_replica(scale: str, seed: int, r: int, slo_ms: float, lam: float, profile) -> dict:
    """Replication ``r`` of Figs. 10 and 11b: the numeric quantities of
    :func:`~infsched.shepherd.experiments.claims_fig10` and
    :func:`~infsched.shepherd.experiments.claims_fig11b` on :func:`fig10_frame`."""
    f = fig10_frame(scale, seed, r, slo_ms, lam, profile)
    return {"replication": r, **_numbers(ex.claims_fig10(f)), **_numbers(ex.claims_fig11b(f))}


def _sweep(fn, scale: str, seed: int, replications: int, n_jobs, cache, **fixed) -> pd.DataFrame:
    """One replication per sweep point, each a row, run in parallel (``n_jobs``), cached, and
    stored at the ``paper`` scale (:mod:`infsched.store`)."""
    _check(replications)
    get_scale(scale)
    grid = [dict(scale=scale, seed=int(seed), r=r, **fixed) for r in range(int(replications))]
    df = run_sweep(fn, grid, cache_dir=cache, n_jobs=default_processes(n_jobs), version=_version())
    return df.drop(columns=list(grid[0])).reset_index(drop=True)


def fig7_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                      workers: int = 12, slo_ms: float = 250.0, lam: float = 3.03,
                      model_set_name: str = "cv16", profile=None, n_jobs: int | None = None,
                      cache=None) -> pd.DataFrame:
    """Fig. 7's numbers on ``replications`` independent workloads (:func:`fig7_replica`)."""
    ex.check_parameters(workers, slo_ms, model_set_name, lam)
    return _sweep(fig7_replica, scale, seed, replications, n_jobs, cache, workers=int(workers),
                  slo_ms=float(slo_ms), lam=float(lam), model_set_name=model_set_name,
                  profile=_profile(profile))


def fig9_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                      workers: int = 12, lam: float = 3.03, model_set_name: str = "cv16",
                      profile=None, n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Fig. 9's numbers on ``replications`` independent workloads (:func:`fig9_replica`)."""
    ex.check_parameters(workers, 250.0, model_set_name, lam)
    return _sweep(fig9_replica, scale, seed, replications, n_jobs, cache, workers=int(workers),
                  lam=float(lam), model_set_name=model_set_name, profile=_profile(profile))


def fig10_replications(scale: str = "default", seed: int = 0, *, replications: int = 10,
                       slo_ms: float = 250.0, lam: float = 3.03, profile=None,
                       n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """Figs. 10 and 11b's numbers on ``replications`` independent workloads
    (:func:`fig10_replica`)."""
    ex.check_parameters(12, slo_ms, "cv16", lam)
    return _sweep(fig10_replica, scale, seed, replications, n_jobs, cache, slo_ms=float(slo_ms),
                  lam=float(lam), profile=_profile(profile))


def gain_noise(reps: pd.DataFrame) -> pd.DataFrame:
    """Per numeric quantity of the replications (every column but ``replication``): ``sd``, the
    standard deviation of one run's number over the replications (ddof = 1; a quantity some
    replication lacks is taken over those that have it), ``runs``, the replications it is
    taken over, ``ci_ours``, ``1.96 sd`` (the spread of one run, for a reader's glance), and
    ``values``, the replications' numbers, which :func:`measured` pools with the chapter's."""
    cols = [c for c in getattr(reps, "columns", []) if c != "replication"]
    require(isinstance(reps, pd.DataFrame) and len(reps) >= 2 and cols, "reps",
            type(reps).__name__, "must be a frame of at least two replications (one row each) "
            "with at least one quantity")
    sd = reps[cols].std(ddof=1)
    values = pd.Series({c: tuple(float(v) for v in reps[c].dropna()) for c in cols}, dtype=object)
    return pd.DataFrame({"sd": sd, "runs": reps[cols].notna().sum(), "ci_ours": 1.96 * sd,
                         "values": values})


def measured(claims: dict, noise: pd.DataFrame) -> dict:
    """``claims`` with each number the replications measured replaced by the book's statistical
    rule (:func:`infsched.report.pooled`): the mean over the chapter's run and every replication,
    with the 95 % prediction interval of one run, since each of the paper's Figs. 7-11 is one
    testbed or emulation run; the rest unchanged."""
    from infsched.report import ONE_RUN, pooled

    out = dict(claims)
    for q, v in claims.items():
        if q in noise.index and q in _numbers({q: v}) and np.isfinite(noise.loc[q, "sd"]):
            out[q] = pooled((float(v),) + tuple(noise.loc[q, "values"]), ONE_RUN)
    return out


def noise_notes(noise: pd.DataFrame, quantities, claims: dict | None = None) -> dict:
    """A note per quantity that has an interval: what was pooled, and the chapter's own run."""
    claims = claims or {}
    out = {}
    for q in quantities:
        if q in noise.index and np.isfinite(noise.loc[q, "sd"]):
            own = claims.get(q)
            out[q] = ("ours: the mean of the chapter's run"
                      + (f" ({float(own):.3g})" if own is not None else "")
                      + f" and {int(noise.loc[q, 'runs'])} replications on new workloads")
    return out
