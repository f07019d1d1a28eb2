"""Long tables on a page: a short summary in view, every row one click away and as a CSV.

A sweep of 40 to 60 rows buries the page it is on. :func:`summarised` shows a summary table,
then a link that downloads the full table as CSV (a ``data:`` URI, so the link works in the
built HTML, offline, with nothing written beside the page) and the full table in a collapsed
``<details>`` block. :func:`thin` picks a summary: the rows at a few evenly spaced values of
one column (the lowest, the middle and the highest load, say). :func:`collapsed` shows no
summary at all, for the table behind a figure that the figure and its verdict rows already tell:
one line saying what it holds, the download and the rows folded.

In a chapter::

    t = ex.sweep_table(f6, "latency")
    pages.summarised(t, "tad-fig6", summary=pages.thin(t, "rho"))
"""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import require

__all__ = ["MISSING", "collapsed", "folded", "readable", "thin", "summarised", "Summarised", "build_commit",
           "build_note", "setup"]


def thin(df: pd.DataFrame, by: str, keep: int = 3, *, within: str | list[str] | None = None) -> pd.DataFrame:
    """The rows of ``df`` whose ``by`` (a column or an index level) is one of ``keep`` evenly
    spaced values among its sorted distinct values, the first and the last included; with
    ``within`` (columns or index levels), the values are picked in each group separately."""
    require(isinstance(keep, int) and keep >= 1, "keep", keep, "must be a positive integer")
    names = [*df.columns, *(n for n in df.index.names if n is not None)]
    groups = [] if within is None else [within] if isinstance(within, str) else list(within)
    for name, value in (("by", by), *(("within", g) for g in groups)):
        require(value in names, name, value,
                "must be a column or an index level of the table: " + ", ".join(map(str, names)))

    def column(name: str) -> pd.Series:
        if name in df.columns:
            return df[name].reset_index(drop=True)
        return pd.Series(df.index.get_level_values(name))

    values = column(by)
    key = pd.Series(0, index=values.index) if not groups else \
        pd.concat([column(g) for g in groups], axis=1).apply(tuple, axis=1)
    mask = np.zeros(len(df), dtype=bool)
    for _, pos in values.groupby(key, sort=False).groups.items():
        v = values.loc[pos]
        distinct = np.sort(v.dropna().unique())
        picks = distinct if len(distinct) <= keep else \
            distinct[np.unique(np.linspace(0, len(distinct) - 1, keep).round().astype(int))]
        mask[np.asarray(pos)] = v.isin(picks).to_numpy()
    return df[mask]


@dataclass(frozen=True)
class Summarised:
    """A summary table, a CSV download of the full table and the full table collapsed.

    Displayed by Jupyter as HTML; as text it shows the summary and names the full table."""

    summary: pd.DataFrame
    full: pd.DataFrame
    name: str
    index: bool = True
    caption: str | None = None

    def _repr_html_(self) -> str:
        n = len(self.full)
        csv = self.full.to_csv(index=self.index).encode()
        href = "data:text/csv;base64," + base64.b64encode(csv).decode()
        fname = html.escape(f"{self.name}.csv")
        summary = "" if self.summary.empty else \
            self.summary.to_html(index=self.index, classes="dataframe", border=0)
        full = self.full.to_html(index=self.index, classes="dataframe", border=0)
        return (
            f'<div class="infsched-summarised">{summary}'
            f'<p>{html.escape(self._caption())} '
            f'<a download="{fname}" href="{href}">Download {_rows(n, "the")} ({fname})</a></p>'
            f'<details><summary>Show {_rows(n, "the")}</summary>{full}</details></div>')

    def _caption(self) -> str:
        return self.caption or shown_caption(len(self.summary), len(self.full))

    def __repr__(self) -> str:
        shown = "" if self.summary.empty else f"{self.summary.to_string(index=self.index)}\n"
        return (f"{shown}{self._caption()} "
                f"{_rows(len(self.full), 'The').capitalize()}: {self.name}.csv, linked from the HTML page.")


def _rows(n: int, article: str = "") -> str:
    """``"all 12 rows"``, ``"the 1 row"``, ``"no row"``: a count of rows in words that agree."""
    if n == 0:
        return "no row"
    if n == 1:
        return f"{article.lower() or 'the'} 1 row"
    return f"all {n} rows"


def shown_caption(k: int, n: int) -> str:
    """What a summary shows of a full table: ``"6 of 10 rows shown."``, ``"All 3 rows shown."``
    when the summary is the whole table, ``"The 1 row shown."``, ``"No row."`` for an empty one."""
    require(0 <= k <= n, "k", k, f"must be between 0 and the table's {n} rows")
    if n == 0:
        return "No row."
    if k == n:
        return "The 1 row shown." if n == 1 else f"All {n} rows shown."
    return f"{k} of {n} rows shown."


def summarised(full: pd.DataFrame, name: str, *, summary: pd.DataFrame | None = None,
               index: bool = True, caption: str | None = None) -> Summarised:
    """Show ``summary`` (default: the first and last rows of ``full``) with the whole of ``full``
    collapsed beneath it and downloadable as ``<name>.csv``. ``caption`` says what the summary
    is (default: "k of n rows shown.")."""
    require(isinstance(full, pd.DataFrame), "full", type(full).__name__, "must be a DataFrame")
    require(isinstance(name, str) and name != "" and "/" not in name, "name", name,
            "must be a file name without extension, e.g. 'tad-fig4'")
    if summary is None:
        summary = full if len(full) <= 6 else pd.concat([full.head(3), full.tail(3)])
    return Summarised(summary, full, name, index, caption)


def collapsed(full: pd.DataFrame, name: str, what: str, *, index: bool = True) -> Summarised:
    """No summary in view: ``what`` (a sentence saying what the table holds), the download of
    ``full`` as ``<name>.csv`` and every row folded beneath; for the rows behind a figure whose
    plot and verdict rows already say what they show."""
    require(isinstance(what, str) and what.strip() != "", "what", what,
            "must say in a sentence what the folded table holds")
    return summarised(full, name, summary=full.iloc[:0], index=index, caption=what.strip())


# --------------------------------------------------------------------------- the build's commit

def build_commit(path: str | os.PathLike[str] | None = None) -> str:
    """The commit of the checkout at ``path`` (default: this library's), as a page names it:
    ``"4bfa6f9"``, ``"4bfa6f9 with uncommitted changes"`` when tracked files differ from it, or
    ``"an unknown commit (not a git checkout)"``."""
    import subprocess

    where = Path(path) if path is not None else Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True,
                              timeout=60, check=True).stdout.strip()

    try:
        sha = git("rev-parse", "--short=7", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "an unknown commit (not a git checkout)"
    return f"{sha} with uncommitted changes" if dirty else sha


def build_note(commit: str) -> str:
    """The sentence each page carries: the commit the book was built from."""
    return f"This page was built from commit {commit} of the book's repository."


def _on_doctree_resolved(app: Any, doctree: Any, docname: str) -> None:
    """Name the build's commit on every page: inside the note at the top of a chapter that says
    where its results come from (beside the results' commit), else at the page's end."""
    from docutils import nodes

    commit = getattr(app.env, "infsched_build_commit", None)
    if commit is None:
        commit = app.env.infsched_build_commit = build_commit(app.srcdir)
    para = nodes.paragraph(text=build_note(commit))
    para["classes"].append("infsched-build-commit")
    for note in doctree.findall(nodes.Admonition):
        if "This page shows" in note.astext():
            note += para
            return
    sections = list(doctree.findall(nodes.section))
    (sections[0] if sections else doctree).append(para)


def _on_env_outdated(app: Any, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """When the commit changed since the last build, every page is written again (its note
    names the commit), whether or not its source changed."""
    commit = build_commit(app.srcdir)
    before = getattr(env, "infsched_build_commit", None)
    env.infsched_build_commit = commit
    if before is not None and before != commit:
        return sorted(set(env.found_docs) - set(added) - set(changed) - set(removed))
    return []


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension (``sphinx: extra_extensions``): every page names the commit the book
    was built from (:func:`build_commit`), beside the results' commit where the page has one."""
    app.connect("env-get-outdated", _on_env_outdated)
    app.connect("doctree-resolved", _on_doctree_resolved)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}


#: what a reader sees for a missing value in a displayed table (the page says what it means)
MISSING = "—"


def readable(df: pd.DataFrame, digits: int | None = None, *, missing: str = MISSING) -> pd.DataFrame:
    """``df`` for display: floats rounded to ``digits`` (if given) and every missing value
    (``NaN``, ``None``) written as ``missing``, so that no page shows ``NaN``. The numbers are
    unchanged otherwise; the chapter says what the dash means where it shows the table."""
    require(isinstance(df, pd.DataFrame), "df", type(df).__name__, "must be a DataFrame")
    require(digits is None or (isinstance(digits, int) and digits >= 0), "digits", digits,
            "must be None or a non-negative integer")
    out = df.round(digits) if digits is not None else df.copy()
    holes = out.isna()
    if not holes.to_numpy().any():
        return out
    out = out.astype(object)
    return out.where(~holes, missing)


def folded(df: pd.DataFrame, name: str, *, keep: int = 10, index: bool = True,
           caption: str | None = None) -> pd.DataFrame | Summarised:
    """``df`` itself when it has at most ``keep`` rows; else :func:`summarised` (its first and
    last rows in view, every row folded beneath and as ``<name>.csv``)."""
    require(isinstance(keep, int) and keep >= 1, "keep", keep, "must be a positive integer")
    require(isinstance(df, pd.DataFrame), "df", type(df).__name__, "must be a DataFrame")
    return df if len(df) <= keep else summarised(df, name, index=index, caption=caption)
