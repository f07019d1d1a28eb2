"""A full disk loses nothing already computed (infsched.atomic): every write is a temporary file
renamed into place, a failed write is one named error (the file, why, the free space), the points
written before it stay in the cache, the point whose write failed is still returned, and
``infsched sweep --out`` leaves no partial table. ENOSPC is simulated (half the bytes written,
then the error), which is what a full filesystem does to a write."""

from __future__ import annotations

import errno

import pandas as pd
import pytest

from infsched import atomic
from infsched.cli import main
from infsched.sweep import run_sweep


def square(x=0):
    return {"y": x * x}


def _disk_full_after(monkeypatch, n_ok):
    calls = {"n": 0}
    real = atomic._write

    def write(f, data):
        calls["n"] += 1
        if calls["n"] > n_ok:
            real(f, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(f, data)

    monkeypatch.setattr(atomic, "_write", write)


def test_a_failed_write_leaves_the_old_file_and_names_the_path_and_free_space(tmp_path, monkeypatch):
    path = tmp_path / "table.csv"
    path.write_text("old\n")
    _disk_full_after(monkeypatch, 0)
    with pytest.raises(atomic.WriteError) as info:
        atomic.atomic_write(path, "new contents\n" * 100)
    msg = str(info.value)
    assert str(path) in msg and "No space left on device" in msg and "free there" in msg
    assert info.value.errno == errno.ENOSPC
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_a_sweep_on_a_full_disk_keeps_every_computed_point(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _disk_full_after(monkeypatch, 2)  # the disk fills after two points are cached
    with pytest.warns(RuntimeWarning, match="cannot write .*No space left on device.*free there"):
        df = run_sweep(square, [{"x": i} for i in range(4)], cache_dir=cache, n_jobs=1)
    assert list(df["y"]) == [0, 1, 4, 9]  # every point returned
    assert len(list(cache.rglob("*.pkl"))) == 2 and not list(cache.rglob("*.tmp"))
    monkeypatch.undo()
    calls = []
    monkeypatch.setattr("infsched.sweep._compute", lambda fn, p: calls.append(p) or square(**p))
    run_sweep(square, [{"x": i} for i in range(4)], cache_dir=cache, n_jobs=1)
    assert calls == [{"x": 2}, {"x": 3}]  # the two cached points are not recomputed


def test_sweep_out_on_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch, capsys):
    from infsched.tad import experiments as tad

    monkeypatch.setitem(tad.EXPERIMENTS, "fig5", lambda scale="default", seed=0:
                        pd.DataFrame({"y": [float(seed)] * 1000}))
    _disk_full_after(monkeypatch, 0)
    out = tmp_path / "t.csv"
    assert main(["sweep", "tad", "-e", "fig5", "--scale", "smoke", "--seeds", "0-2", "--jobs", "1",
                 "--no-cache", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {out}: No space left on device" in err and "free there" in err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == []
