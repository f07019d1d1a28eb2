"""The ``infsched`` command.

::

    infsched list                                   chapters, their parameters and defaults
    infsched run CHAPTER [-p name=value ...] [--scale smoke|default|paper] [--out DIR]
    infsched refresh-nbval [CHAPTER ...]            re-store nbval reference notebooks
    infsched profile MODEL... [--batch-sizes 1,2,4,8,16,32] [--device auto|cpu|cuda] [--out FILE]
                                                    time zoo models on this machine
    infsched profile --list                         the zoo, and which models build here

``-p`` values are Python literals (``-p n_servers=1024 -p rates=[0.5,0.9]``); anything that is
not a literal is taken as a string (``-p policy=tad``). Errors print one line,
``infsched: error: ...``, on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import ast
import sys
from typing import Any, NoReturn, Sequence

from .errors import ConfigError, InfeasibleError
from .runner import SCALES, ChapterFailed, list_chapters, refresh_nbval, run_chapter

__all__ = ["main", "parse_param"]


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
        value = raw
    return name, value


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


def _cmd_run(args: argparse.Namespace) -> int:
    params = dict(parse_param(p) for p in args.param or [])
    out = run_chapter(args.chapter, params, scale=args.scale, out_dir=args.out)
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


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="infsched", description="Run the chapters of the infsched book; profile models on this machine.")
    sub = ap.add_subparsers(dest="command", metavar="{list,run,refresh-nbval,profile}", parser_class=_Parser)
    sub.required = True
    p = sub.add_parser("list", help="list chapters, their parameters and defaults")
    p.set_defaults(func=_cmd_list)
    p = sub.add_parser("run", help="execute a chapter with new parameters (papermill)")
    p.add_argument("chapter")
    p.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                   help="set a parameter (a Python literal, else a string); repeatable")
    p.add_argument("--scale", help="smoke | default | paper")
    p.add_argument("--out", metavar="DIR", help="output folder (default _build/runs/<chapter>-<hash>)")
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
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``infsched`` console script; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
        if getattr(args, "scale", None) is not None and args.scale not in SCALES:
            raise ConfigError(f"scale = {args.scale!r}: must be one of " + ", ".join(SCALES))
        return int(args.func(args))
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except (_UsageError, ConfigError, InfeasibleError, ChapterFailed, OSError) as exc:
        msg = " ".join(str(exc).split())
        print(f"infsched: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("infsched: error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
