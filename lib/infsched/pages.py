"""Long tables on a page: a short summary in view, every row one click away and as a CSV.

A sweep of 40 to 60 rows buries the page it is on. :func:`summarised` shows a summary table,
then a link that downloads the full table as CSV (a ``data:`` URI, so the link works in the
built HTML, offline, with nothing written beside the page) and the full table in a collapsed
``<details>`` block. :func:`thin` picks a summary: the rows at a few evenly spaced values of
one column (the lowest, the middle and the highest load, say).

In a chapter::

    t = ex.sweep_table(f6, "latency")
    pages.summarised(t, "tad-fig6", summary=pages.thin(t, "rho"))
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import require

__all__ = ["MISSING", "folded", "readable", "thin", "summarised", "Summarised"]


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
        summary = self.summary.to_html(index=self.index, classes="dataframe", border=0)
        full = self.full.to_html(index=self.index, classes="dataframe", border=0)
        return (
            f'<div class="infsched-summarised">{summary}'
            f'<p>{html.escape(self._caption())} '
            f'<a download="{fname}" href="{href}">Download all {n} rows ({fname})</a></p>'
            f'<details><summary>Show all {n} rows</summary>{full}</details></div>')

    def _caption(self) -> str:
        return self.caption or f"{len(self.summary)} of {len(self.full)} rows shown."

    def __repr__(self) -> str:
        return (f"{self.summary.to_string(index=self.index)}\n{self._caption()} All {len(self.full)} "
                f"rows: {self.name}.csv, linked from the HTML page.")


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
