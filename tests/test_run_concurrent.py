"""Several ``infsched run`` start-ups at once: each run's kernel takes its connection file and IPC
sockets in a folder of its own (:func:`infsched.runner._kernel_config`), so that two kernels
started together never take the same socket names (before, in 4 of 5 pairs one run failed at
kernel start with ``Invalid Signature`` or ``Kernel didn't respond``).

What collided was the kernel start-up, the same for every chapter, so the test starts three runs
of a one-cell chapter in a scratch book (a second each, rather than a book chapter's minutes at
smoke scale), together, on one sweep cache; each must finish and print its own answer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from chapter_header import HEADER
from infsched.runner import _kernel_config

CHAPTER = HEADER + """
# Mini

```{code-cell} ipython3
:tags: [parameters]
x = 1
```

```{code-cell} ipython3
import os
print("answer", x * 7, os.getpid())
```
"""


def test_a_runs_kernel_files_are_its_own(tmp_path):
    c = _kernel_config(tmp_path / "rt")
    assert Path(c.KernelManager.ip).parent == tmp_path / "rt"
    assert Path(c.KernelManager.connection_file).parent == tmp_path / "rt"


def test_three_runs_started_together_all_succeed(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "mini.md").write_text(CHAPTER)
    env = dict(os.environ, INFSCHED_BOOK=str(book), INFSCHED_CACHE=str(tmp_path / "cache"),
               INFSCHED_SCALE="smoke", PYTHONPATH=os.pathsep.join(sys.path))
    procs = [subprocess.Popen([sys.executable, "-m", "infsched.cli", "run", "mini", "-p", f"x={i}",
                               "--out", str(tmp_path / f"out{i}"), "--no-progress"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(3)]
    for i, p in enumerate(procs):
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        nb = (tmp_path / f"out{i}" / "mini.ipynb").read_text()
        assert f"answer {i * 7}" in nb
    assert not list(tmp_path.glob("kernel-ipc*"))  # no socket left in the working folder
