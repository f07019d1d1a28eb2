"""Chapter discovery (ast, no exec), run_chapter validation, nbval references and the conftest.

The book is a temporary folder (INFSCHED_BOOK); the nbval references go to a temporary folder
(INFSCHED_NBVAL_DIR); nothing in the repository is touched.
"""

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from chapter_header import HEADER
from infsched import runner
from infsched.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def chapter(title, check_source, params='import os\nscale = os.environ.get("INFSCHED_SCALE", "default")\nn = 3',
            check_tags=""):
    return HEADER + f"""
# {title}

Some prose.

```{{code-cell}} ipython3
:tags: [parameters]
{params}
```

```{{code-cell}} ipython3
total = sum(range(n))
print("unchecked", total)
```

```{{code-cell}} ipython3
{check_tags}{check_source}
```
"""


GOOD = '# NBVAL_CHECK_OUTPUT\nprint(f"total={total} scale={scale}")'
#: the same check as a cell tag (what the chapters use: the page shows no marker comment)
TAGGED = dict(check_source='print(f"total={total} scale={scale}")',
              check_tags=":tags: [hide-input, nbval-check-output]\n")


@pytest.fixture
def book(tmp_path, monkeypatch):
    b = tmp_path / "book"
    b.mkdir()
    monkeypatch.setenv("INFSCHED_BOOK", str(b))
    monkeypatch.setenv("INFSCHED_NBVAL_DIR", str(tmp_path / "nbval"))
    return b


def test_list_chapters_parses_parameters_without_exec(book):
    (book / "alpha.md").write_text(chapter("Alpha: a title", GOOD, params=(
        "import os\n"
        "scale = os.environ.get('INFSCHED_SCALE', 'default')  # smoke | default | paper\n"
        "seed: int = 0\n"
        "rates = [0.5, 0.9]  # arrival rates (req/s)\n"
        "a = b = 1.5\n"
        "raise SystemExit('never executed')\n")))
    (book / "plain.md").write_text("# Plain\n\n```python\nx = 1\n```\n")
    (book / "noparams.md").write_text(HEADER + "\n# No parameters\n\n```{code-cell} ipython3\nx = 1\n```\n")
    chapters = runner.list_chapters()
    assert list(chapters) == ["alpha"]
    info = chapters["alpha"]
    assert info.title == "Alpha: a title" and info.path == book / "alpha.md"
    assert list(info.parameters) == ["scale", "seed", "rates", "a", "b"]
    assert isinstance(info.parameters["scale"], runner.DefaultExpr)
    assert repr(info.parameters["scale"]) == "os.environ.get('INFSCHED_SCALE', 'default')"
    assert info.parameters["seed"] == 0 and info.parameters["rates"] == [0.5, 0.9]
    assert info.parameters["a"] == info.parameters["b"] == 1.5
    assert info.help == {"scale": "smoke | default | paper", "rates": "arrival rates (req/s)"}


def test_book_dir_default_and_override(book, monkeypatch):
    assert runner.book_dir() == book
    monkeypatch.delenv("INFSCHED_BOOK")
    assert runner.book_dir() == ROOT / "book"
    monkeypatch.setenv("INFSCHED_BOOK", str(book / "missing"))
    with pytest.raises(ConfigError, match="book directory = .*missing"):
        runner.list_chapters()


def test_run_chapter_validation(book):
    (book / "alpha.md").write_text(chapter("Alpha", GOOD))
    (book / "beta.md").write_text(chapter("Beta", GOOD))
    with pytest.raises(ConfigError, match="chapter = 'gamma': must be one of alpha, beta"):
        runner.run_chapter("gamma", {})
    with pytest.raises(ConfigError, match="parameter = 'm': chapter 'alpha' has parameters scale, n"):
        runner.run_chapter("alpha", {"m": 1})
    with pytest.raises(ConfigError, match="scale = 'fast': must be one of smoke, default, paper"):
        runner.run_chapter("alpha", {}, scale="fast")
    with pytest.raises(ConfigError, match="scale = 'paper': conflicts with parameter scale = 'smoke'"):
        runner.run_chapter("alpha", {"scale": "smoke"}, scale="paper")
    bad = book / "broken.md"
    bad.write_text(chapter("Broken", GOOD, params="x = = 1"))
    with pytest.raises(ConfigError, match="broken.md: parameters cell is not valid Python"):
        runner.list_chapters()


def test_refresh_and_nbval_through_conftest(book, tmp_path):
    """Store references, then run pytest --nbval-lax on four chapters through the root
    conftest: matching reference passes, a tampered reference fails, a marked cell without a
    stored counterpart fails with the refresh command, a cell that writes to stderr fails."""
    (book / "good.md").write_text(chapter("Good", GOOD))
    (book / "wrong.md").write_text(chapter("Wrong", GOOD))
    (book / "tagged.md").write_text(chapter("Tagged", **TAGGED))
    (book / "tagwrong.md").write_text(chapter("Tagwrong", **TAGGED))
    stored = runner.main(["--refresh-nbval", "good", "wrong", "tagged", "tagwrong"])
    assert stored == 0
    ref = nbformat.read(tmp_path / "nbval" / "good.ipynb", as_version=4)
    code = [c for c in ref.cells if c.cell_type == "code"]
    assert code[1].outputs == []  # unchecked cells are stored without outputs
    assert code[2].outputs[0]["text"] == "total=3 scale=smoke\n"
    assert "papermill" not in ref.metadata
    tagged = [c for c in nbformat.read(tmp_path / "nbval" / "tagged.ipynb", as_version=4).cells
              if c.cell_type == "code"]
    assert tagged[1].outputs == [] and tagged[2].outputs[0]["text"] == "total=3 scale=smoke\n"
    # tamper with one reference; add a chapter that was never refreshed
    wrong = nbformat.read(tmp_path / "nbval" / "wrong.ipynb", as_version=4)
    [c for c in wrong.cells if c.cell_type == "code"][2].outputs[0]["text"] = "total=4 scale=smoke\n"
    nbformat.write(wrong, tmp_path / "nbval" / "wrong.ipynb")
    tw = nbformat.read(tmp_path / "nbval" / "tagwrong.ipynb", as_version=4)
    [c for c in tw.cells if c.cell_type == "code"][2].outputs[0]["text"] = "total=5 scale=smoke\n"
    nbformat.write(tw, tmp_path / "nbval" / "tagwrong.ipynb")
    (book / "stale.md").write_text(chapter("Stale", GOOD))
    (book / "intro.md").write_text("# Intro\n")  # no jupytext header: not collected
    (book / "noisy.md").write_text(chapter("Noisy", 'import sys\nsys.stderr.write("careful\\n")'))

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "lib")]),
               INFSCHED_SCALE="smoke")
    env.pop("PYTEST_XDIST_WORKER", None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-rA",
         "--nbval-lax", "--nbval-current-env", "book"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "PASSED book/good.md::Cell 2" in out
    assert "FAILED book/wrong.md::Cell 2" in out
    assert "PASSED book/tagged.md::Cell 2" in out and "FAILED book/tagwrong.md::Cell 2" in out
    assert "PASSED book/stale.md::Cell 1" in out and "FAILED book/stale.md::Cell 2" in out
    assert "run: python -m infsched.runner --refresh-nbval stale" in out
    assert "intro" not in out
    assert "FAILED book/noisy.md::Cell 2" in out and "wrote to stderr" in out and "careful" in out
    assert "4 failed, 14 passed" in out


def test_refresh_unknown_chapter(book, capsys):
    (book / "good.md").write_text(chapter("Good", GOOD))
    assert runner.main(["--refresh-nbval", "nope"]) == 2
    assert capsys.readouterr().err == "infsched: error: chapter = 'nope': must be one of good\n"


def test_run_extracts_png_outputs_when_the_chapter_saves_no_figure(book, tmp_path):
    from infsched.runner import run_chapter

    plot = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1], [0, n]);"
    (book / "plot.md").write_text(chapter("Plot", plot))
    out_nb = run_chapter("plot", {"n": 2}, scale="smoke", out_dir=tmp_path / "run")
    figs = sorted(p.name for p in (out_nb.parent / "figures").glob("*.png"))
    assert figs and all(f.startswith("plot-cell") for f in figs), figs


def test_failed_run_keeps_only_the_notebook_with_the_traceback(book, tmp_path):
    """A cell that raises: the partly executed notebook stays (the error names it), no empty
    figures/ folder; a run that fails before writing a notebook leaves no folder behind."""
    from infsched.runner import ChapterFailed, run_chapter

    (book / "bad.md").write_text(chapter("Bad", 'raise ValueError("no")'))
    with pytest.raises(ChapterFailed, match="partly executed notebook"):
        run_chapter("bad", {}, scale="smoke", out_dir=tmp_path / "cell")
    kept = {p.name for p in (tmp_path / "cell").iterdir()}
    # kernel.log stays only if the kernel wrote to its stderr, which a busy machine can make it
    # do (a slow-heartbeat warning): it is the log, kept by design, not an empty leftover
    assert kept - {"kernel.log"} == {"bad.ipynb"}
    assert "kernel.log" not in kept or (tmp_path / "cell" / "kernel.log").stat().st_size > 0
    # any failure to start the kernel (its type is jupyter_client's): the test is the clean-up
    with pytest.raises(Exception):  # noqa: B017
        run_chapter("bad", {}, scale="smoke", out_dir=tmp_path / "kernel", kernel="no-such-kernel")
    assert not (tmp_path / "kernel").exists()


def test_list_chapters_in_toc_order(book):
    for name in ("alpha", "beta", "gamma"):
        (book / f"{name}.md").write_text(chapter(name.title(), GOOD))
    assert list(runner.list_chapters()) == ["alpha", "beta", "gamma"]        # no _toc.yml: sorted
    (book.parent / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/gamma\n  - file: book/alpha\n")
    assert list(runner.list_chapters()) == ["gamma", "alpha", "beta"]
