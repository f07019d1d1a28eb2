"""The results store's content digests (infsched.store.integrity, seal, check_intact): a
hand-changed number, a line cut inside its key or mid-value, and a manifest without digests are
each named (file, line, function, key) by ``infsched results status`` with a non-zero exit and
refused by ``infsched run`` and by the book's choice of scale, never served; a rebuild repairs
them. On a scratch store of real TAD points (milliseconds each)."""

from __future__ import annotations

import json
import re

import pytest

from infsched import store
from infsched.cli import main
from infsched.errors import ConfigError
from infsched.sweep import run_sweep
from infsched.tad.experiments import simulate_point

GRID = [dict(policy=p, n=4, a_star=76.0, rho=0.5, service="exp", n_jobs=2000, seed=s)
        for p in ("tad", "r-jiq") for s in (1, 2)]
NAME = "infsched.tad.experiments.simulate_point"


def _build(chapter, root, rec, monkeypatch, grid=GRID):
    monkeypatch.setenv(store.RECORD_ENV, str(rec))
    run_sweep(simulate_point, grid)
    monkeypatch.delenv(store.RECORD_ENV)
    return store.commit_records(chapter, rec, root)


@pytest.fixture
def sealed(tmp_path, monkeypatch):
    """A scratch store holding a build of the chapter ``tad`` (four points), sealed by the build."""
    root = tmp_path / "results"
    monkeypatch.setenv(store.DIR_ENV, str(root))
    monkeypatch.setenv("INFSCHED_CACHE", str(tmp_path / "cache"))
    for env in (store.STRICT_ENV, store.STORE_ENV, "INFSCHED_SCALE"):
        monkeypatch.delenv(env, raising=False)
    store._SERVED.clear()
    m = _build("tad", root, tmp_path / "rec", monkeypatch)
    return root, m, root / "points" / f"{NAME}.jsonl"


def _edit(path, n, change):
    lines = path.read_text().split("\n")
    lines[n] = change(lines[n])
    path.write_text("\n".join(lines))


def _key(path, n):
    return re.match(r'\{"key":"([0-9a-f]{24})"', path.read_text().split("\n")[n]).group(1)


def _times_1000(line):
    m = re.search(r'"latency":([0-9.e+-]+)', line)
    return line.replace(m.group(0), f'"latency":{float(m.group(1)) * 1000!r}', 1)


def test_a_build_seals_every_point_and_status_is_clean(sealed, capsys):
    root, m, _ = sealed
    assert sorted(m["digests"][NAME]) == m["points"][NAME]
    assert store.integrity("tad", root) == []
    assert store.status("tad", root)["current"]
    assert main(["results", "status"]) == 0
    assert "tad" in capsys.readouterr().out


def test_a_hand_changed_number_is_named_and_never_served(sealed, capsys, monkeypatch):
    root, _, path = sealed
    key = _key(path, 1)
    _edit(path, 1, _times_1000)  # still valid JSON, a plausible number
    assert json.loads(path.read_text().split("\n")[1])
    damaged = store.integrity("tad", root)
    assert len(damaged) == 1 and key in damaged[0] and NAME in damaged[0] and "line 2" in damaged[0]
    assert not store.status("tad", root)["current"]
    assert main(["results", "status"]) == 1
    out = capsys.readouterr()
    assert "DAMAGED" in out.out and key in out.out and "Traceback" not in out.out + out.err
    point = next(p for p in GRID if store.store_key(NAME, p, 1) == key)
    with pytest.raises(ConfigError, match=f"key {key}: altered.*infsched results build tad"):
        store.lookup(simulate_point, point)
    monkeypatch.setenv(store.STRICT_ENV, "1")  # make book's choice of scale refuses too
    with pytest.raises(ConfigError, match=f"damaged.*{key}.*infsched results build tad"):
        store.book_scale("tad")


@pytest.mark.parametrize("cut", [lambda line: line[:15], lambda line: line[:len(line) // 2]],
                         ids=["inside-its-key", "mid-value"])
def test_a_cut_line_is_a_named_error_not_a_traceback(sealed, capsys, cut):
    root, _, path = sealed
    _edit(path, 2, cut)
    damaged = store.integrity("tad", root)
    assert damaged and all(f"{path.name}, line 3" in d for d in damaged)
    assert main(["results", "status"]) == 1
    out = capsys.readouterr()
    assert "line 3" in out.out and "Traceback" not in out.out + out.err
    # a sweep asking for any point of that function is refused, naming the line (not ValueError)
    with pytest.raises(ConfigError, match="line 3"):
        for p in GRID:
            store.lookup(simulate_point, p)


def test_run_refuses_a_damaged_store_before_its_kernel_starts(sealed, capsys, tmp_path):
    _, _, path = sealed
    _edit(path, 0, _times_1000)
    assert main(["run", "tad", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "damaged" in err and _key(path, 0) in err and "infsched results build tad" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_the_rebuild_itself_is_not_refused(sealed, tmp_path, monkeypatch):
    """`infsched results build` runs the chapter with its record folder set: it is the repair."""
    root, _, path = sealed
    _edit(path, 0, _times_1000)
    with pytest.raises(ConfigError, match="damaged"):
        store.check_intact("tad", root)
    monkeypatch.setenv(store.RECORD_ENV, str(tmp_path / "rec"))
    store.check_intact("tad", root)


def test_an_unsealed_manifest_is_named_then_sealed_by_the_one_command(sealed, capsys):
    root, _, path = sealed
    m = json.loads(store.manifest_path("tad", root).read_text())
    del m["digests"]  # as a build by a version without digests leaves it
    store.manifest_path("tad", root).write_text(json.dumps(m))
    assert "not sealed" in store.integrity("tad", root)[0]
    with pytest.raises(ConfigError, match="not sealed"):
        store.lookup(simulate_point, GRID[0])
    assert main(["results", "build", "--seal", "tad"]) == 0
    after = json.loads(store.manifest_path("tad", root).read_text())
    assert after["built"] == m["built"] and after["commit"] == m["commit"]  # provenance kept
    assert store.integrity("tad", root) == [] and store.lookup(simulate_point, GRID[0]) is not None
    # sealing vouches only for lines that load: a cut line is refused, naming it
    _edit(path, 1, lambda line: line[:-40] + "}")
    with pytest.raises(ConfigError, match="cannot seal.*line 2"):
        store.seal("tad", root)


def test_a_rebuild_replaces_an_altered_point_and_keeps_other_chapters_lines(sealed, tmp_path, monkeypatch):
    root, _, path = sealed
    _build("kvcache", root, tmp_path / "rec2", monkeypatch, GRID[:2])  # a second chapter, same fn
    before = path.read_text()
    _edit(path, 3, _times_1000)
    assert store.integrity("tad", root)
    _build("tad", root, tmp_path / "rec3", monkeypatch)  # the altered point is recomputed, not served
    assert store.integrity("tad", root) == [] and store.integrity("kvcache", root) == []
    assert path.read_text() == before  # the recomputed line is the original, byte for byte
