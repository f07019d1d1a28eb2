"""Issue 32, part D: the run-to-run noise of the artifact's gains (Figs. 5 and 6), Fig. 11's
share of policy states, and the claims whose reading the audit corrected."""

import math

import numpy as np
import pandas as pd
import pytest

from infsched.errors import ConfigError
from infsched.ramsis import batch_states as bs, experiments as ex, replicate as rp


def test_gain_noise_is_sqrt2_times_one_runs_sd():
    reps = pd.DataFrame({q: [1.0, 2.0, 3.0] for q in rp.GAIN_QUANTITIES})
    out = rp.gain_noise(reps)
    assert out.loc["ramsis_minus_jf_mean", "sd"] == pytest.approx(1.0)
    assert out.loc["ramsis_minus_jf_mean", "ci"] == pytest.approx(1.96 * math.sqrt(2.0))
    assert out.loc["ramsis_minus_jf_mean", "ci_ours"] == pytest.approx(1.96)
    assert (out["runs"] == 3).all()
    with pytest.raises(ConfigError, match="reps"):
        rp.gain_noise(reps.iloc[:1])
    # the book's rule: the chapter's run and the replications pooled, with the prediction
    # interval of one run (the artifact's numbers are one run each); a NaN run is left as it is
    from scipy.stats import t as student_t

    from infsched import report
    claims = {"ramsis_minus_jf_mean": 4.0, "ramsis_minus_ms_mean": float("nan"), "other": True}
    m = rp.measured(claims, out, ["ramsis_minus_jf_mean", "ramsis_minus_ms_mean"])
    runs = [4.0, 1.0, 2.0, 3.0]
    assert isinstance(m["ramsis_minus_jf_mean"], report.Measured)
    assert float(m["ramsis_minus_jf_mean"]) == pytest.approx(2.5)
    assert m["ramsis_minus_jf_mean"].ci == pytest.approx(
        student_t.ppf(0.975, 3) * np.std(runs, ddof=1) * math.sqrt(1 + 1 / 4))
    assert math.isnan(m["ramsis_minus_ms_mean"]) and m["other"] is True
    assert "chapter's run (4)" in rp.pooled_notes(claims, out, ["ramsis_minus_jf_mean"])[
        "ramsis_minus_jf_mean"]
    with pytest.raises(ConfigError, match="replications"):
        rp.fig6_replications("smoke", replications=1)


def test_fig6_replications_draw_new_streams_with_the_chapters_policies(tmp_path):
    """Independent streams: the replications differ from each other and from the chapter's own
    run, but scatter around it (same policies and tables, only the arrivals change)."""
    reps = rp.fig6_replications("smoke", 0, replications=3, n_jobs=1, cache=tmp_path)
    assert len(reps) == 3 and set(rp.GAIN_QUANTITIES) <= set(reps)
    assert reps["ramsis_minus_jf_mean"].nunique() == 3
    own = ex.claims_fig6(ex.fig6("smoke", 0, n_jobs=1, cache=tmp_path))
    noise = rp.gain_noise(reps)
    for q in rp.GAIN_QUANTITIES:
        assert not np.isclose(reps[q], own[q], rtol=0, atol=1e-12).all(), q
        # a run of the same setting lies within a few standard deviations of the replications
        assert abs(reps[q].mean() - own[q]) <= 6 * noise.loc[q, "sd"] + 0.05, q


def test_policy_state_shares_count_states_not_batches():
    batch = np.array([[-1, -1, -1], [1, 1, 1], [2, 1, 2], [3, 3, 1]])
    share, share2 = bs.policy_state_shares(batch)
    assert share == pytest.approx(7 / 9) and share2 == pytest.approx(4 / 6)


def test_similar_at_extremes_weighs_both_baselines():
    """§7.2 says RAMSIS performs like 'the baselines' at the extremes: Jellyfish+ 3 points
    below at the lowest load breaks the claim even when ModelSwitching matches."""
    rows = []
    for load in (400.0, 2000.0, 3600.0):
        for m, a in (("ramsis", 80.0), ("ms", 80.0), ("jf", 77.0 if load == 400.0 else 80.0)):
            rows.append(dict(task="image", slo_ms=150.0, workers=60, load_qps=load, method=m,
                             accuracy=a, plotted=True))
    f6 = pd.DataFrame(rows)
    assert ex.claims_fig6(f6)["similar_at_extremes"] is False
    assert "Jellyfish+ +3.00" in ex.notes_fig6(f6)["similar_at_extremes"]
    f6.loc[f6["method"] == "jf", "accuracy"] = 80.0
    assert ex.claims_fig6(f6)["similar_at_extremes"] is True


def test_fewer_workers_counts_image_panels_only():
    """§7.1's 50.00 / 42.86 % are for image classification; a text panel with larger savings
    must not enter them."""
    rows = []
    for task, (r0, b0) in (("image", (70.5, 60.0)), ("text", (90.0, 60.0))):
        slo = 150.0 if task == "image" else 100.0
        for K in (40, 80):
            rows.append(dict(task=task, slo_ms=slo, workers=K, method="ramsis",
                             accuracy=r0 + K / 100, plotted=True, violation=0.0))
            for b in ("jf", "ms"):
                rows.append(dict(task=task, slo_ms=slo, workers=K, method=b,
                                 accuracy=b0 + K / 10, plotted=True, violation=0.0))
    f5 = pd.DataFrame(rows)
    c = ex.claims_fig5(f5)
    image_only = ex.fewer_workers(f5[f5["task"] == "image"], "ms")
    assert c["fewer_workers_vs_ms_max"] == pytest.approx(image_only.max())
    assert c["fewer_workers_vs_ms_mean"] == pytest.approx(image_only.mean())


@pytest.mark.parametrize("paper", ["ramsis", "kvcache"])
def test_every_row_states_its_basis(paper):
    """Issue 32: a claim row says what it rests on (printed numbers, a figure, an exact
    statement) as a number row says where its tolerance comes from."""
    from infsched import report

    df = report.paper_numbers(paper)
    missing = df.loc[~df["basis"].isin(report.BASES), ["item", "quantity"]]
    assert missing.empty, missing.to_string()


def test_a_replication_on_the_chapters_stream_is_the_chapters_run(tmp_path, monkeypatch):
    """With the replication's extra seed coordinate dropped, a replication is the chapter's own
    run: the same policies, tables, arrivals and statistics (so the replications differ from it
    only in their arrivals)."""
    from infsched.sweep import point_seed

    monkeypatch.setattr(rp, "point_seed", lambda seed, *key: point_seed(seed, *key[:-1]))
    for fig, reps in (("fig6", rp.fig6_replications), ("fig5", rp.fig5_replications),
                      ("fig11", rp.fig11_replications)):
        got = reps("smoke", 0, replications=2, n_jobs=1, cache=tmp_path)
        own = getattr(ex, f"claims_{fig}")(getattr(ex, fig)("smoke", 0, n_jobs=1, cache=tmp_path))
        numbers = [q for q in got.columns if q != "replication"]
        assert numbers, fig
        if fig != "fig11":
            assert set(rp.GAIN_QUANTITIES) <= set(numbers)
        for q in numbers:
            assert got.loc[0, q] == pytest.approx(own[q], abs=1e-9), (fig, q)
