"""SIGINT or SIGTERM to ``infsched run``: exit status 130 and one line, the chapter's kernel and
sweep workers stopped, finished points kept in the cache, and a rerun reusing them."""

import os
import signal
import subprocess
import sys
import time

import psutil

from chapter_header import HEADER

SLOW = HEADER + '''
# A slow sweep

```{code-cell} ipython3
:tags: [parameters]
n_points = 12
```

```{code-cell} ipython3
from infsched.sweep import run_sweep
from slowpoint import point

df = run_sweep(point, [{"i": i} for i in range(n_points)], n_jobs=2)
print("total", df["y"].sum())
```
'''


POINT = '''
import os
import time


def point(i):
    time.sleep(float(os.environ.get("POINT_SLEEP", "0")))
    with open(os.environ["COUNTER"], "a") as f:
        f.write("x")
    return {"y": i * 2}
'''


def _wait(condition, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _alive(p):
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_interrupted_run_stops_everything_and_keeps_the_cache(tmp_path, monkeypatch):
    book, cache, counter = tmp_path / "book", tmp_path / "cache", tmp_path / "calls"
    book.mkdir()
    (book / "slow.md").write_text(SLOW)
    (tmp_path / "slowpoint.py").write_text(POINT)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, INFSCHED_BOOK=str(book), INFSCHED_CACHE=str(cache), COUNTER=str(counter),
               POINT_SLEEP="0.4", PYTHONPATH=path)
    cmd = [sys.executable, "-m", "infsched.cli", "run", "slow", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    entries = lambda: sorted(cache.rglob("*.pkl"))  # noqa: E731
    try:
        _wait(lambda: entries() or proc.poll() is not None, 240, "a finished point")
        assert proc.poll() is None, proc.communicate()
        kids = psutil.Process(proc.pid).children(recursive=True)
        assert len(kids) >= 3  # the kernel and two workers at least
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip() and "[IPKernelApp]" not in ln]
    assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, err
    _wait(lambda: not any(_alive(p) for p in kids), 30, "every child process to end")
    kept = entries()
    assert 1 <= len(kept) < 12
    time.sleep(1.0)
    assert entries() == kept  # nothing goes on writing to the cache
    # a rerun (here the chapter's sweep itself, in this process) computes only the missing points
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("COUNTER", str(counter))
    from slowpoint import point

    from infsched.sweep import run_sweep

    before = len(counter.read_text())
    df = run_sweep(point, [{"i": i} for i in range(12)], cache_dir=cache)
    assert list(df["y"]) == [2 * i for i in range(12)]
    assert len(counter.read_text()) - before == 12 - len(kept)  # finished points were reused
    assert len(entries()) == 12
