"""The neutral simulator checked against closed forms (M/M/c, M/D/1) and FLEX against Shepherd's
own engine (spec headtohead §4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .config import ServingConfig
from .contenders import LABELS
from .sim import simulate
from .zoo import Zoo

__all__ = ["erlang_c_wait", "erlang_c_tail", "bulk_service_chain", "wait_tail_replications",
           "closed_forms", "tail_checks", "ramsis_overload_agreement",
           "flex_agreement"]


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean wait in queue of M/M/c (Erlang C)."""
    from math import factorial

    a = lam / mu
    rho = a / c
    top = a ** c / factorial(c) / (1 - rho)
    p_wait = top / (sum(a ** k / factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


def erlang_c_tail(lam: float, mu: float, c: int, t) -> np.ndarray:
    """P(W > t) of M/M/c FIFO (Erlang C): ``C(c, a) exp(-(c mu - lam) t)``, ``a = lam / mu``."""
    p_wait = erlang_c_wait(lam, mu, c) * (c * mu - lam)  # C(c, a)
    return p_wait * np.exp(-(c * mu - lam) * np.asarray(t, dtype=float))


def bulk_service_chain(lam: float, mu: float, c: int, B: int, q_max: int | None = None) -> dict:
    """The bulk-service queue M/M^[1,B]/c solved exactly as a continuous-time Markov chain.

    ``c`` servers and one FIFO queue; a server that frees, or an arrival that finds one idle,
    takes ``min(queued, B)`` queries as one batch, served in an Exp(``mu``) time whatever its
    size (the neutral engine with ``service="exponential"``, a one-model zoo flat in ``b`` and
    ``max_batch = B``). States: ``s < c`` busy servers and an empty queue, or all ``c`` busy
    and ``q >= 0`` queued; the chain is truncated at ``q_max`` (default: where the geometric
    tail is below 1e-15) and solved with scipy's sparse LU. An arrival that finds ``(c, q)``
    (PASTA) starts at the ``floor(q / B) + 1``-th completion from then, and completions come at
    rate ``c mu`` while it waits, so its wait is Erlang(``floor(q / B) + 1``, ``c mu``).
    Returns ``pi_busy`` (the stationary probabilities of ``(c, q)``), ``p_wait`` and
    ``mean_wait``, and ``tail(t)``, the exact P(W > t)."""
    from scipy import sparse
    from scipy.sparse.linalg import spsolve
    from scipy.special import gammaincc

    if not lam < c * B * mu:
        raise ValueError(f"unstable: lam = {lam} >= c B mu = {c * B * mu}")
    if q_max is None:  # the queue's decay per B arrivals is at most lam / (lam + c mu) per step
        r = lam / (lam + c * mu * (1 - (lam / (c * B * mu)) ** 0.5) + 1e-300)
        q_max = int(min(max(200, B * np.log(1e-15) / np.log(max(r, 1e-9))), 200_000))
    S = c + q_max + 1            # states 0..c-1: s busy, empty queue; c + q: all busy, q queued
    rows, cols, vals = [], [], []

    def rate(i, j, v):
        rows.append(i); cols.append(j); vals.append(v)

    for s in range(c):
        rate(s, s + 1, lam)      # (an arrival at s = c - 1 fills the last server: state c + 0)
        if s > 0:
            rate(s, s - 1, s * mu)
    for q in range(q_max + 1):
        i = c + q
        if q < q_max:
            rate(i, i + 1, lam)
        rate(i, c - 1 if q == 0 else c + q - min(q, B), c * mu)
    Q = sparse.csr_matrix((vals, (rows, cols)), shape=(S, S))
    Q = Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())
    # pi Q = 0 with one balance equation replaced by the normalisation sum(pi) = 1
    A = sparse.vstack([sparse.csr_matrix(np.ones((1, S))), Q.T.tocsr()[1:]]).tocsc()
    b = np.zeros(S)
    b[0] = 1.0
    pi = spsolve(A, b)
    busy = pi[c:]
    k = np.arange(q_max + 1) // B + 1

    def tail(t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return np.array([float(busy @ gammaincc(k, c * mu * x)) for x in t])

    return {"pi_busy": busy, "p_wait": float(busy.sum()), "mean_wait": float(busy @ (k / (c * mu))),
            "tail": tail, "q_max": q_max}


def wait_tail_replications(c: int, B: int, lam: float, ts, *, seeds: int = 10, n: int = 100_000,
                           d_ms: float = 10.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Independent runs of one model (``l(m, b) = d_ms`` for every ``b <= B``, Exp service) on
    ``c`` workers and a central FIFO queue at ``lam`` per ms: per run (after a 5 % warm-up) the
    share of waits above each of ``ts`` and the mean wait. Returns ``(shares (seeds, len(ts)),
    mean waits (seeds,))``: independent replications, so their spread is the estimate's own
    standard error (batch means of one run understate it where the queue's memory is long)."""
    zoo = Zoo(("m0",), [100.0], np.full((1, B), float(d_ms)))
    cfg = ServingConfig(zoo, workers=c, slo_ms=1e12, policy="fcfs", service="exponential", max_batch=B)
    ts = np.asarray(ts, dtype=float)
    shares, means = [], []
    for s in np.random.SeedSequence(seed).generate_state(seeds):
        res = simulate(cfg, n, rate_qps=lam * 1000.0, seed=int(s))
        w = (res.start - res.arrival)[int(0.05 * n):]
        shares.append((w[:, None] > ts[None, :]).mean(axis=0))
        means.append(w.mean())
    return np.array(shares), np.array(means)


def tail_checks(seed: int = 0, seeds: int = 10, n: int = 40_000, level: float = 0.95) -> pd.DataFrame:
    """The attainment metric is a tail probability, so the tail is checked too (spec headtohead
    §4): P(W > t) of the simulated wait (arrival to start) against Erlang C for M/M/8 FIFO and
    against the exact bulk-service chain (:func:`bulk_service_chain`) for batches of up to 4 on
    2 workers; mean and Student-t interval (``level``) over ``seeds`` independent runs of ``n``
    queries."""
    from ..metrics import mean_ci

    d = 10.0
    rows = []
    cases = (("M/M/8, FIFO, batch 1 (Erlang C)", 8, 1, 0.85),
             ("M/M^[1,4]/2, bulk service up to 4 (exact chain)", 2, 4, 0.8))
    for label, c, B, rho in cases:
        lam = rho * c * B / d
        if B == 1:
            ts = np.array([0.0, 0.5, 1.0]) / (c / d - lam)  # 0, a half and one decay time
            exact = erlang_c_tail(lam, 1 / d, c, ts)
        else:
            chain = bulk_service_chain(lam, 1 / d, c, B)
            ts = np.array([0.0, 0.5, 1.0]) * chain["mean_wait"]
            exact = chain["tail"](ts)
        shares, _ = wait_tail_replications(c, B, lam, ts, seeds=seeds, n=n, d_ms=d, seed=seed)
        for j, (t, e) in enumerate(zip(ts, exact)):
            ci = mean_ci(shares[:, j], level)
            rows.append({"system": label, "load": rho, "t (ms)": t, "exact P(W > t)": e,
                         "simulated": ci.mean, f"{level:.0%} half-width": ci.halfwidth,
                         "within": bool(abs(ci.mean - e) <= ci.halfwidth)})
    return pd.DataFrame(rows)


def ramsis_overload_agreement(rhos=(1.0, 1.2, 1.6), *, workers: int = 8, slo_ms: float = 150.0,
                              n: int = 12_000, d: int = 10, seed: int = 21) -> pd.DataFrame:
    """RAMSIS on the neutral engine against the RAMSIS chapter's engine
    (:func:`infsched.ramsis.sim.simulate_ramsis`) at and past the pool's capacity (its
    :func:`~infsched.ramsis.model.capacity_qps`), on the same Poisson arrivals, one MDP policy
    (solved for 90 % of the capacity, grid of ``d`` steps): per load, the queries each drops, the
    largest batch (past N = 32 the whole queue is served on the fallback model), the share late
    on each engine and the largest difference between the two engines' completion times."""
    from ..profiles import load_profile
    from ..ramsis import mdp
    from ..ramsis.model import MDPConfig, capacity_qps
    from ..ramsis.policy import PolicyTable
    from ..ramsis.sim import simulate_ramsis
    from ..workload import poisson_arrivals

    prof = load_profile("ramsis-image")
    cap = capacity_qps(prof, workers, slo_ms)
    plan = 0.9 * cap
    sol = mdp.solve(prof, MDPConfig(slo_ms, workers, plan, d=d), metrics=False)
    tab = PolicyTable(slo_ms, workers, sol.grid, [plan], sol.model[None], sol.batch[None], 0,
                      np.zeros(1), np.zeros(1))
    cfg = ServingConfig(Zoo.of(prof), workers=workers, slo_ms=slo_ms, policy="ramsis", mdp_policy=sol)
    rows = []
    for rho in rhos:
        arr = poisson_arrivals(rho * cap / 1000.0, n=n, rng=np.random.default_rng(seed))
        ours = simulate(cfg, arrivals=arr, seed=seed)
        theirs = simulate_ramsis(prof, tab, arr, slo_ms=slo_ms, workers=workers, load_qps=plan, record=True)
        rows.append({"load": rho, "queries": n, "dropped (neutral)": int((~ours.served).sum()),
                     "largest batch": int(ours.bsize.max()),
                     "late, neutral": float(1.0 - ours.on_time.mean()),
                     "late, RAMSIS engine": float(theirs.violation_rate),
                     "same model, every query": bool(np.array_equal(ours.model, theirs.model)),
                     "max |completion difference| (ms)": float(np.max(np.abs(ours.finish - theirs.completion)))})
    return pd.DataFrame(rows)


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
