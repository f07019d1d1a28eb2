"""Run every speed benchmark in this folder (``make bench``).

Each ``bench_*.py`` exposes ``main() -> dict`` and prints its own table; results are written to
``benchmarks/results/<name>.json``. Speed goals are ratios measured in one run (fast engine vs
reference, ours vs the paper's reported time), never timed assertions in tests.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for path in sorted(HERE.glob("bench_*.py")):
        print(f"== {path.stem}", flush=True)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            module.main()
        except Exception as exc:  # report every benchmark, then fail
            print(f"{path.stem} failed: {exc!r}", file=sys.stderr)
            failed.append(path.stem)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
