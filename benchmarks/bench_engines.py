"""Fair speed ratios: every chapter's compiled engine beside (a) its reference, (b) a plain-Python
event loop for the same model, (c) an estimate of the limit of this machine. One table.

Rates are simulated jobs (queries, requests) per second of **CPU time** of this process
(``time.process_time``: other users of a shared machine slow it as little as possible), all
measured in this one run, each engine the best of ``REPEATS``. The configurations are those of
the chapters' own benchmarks:

- TAD: TAD with exponential service, ρ = 0.8, a* = 76, n = 4096 (:mod:`bench_tad`).
- RAMSIS: round robin over K = 60 workers, 2000 QPS, image SLO 150 ms, p95 latencies, load
  known; 30 s of arrivals (the simpy reference on 3 s).
- KAIROS: RM2 on (1, 0, 13, 0) at 120 QPS, 2,000 queries, the KAIROS policy.
- Shepherd: FLEX on one group of 12 GPUs, the 16 vision models, 144,000 req/s offered, SLO
  250 ms, 5 s of the stable MAF-like trace (the simpy reference on its first 1,500 requests,
  the plain-Python loop on the first 10,000).
- KV-cache: MC-SF on 10,000 requests at λ = 50/s, M = 16,492 (Llama-2 70B's budget).

(a) **Reference**: the model the tests hold the engine to: simpy for TAD, RAMSIS, KAIROS and
Shepherd; for the KV-cache chapter a readable Python loop (it has no simpy model).
(b) **Plain Python**: a loop over ``heapq`` written as a competent engineer would
(:mod:`baselines`: TAD's is :func:`bench_tad.heapq_tad`), checked here to give the engine's
answers where it is the same model and random numbers (KAIROS's calls scipy's
``linear_sum_assignment`` at each decision, as the engine's port of it does); the KV-cache's
readable loop is already plain Python, so (a) = (b) there.
(c) **Limit**: what the event machinery alone costs on this machine, a lower bound on any
event-driven engine of the model: per job, the random draws it needs (numpy PCG64 doubles in
blocks, measured), the priority-queue operations its events need (a push and a pop on a binary
heap of the engine's size, compiled, measured; one per batch: arrivals come sorted) and the
bytes of per-job input and output streamed once (at the measured copy bandwidth). TAD's (c) is
the jump chain's own skeleton (:func:`bench_tad.limit_rate`). The policy's own work (TAD's
rule, BATCHGEN, the MDP lookup, an assignment) is not in (c), so the fraction of (c) an engine
reaches says how much of its time is that work and its books.

Prints the table and writes ``benchmarks/results/engines.json``; named rows alone (``tad``,
``ramsis``, ``kairos``, ``shepherd``, ``kvcache``) write ``engines-<names>.json`` instead.

    python benchmarks/bench_engines.py
    python benchmarks/bench_engines.py kairos
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402
import bench_tad  # noqa: E402
from infsched.des import heap_sift_down  # noqa: E402

RESULTS = HERE / "results" / "engines.json"
REPEATS = 3


def _cpu(fn, repeats: int = 1):
    """(best CPU seconds, last result)."""
    best, out = math.inf, None
    for _ in range(repeats):
        c0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - c0)
    return best, out


# ------------------------------------------------------------------ (c): the machine's costs

@njit(cache=True)
def _heap_ops(ht, hs, n_ops):
    """n_ops pops of the earliest time and pushes of a later one with its payload, on the
    engines' own binary heap (:func:`infsched.des.heap_sift_down`: replace the root, sift)."""
    size = ht.shape[0]
    x = 0.5
    for _ in range(n_ops):
        x += 0.6180339887                       # a cheap spread of new times in [0, 1)
        if x >= 1.0:
            x -= 1.0
        heap_sift_down(ht, hs, size, ht[0] + x, hs[0])
    return ht[0]


def machine_costs() -> dict:
    """ns per PCG64 double (blocks of 2^14), per heap pop+push (sizes 12, 60, 4096), per byte
    streamed (a 256 MiB numpy copy)."""
    g = np.random.default_rng(0)
    buf = np.empty(1 << 14)
    sec, _ = _cpu(lambda: [g.random(out=buf) for _ in range(400)], REPEATS)
    out = {"draw_ns": 1e9 * sec / (400 * buf.size)}
    for h in (12, 60, 4096):
        ht, hs = np.sort(g.random(h)), np.arange(h, dtype=np.int64)
        _heap_ops(ht, hs, 10)
        n = 5_000_000
        sec, _ = _cpu(lambda: _heap_ops(ht, hs, n), REPEATS)
        out[f"heap_{h}_ns"] = 1e9 * sec / n
    a = np.ones(1 << 25)
    b = np.empty_like(a)
    sec, _ = _cpu(lambda: np.copyto(b, a), REPEATS)
    out["stream_ns_per_byte"] = 1e9 * sec / (2 * a.nbytes)          # read + write
    return out


def floor_rate(costs: dict, *, draws: float, heap_ops: float, heap: int, bytes_: float) -> float:
    """Jobs per second of the event machinery alone (see the module docstring, (c))."""
    h = costs[f"heap_{heap}_ns"]
    ns = draws * costs["draw_ns"] + heap_ops * h + bytes_ * costs["stream_ns_per_byte"]
    return 1e9 / ns


# ------------------------------------------------------------------ the engines

def tad_row(costs) -> dict:
    from infsched.tad import bound
    from infsched.tad.model import MAIN
    from infsched.tad.reference import simulate_reference
    from infsched.tad.sim import simulate

    n, a_star = 4096, 76.0
    lam = 0.8 * bound.lambda_max(MAIN, a_star)
    jobs = 4_000_000
    simulate(MAIN, "tad", 64, lam=lam, a_star=a_star, n_jobs=10_000)
    eng, _ = _cpu(lambda: simulate(MAIN, "tad", n, lam=lam, a_star=a_star, n_jobs=jobs, seed=1),
                  REPEATS)
    ref, _ = _cpu(lambda: simulate_reference(MAIN, "tad", n, lam=lam, a_star=a_star,
                                             n_jobs=20_000, seed=1))
    hq, _ = _cpu(lambda: bench_tad.heapq_tad(MAIN, n, lam, a_star, 300_000, seed=1))
    lim = bench_tad.limit_rate(n, lam, jobs)
    return {"engine": "TAD (exp, n = 4096)", "unit": "jobs", "engine_per_s": jobs / eng,
            "reference_per_s": 20_000 / ref, "plain_per_s": 300_000 / hq,
            "plain_kind": "heapq loop", "limit_per_s": lim["jobs_per_s"],
            "limit_basis": (f"jump-chain skeleton {lim['loop_ns_per_job']:.1f} ns + "
                            f"{lim['draws_per_job']:.2f} draws x {lim['draw_ns_each']:.2f} ns "
                            "per job"), "checked": "in distribution (tests)"}


def ramsis_row(costs) -> dict:
    from infsched.ramsis import experiments as ex, reference, sim
    from infsched.workload import poisson_arrivals

    K, load, slo = 60, 2000.0, 150.0
    prof = ex.get_profile("image")
    table = ex.policy_table(ex.policies("image", slo, K, [load], d=20, n_jobs=1))
    long = poisson_arrivals(load / 1000, horizon=30_000.0, rng=np.random.default_rng(1))
    short = long[long < 3_000.0]
    run = lambda a: sim.simulate_ramsis(prof, table, a, slo_ms=slo, workers=K, load_qps=load)
    run(short)
    eng, res = _cpu(lambda: run(long), REPEATS)
    ref, _ = _cpu(lambda: reference.simulate_ramsis_reference(prof, table, short, slo_ms=slo,
                                                              workers=K, load_qps=load))
    p = table.lookup(load)
    lat_np = np.asarray(prof.latency_ms, float)
    slope = np.asarray(prof.extrapolation_slope(), float).tolist()
    lat = [[0.0] + row for row in lat_np.tolist()]
    arr = long.tolist()
    hq, (ok, mean, nb) = _cpu(lambda: baselines.ramsis_heapq(
        arr, slo, K, lat, slope, table.model[p].tolist(), table.batch[p].tolist(),
        table.model.shape[1] - 1, table.fallback, table.grid_ms.tolist()))
    same = (ok == res.served - res.violations and nb == int(res.batches.sum())
            and math.isclose(mean, res.mean_response_ms, rel_tol=1e-9))
    assert same, (ok, mean, nb, res)
    per_query = nb / long.size          # completions; arrivals come sorted
    return {"engine": "RAMSIS (K = 60, 2000 QPS)", "unit": "queries",
            "engine_per_s": long.size / eng, "reference_per_s": short.size / ref,
            "plain_per_s": long.size / hq, "plain_kind": "heapq loop",
            "limit_per_s": floor_rate(costs, draws=0, heap_ops=per_query, heap=60, bytes_=8),
            "limit_basis": f"{per_query:.2f} heap pop+push (60) + 8 B per query",
            "checked": "identical (served in SLO, batches, mean response)"}


def kairos_row(costs) -> dict:
    from infsched.kairos import reference, sim
    from infsched.kairos.model import latency_table

    cfg, rate = (1, 0, 13, 0), 120.0
    run = lambda: sim.simulate(cfg, "rm2", "kairos", rate, early_abort=False)
    run()
    eng, res = _cpu(run, REPEATS)
    ref, rres = _cpu(lambda: reference.simulate_reference(cfg, "rm2", "kairos", rate,
                                                          n_queries=2000))
    assert np.allclose(res.finish, rres.finish, equal_nan=True)
    table = latency_table("rm2")
    wl = sim.make_workload(res.n, 0)
    pred, actual = sim.service_arrays(table, wl)
    typ = np.repeat(np.arange(4), cfg)
    args = (wl.arrival_times(rate).tolist(), pred.tolist(), actual.tolist(), typ.tolist(),
            table.coefficient()[typ].tolist(), res.qos)
    hq, (start, finish, where) = _cpu(lambda: baselines.kairos_heapq(*args), REPEATS)
    assert (np.array_equal(start, res.start, equal_nan=True)
            and np.array_equal(finish, res.finish, equal_nan=True)
            and np.array_equal(where, res.instance)), "kairos_heapq differs from the engine"
    n = res.finish.size
    return {"engine": "KAIROS (RM2 (1,0,13,0), 120 QPS)", "unit": "queries",
            "engine_per_s": n / eng, "reference_per_s": n / ref, "plain_per_s": n / hq,
            "plain_kind": "heapq loop (scipy's linear_sum_assignment per decision)",
            "limit_per_s": floor_rate(costs, draws=0, heap_ops=1, heap=12, bytes_=40),
            "limit_basis": ("1 heap pop+push (a completion; 12 entries, the configuration has "
                            "14 instances) + 40 B per query"),
            "checked": "identical (start, finish, instance per query)"}


def shepherd_row(costs) -> dict:
    from infsched.shepherd import reference, sim, traces
    from infsched.shepherd.model import Requests, model_set

    models = model_set("cv16")
    req = traces.maf_requests(4600, 144_000.0, 5.0, "stable", models, 250.0, seed=0)
    cut = lambda k: Requests(req.arrival[:k], req.model[:k], req.deadline[:k])
    small, mid = cut(1500), cut(10_000)
    sim.simulate(small, models, 12, "flex")
    eng, res = _cpu(lambda: sim.simulate(req, models, 12, "flex"), REPEATS)
    ref, _ = _cpu(lambda: reference.simulate_reference(small, models, 12, "flex"))
    L = sim.latency_table(models, 0.0, 128).tolist()
    fast_mid = sim.simulate(mid, models, 12, "flex")
    hq, comp = _cpu(lambda: baselines.flex_heapq(mid.arrival.tolist(), mid.deadline.tolist(),
                                                 mid.model.tolist(), L, 12, sim.LAMBDA, 128))
    assert np.array_equal(np.array(comp), fast_mid.completion, equal_nan=True)
    per_req = 1 + res.batch_gpu.size / req.n   # into its deadline queue; completions
    return {"engine": "Shepherd FLEX (12 GPUs, 144k req/s)", "unit": "requests",
            "engine_per_s": req.n / eng, "reference_per_s": small.n / ref,
            "plain_per_s": mid.n / hq, "plain_kind": "heapq loop",
            "limit_per_s": floor_rate(costs, draws=0, heap_ops=per_req, heap=12, bytes_=32),
            "limit_basis": (f"{per_req:.3f} heap pop+push (12 entries: the request into its "
                            "deadline queue, the batch completions) + 32 B per request"),
            "checked": "identical (completion times)"}


def kvcache_row(costs) -> dict:
    from infsched.kvcache import experiments as ex, workload
    from infsched.kvcache.sim import simulate
    from infsched.kvcache.timing import BatchTimeModel

    n = 10_000
    a, s, o = workload.poisson_requests(n, 50.0, np.random.default_rng(1))
    timing = BatchTimeModel(kappa=1.64)
    cfg = next(c for c in ex.ALGORITHMS if c.policy == "mc-sf")
    run = lambda **kw: simulate(a, s, o, ex.M_LLAMA, cfg, timing, np.random.default_rng(2), **kw)
    run()
    eng, res = _cpu(run, REPEATS)
    py, pres = _cpu(lambda: run(engine="python"))
    assert np.array_equal(res.latency, pres.latency, equal_nan=True)
    steps = float(np.sum(o)) / n            # token steps: a running request moves each round
    return {"engine": "KV-cache MC-SF (10k requests)", "unit": "requests",
            "engine_per_s": n / eng, "reference_per_s": n / py, "plain_per_s": n / py,
            "plain_kind": "the readable Python loop (also the reference)",
            "limit_per_s": floor_rate(costs, draws=0, heap_ops=1, heap=4096,
                                      bytes_=32 + 16 * steps),
            "limit_basis": (f"1 heap pop+push (4096) + 32 B per request + 16 B per token step "
                            f"({steps:.0f} per request)"),
            "checked": "identical (latencies)"}


ROWS = (tad_row, ramsis_row, kairos_row, shepherd_row, kvcache_row)


def main(names: list[str] | None = None) -> dict:
    chosen = [f for f in ROWS if not names or f.__name__.removesuffix("_row") in names]
    if names and len(chosen) != len(set(names)):
        known = ", ".join(f.__name__.removesuffix("_row") for f in ROWS)
        raise SystemExit(f"rows = {names}: each must be one of {known}")
    costs = machine_costs()
    rows = []
    for f in chosen:
        try:
            r = f(costs)
        except Exception as exc:                     # report every engine
            print(f"  {f.__name__} failed: {exc!r}", flush=True)
            continue
        r.update(ratio_reference=r["engine_per_s"] / r["reference_per_s"],
                 ratio_plain=r["engine_per_s"] / r["plain_per_s"],
                 fraction_of_limit=r["engine_per_s"] / r["limit_per_s"])
        rows.append(r)
        print(f"  {r['engine']}: {r['engine_per_s']:,.0f} {r['unit']}/s", flush=True)
    result = {"benchmark": "engines", "clock": "process CPU time", "costs": costs,
              "load_avg_1min": os.getloadavg()[0], "python": platform.python_version(),
              "machine": platform.machine(), "rows": rows}
    print_table(result)
    out = RESULTS if not names else RESULTS.with_name(f"engines-{'-'.join(names)}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return result


def print_table(result: dict) -> None:
    c = result["costs"]
    print(f"machine: {c['draw_ns']:.2f} ns per draw; heap pop+push {c['heap_12_ns']:.1f} / "
          f"{c['heap_60_ns']:.1f} / {c['heap_4096_ns']:.1f} ns (12 / 60 / 4096 entries); "
          f"{c['stream_ns_per_byte']:.3f} ns per byte streamed")
    print(f"{'engine':<38} {'per CPU s':>12} {'(a) ref.':>10} {'(b) plain':>10} "
          f"{'(c) limit':>9}")
    for r in result["rows"]:
        print(f"{r['engine']:<38} {r['engine_per_s']:>12,.0f} {r['ratio_reference']:>9,.0f}x "
              f"{r['ratio_plain']:>9,.0f}x {r['fraction_of_limit']:>9.2f}")
    print("(a), (b): engine rate / their rate; (c): engine rate / limit (the fraction of the "
          "event machinery's floor the engine reaches). Bases:")
    for r in result["rows"]:
        print(f"  {r['engine']}: (b) {r['plain_kind']}; (c) {r['limit_basis']}; "
              f"checked: {r['checked']}")
    print(f"load average {result['load_avg_1min']:.1f} on {os.cpu_count()} cores (CPU-time "
          "rates; the machine was shared)")


if __name__ == "__main__":
    main(sys.argv[1:])
