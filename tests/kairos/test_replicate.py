"""Our interval on KAIROS's simulated numbers (issue 32): replications on new seeds, the chapter's
own claim functions on each, and the interval reaching the verdict."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from infsched import report
from infsched.errors import ConfigError
from infsched.kairos import experiments as ex, replicate as rp
from infsched.kairos.model import MODELS
from infsched.kairos.scales import get_scale

SIMULATED = ("kairos", "fcfs", "clkwrk", "drs", "orcl")


@pytest.fixture(scope="module")
def chapter_numbers():
    """The chapter's own numbers at smoke scale, from its stored tables."""
    sc = get_scale("smoke")
    tables = {m: ex.exhaustive(m, "smoke") for m in MODELS}
    gauss = ex.exhaustive("rm2", "smoke", variant="_gauss")
    return {**rp.table_numbers(tables, "rm2", sc.sa_runs, 0),
            **rp.fig12_numbers(gauss, sc.search_seeds)}


@pytest.fixture(scope="module")
def replica0():
    return rp.replicated_tables("smoke", 0, 0), rp.replicated_gauss("smoke", 0, 0)


def test_replica_seeds_are_new_and_distinct():
    seeds = [rp.replica_seed(0, r) for r in range(10)]
    assert len(set(seeds)) == 10 and 0 not in seeds
    assert rp.replica_seed(0, None) == 0 and rp.replica_seed(7, None) == 7


def test_dropping_the_seed_coordinate_gives_the_chapters_run(chapter_numbers):
    """r = None re-simulates on the chapter's own seed: the same tables (to the CSV's six
    digits) and the same numbers."""
    tabs = rp.replicated_tables("smoke", 0, None)
    for m, t in tabs.items():
        stored = ex.exhaustive(m, "smoke")
        for col, labels in t.attrs["resimulated"].items():
            rows = t["config"].isin(labels)
            np.testing.assert_allclose(t.loc[rows, col], stored.loc[rows, col], rtol=2e-5)
    a = rp.tables_replica("smoke", 0, None)
    b = rp.fig12_replica("smoke", 0, None)
    assert a["replication"] == b["replication"] == -1
    ours = {k: v for d in (a, b) for k, v in d.items() if k != "replication"}
    assert ours.keys() == chapter_numbers.keys()
    for k, v in ours.items():
        assert v == pytest.approx(chapter_numbers[k], rel=1e-4), k


def test_a_replication_differs_from_the_chapters_run(replica0, chapter_numbers):
    tabs, _ = replica0
    stored = ex.exhaustive("rm2", "smoke")
    assert not np.allclose(tabs["rm2"]["fcfs"], stored["fcfs"], rtol=1e-3)
    sc = get_scale("smoke")
    ours = rp.table_numbers(tabs, "rm2", sc.sa_runs, rp.replica_seed(0, 0))
    assert ours["fig8:rm2_ratio"] != pytest.approx(chapter_numbers["fig8:rm2_ratio"], rel=1e-6)


def test_the_numbers_read_only_resimulated_entries(replica0):
    """Scaling every entry a replication did not re-simulate leaves its numbers unchanged: none
    of them reads the chapter's values."""
    tabs, gauss = replica0
    sc = get_scale("smoke")

    def scaled(t, f):
        t = t.copy()
        for col in SIMULATED:
            keep = t["config"].isin(t.attrs["resimulated"].get(col, ()))
            t.loc[~keep, col] = t.loc[~keep, col] * f
        return t

    base = rp.table_numbers(tabs, "rm2", sc.sa_runs, 1)
    g0 = rp.fig12_numbers(gauss, sc.search_seeds)
    for f in (0.7, 1.3):
        assert rp.table_numbers({m: scaled(t, f) for m, t in tabs.items()}, "rm2", sc.sa_runs,
                                1) == base
        assert rp.fig12_numbers(scaled(gauss, f), sc.search_seeds) == g0


def test_algorithm_1_evaluates_only_resimulated_configurations(replica0):
    _, gauss = replica0
    trace = {ex.config_label(x) for x in ex.kairos_plus_on(gauss).trace}
    assert trace <= gauss.attrs["resimulated"]["kairos"]


def test_the_interval_is_positive_finite_and_reaches_compare():
    reps = rp.replications("smoke", 0, replications=2, n_jobs=1, cache=False)
    assert len(reps) == 2 and list(reps["replication"]) == [0, 1]
    nz = rp.noise(reps)
    assert "fig1:unused_budget_frac" not in nz.index           # no simulation enters it
    for q in ("fig1:het313_over_homo", "fig8:rm2_ratio", "fig9:over_sota_max",
              "fig12:kairos_over_ribbon"):
        assert np.isfinite(nz.loc[q, "ci"]) and nz.loc[q, "ci"] > 0, q
    assert (nz["ci"] == 1.96 * nz["sd"]).all() and (nz["runs"] == len(reps)).all()
    c8 = {"rm2_ratio": 2.0, "all_above_125": True, "rm2_largest": True, "near_optimal": True}
    m8 = rp.with_noise("fig8", c8, nz)
    assert isinstance(m8["rm2_ratio"], report.Measured) and m8["near_optimal"] is True
    # the book's rule: our mean over the chapter's run and the replications, with the
    # prediction interval of one run
    pooled = report.pooled((2.0,) + tuple(reps["fig8:rm2_ratio"]), report.ONE_RUN)
    assert float(m8["rm2_ratio"]) == pytest.approx(float(pooled))
    row = report.compare("kairos", "fig8", m8).set_index("quantity").loc["rm2_ratio"]
    printed = report.compare("kairos", "fig8", c8).set_index("quantity").loc["rm2_ratio"]
    assert row["tolerance"] == pytest.approx(printed["tolerance"] + pooled.ci)
    assert "prediction interval of one run (mean of 3 runs)" in row["basis"]
    assert "replications" in rp.noise_notes("fig8", c8, nz)["rm2_ratio"]
    # an interval over the search seeds already there: both, in quadrature
    prior = report.Measured(1.8, 0.05)
    m12 = rp.with_noise("fig12", {"kairos_over_ribbon": prior}, nz)["kairos_over_ribbon"]
    p12 = report.pooled((1.8,) + tuple(reps["fig12:kairos_over_ribbon"]), report.ONE_RUN)
    assert m12.ci == pytest.approx(math.hypot(0.05, p12.ci))


def test_the_sd_estimates_one_runs_spread():
    """On draws of known spread the estimator finds it; the interval is one run's (1.96 sd), so
    it does not shrink with more replications, its estimate only steadies (as 1/sqrt(N))."""
    rng = np.random.default_rng(0)
    errs = []
    for n in (10, 1000):
        draws = pd.DataFrame({"replication": range(n), "a:x": rng.normal(5.0, 0.2, n)})
        nz = rp.noise(draws)
        errs.append(abs(nz.loc["a:x", "sd"] - 0.2))
    assert errs[1] < 0.02 and errs[1] < errs[0] + 0.01


@pytest.mark.parametrize("kw, name", [(dict(replications=1), "replications"),
                                      (dict(replications=2.5), "replications"),
                                      (dict(scale="huge"), "scale"),
                                      (dict(model="bert"), "model")])
def test_bad_inputs_name_the_parameter(kw, name):
    with pytest.raises(ConfigError, match=name):
        rp.replications(**({"scale": "smoke"} | kw))


def test_bad_replication_inputs():
    with pytest.raises(ConfigError, match="r"):
        rp.replica_seed(0, -1)
    with pytest.raises(ConfigError, match="reps"):
        rp.noise(pd.DataFrame({"replication": [0], "a:x": [1.0]}))
