"""The neutral simulator checked against closed forms (M/M/c, M/D/1) and FLEX against Shepherd's
own engine (spec headtohead §4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .config import ServingConfig
from .contenders import LABELS
from .sim import simulate
from .zoo import Zoo

__all__ = ["erlang_c_wait", "closed_forms", "flex_agreement"]


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait in queue of M/M/c (Erlang C)."""
    from math import factorial

    a = lam / mu
    rho = a / c
    top = a ** c / factorial(c) / (1 - rho)
    p_wait = top / (sum(a ** k / factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


def closed_forms(seed: int = 0, n: int = 200_000) -> pd.DataFrame:
    """The neutral simulator against closed forms (spec headtohead §4): one model at batch 1 on
    a central FIFO queue is M/M/c with exponential service (Erlang C) and M/D/1 with
    deterministic service on one worker (Pollaczek-Khinchine); mean wait with a 95 % batch-means
    interval. The tests in ``tests/serving`` check more cases at 99.9 %."""
    rows = []
    for label, c, service, rho in (("M/M/8", 8, "exponential", 0.8), ("M/M/60", 60, "exponential", 0.9),
                                   ("M/D/1", 1, "deterministic", 0.8)):
        d = 10.0
        cfg = ServingConfig(Zoo.single(d), workers=c, slo_ms=1e12, policy="fcfs", service=service)
        lam = rho * c / d
        res = simulate(cfg, n, rate_qps=lam * 1000.0, seed=seed)
        theory = (erlang_c_wait(lam, 1 / d, c) if service == "exponential"
                  else rho * d / (2 * (1 - rho)))
        ci = res.wait_ci()
        rows.append({"system": label, "load": rho, "theory (ms)": theory, "simulated (ms)": ci.mean,
                     "95% CI half-width (ms)": ci.halfwidth,
                     "within CI": bool(abs(ci.mean - theory) <= ci.halfwidth)})
    return pd.DataFrame(rows)


def flex_agreement(seeds: int = 16, rates=(7_000.0, 14_000.0, 21_000.0), *, model: str = "RN50",
                   workers: int = 12, slo_ms: float = 250.0, horizon_s: float = 3.0,
                   n_streams: int = 1000) -> pd.DataFrame:
    """FLEX and FLEX-NP on the neutral engine against Shepherd's own engine
    (:func:`infsched.shepherd.sim.simulate`) on Shepherd's scenario: one group of ``workers``
    GPUs, SLO ``slo_ms``, Table 4's linear latency of ``model`` up to B_max = 128, MAF-synth
    bursty arrivals (``n_streams`` streams on the one model, ``horizon_s`` s) at each rate;
    independent seeds for the two engines (the same generator). Per (rate, policy): SLO
    attainment and preemptions per query, mean and 95 % interval over seeds for each engine,
    and whether the 99 % Welch interval of the difference holds 0."""
    from scipy import stats

    from ..shepherd import sim as shp
    from ..shepherd.model import B_MAX, Requests, model_set
    from ..shepherd.traces import maf_arrivals

    ms = model_set("cv16")
    one = ms.subset([ms.names.index(model)])
    zoo = Zoo((model,), [0.0], one.latency(0, np.arange(1, B_MAX + 1))[None, :])
    rows = []
    for rate in rates:
        for pol in ("flex", "flex-np"):
            cfg = ServingConfig(zoo, workers=workers, slo_ms=slo_ms, policy=pol, model=model)
            got = {"neutral": [], "Shepherd": []}
            for s in range(seeds):
                a = maf_arrivals(n_streams, rate, horizon_s, "bursty", 1, seed=s).arrival_ms
                r = simulate(cfg, arrivals=a)
                got["neutral"].append((r.on_time.mean(), r.preemptions / a.size))
                a = maf_arrivals(n_streams, rate, horizon_s, "bursty", 1, seed=10_000 + s).arrival_ms
                t = shp.simulate(Requests.with_slo(a, np.zeros(a.size, np.int64), slo_ms), one,
                                 workers, pol)
                got["Shepherd"].append((t.ok.mean(), t.preemptions / a.size))
            row = {"rate (queries/s)": rate, "policy": LABELS[pol]}
            agree = True
            for k, what in enumerate(("attainment", "preemptions per query")):
                x = np.array([v[k] for v in got["neutral"]])
                y = np.array([v[k] for v in got["Shepherd"]])
                for eng, v in (("neutral", x), ("Shepherd", y)):
                    hw = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
                    row[f"{what}, {eng}"] = f"{v.mean():.3f} ± {hw:.3f}"
                se = np.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
                agree &= bool(abs(x.mean() - y.mean()) <= stats.t.ppf(0.995, x.size + y.size - 2) * se)
            row["agree (99 %)"] = agree
            rows.append(row)
    return pd.DataFrame(rows)
