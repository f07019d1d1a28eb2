"""Run-to-run noise of the KAIROS chapter's simulated numbers (issue 32).

Every simulated number of the chapter reads the exhaustive tables (:mod:`infsched.kairos.tables`),
and every entry of a table is one simulation on the workload of one seed (the arrivals, query
sizes and service draws of :func:`~infsched.kairos.workload.make_workload`, common to every
configuration and rate). A verdict on one such run must weigh its noise. :func:`tables_replica`
and :func:`fig12_replica` rerun, on a new seed per replication (``replica_seed``: seeds the
chapter's run never uses), the table entries that the chapter's numeric rows read, and apply the
chapter's own figure and claim functions to each replicated table; :func:`noise` turns the
replications into the standard deviation ``sd`` of one run's number; :func:`with_noise` applies
the book's statistical rule (:func:`infsched.report.pooled`): each number becomes the mean over the
chapter's run and every replication, with the 95 % prediction interval of one run (the paper's
figures are one run each), which :func:`~infsched.report.compare` adds to the tolerance and names
in the basis.

What each replication re-simulates (everything else keeps the chapter's values and enters no
numeric row; the qualitative rows have no interval):

- the five $2.5/h tables (:func:`tables_replica`; Figs. 1, 2, 8 and 9): Ribbon's FCFS and ORCL on
  every configuration (Fig. 2 anneals over the whole FCFS column, "Ribbon on its own best" and
  the Oracle's best configuration are maxima over the whole space); KAIROS on each model's pick
  and on the homogeneous configuration (Fig. 8, Fig. 9's KAIROS); DRS (on its best threshold,
  re-chosen) and CLKWRK on the replication's own ORCL-best configuration (Fig. 9). Fig. 2's
  annealing walks start from the replication's seed too, so its noise is that of the whole
  figure.
- RM2's Gaussian table (:func:`fig12_replica`; Fig. 12): FCFS, CLKWRK, DRS and ORCL on every
  configuration (the Bayesian optimisations may evaluate any), DRS at the threshold the chapter's
  run chose for each configuration (re-choosing it costs ten bisections per configuration, over
  the store's budget; a threshold chosen on another seed is at most slightly worse, so the spread
  is the same to first order), and KAIROS on the pick and on every configuration Algorithm 1
  evaluates (the replication repeats Algorithm 1 until every configuration it evaluates was
  re-simulated). The Bayesian optimisation keeps the chapter's seeds, whose own noise the rows'
  interval over the seeds already carries; :func:`with_noise` adds the two in quadrature.

A replication with ``r = None`` uses the chapter's own seed and gives the chapter's numbers
(``tests/kairos/test_replicate.py``). The replications are sweep points, cached, and stored at
the `paper` scale (:mod:`infsched.store`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from infsched.errors import one_of, require
from infsched.kairos import bound, sim
from infsched.kairos.batches import BatchDist
from infsched.kairos.model import MODELS, QOS_MS, check_model, config_label, homogeneous
from infsched.kairos.ranking import configs_of, picks, profile
from infsched.kairos.scales import get_scale
from infsched.kairos.tables import (
    VARIANTS,
    best_row,
    code_version,
    compute_table,
    exhaustive,
    kairos_plus_on,
    table_path,
)
from infsched.report import Measured
from infsched.store import results_version
from infsched.sweep import default_processes, point_seed, run_sweep

__all__ = ["REPLICATIONS", "REPLICA_KEY", "Z95", "DETERMINISTIC", "replica_seed",
           "replicated_tables", "replicated_gauss", "table_numbers", "fig12_numbers", "tables_replica", "fig12_replica", "replications", "noise",
           "with_noise", "noise_notes"]

#: replications per scale: ten at ``paper``, where the book's verdicts count (a standard
#: deviation good to about a quarter of itself, as RAMSIS's; about 35 CPU s each, 20,000 queries a
#: run); five at ``default``, whose rows are stand-ins, so that the chapter grows by about 25 CPU s
#: (5 s each, 2,000 queries a run); three at ``smoke`` (few that give a spread, for the tests)
REPLICATIONS = {"smoke": 3, "default": 5, "paper": 10}
#: added to a replication's index in its seed key, so that no replication reuses the chapter's
#: seed (the tables use ``seed`` itself) or another replication's
REPLICA_KEY = 1_000_003
#: the normal 97.5 % quantile: ``ci = Z95 * sd`` is the 95 % half-width of one run's number
Z95 = 1.96
#: numeric rows of the measured items that no simulation enters (Fig. 1's unused budget is
#: arithmetic on prices): no interval
DETERMINISTIC = ("fig1:unused_budget_frac",)


def _check_r(r) -> None:
    require(r is None or (isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 0),
            "r", r, "must be None (the chapter's own seed) or a replication index >= 0")


def replica_seed(seed: int, r: int | None) -> int:
    """The workload seed of replication ``r``; ``None``: the chapter's own ``seed``."""
    _check_r(r)
    return int(seed) if r is None else point_seed(seed, REPLICA_KEY + int(r))


def _chapter_table(model: str, scale: str, seed: int, variant: str = "") -> pd.DataFrame:
    """The chapter's table, as :func:`~infsched.kairos.tables.exhaustive` gives it, recomputed
    (from the cache or the store) in this process without a progress bar."""
    sc = get_scale(scale)
    if not sc.recompute and seed == 0 and table_path(model, variant).is_file():
        return exhaustive(model, scale, seed, variant=variant)
    return compute_table(model, sc.n_queries, seed, n_jobs=1, progress=False, **VARIANTS[variant])


class _Runner:
    """One model's simulations on one seed, as the table's point functions run them
    (:func:`~infsched.kairos.tables.table_point`, :func:`~infsched.kairos.tables.drs_point`)."""

    def __init__(self, model: str, n_queries: int, seed: int, dist: str = "lognormal-mix"):
        self.model, self.n, self.seed, self.bd = model, int(n_queries), int(seed), BatchDist(dist)
        self.qos = QOS_MS[model]
        # bisection_ub's two profiles, read once (reading them is most of its cost)
        self.profiles = [profile(model, s, 1.0, self.bd) for s in ("artifact", "derived")]

    def ub(self, x) -> float:
        """:func:`~infsched.kairos.ranking.bisection_ub` of ``x``, the same arithmetic."""
        xs = np.asarray(x)[None]
        return float(max(bound.upper_bound(p, xs).value[0] for p in self.profiles))

    def __call__(self, x, policy: str, theta: int | None = None) -> float:
        x = tuple(int(v) for v in x)
        kw = dict(qos=self.qos, n_queries=self.n, seed=self.seed, dist=self.bd)
        if policy == "orcl":
            return sim.orcl_throughput(x, self.model, **kw)
        ub = self.ub(x)
        if policy == "drs" and theta is None:
            return sim.drs_best_threshold(x, self.model, ub=ub, service="mean", **kw)[0]
        return sim.allowable_throughput(x, self.model, policy, ub=ub, service="mean",
                                        theta=theta, **kw).throughput


def _set(t: pd.DataFrame, col: str, labels, run: _Runner, done: dict | None = None,
         **kw) -> None:
    """Re-simulate ``col`` (a policy) on the rows whose config is in ``labels``."""
    labels = list(dict.fromkeys(labels))
    rows = t.index[t["config"].isin(labels)]
    t.loc[rows, col] = [run(x, col, **kw) for x in configs_of(t.loc[rows])]
    if done is not None:
        done.setdefault(col, set()).update(t.loc[rows, "config"])


def replicated_tables(scale: str = "default", seed: int = 0, r: int | None = 0, *,
                      models=MODELS) -> dict[str, pd.DataFrame]:
    """The $2.5/h tables of replication ``r`` (module docstring: which entries are
    re-simulated). ``attrs["resimulated"]``: column -> the configurations re-simulated."""
    sc = get_scale(scale)
    s = replica_seed(seed, r)
    u = config_label(homogeneous(2.5)[0])
    pk = picks(models=tuple(models)).set_index("model")["pick"]
    out = {}
    for m in models:
        check_model(m)
        t = _chapter_table(m, scale, seed).copy()
        run = _Runner(m, sc.n_queries, s)
        done: dict = {}
        _set(t, "fcfs", t["config"], run, done=done)
        _set(t, "orcl", t["config"], run, done=done)
        _set(t, "kairos", dict.fromkeys([pk[m], u]), run, done=done)
        ob = best_row(t, "orcl")["config"]
        for col in ("clkwrk", "drs"):
            _set(t, col, [ob], run, done=done)
        t.attrs["resimulated"] = done
        out[m] = t
    return out


def replicated_gauss(scale: str = "default", seed: int = 0, r: int | None = 0) -> pd.DataFrame:
    """RM2's Gaussian-batch table of replication ``r`` (Fig. 12; module docstring)."""
    sc = get_scale(scale)
    t = _chapter_table("rm2", scale, seed, "_gauss").copy()
    run = _Runner("rm2", sc.n_queries, replica_seed(seed, r), "gauss")
    X = configs_of(t)
    for col in ("fcfs", "clkwrk", "orcl"):
        t[col] = [run(x, col) for x in X]
    t["drs"] = [run(x, "drs", theta=int(th)) for x, th in zip(X, t["drs_theta"])]
    done = set()
    todo = {picks(source="derived", dist=BatchDist("gauss"), models=("rm2",))["pick"].iloc[0]}
    while todo:   # until Algorithm 1 evaluates only re-simulated configurations
        _set(t, "kairos", sorted(todo), run)
        done |= todo
        todo = {config_label(x) for x in kairos_plus_on(t).trace} - done
    t.attrs["resimulated"] = {"fcfs": set(t["config"]), "clkwrk": set(t["config"]),
                              "orcl": set(t["config"]), "drs": set(t["config"]), "kairos": done}
    return t


def _numbers(item: str, claims: dict) -> dict:
    """``item:quantity`` -> value for the numeric quantities of a claim dict (a qualitative row
    holds or not; it has no interval)."""
    return {f"{item}:{q}": float(v) for q, v in claims.items()
            if isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)) and f"{item}:{q}" not in DETERMINISTIC}


def _version() -> str:
    """The replication points' cache version: the tables' code and this module's."""
    from infsched.kairos import experiments, search_cost
    return code_version(_Runner.__init__, _Runner.ub, _Runner.__call__, replicated_tables, replicated_gauss, _chapter_table,
                        _numbers, table_numbers, fig12_numbers, experiments.fig1, experiments.claims_fig1, experiments.fig2,
                        experiments.claims_fig2, experiments.fig8, experiments.claims_fig8,
                        experiments.fig9, experiments.claims_fig9, search_cost.fig12,
                        search_cost.fig12_evaluated, search_cost.claims_fig12)


def table_numbers(tables: dict[str, pd.DataFrame], model: str, sa_runs: int,
                  sa_seed: int) -> dict:
    """The numeric quantities of Figs. 1, 2, 8 and 9's claim functions on ``tables`` (Figs. 1
    and 2 on ``model``'s table, Fig. 2 with ``sa_runs`` walks from ``sa_seed``), as
    ``"item:quantity"``."""
    from infsched.kairos import experiments as ex

    pk = picks(models=tuple(tables))
    t = tables[check_model(model)]
    return {**_numbers("fig1", ex.claims_fig1(ex.fig1(t))),
            **_numbers("fig2", ex.claims_fig2(ex.fig2(t, runs=sa_runs, seed=sa_seed))),
            **_numbers("fig8", ex.claims_fig8(ex.fig8(tables, pk))),
            **_numbers("fig9", ex.claims_fig9(ex.fig9(tables, pk)))}


def fig12_numbers(t: pd.DataFrame, seeds: int) -> dict:
    """The numeric quantities of Fig. 12's claim function on RM2's Gaussian table ``t``, with
    ``seeds`` Bayesian-optimisation seeds, as ``"fig12:quantity"``."""
    from infsched.kairos import search_cost

    f12 = search_cost.fig12(t, seeds)
    f12e = search_cost.fig12_evaluated(t, seeds)
    return _numbers("fig12", search_cost.claims_fig12(f12, t, f12e))


@results_version(1)
def tables_replica(scale: str, seed: int, r: int | None, model: str = "rm2") -> dict:
    """Replication ``r`` of Figs. 1, 2, 8 and 9 (``model``: the chapter's single-model figures):
    :func:`table_numbers` on :func:`replicated_tables`, Fig. 2's walks from the replication's
    seed."""
    sc = get_scale(scale)
    return {"replication": -1 if r is None else int(r),
            **table_numbers(replicated_tables(scale, seed, r), model, sc.sa_runs,
                            replica_seed(seed, r))}


@results_version(1)
def fig12_replica(scale: str, seed: int, r: int | None) -> dict:
    """Replication ``r`` of Fig. 12: :func:`fig12_numbers` on :func:`replicated_gauss`."""
    sc = get_scale(scale)
    return {"replication": -1 if r is None else int(r),
            **fig12_numbers(replicated_gauss(scale, seed, r), sc.search_seeds)}


def replications(scale: str = "default", seed: int = 0, *, replications: int | None = None,
                 model: str = "rm2", n_jobs: int | None = None, cache=None) -> pd.DataFrame:
    """``replications`` (default: :data:`REPLICATIONS` of the scale) of every measured item,
    one row per replication, one column per ``"item:quantity"``; points run in parallel."""
    n = REPLICATIONS[one_of("scale", scale, tuple(REPLICATIONS))]
    n = n if replications is None else replications
    require(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 2,
            "replications", n, "must be an integer >= 2 (a standard deviation needs two runs)")
    check_model(model)
    base = [dict(scale=scale, seed=int(seed), r=r) for r in range(int(n))]
    jobs = default_processes(n_jobs)
    a = run_sweep(tables_replica, [p | {"model": model} for p in base], cache_dir=cache,
                  n_jobs=jobs, version=_version())
    b = run_sweep(fig12_replica, base, cache_dir=cache, n_jobs=jobs, version=_version())
    keep = lambda df: df.drop(columns=[c for c in ("scale", "seed", "r", "model") if c in df])
    return keep(a).merge(keep(b), on="replication").reset_index(drop=True)


def noise(reps: pd.DataFrame) -> pd.DataFrame:
    """Per ``"item:quantity"`` of the replications: ``sd`` (ddof = 1), ``runs``, ``ci``,
    ``1.96 sd`` (the spread of one run, for a reader's glance), and ``values``, the
    replications' numbers, which :func:`with_noise` pools with the chapter's."""
    cols = [c for c in getattr(reps, "columns", []) if c != "replication"]
    require(isinstance(reps, pd.DataFrame) and len(reps) >= 2 and cols, "reps",
            type(reps).__name__, "must be a frame of at least two replications (one row each) "
            "with at least one quantity")
    sd = reps[cols].std(ddof=1)
    values = pd.Series({c: tuple(float(v) for v in reps[c].dropna()) for c in cols}, dtype=object)
    return pd.DataFrame({"sd": sd, "runs": len(reps), "ci": Z95 * sd, "values": values})


def with_noise(item: str, claims: dict, nz: pd.DataFrame) -> dict:
    """``claims`` of ``item`` with every number the replications measured replaced by the book's
    statistical rule (:func:`infsched.report.pooled`): the mean over the chapter's run and every
    replication, with the 95 % prediction interval of one run (each of the paper's figures is one
    run); a number that already carries an interval (Fig. 12's, over the Bayesian optimisation's
    seeds, which the replications hold fixed) gets it added in quadrature. Qualitative rows are
    unchanged."""
    from infsched.report import ONE_RUN, pooled

    out = dict(claims)
    for q, v in claims.items():
        key = f"{item}:{q}"
        if key not in nz.index or isinstance(v, (bool, np.bool_)) or not np.isfinite(nz.loc[key, "sd"]):
            continue
        prior = v.ci if isinstance(v, Measured) else 0.0
        out[q] = pooled((float(v),) + tuple(nz.loc[key, "values"]), ONE_RUN, extra_ci=prior)
    return out


def noise_notes(item: str, claims: dict, nz: pd.DataFrame) -> dict:
    """One note per pooled number: what was pooled, and the chapter's own run."""
    notes = {}
    for q, v in claims.items():
        key = f"{item}:{q}"
        if key not in nz.index or isinstance(v, (bool, np.bool_)) or not np.isfinite(nz.loc[key, "sd"]):
            continue
        text = (f"ours: the mean of the chapter's run ({float(v):.3g}) and {int(nz.loc[key, 'runs'])} "
                "replications on new seeds")
        if isinstance(v, Measured) and v.ci > 0:
            text += f", ⊕ ±{v.ci:.2g} over the search seeds"
        notes[q] = text
    return notes
