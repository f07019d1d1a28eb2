"""Speed of the TAD chapter's engines, beside fair baselines.

The main configuration at ρ = 0.8, a* = 76, n = 4096 (and n = 64). Every figure is jobs per
second of **CPU time** of this process (``time.process_time``), the best of ``REPEATS`` runs, so
that other users of a shared machine slow it as little as possible; wall-clock rates are
written to the JSON beside them. Each engine is set beside

(a) the simpy reference (:mod:`infsched.tad.reference`), on ``REFERENCE_JOBS`` jobs;
(b) a plain-Python event loop over ``heapq`` (:func:`heapq_tad`), written as a competent
    engineer would: one heap of arrival and departure events, a list of idle servers per class,
    queue lengths per server, ``random.Random`` draws; ``HEAPQ_JOBS`` jobs;
(c) an estimate of the limit of this machine for the exponential engine's design: the numpy
    draws a job consumes (the jump chain draws no holding times and reuses an arrival's
    uniform: about 1.3 draws per job) plus a numba loop (:func:`_limit_loop`) that does only
    what every event must (the term N/R, the event choice, one busy count, the cumulative
    rates, the next uniform) with no policy, no Δ and no measurement. It is the engine without
    its policy and books: the fraction of (c) the engine reaches is what those cost.

and the previous engine (commit ``PREVIOUS``, the Markov engine before the jump-chain fast
path), run from git in this process when git is available, with its mean response beside ours:
``z`` is their difference in standard errors of the difference (batch means; the two draw
different numbers, so they agree in distribution, not job by job; |z| < 3 expected).
Goal (issue 24): ≥ 25 million jobs/s at n = 4096 for TAD, TAD-OP, R-JIQ and JIQ (exponential
service; deterministic service runs the per-arrival Lindley engine). Prints a table and writes
``benchmarks/results/tad.json``.

    python benchmarks/bench_tad.py
"""

from __future__ import annotations

import heapq
import importlib.util
import json
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

from infsched.tad import bound
from infsched.tad.markov import MAX_COARSEN, cumulative_rates, departing_class, shift_rates
from infsched.tad.model import MAIN
from infsched.tad.reference import simulate_reference
from infsched.tad.sim import simulate

ENGINE_JOBS = 4_000_000
REFERENCE_JOBS = 20_000
HEAPQ_JOBS = 300_000
REPEATS = 3
RHO, A_STAR = 0.8, 76.0
POLICIES = ("tad", "tad-op", "r-jiq", "jiq-fast")
PREVIOUS = "7e0bd89"      # the last commit before the jump-chain fast path (issue 24)
RESULTS = Path(__file__).resolve().parent / "results" / "tad.json"
T975 = 2.093             # Student t, 19 degrees of freedom: the engines' 20 batch means
ROOT = Path(__file__).resolve().parent.parent


def _best_rate(fn, jobs: int, repeats: int = REPEATS) -> tuple[float, float, object]:
    """(jobs per CPU second, jobs per wall second, last result), best of ``repeats``."""
    cpu = wall = math.inf
    out = None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return jobs / cpu, jobs / wall, out


# ------------------------------------------------------------------ (b) plain Python over heapq

def heapq_tad(params, n: int, lam: float, a_star: float, n_jobs: int, seed: int = 0) -> float:
    """TAD with exponential service as a plain-Python discrete-event loop; returns E[T] by
    Little's law (∫N dt / arrivals, no warm-up). Δ is kept in integer tenths of a point."""
    rng = random.Random(seed)
    expo, unif = rng.expovariate, rng.random
    sizes = [int(x) for x in params.class_sizes(n)]
    starts = [sum(sizes[:k]) for k in range(len(sizes))]
    cls = [k for k, nk in enumerate(sizes) for _ in range(nk)]
    mu = list(params.mu)
    K = len(sizes)
    d = [round(10 * (a - a_star)) for a in params.a]
    idle = [list(range(st + nk - 1, st - 1, -1)) for st, nk in zip(starts, sizes)]
    qlen = [0] * n
    events = [(expo(n * lam), -1)]          # (time, server): server −1 is the next arrival
    push, pop = heapq.heappush, heapq.heappop
    t = area = 0.0
    N = arrivals = delta = 0
    while arrivals < n_jobs:
        t_next, s = pop(events)
        area += N * (t_next - t)
        t = t_next
        if s < 0:
            arrivals += 1
            push(events, (t + expo(n * lam), -1))
            allowed = [k for k in range(K) if delta + d[k] >= 0]
            i = next((k for k in allowed if idle[k]), None)
            if i is None:
                i = allowed[min(int(unif() * len(allowed)), len(allowed) - 1)]
            delta += d[i]
            N += 1
            if idle[i]:
                s = idle[i].pop()
                qlen[s] = 1
                push(events, (t + expo(mu[i]), s))
            else:
                s = starts[i] + min(int(unif() * sizes[i]), sizes[i] - 1)
                qlen[s] += 1
        else:
            N -= 1
            qlen[s] -= 1
            if qlen[s]:
                push(events, (t + expo(mu[cls[s]]), s))
            else:
                idle[cls[s]].append(s)
    return area / arrivals


# ------------------------------------------------------------------ (c) the limit

@njit(cache=True, _nrt=False)     # as the engine's kernels (see infsched.tad.choice)
def _limit_loop(u, lam_tot, mu, sizes, stn, cr, n_target, max_coarsen):
    """Only what every event of the jump chain must do, in the engine's design: the holding-time
    term N/R, the event choice x = u·R, the busy count of one class and the cumulative rates
    (fixed trip), and the uniform for the next event (the arrival's residual while its grid
    allows, else a fresh draw). Arrivals go to the fastest class with an idle server (else the
    last class, no queue kept); no policy table, no Δ, no batches, no per-server memory. The
    rates are kept with the engine's own helpers (:mod:`infsched.tad.markov`)."""
    K = mu.shape[0]
    inv_lam = 1.0 / lam_tot
    R = cumulative_rates(lam_tot, mu, sizes, stn, cr)
    N = 0
    ja = 0
    iu = 0
    area = 0.0
    coarse = 1.0
    x0 = u[iu]
    iu += 1
    while ja < n_target:
        area += N / R
        x = x0 * R
        if x < lam_tot or N == 0:
            i = K - 1
            for k in range(K):
                if stn[k] > 0:
                    i = k
                    break
            if stn[i] > 0:
                stn[i] -= 1
                shift_rates(cr, i, mu[i])
                R += mu[i]
            N += 1
            ja += 1
            c2 = coarse * R * inv_lam
            if c2 <= max_coarsen:
                x0 = x * inv_lam
                coarse = c2
                continue
        else:
            k = departing_class(x, cr)
            if stn[k] < sizes[k]:
                stn[k] += 1
                shift_rates(cr, k, -mu[k])
                R -= mu[k]
            N -= 1
        x0 = u[iu]
        iu += 1
        coarse = 1.0
    return iu, area


def limit_rate(n: int, lam: float, jobs: int) -> dict:
    """Jobs per CPU second of (c): the numpy draws a job consumes (PCG64 doubles in blocks, as
    the engine draws them) plus :func:`_limit_loop`, and the parts of that sum."""
    sizes = MAIN.class_sizes(n).astype(np.int64)
    g = np.random.default_rng(1)
    u = g.random(2 * jobs + 16)
    _limit_loop(u[:64], n * lam, MAIN.mu_arr, sizes, sizes.copy(), np.zeros(MAIN.K), 5,
                MAX_COARSEN)
    loop = math.inf
    for _ in range(REPEATS):
        c0 = time.process_time()
        used, _ = _limit_loop(u, n * lam, MAIN.mu_arr, sizes, sizes.copy(), np.zeros(MAIN.K),
                              jobs, MAX_COARSEN)
        loop = min(loop, time.process_time() - c0)
    buf = np.empty(1 << 14)
    draw = math.inf
    for _ in range(REPEATS):
        c0 = time.process_time()
        for _ in range(int(used) // len(buf) + 1):
            g.random(out=buf)
        draw = min(draw, time.process_time() - c0)
    return {"loop_jobs_per_s": jobs / loop, "loop_ns_per_job": 1e9 * loop / jobs,
            "draws_per_job": used / jobs, "draw_ns_per_job": 1e9 * draw / jobs,
            "draw_ns_each": 1e9 * draw / max(int(used), 1),
            "jobs_per_s": jobs / (loop + draw)}


# ------------------------------------------------------------------ the previous engine

def previous_engine():
    """``simulate`` of the heap-based engine of commit ``PREVIOUS`` (None without git)."""
    try:
        src = subprocess.run(["git", "show", f"{PREVIOUS}:lib/infsched/tad/sim.py"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp()) / "tad_sim_previous.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("tad_sim_previous", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod              # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod.simulate


def main() -> dict:
    lam = RHO * bound.lambda_max(MAIN, A_STAR)
    simulate(MAIN, "tad", 64, lam=lam, a_star=A_STAR, n_jobs=10_000)   # compile / load cache
    simulate(MAIN, "tad", 64, lam=lam, a_star=A_STAR, n_jobs=10_000, service="det")
    prev = previous_engine()
    n = 4096
    rows = []
    for policy in POLICIES:
        for service in ("exp", "det"):
            run = lambda: simulate(MAIN, policy, n, lam=lam, a_star=A_STAR, n_jobs=ENGINE_JOBS,
                                   seed=1, service=service)
            cpu, wall, res = _best_rate(run, ENGINE_JOBS)
            row = {"policy": policy, "service": service, "n": n, "engine_jobs_per_s": cpu,
                   "engine_jobs_per_wall_s": wall, "engine_mean_response": res.mean_response,
                   "engine_ci": res.ci_halfwidth}
            if prev is not None:
                prev(MAIN, policy, 64, lam=lam, a_star=A_STAR, n_jobs=10_000, service=service)
                pcpu, _, pres = _best_rate(lambda: prev(MAIN, policy, n, lam=lam, a_star=A_STAR,
                                                        n_jobs=ENGINE_JOBS, seed=1,
                                                        service=service), ENGINE_JOBS)
                z = (res.mean_response - pres.mean_response) / (
                    math.hypot(res.ci_halfwidth, pres.ci_halfwidth) / T975)
                row.update(previous_jobs_per_s=pcpu, previous_mean_response=pres.mean_response,
                           previous_ci=pres.ci_halfwidth, z=z)
            rows.append(row)
            print(f"  {policy} {service}: {cpu:,.0f} jobs/s", flush=True)
    ref_cpu, _, ref = _best_rate(lambda: simulate_reference(
        MAIN, "tad", n, lam=lam, a_star=A_STAR, n_jobs=REFERENCE_JOBS, seed=1), REFERENCE_JOBS, 1)
    hq_cpu, _, hq = _best_rate(lambda: heapq_tad(MAIN, n, lam, A_STAR, HEAPQ_JOBS, seed=1),
                               HEAPQ_JOBS, 1)
    limit = limit_rate(n, lam, ENGINE_JOBS)
    tad_exp = next(r for r in rows if r["policy"] == "tad" and r["service"] == "exp")
    summary = {"engine": "TAD, exp, n = 4096", "engine_jobs_per_s": tad_exp["engine_jobs_per_s"],
               "reference_jobs_per_s": ref_cpu, "heapq_jobs_per_s": hq_cpu,
               "limit_jobs_per_s": limit["jobs_per_s"],
               "ratio_reference": tad_exp["engine_jobs_per_s"] / ref_cpu,
               "ratio_heapq": tad_exp["engine_jobs_per_s"] / hq_cpu,
               "ratio_limit": tad_exp["engine_jobs_per_s"] / limit["jobs_per_s"],
               "heapq_mean_response": hq, "reference_mean_response": ref.mean_response}
    result = {"benchmark": "tad", "rho": RHO, "a_star": A_STAR, "clock": "process CPU time",
              "load_avg_1min": os.getloadavg()[0], "python": platform.python_version(),
              "machine": platform.machine(), "goal": {"engine_jobs_per_s_n4096": 25e6},
              "rows": rows, "limit": limit, "summary": summary}

    print(f"Main configuration, ρ = {RHO}, a* = {A_STAR:g}, n = {n}; jobs per CPU second, "
          f"best of {REPEATS}")
    print(f"{'policy':<10} {'service':<7} {'engine':>12} {'previous':>12} {'speed-up':>9} "
          f"{'E[T]':>8} {'previous':>8} {'z':>6} {'goal':>5}")
    for r in rows:
        p = r.get("previous_jobs_per_s")
        prev_s = "-" if p is None else f"{p:,.0f}"
        up_s = "-" if p is None else f"{r['engine_jobs_per_s'] / p:.2f}"
        pm = "-" if p is None else f"{r['previous_mean_response']:.4f}"
        z = "-" if p is None else f"{r['z']:+.1f}"
        goal = ("yes" if r["engine_jobs_per_s"] >= 25e6 else "NO") if r["service"] == "exp" else ""
        print(f"{r['policy']:<10} {r['service']:<7} {r['engine_jobs_per_s']:>12,.0f} "
              f"{prev_s:>12} {up_s:>9} {r['engine_mean_response']:>8.4f} {pm:>8} {z:>6} {goal:>5}")
    lm = limit
    print(f"(c) limit: loop {lm['loop_ns_per_job']:.1f} ns/job + {lm['draws_per_job']:.2f} draws "
          f"x {lm['draw_ns_each']:.2f} ns = {1e9 / lm['jobs_per_s']:.1f} ns/job "
          f"-> {lm['jobs_per_s']:,.0f} jobs/s")
    s = summary
    print(f"TAD exp: engine {s['engine_jobs_per_s']:,.0f}; (a) simpy {s['reference_jobs_per_s']:,.0f} "
          f"(×{s['ratio_reference']:,.0f}); (b) heapq {s['heapq_jobs_per_s']:,.0f} "
          f"(×{s['ratio_heapq']:,.0f}); (c) limit {s['limit_jobs_per_s']:,.0f} "
          f"(×{s['ratio_limit']:.2f})")
    print(f"load average {result['load_avg_1min']:.1f} on {os.cpu_count()} cores")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return result


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
