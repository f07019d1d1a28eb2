"""The replications that give the chapter's simulated numbers their 95 % intervals (issue 32,
:mod:`infsched.shepherd.replicate`), at the smoke scale."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from infsched import report
from infsched.errors import ConfigError
from infsched.shepherd import experiments as ex, replicate as rp


def test_bad_replication_counts_fail_clearly():
    with pytest.raises(ConfigError, match="replications"):
        rp.fig7_replications("smoke", replications=1)
    with pytest.raises(ConfigError, match="r"):
        rp.replica_seed(0, -1)
    with pytest.raises(ConfigError, match="reps"):
        rp.gain_noise(pd.DataFrame({"replication": [0], "x": [1.0]}))


def test_replica_seeds_are_new():
    """No replication reuses a workload of the chapter's run (seeds 0..2 at paper scale) or of
    another replication; dropping the extra coordinate gives the chapter's seed."""
    seeds = [rp.replica_seed(0, r) for r in range(10)]
    k = ex.get_scale("paper").seeds
    runs = {s + j for s in seeds for j in range(k)}
    assert len(runs) == 10 * k and runs.isdisjoint(range(k))
    assert rp.replica_seed(7, None) == 7


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys() and a
    for q in a:
        assert a[q] == pytest.approx(b[q], rel=1e-12), q


def test_a_replication_with_the_coordinate_dropped_is_the_chapters_run():
    """r = None: the chapter's own workloads, so its claim functions give the chapter's
    numbers (a drift between the replicated figure and the chapter's would fail here)."""
    f7 = ex.fig7("smoke", 0, n_jobs=1)
    _close(rp._numbers(ex.claims_fig7(rp.fig7_frame("smoke", 0, None))),
           rp._numbers(ex.claims_fig7(f7)))
    f9 = ex.fig9("smoke", 0, n_jobs=1)
    _close(rp._numbers(ex.claims_fig9(rp.fig9_frame("smoke", 0, None))),
           rp._numbers(ex.claims_fig9(f9)))
    f10 = ex.fig10("smoke", 0, n_jobs=1)
    r10 = rp.fig10_frame("smoke", 0, None)
    _close({**rp._numbers(ex.claims_fig10(r10)), **rp._numbers(ex.claims_fig11b(r10))},
           {**rp._numbers(ex.claims_fig10(f10)), **rp._numbers(ex.claims_fig11b(f10))})


@pytest.fixture(scope="module")
def reps7(tmp_path_factory):
    return rp.fig7_replications("smoke", 0, replications=6, n_jobs=1,
                                cache=tmp_path_factory.mktemp("shepci"))


def test_replications_draw_new_workloads(reps7):
    """The replications differ from each other and from the chapter's run."""
    own = rp._numbers(ex.claims_fig7(ex.fig7("smoke", 0, n_jobs=1)))
    assert list(reps7["replication"]) == list(range(6))
    for q, v in own.items():
        assert reps7[q].nunique() == len(reps7), q
        assert not np.isclose(reps7[q], v, rtol=1e-12).any(), q


def test_interval_is_positive_finite_and_shrinks_with_more_replications(reps7):
    noise = rp.gain_noise(reps7)
    assert set(noise.index) == set(reps7.columns) - {"replication"}
    assert (noise["ci_ours"] > 0).all() and np.isfinite(noise["ci_ours"]).all()
    assert (noise["ci_ours"] == 1.96 * reps7.drop(columns="replication").std(ddof=1)).all()
    assert (noise["runs"] == 6).all()
    # the sd of one run is a property of the simulation, not of the count: the 95 % half-width
    # of the *mean* of n replications, 1.96 sd / sqrt(n), shrinks as they are added
    mean_ci = [1.96 * reps7[q].head(n).std(ddof=1) / math.sqrt(n) for q in ["sh_over_cw_stable"]
               for n in (3, 6)]
    assert mean_ci[1] < mean_ci[0]


def test_interval_shrinks_with_more_replications():
    """On a known distribution: the half-width of the mean of n replications shrinks with n,
    and the sd estimate converges to the truth (a wrong formula, ddof or factor, fails)."""
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 2.0, 4000)
    widths = []
    for n in (10, 100, 4000):
        noise = rp.gain_noise(pd.DataFrame({"replication": range(n), "q": x[:n]}))
        widths.append(noise.loc["q", "ci_ours"] / math.sqrt(n))
    assert widths[0] > widths[1] > widths[2]
    assert noise.loc["q", "ci_ours"] == pytest.approx(1.96 * 2.0, rel=0.05)


def test_the_interval_reaches_compare(reps7):
    """measured() makes the chapter's numbers Measured; compare adds the half-width to the
    tolerance and names it in the basis."""
    noise = rp.gain_noise(reps7)
    own = ex.claims_fig7(ex.fig7("smoke", 0, n_jobs=1))
    own.pop("below_knapsack_bound")
    ours = rp.measured(own, noise)
    q = "sh_over_cw_stable"
    # the book's rule: the mean over the chapter's run and every replication, judged with the
    # prediction interval of one run (the paper's figure is one run)
    expected = report.pooled((own[q],) + tuple(reps7[q]), report.ONE_RUN)
    assert isinstance(ours[q], report.Measured)
    assert float(ours[q]) == pytest.approx(float(expected)) and ours[q].ci == pytest.approx(expected.ci)
    assert isinstance(ours["sh_util_high_load"], bool)  # claims that hold or not stay as they are
    with_ci = report.compare("shepherd", "fig7", ours).set_index("quantity")
    plain = report.compare("shepherd", "fig7", own).set_index("quantity")
    assert with_ci.loc[q, "tolerance"] == pytest.approx(plain.loc[q, "tolerance"] + ours[q].ci)
    assert "prediction interval of one run (mean of 7 runs)" in with_ci.loc[q, "basis"]
    assert "our 95 %" not in plain.loc[q, "basis"]
    notes = rp.noise_notes(noise, [q], own)
    assert "6 replications" in notes[q] and "the chapter's run" in notes[q]


def test_fig9_and_fig10_replications_give_every_number():
    """At smoke scale Fig. 10 stops below 200 workers, so Clockwork's saturation has no number;
    every other simulated number of Figs. 9, 10 and 11b gets an interval."""
    r9 = rp.gain_noise(rp.fig9_replications("smoke", 0, replications=2, n_jobs=1, cache=False))
    assert set(r9.index) == {"sh_over_nexus_max", "sh_over_nexus_tightest_swept", "sh_over_cw_max"}
    r10 = rp.gain_noise(rp.fig10_replications("smoke", 0, replications=2, n_jobs=1, cache=False))
    assert set(r10.index) == {"sh_over_cw_400", "sh_over_nexus_400", "g12_over_ginf", "g12_over_g1"}
    assert np.isfinite(r10["ci_ours"]).all() and np.isfinite(r9["ci_ours"]).all()
