"""The TAD chapter's exponential-service points at "default" scale (Figs. 1, 6 and every third
point of Fig. 7), run by the present engine and by the engine of ``bench_tad.PREVIOUS`` (before
the jump-chain fast path) on the same seeds: the z-score of each difference in mean response
(batch-means standard errors of both runs). The two draw different numbers, so they agree in
distribution: z should look standard normal (issue 24: confidence intervals overlap on every
figure's points). Not a ``bench_*`` file: ``make bench`` does not run it.

    python benchmarks/tad_agreement.py

Measured on 2026-11-25: Fig. 1, 24 points, max |z| 0.95; Fig. 6, 120 points, mean z +0.10,
sd 0.83, two with |z| > 2 (max 2.41), none > 3; Fig. 7, 40 points, max |z| 1.97.
"""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sweep as bs
import bench_tad
import infsched.tad.experiments as tad
from infsched.tad import bound
from infsched.tad.model import MAIN
from infsched.tad.sim import simulate

prev = bench_tad.previous_engine()
out = []
for fig in ("fig1", "fig6", "fig7"):
    fn, grid, cost = bs.chapter_grid(tad, fig, "default")
    grid = [p for p in grid if p["service"] == "exp"]
    if fig == "fig7":
        grid = grid[::3]
    zs = []
    for p in grid:
        lam = p["rho"] * bound.lambda_max(MAIN, p["a_star"])
        kw = dict(lam=lam, a_star=p["a_star"], n_jobs=p["n_jobs"], seed=p["seed"])
        a = simulate(MAIN, p["policy"], p["n"], **kw)
        b = prev(MAIN, p["policy"], p["n"], **kw)
        se = math.hypot(a.ci_halfwidth, b.ci_halfwidth) / 2.093
        z = (a.mean_response - b.mean_response) / se if se > 0 else 0.0
        zs.append(z)
        out.append((fig, p["policy"], p["n"], p["rho"], a.mean_response, b.mean_response, z, a.mean_accuracy - b.mean_accuracy))
    zs = np.array(zs)
    print(f"{fig}: {len(zs)} exp points; mean z {zs.mean():+.2f}, sd {zs.std():.2f}, max |z| {np.abs(zs).max():.2f}, |z|>2: {np.sum(np.abs(zs) > 2)}, |z|>3: {np.sum(np.abs(zs) > 3)}", flush=True)
worst = sorted(out, key=lambda r: -abs(r[6]))[:5]
for r in worst:
    print("  worst", r)
