"""The ``infsched`` command: list, run (papermill), one-line errors with exit status 2."""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from chapter_header import HEADER
from infsched.cli import main, parse_param

DEMO = HEADER + '''
# A demo chapter

```{code-cell} ipython3
:tags: [parameters]
import os
scale = os.environ.get("INFSCHED_SCALE", "default")  # smoke | default | paper
seed = 0
x = 2  # the knob
policy = "tad"
fail = False
```

```{code-cell} ipython3
import matplotlib.pyplot as plt
from infsched import plotting
if fail:
    raise ValueError("asked to fail")
fig, ax = plt.subplots(figsize=(2, 2), dpi=40)
ax.plot([0, 1], [0, x])
plotting.save(fig, "line")
plt.show()
print("env scale", os.environ.get("INFSCHED_SCALE"), "param scale", scale, "x", x, policy)
```
'''


@pytest.fixture
def book(tmp_path, monkeypatch):
    b = tmp_path / "book"
    b.mkdir()
    (b / "demo.md").write_text(DEMO)
    (b / "intro.md").write_text("# Intro\n\nNo code here.\n")
    monkeypatch.setenv("INFSCHED_BOOK", str(b))
    return b


def test_parse_param():
    assert parse_param("x=3") == ("x", 3)
    assert parse_param("rates=[0.5, 0.9]") == ("rates", [0.5, 0.9])
    assert parse_param("policy=tad") == ("policy", "tad")
    assert parse_param("name='a=b'") == ("name", "a=b")
    assert parse_param("flag=True") == ("flag", True)


def test_list(book, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "demo: A demo chapter  (demo.md)"
    assert "scale  = os.environ.get(\"INFSCHED_SCALE\", \"default\")    # smoke | default | paper" in out
    assert "x      = 2    # the knob" in out and "policy = 'tad'" in out and "intro" not in out


def test_run_writes_notebook_and_figures(book, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "demo", "-p", "x=3", "-p", "policy=jsq", "--scale", "smoke", "--out", str(out)]) == 0
    nb_path = out / "demo.ipynb"
    assert capsys.readouterr().out.splitlines()[0] == str(nb_path)
    nb = nbformat.read(nb_path, as_version=4)
    assert nb.metadata.papermill.parameters == {"x": 3, "policy": "jsq", "scale": "smoke"}
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "x = 3" in injected[0].source
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "env scale smoke param scale smoke x 3 jsq" in text
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "line.png" in figs  # plotting.save via INFSCHED_FIGURES
    # the chapter saved a named figure, so raw cell outputs are not extracted as well
    assert not any(f.startswith("demo-cell") for f in figs)
    assert (out / "figures" / "line.png").read_bytes()[:4] == b"\x89PNG"
    assert "INFSCHED_FIGURES" not in os.environ  # restored after the run


def test_failing_chapter_is_one_line(book, tmp_path, capsys):
    assert main(["run", "demo", "-p", "fail=True", "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("infsched: error: chapter 'demo' failed")
    assert "ValueError: asked to fail" in err and (tmp_path / "f" / "demo.ipynb").exists()


@pytest.mark.parametrize("argv, expected", [
    (["run", "nope"], "infsched: error: chapter = 'nope': must be one of demo"),
    (["run", "demo", "-p", "y=1"], "infsched: error: parameter = 'y': chapter 'demo' has parameters "
                                   "scale, seed, x, policy, fail"),
    (["run", "demo", "--scale", "huge"], "infsched: error: scale = 'huge': must be one of smoke, default, paper"),
    (["run", "demo", "-p", "scale=huge"], "infsched: error: scale = 'huge': must be one of smoke, default, paper"),
    (["run", "demo", "-p", "x"], "infsched: error: -p 'x': must be name=value"),
    (["frobnicate"], "infsched: error: argument {list,run,refresh-nbval,profile,sweep,results}: invalid choice: 'frobnicate'"),
    ([], "infsched: error: the following arguments are required: {list,run,refresh-nbval,profile,sweep,results}"),
])
def test_errors_are_one_line(book, capsys, argv, expected):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected) and err.count("\n") == 1


def test_console_script(book):
    exe = Path(sys.executable).with_name("infsched")
    if not exe.exists():
        pytest.skip("console script not installed next to this python")
    r = subprocess.run([str(exe), "run", "demo", "--scale", "huge"], capture_output=True, text=True,
                       env=os.environ.copy(), timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "infsched: error: scale = 'huge': must be one of smoke, default, paper\n"
    r = subprocess.run([str(exe), "list"], capture_output=True, text=True, env=os.environ.copy(), timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("demo: A demo chapter")
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "run" in r.stdout
