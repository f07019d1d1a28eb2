"""The exhaustive tables of KAIROS: every configuration of the $2.5/h budget under KAIROS,
Ribbon's FCFS, CLKWRK and DRS (on its best threshold), and the Oracle, per model.

They take about a minute on two cores, so :func:`build_tables` computes them once into
``data/kairos/`` and :func:`exhaustive` reads them; the `paper` scale recomputes them, cached per
configuration under ``$INFSCHED_CACHE`` (so an interrupted build resumes) and keyed by
:func:`code_version`. Every simulated throughput is
:func:`infsched.kairos.sim.allowable_throughput`: the largest Poisson rate at which 99 % of the
queries meet QoS, by bisection under Eq. 15's bound with common random numbers. The helpers at
the end read a table the way the figures do.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path

import numpy as np
import pandas as pd

from infsched.errors import one_of
from infsched.kairos import (
    batches as batches_module,
    bound,
    engines,
    lsa,
    matching,
    model as model_module,
    ranking,
    search,
    sim,
    workload,
)
from infsched.kairos.batches import BatchDist
from infsched.kairos.model import MODELS, QOS_MS, check_model, config_label, homogeneous
from infsched.kairos.ranking import bisection_ub, configs_of, ub_table
from infsched.kairos.scales import get_scale
from infsched.report import find_data_dir
from infsched.store import results_version
from infsched.sweep import default_processes, run_sweep

__all__ = ["POLICIES", "STORED_QUERIES", "VARIANTS", "code_version", "table_point", "drs_point",
           "config_grid", "compute_table", "table_path", "build_tables", "exhaustive",
           "homogeneous_scaled", "best_row", "kairos_plus_on"]

#: the policies of the exhaustive tables with one bisection each (DRS adds one per threshold)
POLICIES = ("kairos", "fcfs", "clkwrk")
TABLE_DIR = "kairos"
#: queries per run of the stored tables (the `default` scale's)
STORED_QUERIES = 2000


def code_version(*fns) -> str:
    """A hash of the source a cached point depends on (the model, the simulator and its engines,
    the bound, the search, the ranking, and the point's own functions): a point is reused only
    by the same code."""
    src = "".join(inspect.getsource(m) for m in (model_module, batches_module, matching, lsa,
                                                 engines, workload, sim, bound, search, ranking))
    src += "".join(inspect.getsource(f) for f in fns)
    return hashlib.sha256(src.encode()).hexdigest()[:12]


@results_version(1)
def table_point(model: str, n0: int, n1: int, n2: int, n3: int, n_queries: int, seed: int,
                service: str = "mean", qos_scale: float = 1.0,
                dist: str = "lognormal-mix") -> dict:
    """One row of an exhaustive table: the allowable throughput of configuration
    ``(n0, n1, n2, n3)`` under KAIROS, FCFS and CLKWRK, and ORCL's."""
    x = (n0, n1, n2, n3)
    bd = BatchDist(dist)
    qos = QOS_MS[model] * qos_scale
    ub = bisection_ub(model, x, qos_scale, bd)
    out: dict = {}
    for p in POLICIES:
        t = sim.allowable_throughput(x, model, p, ub=ub, qos=qos, n_queries=n_queries,
                                     seed=seed, service=service, dist=bd)
        out[p] = t.throughput
        out[f"{p}_hi"] = t.hi_feasible
    out["orcl"] = sim.orcl_throughput(x, model, qos=qos, n_queries=n_queries, seed=seed, dist=bd)
    return out


@results_version(1)
def drs_point(model: str, n0: int, n1: int, n2: int, n3: int, n_queries: int, seed: int,
              service: str = "mean", qos_scale: float = 1.0, dist: str = "lognormal-mix") -> dict:
    """DRS on its best static threshold (the hill-climb's grid, spec §2.5) for one configuration."""
    x = (n0, n1, n2, n3)
    bd = BatchDist(dist)
    ub = bisection_ub(model, x, qos_scale, bd)
    q, theta = sim.drs_best_threshold(x, model, ub=ub, qos=QOS_MS[model] * qos_scale,
                                      n_queries=n_queries, seed=seed, service=service, dist=bd)
    return {"drs": q, "drs_theta": theta}


def config_grid(model: str, X, **fixed) -> list[dict]:
    return [dict(model=model, n0=int(x[0]), n1=int(x[1]), n2=int(x[2]), n3=int(x[3]), **fixed)
            for x in X]


def compute_table(model: str, n_queries: int = 2000, seed: int = 0, *, n_jobs: int | None = None,
                  progress: bool = False, service: str = "mean", qos_scale: float = 1.0,
                  dist: str = "lognormal-mix", cache: bool = True) -> pd.DataFrame:
    """The exhaustive table of ``model`` at $2.5/h: every configuration's bound, its throughput
    under KAIROS, FCFS, CLKWRK and DRS (on its best threshold), and ORCL's. Cached per
    configuration (``cache=False``: not), so an interrupted build resumes."""
    check_model(model)
    bd = BatchDist(dist)
    t = ub_table(model, 2.5, "artifact" if (qos_scale, dist) == (1.0, "lognormal-mix")
                 else "derived", qos_scale, bd)
    fixed = dict(n_queries=n_queries, seed=seed, service=service, qos_scale=qos_scale, dist=dist)
    jobs = default_processes(n_jobs)
    where = None if cache else False
    rows = run_sweep(table_point, config_grid(model, configs_of(t), **fixed), n_jobs=jobs,
                     progress=progress, version=code_version(table_point), cache_dir=where)
    for c in (*POLICIES, "orcl", *(f"{p}_hi" for p in POLICIES)):
        t[c] = rows[c].to_numpy()
    drs = run_sweep(drs_point, config_grid(model, configs_of(t), **fixed), n_jobs=jobs,
                    progress=progress, version=code_version(drs_point), cache_dir=where)
    t["drs"] = drs["drs"].to_numpy()
    t["drs_theta"] = drs["drs_theta"].to_numpy()
    return t


def table_path(model: str, variant: str = "") -> Path:
    return find_data_dir() / TABLE_DIR / f"exhaustive_{model}{variant}.csv"


#: the stored tables: name suffix -> settings (Fig. 12 needs RM2 under Gaussian batches)
VARIANTS = {"": {}, "_gauss": {"dist": "gauss"}}


def build_tables(models=MODELS, n_queries: int = 2000, seed: int = 0, *,
                 n_jobs: int | None = None, progress: bool = True) -> list[Path]:
    """Compute the exhaustive tables and write them to ``data/kairos/`` (and RM2's Gaussian
    table for Fig. 12). Run by ``data/kairos/build_tables.py``."""
    written = []
    for m in models:
        for variant, settings in VARIANTS.items():
            if variant and m != "rm2":
                continue
            t = compute_table(m, n_queries, seed, n_jobs=n_jobs, progress=progress, **settings)
            path = table_path(m, variant)
            path.parent.mkdir(parents=True, exist_ok=True)
            t.to_csv(path, index=False, float_format="%.6g")
            written.append(path)
    return written


def exhaustive(model: str, scale: str = "default", seed: int = 0, *, variant: str = "",
               n_jobs: int | None = None) -> pd.DataFrame:
    """The exhaustive table of ``model``: read from ``data/kairos/`` (computed by
    :func:`build_tables` with seed 0 and 2,000 queries), recomputed at the `paper` scale or for
    another seed."""
    check_model(model)
    one_of("variant", variant, tuple(VARIANTS))
    sc = get_scale(scale)
    path = table_path(model, variant)
    if not sc.recompute and seed == 0 and path.is_file():
        t = pd.read_csv(path)
        t["config"] = [config_label(x) for x in configs_of(t)]
        return t
    return compute_table(model, sc.n_queries, seed, n_jobs=n_jobs, progress=sc.recompute,
                         **VARIANTS[variant])


# ------------------------------------------------------------------ reading a table

def homogeneous_scaled(t: pd.DataFrame, policy: str, budget: float = 2.5) -> float:
    """The homogeneous configuration's throughput under ``policy``, scaled to the whole
    ``budget`` (Sec. 4: the base type alone, its unused budget counted at the same rate)."""
    u, factor = homogeneous(budget)
    return float(t.loc[t["config"] == config_label(u), policy].iloc[0]) * factor


def best_row(t: pd.DataFrame, col: str) -> pd.Series:
    """The configuration of highest ``col`` (the first on ties, in the table's order)."""
    return t.loc[t[col].idxmax()]


def kairos_plus_on(t: pd.DataFrame, col: str = "kairos") -> search.SearchResult:
    """Algorithm 1 (KAIROS+) over a stored table, each evaluation a lookup of ``col``."""
    X = configs_of(t)
    f = t[col].to_numpy(float)
    opt = tuple(int(v) for v in X[int(np.argmax(f))])
    return search.kairos_plus(X, t["ub"].to_numpy(), f, optimum=opt)
