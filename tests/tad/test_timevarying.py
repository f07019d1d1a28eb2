"""The streaming time-varying run (Figs. 9–10) against the recording simulator.

``simulate_phases_stream`` runs the chain of ``simulate_phases`` event for event (same draws,
same states), so with the same seed its N(t_k), running accuracy and Δ must equal what the
recording run's per-query record gives, exactly; its interval integrals of N(t) must equal the
record's to float round-off. Its memory must not grow with the run's length.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from infsched.errors import ConfigError
from infsched.tad.experiments import time_varying_phases
from infsched.tad.model import MAIN
from infsched.tad.sim import simulate_phases
from infsched.tad.timevarying import sample_times, simulate_phases_stream


def _record_view(rec, times, window):
    """N(t_k), the accuracy of the last ``window`` arrivals at t_k (NaN before ``window``), and
    ∫N dt over each (t_{k−1}, t_k], all from the recording run's per-query record."""
    n_at = rec.number_in_system(times)
    last = np.searchsorted(rec.arrivals, times, side="right")        # arrivals ≤ t_k
    a = MAIN.a_arr[rec.classes].astype(float)
    c = np.concatenate([[0.0], np.cumsum(a)])
    ok = last >= window
    acc = np.full(len(times), np.nan)
    acc[ok] = (c[last[ok]] - c[last[ok] - window]) / window
    # exact ∫N dt: N is a step function changing at every arrival (+1) and departure (−1)
    ev_t = np.concatenate([rec.arrivals, rec.departures, times])
    ev_d = np.concatenate([np.ones(len(rec.arrivals)), -np.ones(len(rec.departures)),
                           np.zeros(len(times))])
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[order], ev_d[order]
    level = np.cumsum(ev_d)
    seg = np.diff(np.concatenate([[0.0], ev_t])) * np.concatenate([[0.0], level[:-1]])
    cum = np.cumsum(seg)
    at = cum[np.searchsorted(ev_t, times, side="right") - 1]
    area = np.diff(np.concatenate([[0.0], at]))
    return n_at, acc, area


@pytest.mark.parametrize("figure", ["fig9", "fig10"])
@pytest.mark.parametrize("policy", ["tad", "tad-op"])
def test_stream_equals_the_recording_run_on_the_same_seed(figure, policy):
    """Same seed, same run: N(t_k) and the Δ extremes equal, the running accuracy and the
    per-interval ∫N dt to float round-off, every arrival counted once in its interval."""
    phases = time_varying_phases(figure, 60.0)
    st = simulate_phases_stream(MAIN, policy, 256, phases, sample_every=1.5, window=500,
                                seed=11, chunk=700)
    rec = simulate_phases(MAIN, policy, 256, phases, seed=11, record=True)
    n_at, acc, area = _record_view(rec, st.t, 500)
    assert np.array_equal(st.n_in_system, n_at)
    assert np.array_equal(np.isnan(st.accuracy), np.isnan(acc)) and np.isnan(acc[0])
    np.testing.assert_allclose(st.accuracy[~np.isnan(acc)], acc[~np.isnan(acc)], rtol=0,
                               atol=1e-9)
    np.testing.assert_allclose(st.area, area, rtol=1e-9, atol=1e-6)
    assert st.n_jobs == len(rec.arrivals)
    assert np.array_equal(st.arrivals, np.diff(np.concatenate(
        [[0], np.searchsorted(rec.arrivals, st.t, side="right")])))
    np.testing.assert_allclose(st.accuracy_sum.sum(), MAIN.a_arr[rec.classes].sum(), rtol=1e-12)
    assert np.array_equal(st.class_counts, np.bincount(rec.classes, minlength=MAIN.K))
    assert st.final_delta == rec.final_delta and st.min_delta == rec.min_delta
    # the phase averages the chapter reads: the time-average of N and the arrivals' accuracy
    assert st.time_average(90.0, 120.0) == pytest.approx(area[(st.t > 90) & (st.t <= 120)].sum()
                                                          / 30.0, rel=1e-12)
    sel = (rec.arrivals > 90.0) & (rec.arrivals <= 120.0)
    assert st.mean_accuracy(90.0, 120.0) == pytest.approx(MAIN.a_arr[rec.classes[sel]].mean(),
                                                          rel=1e-12)


def test_the_numbers_do_not_depend_on_the_block_size():
    phases = time_varying_phases("fig9", 40.0)
    a = simulate_phases_stream(MAIN, "tad-op", 128, phases, sample_every=2.0, seed=3, chunk=64)
    b = simulate_phases_stream(MAIN, "tad-op", 128, phases, sample_every=2.0, seed=3)
    assert np.array_equal(a.n_in_system, b.n_in_system)
    assert np.array_equal(a.area, b.area) and np.array_equal(a.accuracy, b.accuracy, equal_nan=True)


def test_memory_does_not_grow_with_the_run_length():
    """Runs 1 and 20 times as long, with the same number of samples: the same peak memory
    (the state of n servers, the window's ring, the samples), not 32 bytes a query."""
    peaks = []
    for length in (20.0, 400.0):
        phases = time_varying_phases("fig10", length)
        simulate_phases_stream(MAIN, "tad", 256, phases, sample_every=length / 10, seed=1)
        tracemalloc.start()
        res = simulate_phases_stream(MAIN, "tad", 256, phases, sample_every=length / 10, seed=1)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(res.t) == 30
    assert res.n_jobs > 80_000                       # a record would take > 2.5 MB
    assert peaks[1] <= peaks[0] + 64 * 1024, peaks


def test_bad_arguments_name_the_parameter():
    phases = time_varying_phases("fig9", 10.0)
    with pytest.raises(ConfigError, match="sample_every"):
        simulate_phases_stream(MAIN, "tad", 64, phases, sample_every=7.0)
    with pytest.raises(ConfigError, match="sample_every"):
        sample_times(30.0, -1.0)
    with pytest.raises(ConfigError, match="window"):
        simulate_phases_stream(MAIN, "tad", 64, phases, sample_every=1.0, window=0)
    res = simulate_phases_stream(MAIN, "tad", 64, phases, sample_every=1.0)
    with pytest.raises(ConfigError, match="t0"):
        res.time_average(0.5, 10.0)
    with pytest.raises(ConfigError, match="t1"):
        res.time_average(10.0, 5.0)


def test_time_varying_reports_phase_intervals_bands_and_cost(tmp_path, monkeypatch):
    """``time_varying`` over 3 runs: the judged phase average is the runs' mean of the exact
    half-phase time-averages, with a Student-t half-width over the runs; the trace carries the
    band; the run count, queries and CPU seconds come back for the page."""
    import dataclasses

    from infsched.sweep import point_seed
    from infsched.tad import bound, experiments as ex

    small = dataclasses.replace(ex.SCALES["smoke"], tv_n=64, tv_phase_length=40.0, tv_runs=3,
                                tv_sample_every=2.0)
    monkeypatch.setitem(ex.SCALES, "smoke", small)
    res = ex.time_varying("fig10", "smoke", 5, cache=tmp_path, n_jobs=1, window=100)
    ph, tr, runs = res["phases"], res["trace"], res["runs"]
    assert len(ph) == 6 and (ph["ratio_ci"] > 0).all() and (ph["accuracy_ci"] >= 0).all()
    phases = ex.time_varying_phases("fig10", 40.0)
    means = []
    for run in range(3):
        st = simulate_phases_stream(MAIN, "tad-op", 64, phases, sample_every=2.0,
                                    seed=point_seed(5, 9, run))
        means.append(st.time_average(100.0, 120.0))
    row = ph[(ph["policy"] == "tad-op") & (ph["phase"] == 2)].iloc[0]
    lb = 64 * bound.lp_lower_bound(MAIN, 75.1, phases[2].lam).N
    assert row["N_mean"] == pytest.approx(np.mean(means), rel=1e-12)
    assert row["ratio_ci"] == pytest.approx(4.302653 * np.std(means, ddof=1) / np.sqrt(3) / lb,
                                            rel=1e-5)
    ok = ~tr["accuracy"].isna()
    assert (tr["N_lo"] <= tr["N"]).all() and (tr["N"] <= tr["N_hi"]).all()
    assert (tr.loc[ok, "accuracy_lo"] <= tr.loc[ok, "accuracy_hi"]).all()
    assert tr["t"].max() == 120.0 and len(tr) == 2 * 60
    assert int(runs["runs"].iloc[0]) == 3 and runs["queries_per_run"].iloc[0] > 0
    assert runs["cpu_s_total"].iloc[0] >= runs["cpu_s_per_run"].iloc[0] > 0
    claims = ex.claims_time_varying(ph)
    assert set(claims) == {"tadop_over_bound_max", "tad_meets_accuracy", "tad_above_bound"}
    assert claims["tadop_over_bound_max"].ci > 0
