"""``infsched sweep``: a chapter's experiments over a grid, one tidy table, one-line errors.

The experiment swept is TAD's Fig. 5 (analytic, a few milliseconds a point at ``n_rhos=5``)."""

import io
import os

import pandas as pd
import pytest

from infsched.chapters import sweep_chapter
from infsched.cli import main, parse_seeds, parse_values
from infsched.errors import ConfigError
from infsched.tad import experiments as tad

ARGS = ["sweep", "tad", "-e", "fig5", "-p", "a_star=72,76", "-p", "n_rhos=5", "--scale", "smoke",
        "--seeds", "0,1", "--no-progress"]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("INFSCHED_DASK", raising=False)
    return tmp_path / "cache"


def test_parse_values():
    assert parse_values("n=64,128") == ("n", [64, 128])
    assert parse_values("policy=tad,tad-op") == ("policy", ["tad", "tad-op"])
    assert parse_values("ns=[64,128],[256]") == ("ns", [[64, 128], [256]])
    assert parse_values("ns=[64, 128]") == ("ns", [[64, 128]])
    assert parse_values("name='a,b',c") == ("name", ["a,b", "c"])
    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("0-3,7") == [0, 1, 2, 3, 7]
    for bad in ("n", "=3", "n=", "n=1,,2", "n=1,", "2x=1"):
        with pytest.raises(ConfigError, match="-p"):
            parse_values(bad)


def test_sweep_writes_one_tidy_table(tmp_path, cache, capsys):
    out = tmp_path / "fig5.csv"
    assert main(ARGS + ["--jobs", "2", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    df = pd.read_csv(out)
    assert list(df.columns) == ["experiment", "scale", "seed", "a_star", "n_rhos",
                                "n", "criterion", "rho", "tolerance_pct"]
    assert len(df) == 2 * 2 * 20 and set(df["experiment"]) == {"fig5"}
    for (a, seed), part in df.groupby(["a_star", "seed"]):
        ref = tad.fig5("smoke", seed, a_star=a, n_rhos=5)
        pd.testing.assert_frame_equal(part[list(ref.columns)].reset_index(drop=True), ref,
                                      check_dtype=False)
    files = sorted(cache.rglob("*.pkl"))
    assert len(files) == 4  # one cached point per (a*, seed)
    stamps = [f.stat().st_mtime_ns for f in files]
    # again, serially, to stdout: every point from the cache, the same table
    assert main(ARGS + ["--jobs", "1"]) == 0
    again = pd.read_csv(io.StringIO(capsys.readouterr().out))
    pd.testing.assert_frame_equal(df, again)
    assert [f.stat().st_mtime_ns for f in sorted(cache.rglob("*.pkl"))] == stamps


def test_failing_point_is_reported_and_the_rest_complete(tmp_path, capsys):
    out = tmp_path / "t.csv"
    rc = main(["sweep", "tad", "-e", "fig5", "-p", "a_star=76,500", "-p", "n_rhos=5",
               "--scale", "smoke", "--no-progress", "--out", str(out)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "a_star=500" in err and "InfeasibleError: a* = 500 exceeds the most accurate model" in err
    df = pd.read_csv(out)
    assert df["error"].notna().sum() == 1 and (df["a_star"] == 76).sum() == 20
    assert df.loc[df["a_star"] == 500, "tolerance_pct"].isna().all()


@pytest.mark.parametrize("args, message", [
    (["sweep", "nope"], "chapter = 'nope': must be one of tad, ramsis, kvcache, kairos, shepherd"),
    (["sweep", "tad", "-e", "fig55"], "experiment = 'fig55': tad has fig1, fig4, fig5, fig6"),
    (["sweep", "tad", "-e", "fig5", "-p", "bogus=1,2"],
     "parameter = 'bogus': experiment fig5 of tad does not take it; it takes a_star, ns, n_rhos"),
    (["sweep", "tad", "-p", "n_rhos=3"],
     "experiment fig1 of tad does not take it; .* experiments that take it: fig5"),
    (["sweep", "tad", "-e", "fig5", "-p", "a_star="], "-p 'a_star=': empty value"),
    (["sweep", "tad", "-e", "fig5", "-p", "a_star"], "-p 'a_star': must be name=v1,v2"),
    (["sweep", "tad", "-e", "fig5", "-p", "a_star=1", "-p", "a_star=2"], "-p a_star: given twice"),
    (["sweep", "tad", "-e", "fig5", "-p", "seed=1,2"], "parameter = 'seed': is set by the sweep"),
    (["sweep", "tad", "-e", "fig5", "--seeds", "a"], "--seeds 'a': must be non-negative integers"),
    (["sweep", "tad", "-e", "fig5", "--scale", "huge"], "scale = 'huge'"),
    (["sweep", "tad", "-e", "fig5", "--jobs", "0"], "--jobs 0: must be a positive integer"),
    (["sweep", "tad", "-e", "fig5", "--out", "t.xlsx"], "must end in .csv or .parquet"),
    (["sweep", "tad", "-e", "fig5", "--out", "/nonexistent/t.csv"], "does not exist"),
])
def test_bad_grids_get_one_line_errors(args, message, capsys):
    assert main(args + ["--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("infsched: error: ") and err.count("\n") == 1
    assert pytest.importorskip("re").search(message, err), err


def test_parquet_needs_pyarrow(tmp_path, capsys):
    import importlib.util

    if importlib.util.find_spec("pyarrow") or importlib.util.find_spec("fastparquet"):
        pytest.skip("a Parquet engine is installed")
    assert main(ARGS + ["--out", str(tmp_path / "t.parquet")]) == 2
    assert "needs pyarrow" in capsys.readouterr().err


def test_inner_sweeps_get_the_processes_of_a_single_point(monkeypatch):
    """Several points: the points run in parallel and the sweeps inside each one serially; a
    single point hands its sweeps the processes (or the cluster) instead."""
    def probe(scale="default", seed=0, x=0):
        return {"workers": os.environ.get("INFSCHED_PROCESSES"), "dask": os.environ.get("INFSCHED_DASK")}

    monkeypatch.setitem(tad.EXPERIMENTS, "probe", probe)
    monkeypatch.delenv("INFSCHED_PROCESSES", raising=False)
    one = sweep_chapter("tad", {"x": [1]}, experiments=["probe"], n_jobs=3, cache_dir=False)
    assert one["workers"].tolist() == ["3"] and one["dask"].tolist() == [""]
    many = sweep_chapter("tad", {"x": [1, 2]}, experiments=["probe"], n_jobs=1, cache_dir=False)
    assert many["workers"].tolist() == ["1", "1"]
    assert "INFSCHED_PROCESSES" not in os.environ  # restored


def test_sweep_on_a_local_cluster_equals_local(tmp_path, capsys):
    pytest.importorskip("distributed")
    from infsched.sweep import local_cluster

    local = tmp_path / "local.csv"
    assert main(ARGS + ["--jobs", "1", "--no-cache", "--out", str(local)]) == 0
    with local_cluster(2) as cluster:
        on_dask = tmp_path / "dask.csv"
        assert main(ARGS + ["--dask", cluster.scheduler_address, "--no-cache", "--out", str(on_dask)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(local), pd.read_csv(on_dask))


def test_results_that_are_not_one_table():
    """Experiments that return a dict of quantities, or of tables, still give tidy rows."""
    from infsched.chapters import _as_table

    quantities = _as_table({"ex1": {"a": 1.0, "ok": True}, "ex2": {"b": 2.0}})
    assert list(quantities.columns) == ["key", "quantity", "value"] and len(quantities) == 3
    tables = _as_table({"trace": pd.DataFrame({"t": [1.0, 2.0]}), "phases": pd.DataFrame({"p": [0]})})
    assert tables["table"].tolist() == ["trace", "trace", "phases"]
    with pytest.raises(TypeError, match="not a table"):
        _as_table(3.0)


def test_the_head_to_head_chapter_sweeps_through_its_package():
    """``infsched sweep headtohead`` finds the serving package's experiments."""
    from infsched.chapters import chapter_experiments

    exps = chapter_experiments("headtohead")
    assert {"load_sweep", "frontier", "regimes"} <= set(exps)
    with pytest.raises(ConfigError, match="chapter = 'serving': must be one of"):
        chapter_experiments("serving")
