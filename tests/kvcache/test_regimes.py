"""The regime sweep (issue 34, item 3): instances with the asked spread, memory and load, and
per point a bracket on MC-SF's gap that holds (bound ≤ best ≤ MC-SF, every schedule feasible)."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.kvcache import regimes as rg
from infsched.kvcache.bounds import volume
from infsched.kvcache.model import check_schedule
from infsched.kvcache.policies import mc_benchmark, mc_sf
from infsched.kvcache.sim import SimConfig, simulate


@pytest.mark.parametrize("cv", [0.5, 2.0])
def test_instances_have_the_asked_spread_memory_and_load(cv):
    inst, cut = rg.regime_instance(4000, cv, 8.0, 1.0, seed=3)
    s = inst.prompt
    assert inst.M == round(8.0 * (rg.PROMPT_MEAN + rg.OUTPUT_MEAN))
    assert abs(s.mean() / rg.PROMPT_MEAN - 1) < 0.1          # rounding to >= 1 moves it a little
    assert abs(s.std() / s.mean() / cv - 1) < 0.25            # a lognormal's CV, sampled
    assert cut <= 0.01 * inst.n and np.all(inst.prompt + inst.output <= inst.M)
    span = inst.arrival.max() - inst.arrival.min() + 1
    load = volume(inst).sum() / span / inst.M
    assert 0.8 < load < 1.25


def test_load_and_spread_change_the_instance_only_as_asked():
    a, _ = rg.regime_instance(50, 1.0, 4.0, 1.0, seed=0)
    b, _ = rg.regime_instance(50, 1.0, 4.0, 1.0, seed=0)
    c, _ = rg.regime_instance(50, 1.0, 4.0, 4.0, seed=0)
    assert np.array_equal(a.arrival, b.arrival) and np.array_equal(a.prompt, b.prompt)
    assert c.arrival.max() < a.arrival.max()                  # four times the load: faster arrivals


def test_points_bracket_mcsf():
    for axis, value in (("cv", 4.0), ("m_ratio", 2.0), ("load", 4.0)):
        r = rg.regime_point(axis, value, 0, 0, 20, 300)
        others = [r[k] for k in ("tel_mcsf", "tel_online", "tel_mcbench", "tel_alpha",
                                 "tel_alphabeta") if np.isfinite(r[k])]
        assert r["lower"] <= r["best"] <= min(others)
        assert 0 <= r["mcsf_gap_lo"] <= r["mcsf_gap_hi"]
        assert r["ab_configs"] == len(rg.AB_GRID) and 0 <= r["ab_terminated"] <= r["ab_configs"]


@pytest.mark.parametrize("seed", range(4))
def test_the_simulator_in_unit_rounds_is_the_rounds_model(seed):
    """The α/β benchmarks run in the continuous-time simulator with one time unit per batch; in
    that clock MC-SF and MC-Benchmark must give the rounds model's latencies, request by request."""
    inst, _ = rg.regime_instance(40, 2.0, 4.0, 2.0, seed)
    for policy, rounds in (("mc-sf", mc_sf), ("mc-benchmark", mc_benchmark)):
        starts = rounds(inst)
        r = simulate(inst.arrival.astype(float), inst.prompt, inst.output, inst.M,
                     SimConfig(policy), timing=rg.UNIT_ROUND)
        assert r.terminated
        np.testing.assert_array_equal(r.latency, starts + inst.output - inst.arrival)


def test_benchmark_runs_give_feasible_schedules_of_their_latency():
    """A terminated α/β run's last attempts never overflow M: as start times they pass the
    schedule check, with the run's own total latency; a looping run has no latency."""
    inst, _ = rg.regime_instance(40, 1.0, 4.0, 2.0, 1)
    runs = rg.benchmark_runs(inst, 1)
    assert len(runs) == len(rg.AB_GRID) and runs["terminated"].any()
    for _, row in runs.iterrows():
        if row["terminated"]:
            assert check_schedule(inst, row["starts"]).require().tel == row["tel"]
        else:
            assert np.isnan(row["tel"])
    again = rg.benchmark_runs(inst, 1)
    np.testing.assert_array_equal(runs["tel"].to_numpy(), again["tel"].to_numpy())


def test_sweep_at_smoke_scale():
    df = rg.regimes("smoke", 0, n_jobs=1, cache=False)
    summ = rg.regime_summary(df)
    assert len(summ) == sum(len(v) for v in rg.AXES.values())
    assert (summ["mcsf_gap_lo"] <= summ["mcsf_gap_hi"] + 1e-12).all()
    # the base point is on every axis and draws the same instances there
    base = df[[row["value"] == rg.BASE[row["axis"]] for _, row in df.iterrows()]]
    assert base["tel_mcsf"].nunique() == 1


@pytest.mark.parametrize("kw, name", [(dict(cv=0.0), "cv"), (dict(m_ratio=-1.0), "m_ratio"),
                                      (dict(load=float("nan")), "load"), (dict(n=0), "n")])
def test_bad_parameters(kw, name):
    args = dict(n=10, cv=1.0, m_ratio=4.0, load=1.0, seed=0) | kw
    with pytest.raises(ConfigError, match=name):
        rg.regime_instance(**args)
    with pytest.raises(ConfigError, match="axis"):
        rg.regime_point("rate", 1.0, 0, 0, 10, 10)


def test_online_losses_count_distinct_trials_and_the_worst():
    """The base point is on every axis: its trials count once; the worst loss is named."""
    import pandas as pd

    from infsched.kvcache import regimes as rg

    rows = []
    for axis, values in rg.AXES.items():
        for v in values:
            for trial in (0, 1):
                base = v == rg.BASE[axis]
                rows.append({"axis": axis, "value": v, "trial": trial, "tel_mcsf": 100.0,
                             "tel_online": 130.0 if (base and trial == 1) else 95.0,
                             "online_gap_lo": 0.3 if (base and trial == 1) else 0.02})
    out = rg.online_losses(pd.DataFrame(rows))
    assert out["trials"] == 2 * (4 + 3 + 3) and out["worse"] == 1
    assert out["worst_loss"] == pytest.approx(0.3) and out["worst_at"] == "the base point, trial 1"
    assert out["worst_gap_min"] == pytest.approx(0.02) and out["worst_gap_max"] == pytest.approx(0.3)
    s = rg.regime_summary(pd.DataFrame(rows).assign(
        mcsf_gap_lo=0.1, mcsf_gap_hi=0.2, mcbench_gap_lo=0.1, alphabeta_gap_lo=0.1,
        alpha_gap_lo=0.1, clipped=0))
    assert s["online_losses"].sum() == 3 and s["online_gap_worst"].max() == pytest.approx(0.3)
