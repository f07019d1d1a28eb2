"""Burstiness and overheads (issue 33, item 6): the new arrival streams, the sweep point, and
the table that says which rankings survive."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.serving import experiments as ex, sensitivity as se
from infsched.serving.streams import MAF_STREAMS, arrivals


@pytest.mark.parametrize("cv", [2.0, 4.0])
def test_gamma_stream_has_the_asked_rate_and_cv(cv):
    """n Gamma(k = 1/cv²) gaps: their mean has sd cv/(λ√n) and their sample variance, for the
    Gamma's fourth moment, relative sd √((2 + 6/k)/n) (delta method); 5 sd each."""
    n, rate = 400_000, 2000.0
    t = arrivals("gamma", rate, n, np.random.default_rng(1), cv=cv)
    gaps = np.diff(np.concatenate([[0.0], t]))
    mean = 1000.0 / rate
    assert gaps.mean() == pytest.approx(mean, abs=5 * cv * mean / np.sqrt(n))
    k = 1.0 / cv**2
    assert gaps.var() / (cv * mean) ** 2 == pytest.approx(1.0, abs=5 * np.sqrt((2 + 6 / k) / n))


def test_mmpp_parameters_and_maf_is_the_shepherd_generator():
    rate, n = 2000.0, 20_000
    # the default burst and sojourn are today's MMPP, draw for draw
    a = arrivals("mmpp", rate, n, np.random.default_rng(4))
    b = arrivals("mmpp", rate, n, np.random.default_rng(4), burst=0.5, sojourn_s=1.0)
    np.testing.assert_array_equal(a, b)
    # burst 0 is a Poisson stream: gaps of CV 1 (the MMPP's states never differ)
    g = np.diff(arrivals("mmpp", rate, n, np.random.default_rng(4), burst=0.0, sojourn_s=0.1))
    assert g.std() / g.mean() == pytest.approx(1.0, abs=5 * np.sqrt(8 / n))  # var of s² for Exp: 8σ⁴/n
    with pytest.raises(ConfigError, match=r"^burst = 1.0: must be in \[0, 1\)"):
        arrivals("mmpp", rate, n, np.random.default_rng(4), burst=1.0)
    with pytest.raises(ConfigError, match=r"^cv = 0.0: must be a finite number > 0"):
        arrivals("gamma", rate, n, np.random.default_rng(4), cv=0.0)
    from infsched.shepherd.traces import maf_arrivals

    t = arrivals("maf", rate, n, np.random.default_rng(9))
    seed = int(np.random.default_rng(9).integers(2**63 - 1))
    want = maf_arrivals(MAF_STREAMS, rate, 1.2 * n / rate + 1.0, "bursty", seed=seed).arrival_ms
    assert t.size == n and np.all(np.diff(t) >= 0)
    np.testing.assert_array_equal(t, want[:n])


def test_overhead_settings_change_only_what_they_cost():
    common = dict(load=0.9, slo_ms=150.0, seed=3, n=3_000, workers=8, profile="ramsis-image",
                  contenders=("batch-greedy", "jellyfish+", "flex", "flex-np", "tad"), scale="smoke")
    base = se.sensitivity_point((("workload", "poisson"),), (), **common).set_index("contender")
    pre = se.sensitivity_point((("workload", "poisson"),), (("preempt_ms", 20.0),), **common).set_index("contender")
    # only FLEX preempts: every other contender's numbers are the baseline's
    pd.testing.assert_frame_equal(base.drop(index="flex"), pre.drop(index="flex"))
    assert base.loc["flex", "preemptions_per_query"] > 0
    assert not base.loc["flex"].equals(pre.loc["flex"])
    sw = se.sensitivity_point((("workload", "poisson"),), (("switch_ms", 20.0),), **common).set_index("contender")
    # one model per worker (TAD) or per run (FLEX): nothing to switch
    for c in ("flex", "flex-np", "tad"):
        pd.testing.assert_series_equal(base.loc[c], sw.loc[c])


def _synthetic(gaps: dict[str, dict[str, float]], seeds: int = 6) -> pd.DataFrame:
    """Runs whose share on time is a per-setting offset per contender plus a common per-seed
    term (noise the pairing removes) and a small per-(contender, seed) term."""
    rng = np.random.default_rng(0)
    rows = []
    for st, offs in gaps.items():
        common = rng.normal(0, 0.05, seeds)
        for c, v in offs.items():
            own = rng.normal(0, 1e-3, seeds)
            rows += [{"setting": st, "group": st, "load": 0.9, "seed": k, "contender": c,
                      "attainment": 0.5 + v + common[k] + own[k]} for k in range(seeds)]
    return pd.DataFrame(rows)


def test_sensitivity_table_counts_kept_tied_and_reversed_pairs():
    runs = _synthetic({se.SETTINGS[0].name: {"batch-greedy": 0.3, "tad": 0.2, "fastest": 0.1},
                       "X": {"batch-greedy": 0.2, "tad": 0.3, "fastest": 0.2}})
    t = se.sensitivity_table(runs).set_index("setting")
    assert t.loc[se.SETTINGS[0].name, ["baseline pairs", "kept", "tied", "reversed"]].tolist() == [3, 3, 0, 0]
    # X reverses batch-greedy > TAD, keeps TAD > fastest and ties batch-greedy with fastest
    assert t.loc["X", ["kept", "tied", "reversed"]].tolist() == [1, 1, 1]
    assert t.loc["X", "first reversed"] == "batch-greedy > TAD"
    assert t.loc["X", "ranking (share on time)"].startswith("TAD > ")


def test_setting_errors():
    with pytest.raises(ConfigError, match=r"^overheads = 'warmup_ms'"):
        se.Setting("x", "y", overheads=(("warmup_ms", 1.0),))
    with pytest.raises(ConfigError, match=r"^overheads = -2.0"):
        se.Setting("x", "y", overheads=(("switch_ms", -2.0),))
    with pytest.raises(ConfigError, match=r"^stream = .*must name its workload"):
        se.Setting("x", "y", stream=(("cv", 2.0),))
    assert se.SETTINGS[0].group == "baseline" and len({s.name for s in se.SETTINGS}) == len(se.SETTINGS)


def test_sensitivity_runs_smoke(tmp_path):
    runs = ex.sensitivity_runs("smoke", 0, K=8, contenders=("batch-greedy", "fastest", "flex"),
                               settings=se.SETTINGS[:1] + se.SETTINGS[-1:], cache=tmp_path, workers=1)
    assert set(runs["setting"]) == {se.SETTINGS[0].name, se.SETTINGS[-1].name}
    # the overhead setting serves the baseline's arrivals: same seeds, same non-FLEX numbers
    a = runs[runs["setting"] == se.SETTINGS[0].name].set_index(["seed", "contender"])["attainment"]
    b = runs[runs["setting"] == se.SETTINGS[-1].name].set_index(["seed", "contender"])["attainment"]
    assert a.index.equals(b.index)
    keep = [i for i in a.index if i[1] != "flex"]
    pd.testing.assert_series_equal(a.loc[keep], b.loc[keep])
    t = ex.sensitivity_table(runs)
    assert len(t) == 2 and (t["kept"] + t["tied"] + t["reversed"] == t["baseline pairs"]).all()
