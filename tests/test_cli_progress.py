"""How long a run will take, said before it starts, and its progress while it runs (issue 21,
item 2): ``infsched run`` estimates from the README's measured chapter costs and shows the
kernel's sweeps without printing inside the kernel; ``infsched sweep`` / ``run_sweep`` estimate
from the measured times of earlier points kept in the cache."""

from __future__ import annotations

import io
import json
import math

import nbformat
import pytest

from chapter_header import HEADER
from infsched import limits, runner
from infsched.cache import _header
from infsched.cli import RunProgress, main
from infsched.sweep import run_sweep

SLOW = HEADER + '''
# Slow

```{code-cell} python
:tags: [parameters]
seed = 0
n = 8
```

```{code-cell} python
from infsched.sweep import run_sweep
from progresspoint import point
df = run_sweep(point, [{"i": i} for i in range(n)], n_jobs=1, progress=True)
print(len(df))
```
'''

POINT = '''
import time


def point(i):
    time.sleep(0.25)
    return {"y": i}
'''


def _fake_execute(info, params, kernel, timeout, scale, out, figures, out_nb, progress=None):
    nbformat.write(nbformat.v4.new_notebook(), out_nb)


@pytest.mark.parametrize("argv, first", [
    (["run", "tad", "--scale", "paper", "-p", "n_servers=8192"],
     "infsched: tad at paper scale: about 30 min to 2 hours (3,566 CPU s and 30 min wall on 2 "
     "cores, measured: the chapter's results built alone from empty by the one command"),
    (["run", "kairos", "--scale", "default", "-p", "processes=1"],
     "infsched: kairos at default scale: about 56 s (56 CPU s measured at default scale with the "
     "default parameters"),
    (["run", "headtohead", "--scale", "paper"],
     "infsched: headtohead at paper scale: about 26-50 min (2,994 CPU s and 26 min "
     "wall on 2 cores, measured: the chapter's results built alone"),
])
def test_run_says_how_long_before_the_kernel_starts(argv, first, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "_execute", _fake_execute)
    assert main([*argv, "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(first), err
    assert "a rerun resumes" in err and err.count("\n") == 1
    if "n_servers=8192" in argv:
        assert "n_servers = 8192 is 2x its default 4096" in err


def test_no_estimate_at_smoke_scale_nor_for_a_bad_value(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "_execute", _fake_execute)
    assert main(["run", "tad", "--scale", "smoke", "--out", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().err == ""
    assert main(["run", "tad", "--scale", "paper", "-p", "seed=-1", "--out", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err.startswith("infsched: error: seed = -1")  # checked first


@pytest.mark.parametrize("chapter", sorted(limits.DEFAULT_CPU_S))
@pytest.mark.parametrize("scale", ["default", "paper"])
def test_every_estimate_says_what_it_rests_on(chapter, scale):
    lo, hi, msg = limits.chapter_estimate(chapter, {}, scale, 2)
    assert 0 < lo <= hi and msg.startswith(f"{chapter} at {scale} scale: ")
    assert any(w in msg for w in ("measured", "derived", "estimated", "no estimate")), msg
    if not math.isinf(hi):
        assert "about" in msg
    assert limits.chapter_estimate(chapter, {}, "smoke") is None


def test_a_larger_size_raises_the_upper_bound_and_says_so():
    lo, hi, _ = limits.chapter_estimate("shepherd", {}, "default", 2)
    lo2, hi2, msg = limits.chapter_estimate("shepherd", {"workers": 48}, "default", 2)
    assert lo2 == lo and hi2 == pytest.approx(4 * hi)
    assert "workers = 48 is 4x its default 12" in msg
    _, _, msg = limits.chapter_estimate("ramsis", {"workers": 120}, "default", 2)
    assert "by how much is not estimated" in msg


def test_progress_line():
    state = {"now": 110.0, "bars": [{"desc": "simulate_point", "total": 20, "cached": 5, "done": 4,
                                     "failed": 1, "left": 10, "start": 100.0}]}
    show = RunProgress("tad", (60.0, 120.0, ""))
    line = show.line(state, 75.0)
    assert line == "infsched: tad: 75 s of about 60 s to 2 min; sweep simulate_point: 10/20 points, " \
                   "about 20 s left", line
    assert show.line(None, 5.0) == "infsched: tad: 5 s of about 60 s to 2 min"


def test_progress_redraws_one_line_on_a_terminal_and_logs_rarely_elsewhere():
    tty = io.StringIO()
    show = RunProgress("x", live=True, stream=tty)
    show.update(None, 1.0)
    show.update(None, 2.0)
    show.close()
    assert tty.getvalue().count("\r") == 4 and "\n" not in tty.getvalue()  # two lines, erased
    assert tty.getvalue().endswith("\r")  # erased at the end
    log = io.StringIO()
    show = RunProgress("x", live=False, stream=log, every=60.0)
    for t in (1.0, 30.0, 61.0, 90.0, 125.0):
        show.update(None, t)
    show.close()
    assert log.getvalue().splitlines() == ["infsched: x: 61 s", "infsched: x: 2.1 min"]


class _Recorder:
    def __init__(self):
        self.states, self.closed = [], False

    def update(self, state, elapsed):
        self.states.append((state, elapsed))

    def close(self):
        self.closed = True


def test_the_kernels_sweeps_report_to_the_runner_not_to_the_page(tmp_path, monkeypatch):
    book = tmp_path / "book"
    book.mkdir()
    (book / "slow.md").write_text(SLOW)
    (tmp_path / "progresspoint.py").write_text(POINT)
    monkeypatch.setenv("INFSCHED_BOOK", str(book))
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    rec = _Recorder()
    nb_path = runner.run_chapter("slow", {}, out_dir=tmp_path / "out", progress=rec)
    assert rec.closed and rec.states
    bars = [b for s, _ in rec.states if s for b in s["bars"]]
    assert bars and all(b["total"] == 8 and b["desc"] == "point" for b in bars)
    assert max(b["done"] for b in bars) >= 1
    assert "no estimate of their time yet" in bars[0]["estimate"]
    nb = nbformat.read(nb_path, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("name") == "stderr"], outputs  # the bar is not on the page
    assert any("8" in o.get("text", "") for o in outputs)
    # without a progress object, the kernel is told nothing and writes nothing anywhere
    assert "INFSCHED_PROGRESS" not in __import__("os").environ


def _f(i, kind="a"):
    return {"y": i}


def test_a_sweep_says_how_long_from_the_times_of_cached_points(tmp_path, capsys):
    run_sweep(_f, [{"i": i} for i in range(4)], cache_dir=tmp_path, progress=True)
    err = capsys.readouterr().err
    assert "_f: 4 point(s) to compute; no estimate of their time yet" in err
    entries = sorted(tmp_path.rglob("*.pkl"))
    head = _header(entries[0])
    assert head["kind"] == {} and head["seconds"] >= 0
    run_sweep(_f, [{"i": i} for i in range(6)], cache_dir=tmp_path, progress=True, n_jobs=1)
    err = capsys.readouterr().err
    assert "_f: 2 point(s) to compute (4 cached); about " in err and "on 1 process (the mean time " \
        "of 4 earlier point(s) of the same kind" in err, err
    # another kind (a text parameter) is not timed by these
    run_sweep(_f, [{"i": 9, "kind": "b"}], cache_dir=tmp_path, progress=True, n_jobs=1)
    assert "no estimate of their time yet" in capsys.readouterr().err
    json.dumps(head)  # a plain JSON header


def test_sweep_puts_the_chapters_cost_beside_its_share(monkeypatch, capsys):
    import pandas as pd

    import infsched.chapters as chapters

    monkeypatch.setattr(chapters, "sweep_chapter", lambda *a, **k: pd.DataFrame({"error": [None]}))
    assert main(["sweep", "tad", "-e", "fig5", "-p", "a_star=76,78", "--seeds", "0-2",
                 "--scale", "default"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("infsched: (the whole chapter) tad at default scale: about 30-60 s "
                          "(60 CPU s measured"), err
    assert err.rstrip().endswith("this sweep runs 1 of its 10 experiments x 2 parameter combination(s) "
                                 "x 3 seed(s)"), err
    # a bad grid is still one line, and nothing is estimated before it
    assert main(["sweep", "tad", "-e", "fig55", "--scale", "default"]) == 2
    assert capsys.readouterr().err.startswith("infsched: error: experiment = 'fig55'")


def test_the_measured_costs_are_the_readmes():
    """The estimates quote the README's time table: when it is re-measured, update
    ``infsched.limits.DEFAULT_CPU_S`` (this test says which row differs)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    names = {"TAD": "tad", "RAMSIS": "ramsis", "KV-cache": "kvcache", "KAIROS": "kairos",
             "Shepherd": "shepherd", "Measuring your own hardware": "profiling",
             "Head to head": "headtohead"}
    found = {}
    for row in re.findall(r"^\| ([^|]+?) \| (\d+) \|", readme, re.M):
        if row[0] in names:
            found[names[row[0]]] = float(row[1])
    assert found == limits.DEFAULT_CPU_S


def test_the_store_render_costs_are_the_readmes():
    """What ``infsched run CHAPTER`` quotes for a chapter rendered from the store is the README's
    "from the store" column (wall s, CPU s): re-measured, both change together."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    names = {"TAD": "tad", "RAMSIS": "ramsis", "KV-cache": "kvcache", "KAIROS": "kairos",
             "Shepherd": "shepherd", "Head to head": "headtohead"}
    found = {}
    for name, wall, cpu in re.findall(r"^\| ([^|]+?) \|.*\| (\d+), (\d+)[^|]*\|$", readme, re.M):
        if name in names:
            found[names[name]] = (float(wall), float(cpu))
    assert found == limits.STORE_RENDER_S


def test_estimate_without_a_scale_says_the_store_renders_it(monkeypatch):
    """With no --scale, a chapter whose paper-scale build is stored renders from the store (its
    parameters cell picks paper), so the estimate must say that, not quote the default scale."""
    from infsched import store

    monkeypatch.delenv("INFSCHED_SCALE", raising=False)
    monkeypatch.delenv(store.STORE_ENV, raising=False)
    monkeypatch.setattr(store, "status", lambda ch, root=None: {
        "current": True, "n_points": 1234, "built": "2026-11-26T00:00:00Z"})
    lo, hi, msg = limits.chapter_estimate("kairos", {}, None)
    assert "from the results store" in msg and "1,234 stored points" in msg
    assert (lo, hi) == (limits.STORE_RENDER_S["kairos"][0],) * 2 and "s wall" in msg
    monkeypatch.setattr(store, "status", lambda ch, root=None: None)
    assert "at default scale" in limits.chapter_estimate("kairos", {}, None)[2]
    monkeypatch.setenv("INFSCHED_SCALE", "default")
    monkeypatch.setattr(store, "status", lambda ch, root=None: {
        "current": True, "n_points": 1, "built": ""})
    assert "at default scale" in limits.chapter_estimate("kairos", {}, None)[2]
