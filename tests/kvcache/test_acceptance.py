"""The acceptance numbers of the reproduction (spec §9), at the `default` scale the book shows.

Each test asserts a property the paper claims, with the spec's tolerance: Fig. 2's ratios on
certified optima at small n (A2–A4; the paper-size study is the chapter's), the theorems'
instances (A5, A6), Table 1 with κ calibrated on its
MC-SF mean (A7, A8), Fig. 3's slope ratios (A10, A11), the substitute sample's statistics (A13),
and memory never above M (A1). Table 1's standard deviation (A9) and the absolute slopes (A12)
are reported by the chapter, not asserted: the spec lists them as "report".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import experiments as ex
from infsched.kvcache.instances import equal_lengths_dual


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kvcache-cache")


@pytest.fixture(scope="module")
def kappa():
    return ex.calibrate_kappa("default")


def test_fig2_certified_small_study(cache):
    """A2–A4 on the `default` scale's certified study (40 trials per model, n in 4..7, T in 4..5,
    HiGHS to a node limit, which is a count of work: the same trials are certified on any
    machine). The bounds never cross the schedules (A2)."""
    f2 = ex.fig2_small("default", n_jobs=1, cache=cache)
    assert (f2["lower_bound"] <= f2["best"] + 1e-9).all() and (f2["best"] <= f2["tel_mcsf"]).all()
    c = ex.claims_fig2_small(f2)
    assert c["model1_certified"] >= 30 and c["model2_certified"] >= 20
    assert 1.0 <= c["model1_mean"] <= 1.04 and c["model1_max"] <= 1.12
    assert c["model1_exact_pct"] >= 25


def test_theorem_41_growth():
    """A6: ratio ≥ √M/28 at M = 100, 400, 1600, and growing by 1.6–2.4 per 4× M."""
    t41 = ex.theorem_41_table((100, 400, 1600))
    assert ex.claims_theorem_41(t41)["ratio_ge_bound"]
    growth = t41["ratio"].to_numpy()[1:] / t41["ratio"].to_numpy()[:-1]
    assert np.all((growth >= 1.6) & (growth <= 2.4))


def test_theorem_43_equal_lengths_and_the_dual():
    """A5: TEL(MC-SF)/LP ≤ 4; the dual summed as defined is below the LP bound (so a lower bound
    on OPT), the paper's closed form is not (675 > TEL(MC-SF) = OPT = 650)."""
    t43 = ex.theorem_43_table()
    c = ex.claims_theorem_43(t43)
    assert c["ratio_le_4"] and c["b3_bound_holds"] and not c["closed_form_dual_valid"]
    assert (t43["dual_sum"] <= t43["lp_bound"] + 1e-6).all()
    assert equal_lengths_dual(50, 1, 1, 4) == pytest.approx((650.0, 675.0))
    assert t43.loc[0, "tel_mcsf"] == t43.loc[0, "lp_bound"] == pytest.approx(650.0)


def test_table_1(kappa, cache):
    """A7, A8: MC-SF's mean within 3 % of 32.112 s (κ is fitted on it), MC-Benchmark's ratio
    within 15 % of 1.447, every α variant's within 20 % of the paper's, MC-SF lowest in every one
    of the 50 runs, MC-Benchmark below every α variant."""
    t1 = ex.tab1("default", kappa=kappa, n_jobs=2, cache=cache)
    c = ex.claims_tab1(t1)
    assert t1.attrs["runs"] == 50
    assert c["mcsf_average"] == pytest.approx(ex.TABLE1_MCSF_S, rel=0.03)
    assert c["ratio_mc_benchmark"] == pytest.approx(1.447, rel=0.15)
    paper = {"ratio_a0.3": 1.617, "ratio_a0.25": 1.590, "ratio_a0.2_b0.2": 1.570,
             "ratio_a0.2_b0.1": 1.569, "ratio_a0.1_b0.2": 1.663, "ratio_a0.1_b0.1": 1.584}
    for q, v in paper.items():
        assert c[q] == pytest.approx(v, rel=0.20), q
    # the spec's A8 is MC-SF lowest in each run; the verdict row (claims_tab1) checks Table 1's
    # stronger property, MC-SF's worst run below every other best run, which is not a spec bound
    assert t1.attrs["mcsf_lowest_every_run"] and c["mc_benchmark_beats_alpha"]


def test_fig3_slope_ratios_and_memory(kappa, cache):
    """A10, A11: the best benchmark's slope over MC-SF's is ≥ 2 under high demand and ≥ 4 under
    low demand; A1: MC-SF and MC-Benchmark never exceed M, and reach it when overloaded."""
    f3 = ex.fig3("default", kappa=kappa, n_jobs=2, cache=cache)
    c = ex.claims_fig3(f3)
    assert c["slope_ratio_high"] >= 2.0 and c["slope_ratio_low"] >= 4.0
    assert c["mcsf_lowest_everywhere"]
    safe = f3[f3["algorithm"].isin(["MC-SF", "MC-Benchmark"])]
    assert (safe["peak_memory"] <= ex.M_LLAMA).all()
    assert (safe.loc[safe["demand"] == "high", "peak_memory"] == ex.M_LLAMA).all()


def test_substitute_sample_statistics():
    """A13: means within 3 % of the paper's 40.62 and 85.32 words, medians exactly 11 and 45."""
    c = ex.claims_fig5(ex.fig5())
    assert c["prompt_mean"] == pytest.approx(40.62, rel=0.03)
    assert c["output_mean"] == pytest.approx(85.32, rel=0.03)
    assert (c["prompt_median"], c["output_median"]) == (11.0, 45.0)


# --------------------------------------------------------------------------- claims on frames

def _summary(rows):
    df = pd.DataFrame(rows, columns=["demand", "alpha", "beta", "seed", "mean_latency",
                                     "evictions", "stalls", "terminated"])
    return ex.sweep_summary(df)


def test_sweep_summary_counts_looping_runs_as_worst():
    rows = [("high", a, 0.1, s, 10.0 + a, 0, 0, True) for a in (0.05, 0.2) for s in (0, 1)]
    rows[1] = ("high", 0.05, 0.1, 1, np.nan, 99, 0, False)
    sw = _summary(rows)
    assert sw.loc[np.isclose(sw["alpha"], 0.05), "stopped"].item() == 1
    assert np.isnan(sw.loc[np.isclose(sw["alpha"], 0.05), "mean_latency"].item())


def test_alpha_and_beta_claims():
    """A U-shaped α curve with its minimum at 0.2 satisfies Fig. 7's claims; a flat β curve does
    not show Fig. 8's 'too little / too much clearing'."""
    rows = [("high", a, b, 0, 50 + 100 * (a - 0.2) ** 2, 0, 0, True)
            for a in (0.05, 0.1, 0.2, 0.3) for b in (0.1, 0.2)]
    rows += [("high", a, b, 0, 50.0, 0, 0, True)
             for a in (0.1, 0.2) for b in (0.01, 0.05, 0.15, 0.25, 0.5)]
    sw = _summary(rows)
    ca = ex.claims_alpha(sw, "high")
    assert ca == {"best_alpha_in_range_beta0.1": True, "best_alpha_in_range_beta0.2": True,
                  "small_alpha_worse_beta0.1": True, "small_alpha_worse_beta0.2": True}
    cb = ex.claims_beta(sw, "high")
    assert cb["range_near_best_alpha0.2"] and not cb["low_beta_worse_alpha0.2"]
    assert not cb["high_beta_worse_alpha0.2"]


def test_smallest_terminating_alpha_is_a_threshold():
    """Every α from the returned one upward finishes; the one below it loops."""
    from infsched.kvcache import workload
    from infsched.kvcache.sim import SimConfig, simulate
    from infsched.kvcache.timing import BatchTimeModel
    from infsched.sweep import point_seed

    grid = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
    got = ex.smallest_terminating_alpha("high", 500, kappa=1.6, grid=grid)
    assert got in grid and got > grid[0]
    a, s, o = workload.poisson_requests(500, 50.0, np.random.default_rng(point_seed(0, 500, 50.0)))
    below = grid[grid.index(got) - 1]
    assert not simulate(a, s, o, ex.M_LLAMA, SimConfig("alpha", alpha=below),
                        BatchTimeModel(kappa=1.6)).terminated


@pytest.mark.parametrize("kw, match", [
    (dict(demand="medium", n_requests=1000, kappa=None), "demand = 'medium'"),
    (dict(demand="low", n_requests=20_000, kappa=None), r"n_requests = 20000: must be an integer in \[1, 10000\]"),
    (dict(demand="low", n_requests=0, kappa=None), "n_requests = 0"),
    (dict(demand="low", n_requests=2000, kappa=-1.0), "kappa = -1.0"),
])
def test_chapter_parameters_are_checked(kw, match):
    with pytest.raises(ConfigError, match=match):
        ex.check_parameters(**kw)


def test_uncalibrated_batch_times_leave_low_demand_underloaded(kappa):
    """Spec §4 (Fig. 3): with κ = 1 the low-demand server is under-loaded and MC-Benchmark is
    within a few percent of MC-SF; with κ calibrated on Table 1 it is several times slower."""
    ks = ex.kappa_sensitivity([1.0, kappa], runs=3)
    low = ks[ks["setting"].str.contains("low")].set_index("kappa")["mc_benchmark_over_mcsf"]
    assert low[1.0] < 1.1 and low[kappa] > 3.0
