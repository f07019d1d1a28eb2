"""The head-to-head chapter's experiments (infsched.serving.experiments) and its registration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError, InfeasibleError
from infsched.runner import list_chapters
from infsched.serving import ServingConfig, experiments as ex, simulate

ZOO = ex.load_zoo("ramsis-image")


def test_chapter_is_listed_and_runnable_by_name():
    chapters = list_chapters()
    assert "headtohead" in chapters
    params = chapters["headtohead"].parameters
    for knob in ("scale", "seed", "K", "slo_ms", "a_star", "profile", "load"):
        assert knob in params


@pytest.mark.parametrize("a_star", [60.0, 74.0, 76.0, 80.0, 84.0])
def test_tad_split_fills_every_worker_and_can_meet_its_target(a_star):
    wm = ex.tad_split(ZOO, 60, a_star, 150.0)
    assert len(wm) == 60
    acc = {m: ZOO.accuracy[ZOO.names.index(m)] for m in wm}
    l1 = {m: ZOO.latency_ms[ZOO.names.index(m), 0] for m in wm}
    assert all(l1[m] <= 150.0 for m in wm)  # every server type meets the SLO at batch 1
    assert max(acc.values()) >= a_star >= min(acc.values()) or len(acc) == 1


def test_tad_split_rejects_an_unreachable_target():
    with pytest.raises(InfeasibleError, match="exceeds the most accurate model"):
        ex.tad_split(ZOO, 60, 90.0, 150.0)


def test_jellyfish_is_the_ramsis_chapters_own_rule():
    from infsched.profiles import load_profile
    from infsched.ramsis.baselines import jellyfish_plus

    prof = load_profile("ramsis-image")
    for rate in (500.0, 2000.0, 3500.0):
        tab = jellyfish_plus(prof, [rate], 60, 150.0)
        assert ex.jellyfish_choice(ZOO, 60, 150.0, rate) == (prof.models[tab.model[0]], tab.cap[0])


@pytest.mark.parametrize("workload", ex.WORKLOADS)
def test_workloads_have_the_asked_mean_rate(workload):
    # MMPP over ~200 s with 1 s sojourns: the share of time in the high state has a standard
    # deviation of about 3.5 %, so 15 % is over 4 sigma; Poisson and the trace are tighter.
    rate = 2000.0
    t = ex.arrivals(workload, rate, 400_000, np.random.default_rng(3), interval_s=2.0)
    assert np.all(np.diff(t) >= 0)
    measured = t.size / (t[-1] / 1000.0)
    assert measured == pytest.approx(rate, rel=0.15 if workload == "mmpp" else 0.03)


def test_every_contender_builds_and_runs_on_the_same_arrivals():
    rate = 0.5 * ZOO.capacity_qps(8, 150.0)
    arr = ex.arrivals("poisson", rate, 3_000, np.random.default_rng(0))
    for c in ex.CONTENDERS + tuple(ex.MEAN_PLANNED) + tuple(ex.MONITORED):  # (not a reader's policies)
        cfg = ex.contender_config(c, ZOO, 8, 150.0, rate_qps=rate, profile="ramsis-image", scale="smoke")
        assert isinstance(cfg, ServingConfig)
        res = simulate(cfg, arrivals=arr, seed=0)
        m = ex.judge(res, 150.0)
        assert 0.0 <= m["attainment"] <= 1.0
        # judged on the SLO it planned for, judge() agrees with the simulator's own summary
        assert m["attainment"] == pytest.approx(res.summary()["attainment"].mean)
    with pytest.raises(ConfigError, match="RAMSIS needs the profile"):
        ex.contender_config("ramsis", ZOO, 8, 150.0, rate_qps=rate)


def test_run_point_is_deterministic_and_judges_on_the_given_slo():
    runs = (("batch-greedy", 1.0, 76.0), ("batch-greedy", 2.0, 76.0), ("tad", 1.0, 76.0))
    a = ex.run_point("mmpp", 0.8, 150.0, 7, 3_000, 8, "ramsis-image", runs)
    b = ex.run_point("mmpp", 0.8, 150.0, 7, 3_000, 8, "ramsis-image", runs)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["contender"]) == ["batch-greedy", "batch-greedy", "tad"]
    # planning for twice the judged SLO: its own view of "on time" is looser than the judge's
    loose = a.iloc[1]
    assert loose["p99_latency_ms"] > 150.0 or loose["attainment"] == 1.0
    assert a.iloc[2]["min_delta"] >= 0  # TAD's surplus never negative


def test_sweep_tables_and_tad_claim(tmp_path):
    runs = ex.load_sweep("smoke", 0, workloads=("poisson",), K=8, loads=(0.2, 0.9), cache=tmp_path,
                         workers=1)
    assert set(runs["contender"]) == set(ex.CONTENDERS)
    assert len(runs) == 2 * ex.get_scale("smoke").seeds * len(ex.CONTENDERS)
    summ = ex.with_ci(runs)
    assert {"attainment_low", "attainment_high", "accuracy_served"} <= set(summ.columns)
    claims = ex.claims(runs, summ, 76.0)
    assert bool(claims.iloc[0]["holds"])  # TAD's accuracy guarantee
    # only the papers' own claims are counted; the rest are questions the chapter asks
    assert set(claims.loc[~claims["a paper's claim"], "paper"]) == {"TAD (not claimed)",
                                                                   "this chapter (held-equal rule)"}
    assert set(claims["verdict"]) <= {"holds", "does not hold"}
    assert not claims["claim"].str.startswith("...").any()
    cap = ex.served_capacity(summ)
    assert set(cap["contender"]) == {ex.LABELS[c] for c in ex.CONTENDERS}
    # a cached rerun returns the same table
    pd.testing.assert_frame_equal(runs, ex.load_sweep("smoke", 0, workloads=("poisson",), K=8,
                                                      loads=(0.2, 0.9), cache=tmp_path, workers=1))


def test_decision_table_marks_ties_and_the_winner():
    rows = []
    for c, att, hw in (("batch-greedy", 0.9, 0.01), ("fastest", 0.89, 0.02), ("tad", 0.5, 0.01)):
        rows.append({"slo_ms": 150.0, "workload": "poisson", "load": 0.9, "contender": c,
                     "attainment": att, "attainment_low": att - hw, "attainment_high": att + hw,
                     "accuracy_per_arrival": 70.0, "accuracy_per_arrival_low": 69.0,
                     "accuracy_per_arrival_high": 71.0, "p99_latency_ms": 100.0,
                     "p99_latency_ms_low": 99.0, "p99_latency_ms_high": 101.0})
    t = ex.decision_table(pd.DataFrame(rows))
    att = t[t["metric"] == "SLO attainment"].iloc[0]
    assert att["best"] == "batch-greedy"
    assert att["tied with (CIs overlap)"] == "fastest"
    assert att["next outside the tie"] == "TAD"
    assert att["margin"] == pytest.approx(0.4)


def test_closed_forms_within_their_intervals():
    df = ex.closed_forms(seed=0, n=100_000)
    assert df["within CI"].all()


@pytest.mark.parametrize("bad, match", [
    (dict(workload="zipf"), "workload"),
    (dict(contender="oracle"), "contender"),
    (dict(profile="no-such-profile.csv"), "profile"),
    (dict(scale="huge"), "scale"),
])
def test_bad_inputs_name_the_parameter(bad, match):
    with pytest.raises(ConfigError, match=match):
        if "workload" in bad:
            ex.arrivals(bad["workload"], 100.0, 10, np.random.default_rng(0))
        elif "contender" in bad:
            ex.contender_config(bad["contender"], ZOO, 8, 150.0, rate_qps=100.0)
        elif "profile" in bad:
            ex.load_zoo(bad["profile"])
        else:
            ex.get_scale(bad["scale"])


def test_measured_profile_loads():
    zoo = ex.load_zoo("measured")
    assert zoo.n_models >= 5
    assert zoo.max_batch == 32


def test_ramsis_policy_on_an_unpublished_profile_takes_its_zoo():
    """RAMSIS's solver reads a published profile by name; any other profile comes with its Zoo
    (contender_config passes it), and without one the name is refused, not looked up again."""
    zoo = ex.load_zoo("measured")
    with pytest.raises(ConfigError, match="profile"):
        ex.ramsis_policy("measured", 4, 150.0, 50.0, 10)
    grid, model, batch = ex.ramsis_policy("measured", 4, 150.0, 50.0, 10, zoo)
    cfg = ex.contender_config("ramsis@mean", zoo, 4, 150.0, rate_qps=50.0, profile="measured",
                              scale="smoke")
    # (the config stacks one policy per load level: here one)
    assert np.array_equal(cfg.mdp_policy[1][0], model) and np.array_equal(cfg.mdp_policy[2][0], batch)


def test_only_points_that_run_ramsis_carry_its_plan_version(monkeypatch):
    """A change to RAMSIS's planning re-keys, in the results store, only the sweep points that
    run RAMSIS: they alone carry ``plans``; a point asking for another plan version is refused."""
    from infsched.serving import sensitivity as se
    from infsched.serving.contenders import PLAN_VERSIONS

    seen = []

    def capture(fn, points, **kw):
        seen.append((fn, [dict(p) for p in points]))
        return pd.DataFrame()

    monkeypatch.setattr(ex, "run_sweep", capture)
    monkeypatch.setattr(se, "run_sweep", capture)
    ex.load_sweep("smoke", workloads=("poisson",), contenders=("batch-greedy", "tad"))
    ex.load_sweep("smoke", workloads=("poisson",), contenders=("batch-greedy", "ramsis"))
    ex.load_sweep("smoke", workloads=("poisson",), contenders=("batch-greedy", "ramsis@mean"))
    se.sensitivity_runs("smoke", contenders=("batch-greedy",), settings=se.SETTINGS[:1])
    se.sensitivity_runs("smoke", contenders=("ramsis",), settings=se.SETTINGS[:1])
    (_, plain), (_, with_ramsis), (_, mean), (_, s_plain), (_, s_ramsis) = seen
    assert all("plans" not in p for p in plain + mean + s_plain)
    assert all(p["plans"] == (("ramsis", PLAN_VERSIONS["ramsis"]),) for p in with_ramsis + s_ramsis)
    bad = {k: v for k, v in with_ramsis[0].items() if k != "plans"}
    with pytest.raises(ConfigError, match=r"^plans = \(\): must be \(\('ramsis', 2\),\)"):
        ex.run_point(**bad)
    with pytest.raises(ConfigError, match=r"^plans = "):
        se.sensitivity_point(**{k: v for k, v in s_ramsis[0].items() if k != "plans"})
