"""The ``infsched`` command.

::

    infsched list                                   chapters, their parameters and defaults
    infsched run CHAPTER [-p name=value ...] [--scale smoke|default|paper] [--out DIR] [--no-progress]
    infsched refresh-nbval [CHAPTER ...]            re-store nbval reference notebooks
    infsched profile MODEL... [--batch-sizes 1,2,4,8,16,32] [--device auto|cpu|cuda] [--out FILE]
                                                    time zoo models on this machine
    infsched profile --list                         the zoo, and which models build here
    infsched results build [CHAPTER ...] [--seal] | status | verify [--budget CPU_S]
                                                    the paper-scale results store the book renders
    infsched sweep CHAPTER [-e EXPERIMENT ...] [-p name=v1,v2,... ...] [--scale S] [--seeds 0,1,2]
                   [--jobs N] [--dask ADDRESS] [--out FILE.csv|FILE.parquet]
                                                    a chapter's experiments over a grid: one table

``-p`` values are Python literals (``-p n_servers=1024 -p rates=[0.5,0.9]``); anything that is
not a literal is taken as a string (``-p policy=tad``). In ``sweep``, ``-p`` gives a list of
values separated by commas outside brackets and quotes (``-p n=64,128 -p ns=[64,128],[256]``).
Errors print one line,
``infsched: error: ...``, on stderr and exit with status 2.

Before a chapter of the book runs at ``default`` or ``paper`` scale, ``run`` says on stderr how
long it will take and what the estimate rests on (:func:`infsched.limits.chapter_estimate`);
while it runs, a progress line shows the time so far and each running sweep's points done,
with the time left (:class:`RunProgress`). ``sweep`` says how long its points will take from
the measured times of earlier points of the same kind in the cache, then shows a bar.

Every request is bounded before it starts: ``run`` and ``sweep`` refuse one whose estimate
exceeds the CPU budget, 24 CPU-hours unless ``--max-cpu-hours H`` or ``$INFSCHED_MAX_CPU_H`` says
otherwise (:func:`infsched.limits.check_budget`); a sweep's seeds and grid are counted, not
listed, for that check. ``sweep --out`` writes its table whole or not at all
(:mod:`infsched.atomic`).

``sweep`` prints one line on stderr for each cache entry it repairs (a damaged entry is
recomputed) and for each warning its points give, such as a run's long-run estimate
(:func:`infsched.limits.warn_long`); ``run`` repeats the repairs and estimates its chapter's
cells printed on the page, once the chapter has run (or failed).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .errors import ConfigError, InfeasibleError
from .runner import (
    SCALES,
    ChapterFailed,
    ChapterInterrupted,
    list_chapters,
    refresh_nbval,
    run_chapter,
)

__all__ = ["count_seeds", "main", "parse_param", "parse_values", "parse_seeds"]


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage block
        raise _UsageError(message)


def parse_param(text: str) -> tuple[str, Any]:
    """``"name=value"`` -> ``(name, value)``; value by ``ast.literal_eval``, else the string."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ConfigError(f"-p {text!r}: must be name=value with a Python identifier as name")
    try:
        value: Any = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        digits = raw.strip().lstrip("+-").replace("_", "")
        if digits.isdigit() and digits.isascii():  # a number Python will not read (over 4,300 digits)
            raise ConfigError(f"-p {name}=<a number of {len(digits):,} digits>: out of range; no "
                              "parameter takes a number that large") from None
        value = raw
    return name, value


def _split_top(raw: str) -> list[str]:
    """Split on commas that are outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in raw:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_values(text: str) -> tuple[str, list[Any]]:
    """``"name=v1,v2,..."`` -> ``(name, [v1, v2, ...])``: values split on commas outside
    brackets and quotes, each a Python literal, else a string."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ConfigError(f"-p {text!r}: must be name=v1,v2,... with a Python identifier as name")
    pieces = [piece.strip() for piece in _split_top(raw)]
    if not raw.strip() or any(not piece for piece in pieces):
        raise ConfigError(f"-p {text!r}: empty value; give one or more values separated by commas")
    return name, [parse_param(f"{name}={piece}")[1] for piece in pieces]


def count_seeds(text: str) -> int:
    """How many seeds ``--seeds text`` names, counted without listing them."""
    return sum(r.stop - r.start for r in _seed_ranges(text))


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` or ``"0-4"`` (inclusive) or a mix -> a list of non-negative integers."""
    seeds: list[int] = []
    for r in _seed_ranges(text):
        seeds += r
    return seeds


def _seed_ranges(text: str) -> list[range]:
    out: list[range] = []
    for piece in text.split(","):
        lo, dash, hi = piece.strip().partition("-")
        try:
            first, last = int(lo), int(hi if dash else lo)
        except ValueError:
            raise ConfigError(f"--seeds {text!r}: must be non-negative integers separated by "
                              "commas, or a range such as 0-4") from None
        if last < first:
            raise ConfigError(f"--seeds {text!r}: the range {piece.strip()} is empty")
        out.append(range(first, last + 1))
    return out


def _cmd_sweep(args: argparse.Namespace) -> int:
    import importlib.util
    import os
    import warnings
    from pathlib import Path

    from .chapters import sweep_chapter

    _set_budget(args.max_cpu_hours)
    if args.jobs is not None and not (args.jobs >= 1 or args.jobs == -1):
        raise ConfigError(f"--jobs {args.jobs}: must be a positive integer, or -1 for all cores")
    params: dict[str, list[Any]] = {}
    for text in args.param or []:
        name, values = parse_values(text)
        if name in params:
            raise ConfigError(f"-p {name}: given twice; list every value in one -p {name}=v1,v2,...")
        params[name] = values
    out = Path(args.out) if args.out else None
    if out is not None:
        suffix = out.suffix.lower()
        if suffix not in (".csv", ".parquet"):
            raise ConfigError(f"--out {args.out!r}: must end in .csv or .parquet")
        if suffix == ".parquet" and not any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")):
            raise ConfigError(f"--out {args.out!r}: writing Parquet needs pyarrow, which is not "
                              "installed here; write a .csv instead")
        if not out.parent.is_dir():
            raise ConfigError(f"--out {args.out!r}: folder {str(out.parent)!r} does not exist")
    scale = args.scale or os.environ.get("INFSCHED_SCALE", "default")
    n_points = _budget_grid(args.chapter, params, args.experiment, scale, count_seeds(args.seeds))
    if not args.no_progress and n_points >= 100_000:  # listing and checking them takes a while
        print(f"infsched: {n_points:,} points within the budget; listing and checking them before "
              "the first starts", file=sys.stderr, flush=True)
    if not args.no_progress:
        _sweep_context(args.chapter, params, args.experiment, scale, parse_seeds(args.seeds))
    with warnings.catch_warnings():
        _warnings_as_lines()  # a repaired cache entry, a long-run estimate: one line each
        df = sweep_chapter(args.chapter, params, experiments=args.experiment or None, scale=scale,
                           seeds=parse_seeds(args.seeds), n_jobs=args.jobs, dask=args.dask,
                           cache_dir=False if args.no_cache else None,
                           progress=not args.no_progress, on_error="record")
    failed = df[df["error"].notna()]  # one row per failed point
    table = df if len(failed) else df.drop(columns="error")
    if out is None:
        table.to_csv(sys.stdout, index=False)
    else:  # whole or not at all: never a partial table where the reader expects one
        from .atomic import atomic_write

        note = ("no file written; the computed points are in the cache, so a rerun writes the "
                "table at once" if not args.no_cache else "no file written")
        if out.suffix.lower() == ".csv":
            atomic_write(out, table.to_csv(index=False), note=note)
        else:
            atomic_write(out, writer=lambda tmp: table.to_parquet(tmp, index=False), note=note)
    for _, row in failed.iterrows():
        where = ", ".join(f"{k}={row[k]}" for k in ("experiment", "seed", *params))
        print(f"infsched: {where}: failed: {row['error']}", file=sys.stderr)
    if out is not None:
        print(f"wrote {out}: {len(table)} row(s)" + (f"; {len(failed)} point(s) failed (rerun to retry "
              "them" + ("" if args.no_cache else "; the others are cached") + ")" if len(failed) else ""))
    return 1 if len(failed) else 0


def _budget_grid(chapter: str, params: dict[str, list[Any]], experiments: list[str] | None,
                 scale: str, n_seeds: int) -> int:
    """Count the sweep's points (experiments x combinations x seeds) before any is listed, and
    refuse a sweep whose estimate exceeds the CPU budget (:func:`infsched.limits.check_grid`);
    returns how many."""
    import math

    from .chapters import chapter_experiments
    from .limits import check_grid

    table = chapter_experiments(chapter)
    runs = len(experiments) if experiments else len(table)
    n_points = runs * math.prod(len(v) for v in params.values()) * n_seeds
    check_grid(chapter, len(table), n_points, scale)
    return n_points


def _set_budget(hours: float | None) -> None:
    """``--max-cpu-hours H``: the CPU budget of this command and of what it starts (the kernel,
    the sweep's workers), through ``$INFSCHED_MAX_CPU_H``."""
    import math
    import os

    from .limits import MAX_CPU_H_ENV

    if hours is None:
        return
    if not (hours > 0) or math.isnan(hours):
        raise ConfigError(f"--max-cpu-hours {hours!r}: must be a positive number of CPU-hours (or inf)")
    os.environ[MAX_CPU_H_ENV] = repr(hours)


def _warnings_as_lines() -> None:
    """Inside ``warnings.catch_warnings()``: each warning of a sweep on stderr as one line,
    ``infsched: ...`` (above a progress bar, if one is drawn): every cache entry the sweep
    repairs (``infsched cache: FILE: why; recomputing this point``, once for each), and the
    estimate of a run expected to take long (:func:`infsched.limits.warn_long`). The sweep's
    summary of its failed points is left out: each failed point gets its own line after the
    table."""
    import warnings

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
             line: Any = None) -> None:
        text = " ".join(str(message).split())
        text = text if text.startswith("infsched") else f"infsched: {category.__name__}: {text}"
        try:
            from tqdm import tqdm

            tqdm.write(text, file=sys.stderr)
        except ImportError:  # pragma: no cover - tqdm is a dependency
            print(text, file=sys.stderr, flush=True)

    warnings.showwarning = show
    warnings.filterwarnings("ignore", message=r".*point\(s\) failed and were not cached",
                            category=RuntimeWarning)
    warnings.filterwarnings("always", message="infsched cache: ", category=RuntimeWarning)


def _page_notices(notebook: Any) -> list[str]:
    """What the cells of an executed chapter said that ``infsched run`` repeats on its own
    stderr: each cache entry a sweep repaired (a cell prints ``infsched cache: ...`` on its
    page, :mod:`infsched.cache`) and each long-run estimate (:func:`infsched.limits.warn_long`,
    a RuntimeWarning on the cell's stderr), once each, in page order."""
    import nbformat

    if notebook is None:
        return []
    try:
        nb = nbformat.read(notebook, as_version=4)
    except (OSError, ValueError, TypeError, AttributeError):
        return []
    lines: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") != "stream":
                continue
            for line in str(out.get("text", "")).splitlines():
                if line.startswith("infsched cache: "):
                    lines.append(line.strip())
                elif "RuntimeWarning: " in line and "(an estimate)" in line:
                    lines.append("infsched: " + line.split("RuntimeWarning: ", 1)[1].strip())
    return list(dict.fromkeys(lines))


def _check_out_dir(out: str) -> None:
    """``infsched run --out DIR``: a folder that can be created (and written), checked once the
    parameters have passed, before the kernel starts; what this check creates is removed again
    (the run creates it)."""
    import os
    from pathlib import Path

    path = Path(out).expanduser().absolute()
    made: list[Path] = []
    q = path
    while not q.exists() and q != q.parent:
        made.append(q)
        q = q.parent
    if q.exists() and not q.is_dir():
        raise ConfigError(f"--out {out!r}: {str(q)!r} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigError(f"--out {out!r}: the folder cannot be written")
    except OSError as exc:
        raise ConfigError(f"--out {out!r}: the folder cannot be created ({exc.strerror or exc})") from None
    finally:
        for m in made:  # deepest first
            try:
                m.rmdir()
            except OSError:
                break


def _sweep_context(chapter: str, params: dict[str, list[Any]], experiments: list[str] | None,
                   scale: str, seeds: list[int]) -> None:
    """Before a sweep with a progress bar, once its grid has passed its checks: what the whole
    chapter costs at this scale (:func:`infsched.limits.chapter_estimate`) beside what share of
    it the sweep runs; the sweep itself then says how long its points will take from the times
    of earlier points (:func:`infsched.sweep.run_sweep`)."""
    import math

    from .chapters import chapter_experiments, chapter_grid
    from .limits import chapter_estimate

    chapter_grid(chapter, params, experiments=experiments, scale=scale, seeds=seeds)  # one-line errors first
    est = chapter_estimate(chapter, {}, scale, 2)
    if est is None:
        return
    total = len(chapter_experiments(chapter))
    runs = len(experiments) if experiments else total
    combos = math.prod(len(v) for v in params.values())
    print(f"infsched: (the whole chapter) {est[2]}; this sweep runs {runs} of its {total} "
          f"experiments x {combos} parameter combination(s) x {len(seeds)} seed(s)",
          file=sys.stderr, flush=True)


def _cmd_list(args: argparse.Namespace) -> int:
    chapters = list_chapters()
    if not chapters:
        print("no runnable chapters")
        return 0
    for name, info in chapters.items():
        print(f"{name}: {info.title}  ({info.path.name})")
        width = max((len(k) for k in info.parameters), default=0)
        for k, v in info.parameters.items():
            helptext = info.help.get(k, "")
            line = f"    {k:<{width}} = {v!r}"
            print(line + (f"    # {helptext}" if helptext else ""))
    return 0


class RunProgress:
    """What ``infsched run`` shows on stderr while a chapter runs: the time since the start,
    beside the estimate said before it, and each running sweep's points done of its total with
    the time left at the rate of the points finished so far. On a terminal one line is redrawn
    in place (and erased at the end); otherwise (a log file) a line is written every ``every``
    seconds once a run has lasted that long."""

    def __init__(self, chapter: str, estimate: tuple[float, float, str] | None = None, *,
                 stream: Any = None, live: bool | None = None, every: float = 60.0):
        self.chapter, self.estimate = chapter, estimate
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty()) if live is None else live
        self.every, self.last, self.width = every, 0.0, 0

    def line(self, state: dict[str, Any] | None, elapsed: float) -> str:
        from .limits import _span, fmt_duration

        text = f"infsched: {self.chapter}: {fmt_duration(elapsed)}"
        if self.estimate is not None and self.estimate[1] != float("inf"):
            text += f" of about {_span(self.estimate[0], self.estimate[1])}"
        for b in (state or {}).get("bars", []):
            finished = int(b.get("done", 0)) + int(b.get("failed", 0))
            text += f"; sweep {b.get('desc')}: {finished + int(b.get('cached', 0))}/{b.get('total')} points"
            left, took = int(b.get("left", 0)), float(state.get("now", 0)) - float(b.get("start", 0))
            if finished and left and took > 0:
                text += f", about {fmt_duration(took / finished * left)} left"
        return text

    def update(self, state: dict[str, Any] | None, elapsed: float) -> None:
        text = self.line(state, elapsed)
        if self.live:
            import shutil

            text = text[:max(20, shutil.get_terminal_size().columns - 1)]
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            self.stream.flush()
        elif elapsed - self.last >= self.every:
            self.last = elapsed
            self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.live and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _cmd_run(args: argparse.Namespace) -> int:
    _set_budget(args.max_cpu_hours)
    params = dict(parse_param(p) for p in args.param or [])
    show = RunProgress(args.chapter)

    def on_start(checked: dict[str, Any], scale: str | None) -> None:
        from .limits import chapter_estimate
        from .sweep import env_processes

        procs = checked.get("processes")
        est = chapter_estimate(args.chapter, checked, scale,
                               procs if isinstance(procs, int) else env_processes())
        show.estimate = est
        if est is not None and est[1] != float("inf"):
            from .limits import check_budget

            # the upper end: one core's CPU seconds (the measurement's, grown with a size parameter)
            check_budget(f"infsched run {args.chapter}", est[1], est[2])
        if args.out is not None:
            _check_out_dir(args.out)
        if est is not None:
            print(f"infsched: {est[2]}; finished sweep points are cached: Ctrl-C stops the run "
                  "and a rerun resumes", file=sys.stderr, flush=True)

    try:
        out = run_chapter(args.chapter, params, scale=args.scale, out_dir=args.out,
                          on_start=on_start, progress=None if args.no_progress else show)
    except ChapterFailed as exc:
        for line in _page_notices(getattr(exc, "notebook", None)):
            print(line, file=sys.stderr)
        raise
    for line in _page_notices(out):  # the cache entries its sweeps repaired, ...
        print(line, file=sys.stderr)
    print(out)
    figs = sorted((out.parent / "figures").glob("*.png"))
    if figs:
        print(f"{len(figs)} figure(s) in {out.parent / 'figures'}")
    return 0


def _cmd_refresh(args: argparse.Namespace) -> int:
    for p in refresh_nbval(args.chapters):
        print(p)
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from .profiling import ProfileSettings, availability, linear_fit, profile_zoo
    from .profiling.timing import RAW_COLUMNS
    from .profiling.zoo import check_names

    if args.list:
        table = availability(args.models or None)
        with_reason = table.assign(note=table["note"].str.slice(0, 100))
        print(with_reason.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        return 0
    if not args.models:
        raise _UsageError("profile: name at least one model, family or paper (see --list)")
    names = check_names(args.models)
    settings = ProfileSettings(batch_sizes=args.batch_sizes, device=args.device, warmup=args.warmup,
                               reps=args.reps, min_reps=min(args.min_reps, args.reps),
                               budget_s=args.budget, max_forward_s=args.max_forward,
                               threads=args.threads, compile=args.compile, half=args.half)
    run = profile_zoo(names, settings, out=args.out, progress=not args.no_progress)
    for m, why in run.unavailable.items():
        print(f"infsched: {m}: not profiled: {why}", file=sys.stderr)
    if args.out is None:
        run.raw.to_csv(sys.stdout, index=False, columns=list(RAW_COLUMNS), float_format="%.6g")
    else:
        if run.resumed:
            print(f"{run.resumed} (model, batch) point(s) were already in {args.out}: kept, not re-measured")
        if not run.raw.empty:
            fits = linear_fit(run.raw)
            print(fits.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        print(f"wrote {args.out}")
    return 1 if run.unavailable else 0


def _cmd_results(args: argparse.Namespace) -> int:
    from . import results, store

    if args.seal and args.action != "build":
        raise _UsageError("--seal: only with `results build`")
    if args.action == "build":
        names = args.chapters or results.stored_chapters()
        for name in names:  # every name checked before the first build starts
            results.require_storable(name)
        if args.seal:  # no chapter runs: the stored lines' digests go into the manifests
            for name in names:
                m = store.seal(name)
                print(f"{name}: sealed {sum(map(len, m['digests'].values())):,} stored points "
                      "(their content digests are in the manifest)")
            return 0
        for name in names:
            print(f"infsched: results build {name}: running the chapter at paper scale; stored "
                  "points are reused, finished points are cached (Ctrl-C stops, a rerun resumes)",
                  file=sys.stderr, flush=True)
            m = results.build(name, progress=None if args.no_progress else RunProgress(name))
            print(f"{name}: {sum(map(len, m['points'].values())):,} points stored, "
                  f"{m['points_cpu_s'] / 3600:.2f} CPU-hours in the points, build "
                  f"{m['build_wall_s'] / 60:.1f} min wall, {m['build_cpu_s']:.0f} CPU s")
        return 0
    if args.action == "status":
        rows, damaged = [], 0
        for name in list_chapters():
            st = store.status(name)
            if st is None:
                rows.append(f"{name:<12} (no paper-scale build stored)")
                continue
            if st["damaged"] and all("(not sealed)" in d for d in st["damaged"]):
                damaged += 1
                state = f"NOT SEALED: seal with `infsched results build --seal {name}`"
            elif st["damaged"]:
                damaged += 1
                state = f"DAMAGED: {len(st['damaged'])} problem(s), rebuild with " \
                        f"`infsched results build {name}`"
            elif st["current"]:
                state = "current"
            else:
                state = "STALE: " + ("; ".join(st["stale"]) or f"{st['absent']} points missing")
            rows.append(f"{name:<12} {st['n_points']:>6,} points  {st['points_cpu_s'] / 3600:6.2f} "
                        f"CPU-h  built {st['built'][:10]} at {st['commit'][:12]}  {state}")
            rows += [f"    {line}" for line in st["damaged"]]
        print("\n".join(rows))
        return 1 if damaged else 0
    # verify
    sample = store.sample_entries(args.budget, seed=args.seed)
    bad = 0
    for e in sample:
        diff = results.recompute(e)
        if diff:
            bad += 1
            print(f"DIFFERS {e.fn} {e.key}: {'; '.join(diff[:3])}")
    print(f"{len(sample)} stored points recomputed, {bad} differ "
          f"(budget {args.budget:g} recorded CPU s, seed {args.seed})")
    return 1 if bad else 0


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="infsched", description="Run the chapters of the infsched book; sweep their experiments; profile models on this machine.")
    sub = ap.add_subparsers(dest="command", metavar="{list,run,refresh-nbval,profile,sweep,results}", parser_class=_Parser)
    sub.required = True
    p = sub.add_parser("list", help="list chapters, their parameters and defaults")
    p.set_defaults(func=_cmd_list)
    p = sub.add_parser("run", help="execute a chapter with new parameters (papermill)")
    p.add_argument("chapter")
    p.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                   help="set a parameter (a Python literal, else a string); repeatable")
    p.add_argument("--scale", help="smoke | default | paper")
    p.add_argument("--out", metavar="DIR", help="output folder (default _build/runs/<chapter>-<hash>)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress line (the time so far and each running sweep's points)")
    p.add_argument("--max-cpu-hours", type=float, default=None, metavar="H",
                   help="refuse, before any work, a request estimated to take more CPU-hours "
                        "(default $INFSCHED_MAX_CPU_H or 24)")
    p.set_defaults(func=_cmd_run)
    p = sub.add_parser("refresh-nbval", help="re-store nbval reference notebooks (smoke scale)")
    p.add_argument("chapters", nargs="*")
    p.set_defaults(func=_cmd_refresh)
    p = sub.add_parser("profile", help="time zoo models at several batch sizes on this machine")
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="zoo names (resnet18 ...), families (resnet ...), papers (ramsis, shepherd, tad) or all")
    p.add_argument("--list", action="store_true", help="list the zoo and whether each model builds here")
    p.add_argument("--batch-sizes", default="1,2,4,8,16,32", metavar="SPEC",
                   help="e.g. 1-32 or 1,2,4,8 (default 1,2,4,8,16,32)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    p.add_argument("--out", metavar="FILE",
                   help="CSV to append to; points already there are not measured again (default: stdout)")
    p.add_argument("--reps", type=int, default=30, help="timed calls per batch size, at most (30)")
    p.add_argument("--min-reps", type=int, default=5, help="timed calls per batch size, at least (5)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls per batch size (3)")
    p.add_argument("--budget", type=float, default=2.0, metavar="S",
                   help="stop timing a batch size after S seconds, once min-reps are done (2)")
    p.add_argument("--max-forward", type=float, default=None, metavar="S",
                   help="skip larger batch sizes once one call takes longer than S seconds")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model first")
    p.add_argument("--half", action="store_true", help="fp16 (CUDA only)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_profile)
    p = sub.add_parser("sweep", help="run a chapter's experiments over a parameter grid: one table")
    p.add_argument("chapter", help="tad | ramsis | kvcache | kairos | shepherd")
    p.add_argument("-e", "--experiment", action="append", metavar="NAME",
                   help="an experiment of the chapter's EXPERIMENTS (fig6 ...); repeatable (default: all)")
    p.add_argument("-p", "--param", action="append", metavar="NAME=V1,V2,...",
                   help="a grid parameter and its values (Python literals, else strings); repeatable: "
                        "the grid is the cartesian product")
    p.add_argument("--scale", help="smoke | default | paper (default $INFSCHED_SCALE or default)")
    p.add_argument("--seeds", default="0", metavar="SEEDS", help="e.g. 0,1,2 or 0-4 (default 0)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="local processes (default $INFSCHED_PROCESSES or 2; -1: all cores)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="a Dask scheduler, e.g. tcp://127.0.0.1:8786 (default $INFSCHED_DASK)")
    p.add_argument("--out", metavar="FILE", help="FILE.csv or FILE.parquet (default: CSV on stdout)")
    p.add_argument("--no-cache", action="store_true", help="recompute every point; cache nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--max-cpu-hours", type=float, default=None, metavar="H",
                   help="refuse, before any work, a request estimated to take more CPU-hours "
                        "(default $INFSCHED_MAX_CPU_H or 24)")
    p.set_defaults(func=_cmd_sweep)
    p = sub.add_parser("results", help="the results store the book renders: build, status, verify")
    p.add_argument("action", choices=("build", "status", "verify"),
                   help="build: run chapters at paper scale and store their points; status: what "
                        "is stored and whether it is current; verify: recompute a sample")
    p.add_argument("chapters", nargs="*",
                   help="build: the chapters (default: all but profiling, which measures this "
                        "machine)")
    p.add_argument("--budget", type=float, default=120.0, metavar="CPU_S",
                   help="verify: recorded CPU seconds of the sample (default 120)")
    p.add_argument("--seed", type=int, default=0, help="verify: the sample's seed (default 0)")
    p.add_argument("--no-progress", action="store_true", help="build: no progress line")
    p.add_argument("--seal", action="store_true",
                   help="build: run nothing; record the content digests of the points the "
                        "chapters' manifests list, as stored now (all present and current)")
    p.set_defaults(func=_cmd_results)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``infsched`` console script; returns the exit status."""
    _sigterm_interrupts()
    try:
        args, extra = _parser().parse_known_args(argv)
        if extra and getattr(args, "command", None) == "results" and \
                not any(x.startswith("-") for x in extra):
            args.chapters += extra  # `results build --seal tad`: chapters after an option
        elif extra:
            raise _UsageError(f"unrecognized arguments: {' '.join(extra)}")
        if getattr(args, "scale", None) is not None and args.scale not in SCALES:
            raise ConfigError(f"scale = {args.scale!r}: must be one of " + ", ".join(SCALES))
        if args.command in ("run", "sweep", "refresh-nbval", "results"):
            from .params import check_environment

            check_environment()  # $INFSCHED_PROCESSES ... before any import or kernel
        return int(args.func(args))
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except (_UsageError, ConfigError, InfeasibleError, ChapterFailed, OSError) as exc:
        msg = " ".join(str(exc).split())
        print(f"infsched: error: {msg}", file=sys.stderr)
        return 2
    except ChapterInterrupted as exc:
        print(f"infsched: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("infsched: interrupted; points already finished are kept in the cache (unless "
              "--no-cache) and a rerun reuses them", file=sys.stderr)
        return 130


def _sigterm_interrupts() -> None:
    """SIGTERM stops a command as Ctrl-C does (KeyboardInterrupt, exit status 130), so that what
    it started is stopped and what it finished is kept."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
