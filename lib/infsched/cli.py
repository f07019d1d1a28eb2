"""The ``infsched`` command.

::

    infsched list                                   chapters, their parameters and defaults
    infsched run CHAPTER [-p name=value ...] [--scale smoke|default|paper] [--out DIR]
    infsched refresh-nbval [CHAPTER ...]            re-store nbval reference notebooks

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


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="infsched", description="Run the chapters of the infsched book.")
    sub = ap.add_subparsers(dest="command", metavar="{list,run,refresh-nbval}", parser_class=_Parser)
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
