"""Paper-versus-reproduction tables, verdicts and the scorecard.

``data/paper/<paper>.csv`` holds what a paper reports, one row per number or claim:

=========== ==============================================================================
column      meaning
=========== ==============================================================================
item        the figure/table/example, e.g. ``fig4``, ``tab2``, ``ex1``
quantity    what is measured, unique within an item, e.g. ``mean_latency_at_rho_0.9``
paper_value the paper's number *as printed* (its digits matter); empty for a qualitative claim
unit        e.g. ``s``, ``ms``, ``%``; may be empty
tolerance   the paper side's uncertainty, an absolute half-width in ``unit``; see ``basis``
basis       where that uncertainty comes from (:data:`BASES`); for a qualitative claim, empty
            or what the claim rests on (:data:`CLAIM_BASES`), with no tolerance
source      where in the paper: section, page, figure
quote       the paper's own words the row transcribes, verbatim from its text (optional
            column; two exact spans joined by `` … ``); shown collapsed beside the quantity
calibrated  empty, or what of ours was fitted/calibrated/chosen on *this* number (optional
            column): the row's verdict is then ``calibrated``, never reproduced
substitute  empty, or what our number is always computed on in place of the paper's (optional
            column: a synthetic workload for its trace, our simulation for its prototype, a
            profile measured here for its machine): the row is labelled a substitute by
            :func:`compare` whatever the chapter passes (the one substitute rule)
=========== ==============================================================================

The bases, the only allowed sources of a tolerance (a tolerance is never chosen):

``printed``   the precision of the digits the paper prints: half a unit of the last digit of
              ``paper_value`` (computed when ``tolerance`` is empty; given explicitly, with the
              reason in ``source``, when the paper printed the number in another form, "50k").
              Where the printed form's range is not symmetric about the value (a unit fraction,
              "1/2" stands for 0.4167 to 0.75), ``tolerance`` is that range, ``lo..hi``, and a
              quantity derived from such numbers (a ratio of two) carries the range interval
              arithmetic gives, never a linearised half-width. A printed precision coarser than
              a tenth of the number is named "one printed digit" in the row's basis.
``figure``    the reading error of a number read off a figure (``tolerance`` required; the
              ``source`` says how it was read).
``exact``     an exact quantity (a count, a closed form of the paper's model): no width on the
              paper's side.
``paper-ci``  the paper's own statistical uncertainty, from the runs it states (``tolerance``
              required: the 95 % half-width).

Our side adds its own 95 % half-width, passed to :func:`compare` as ``ci`` or carried by a
:class:`Measured` value. For a simulated number the rule is :func:`pooled`: ours is the mean over
every run we have (the chapter's and its replications), and its half-width is the prediction
interval of one run, ``t sd sqrt(1 + 1/n)``, when the paper's number is one run's, or the interval
of our mean, ``t sd / sqrt(n)``, when the paper's is an average; the basis names which. The
combined tolerance is ``paper + ours`` when the paper's side is a bound (printed, figure, exact)
and ``sqrt(paper² + ours²)`` when both sides are independent statistical intervals (paper-ci).

A chapter calls :func:`compare` after each reproduced figure or table and concatenates the
results; at its end :func:`glue_verdicts` glues the chapter's table and a one-line summary so
that the scorecard page can paste them from another document::

    {glue:text}`tad.md::tad_summary:s`

    ```{glue:any} tad_scorecard
    :doc: tad.md
    ```

(The ``:s`` format is required in the inline form: ``{glue:text}`` splits the key at its
*last* colon.) Cross-document glue is resolved when pages are written, so it works whatever the
toc order; but Sphinx does not know the scorecard depends on the chapters. Add
``infsched.report`` to ``sphinx: extra_extensions`` so an incremental build that re-reads a
chapter also re-reads every page pasting from it (see :func:`setup`).

Verdict rule (one rule for every chapter): **reproduced** if ``|ours - paper| <= tol`` with the
combined tolerance above (or a qualitative claim holds, ``ours=True``); **close** if within
``3 * tol``; **differs** otherwise (or the claim fails); **not reproducible here** when ``ours``
is a :class:`NotReproducible` with its reason (the paper's hardware or private data); **open**
when ``ours`` is an :class:`Open`: our own bounds bracket the paper's number and cannot decide
it (counted apart, never as reproduced); **stand-in** when our number was computed on a
scaled-down stand-in of the paper's setting (fewer requests or workers, shorter runs, smaller
instances, a coarser discretisation; fewer repetitions of the paper's own setting only widen our
confidence interval): the table shows it, and what the rule would give, but it does not count as
reproduced (``compare(..., stand_in=reason)``).

Two more labels keep a number from counting as reproduced:

- **calibrated**: the CSV's ``calibrated`` column says what of ours was fitted, calibrated or
  chosen on this very number (a constant fitted to it, a setting picked where it matches). The
  comparison is then no test: the verdict is ``calibrated``, the note says what was fitted and
  what the rule would give. It takes precedence over every label below.
- **substitute**: our number was computed on something that is not the paper's: substitute data
  (a synthetic workload standing in for a trace), a substitute profile or model, or a reader's
  own setting of a parameter the paper fixes (``compare(..., substitute=reason)``, one reason for
  the item or one per quantity, like ``stand_in``). The rule is applied as usual and its result
  keeps its name with the label, ``reproduced (substitute)``, ``close (substitute)`` or
  ``differs (substitute)``: a reader sees how far apart the numbers are, but the scorecard counts
  these rows apart and never as reproduced. A row that is also a stand-in is a stand-in (the
  note names both).
"""

from __future__ import annotations

import hashlib
import html
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .errors import ConfigError, config_error, require

if TYPE_CHECKING:  # pragma: no cover
    from pandas.io.formats.style import Styler

__all__ = [
    "NotReproducible",
    "Open",
    "Measured",
    "pooled",
    "ONE_RUN",
    "AVERAGE",
    "ONE_PRINTED_DIGIT",
    "VERDICTS",
    "BASES",
    "PAPER_COLUMNS",
    "find_data_dir",
    "paper_numbers",
    "printed_half_unit",
    "verdict",
    "combined_tolerance",
    "setting_shortfall",
    "changed_setting",
    "substitute_verdict",
    "compare",
    "summary_line",
    "COUNT_KEYS",
    "verdict_counts",
    "style_table",
    "glue_verdicts",
    "VerdictTable",
    "setup",
]

REPRODUCED, CLOSE, DIFFERS, STAND_IN, CALIBRATED, OPEN, NOT_REPRODUCIBLE = (
    "reproduced", "close", "differs", "stand-in", "calibrated", "open", "not reproducible here")
#: The label a substitute row's verdict carries: ``"reproduced (substitute)"``.
SUBSTITUTE = "substitute"
#: What the rule gives, before any label.
RULE_VERDICTS: tuple[str, ...] = (REPRODUCED, CLOSE, DIFFERS)
#: The same on a substitute (data, profile, model, or a reader's own setting): never reproduced.
SUBSTITUTE_VERDICTS: tuple[str, ...] = tuple(f"{v} ({SUBSTITUTE})" for v in RULE_VERDICTS)
#: Every verdict, in display order.
VERDICTS: tuple[str, ...] = (RULE_VERDICTS + SUBSTITUTE_VERDICTS
                             + (STAND_IN, CALIBRATED, OPEN, NOT_REPRODUCIBLE))
#: Where a paper-side tolerance may come from (see the module docstring).
BASES: tuple[str, ...] = ("printed", "figure", "exact", "paper-ci")
#: What a qualitative claim's ``basis`` says in a verdict table: where the claim rests (the
#: paper's printed numbers, a figure read by eye or in words, a theorem's exact statement); the
#: claim's reading, where it needs a threshold, is the chapter's and stated in ``source``.
CLAIM_BASES: dict[str, str] = {"printed": "claim on printed numbers", "figure": "claim on a figure",
                               "exact": "exact statement", "paper-ci": "claim on the paper's CI"}
#: Multiple of the tolerance within which a result is "close".
CLOSE_FACTOR = 3.0
PAPER_COLUMNS: tuple[str, ...] = (
    "item", "quantity", "paper_value", "unit", "tolerance", "basis", "source")
#: Columns a paper CSV may have after :data:`PAPER_COLUMNS` (empty when absent).
OPTIONAL_COLUMNS: tuple[str, ...] = ("quote", "calibrated", "substitute")
#: Separator of an interval's ends in a ``tolerance`` cell: ``"0.4167..0.75"``, the range a printed
#: form stands for where its rounding is not symmetric (a unit fraction such as "1/2").
INTERVAL_SEP = ".."
#: What a row's basis says when the paper printed its number to one significant digit, or any
#: precision coarser than a tenth of the number (:data:`COARSE_PRINTED`).
ONE_PRINTED_DIGIT = "one printed digit"
#: The relative half-width beyond which a printed precision is "one printed digit".
COARSE_PRINTED = 0.10
#: Separator of two exact spans of the paper's text in one ``quote``.
QUOTE_JOIN = " \u2026 "
TABLE_COLUMNS: tuple[str, ...] = (
    "item", "quantity", "paper", "ours", "unit", "ratio", "tolerance", "basis", "verdict", "note",
    "quote", "source")

VERDICT_COLORS: dict[str, str] = {
    REPRODUCED: "#c7e9c0",      # green
    CLOSE: "#fee391",           # amber
    DIFFERS: "#fcbba1",         # red
    STAND_IN: "#c6dbef",        # blue
    CALIBRATED: "#dadaeb",      # purple
    OPEN: "#f2f0f7",            # pale lilac: our bracket holds the paper's number
    NOT_REPRODUCIBLE: "#d9d9d9",  # grey
    # on a substitute: the rule's colour, paler
    f"{REPRODUCED} ({SUBSTITUTE})": "#edf8e9",
    f"{CLOSE} ({SUBSTITUTE})": "#fff7bc",
    f"{DIFFERS} ({SUBSTITUTE})": "#fee5d9",
}


@dataclass(frozen=True)
class NotReproducible:
    """Stands in for our value when a result needs the paper's hardware or private data."""

    reason: str

    def __post_init__(self) -> None:
        require(isinstance(self.reason, str) and self.reason.strip() != "", "reason", self.reason,
                "must be a non-empty string saying why the result cannot be reproduced here")


@dataclass(frozen=True)
class Open:
    """Our value when our own solver cannot decide the row: the paper's number lies inside the
    bracket ``[low, high]`` our bounds give (``None`` for a side we cannot bound), so the rule has
    nothing to judge. Unlike :class:`NotReproducible` the result needs nothing of the paper's; a
    stronger bound would settle it. The row's verdict is ``open``, counted apart."""

    reason: str
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        require(isinstance(self.reason, str) and self.reason.strip() != "", "reason", self.reason,
                "must be a non-empty string saying what our bounds leave undecided")
        for name in ("low", "high"):
            v = getattr(self, name)
            require(v is None or (isinstance(v, (int, float, np.integer, np.floating))
                                  and not isinstance(v, (bool, np.bool_)) and math.isfinite(float(v))),
                    name, v, "must be a finite number or None (a side our bounds leave open)")
        require(self.low is None or self.high is None or float(self.low) <= float(self.high),
                "low", self.low, f"must be <= high ({self.high})")

    def bracket(self) -> str:
        """``"[1.0123, —]"``: the bracket as the verdict table shows it."""
        f = lambda v: "—" if v is None else f"{float(v):.4g}"
        return f"[{f(self.low)}, {f(self.high)}]"


#: :func:`pooled`'s two cases: the paper's number is one run's (judged against the spread of one
#: run of ours, a prediction interval) or an average over its runs (against our mean's interval)
ONE_RUN, AVERAGE = "one run", "average"


class Measured(float):
    """A number we measured, with its 95 % half-width ``ci`` (in the same unit).

    It is a float everywhere else (arithmetic and comparisons see only the value);
    :func:`compare` reads ``ci`` and adds it to the paper side's tolerance. ``rule`` says what the
    half-width is (``"our 95 % CI"`` when not given; :func:`pooled` names its interval and the
    runs it pools), shown in the row's basis."""

    ci: float
    rule: str

    def __new__(cls, value: float, ci: float, rule: str | None = None) -> Measured:
        require(isinstance(ci, (int, float, np.integer, np.floating)) and not isinstance(ci, bool)
                and math.isfinite(float(ci)) and ci >= 0, "ci", ci,
                "must be a finite number >= 0 (a 95 % confidence half-width)")
        require(rule is None or (isinstance(rule, str) and rule.strip() != ""), "rule", rule,
                "must be None or a non-empty text naming the interval")
        obj = super().__new__(cls, value)
        obj.ci = float(ci)
        obj.rule = rule or "our 95 % CI"
        return obj

    def __repr__(self) -> str:
        return f"Measured({float(self)!r}, ci={self.ci!r}, rule={self.rule!r})"

    def __str__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self) -> tuple:
        return (Measured, (float(self), self.ci, self.rule))


def pooled(runs: Any, paper: str = ONE_RUN, *, extra_ci: float = 0.0) -> Measured:
    """The book's statistical rule for a simulated number: ours is the mean over every run we
    have (the chapter's and the replications, ``runs``; NaN entries, runs where the number is
    undefined, are left out), and its 95 % half-width is

    - for a paper's number from **one run** (``paper=ONE_RUN``): the prediction interval of one
      new run, ``t(0.975, n-1) · sd · sqrt(1 + 1/n)``, since the paper's single run and our mean
      differ by one run's spread and our mean's;
    - for a paper's **average** (``paper=AVERAGE``): the interval of our mean,
      ``t(0.975, n-1) · sd / sqrt(n)``.

    ``sd`` is the sample standard deviation (ddof = 1) of the ``n`` runs. ``extra_ci`` is an
    independent 95 % half-width already on the number (a search's seeds), added in quadrature.
    Returns a :class:`Measured` whose ``rule`` names the interval and ``n`` for the basis."""
    from scipy.stats import t as student_t

    require(paper in (ONE_RUN, AVERAGE), "paper", paper,
            f"must be {ONE_RUN!r} (the paper's number is one run's) or {AVERAGE!r} (an average)")
    x = np.asarray([float(v) for v in runs], dtype=float)
    x = x[np.isfinite(x)]
    require(x.size >= 2, "runs", x.size, "must hold at least two finite runs (a spread needs two)")
    require(isinstance(extra_ci, (int, float, np.integer, np.floating)) and math.isfinite(float(extra_ci))
            and extra_ci >= 0, "extra_ci", extra_ci, "must be a finite half-width >= 0")
    n = int(x.size)
    sd = float(x.std(ddof=1))
    tq = float(student_t.ppf(0.975, n - 1))
    if paper == ONE_RUN:
        half, what = tq * sd * math.sqrt(1.0 + 1.0 / n), "our 95 % prediction interval of one run"
    else:
        half, what = tq * sd / math.sqrt(n), "our 95 % CI of the mean"
    if extra_ci > 0:
        half = math.hypot(half, float(extra_ci))
        what += " ⊕ the search's seeds"
    return Measured(float(x.mean()), half, f"{what} (mean of {n} runs)")


# --------------------------------------------------------------------------- paper numbers

def find_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The repository's ``data/`` directory: the argument, else ``$INFSCHED_DATA``, else
    ``lib/infsched/../../data``."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get("INFSCHED_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "data"


def printed_half_unit(text: str) -> float:
    """Half a unit of the last digit of a number as printed: ``"1.005"`` -> 0.0005,
    ``"57"`` -> 0.5, ``"2.5e3"`` -> 50."""
    t = text.strip().lstrip("+-")
    mant, _, exp = t.lower().partition("e")
    decimals = len(mant.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals) * 10.0 ** (int(exp) if exp else 0)


def paper_numbers(paper: str, data_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The numbers ``paper`` reports, from ``<data>/paper/<paper>.csv``.

    Returns the CSV's columns (with ``quote`` and ``calibrated`` empty where the file has no
    such column) with ``paper_value`` and ``tolerance`` as floats (NaN for a
    qualitative claim), ``printed`` (``paper_value`` as the CSV writes it) and a boolean
    ``qualitative`` column. ``tolerance`` is the paper side's absolute half-width, derived from
    ``basis`` as the module docstring says. Raises ConfigError if the file, a column, or a value
    is missing or malformed, naming the file, row and column.
    """
    folder = find_data_dir(data_dir) / "paper"
    require(isinstance(paper, str) and paper != "", "paper", paper, "must be a paper name such as 'tad'")
    path = folder / f"{paper}.csv"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.csv") if not p.stem.startswith("_")) \
            if folder.is_dir() else []
        raise config_error("paper", paper, f"no file {path}; papers with numbers: "
                           + (", ".join(map(repr, known)) or "none"))
    df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    df.columns = [c.strip() for c in df.columns]
    missing = [c for c in PAPER_COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}; "
                          f"required columns are {', '.join(PAPER_COLUMNS)}")
    for c in OPTIONAL_COLUMNS:
        if c not in df.columns:
            df[c] = ""
    for c in df.columns:
        df[c] = df[c].astype(object).map(lambda v: v.strip() if isinstance(v, str) else v)

    def fail(row: int, col: str, v: str, what: str) -> ConfigError:
        return ConfigError(f"{path}, row {row + 2}: {col} = {v!r}: {what}")

    def num(col: str, row: int, v: str) -> float:
        if v == "":
            return math.nan
        try:
            x = float(v)
        except ValueError:
            raise fail(row, col, v, "must be a number or empty") from None
        if not math.isfinite(x):
            raise fail(row, col, v, "must be finite")
        return x

    blank = df.index[(df["item"] == "") | (df["quantity"] == "")]
    if len(blank):
        raise ConfigError(f"{path}, row {blank[0] + 2}: item and quantity must not be empty")
    df["printed"] = df["paper_value"]
    values = [num("paper_value", i, v) for i, v in enumerate(df["paper_value"])]
    tols, below, above = [], [], []
    for i, (v, t, b) in enumerate(zip(values, df["tolerance"], df["basis"])):
        lo_hi = None
        if INTERVAL_SEP in t:  # the range a printed form stands for, "lo..hi"
            a, _, c = t.partition(INTERVAL_SEP)
            lo_hi = (num("tolerance", i, a.strip()), num("tolerance", i, c.strip()))
            if math.isnan(v) or b != "printed" or not lo_hi[0] <= v <= lo_hi[1]:
                raise fail(i, "tolerance", t, "an interval lo..hi is the range a printed number "
                           "stands for: basis 'printed', with lo <= paper_value <= hi")
            tol = math.nan
        else:
            tol = num("tolerance", i, t)
        if math.isnan(v):  # a qualitative claim holds or not: no tolerance applies
            if t != "" or b not in ("", "claim") + BASES:
                raise fail(i, "tolerance" if t else "basis", t or b,
                           "a qualitative claim (empty paper_value) takes no tolerance; its basis "
                           "(what the claim rests on) is empty or one of "
                           + ", ".join(map(repr, BASES)))
            tols.append(math.nan)
            below.append(math.nan)
            above.append(math.nan)
            continue
        if b not in BASES:
            raise fail(i, "basis", b, "must be one of " + ", ".join(map(repr, BASES))
                       + " (where the tolerance comes from)")
        if lo_hi is not None:
            below.append(v - lo_hi[0])
            above.append(lo_hi[1] - v)
            tols.append(max(below[-1], above[-1]))
            continue
        if b == "exact":
            if t != "" and tol != 0:
                raise fail(i, "tolerance", t, "an exact quantity has no tolerance; leave it empty")
            tol = 0.0
        elif b == "printed" and t == "":
            tol = printed_half_unit(df.at[i, "paper_value"])
        elif t == "":
            raise fail(i, "tolerance", t, f"basis {b!r} needs the half-width it stands for")
        if not tol >= 0:
            raise fail(i, "tolerance", t, "must be >= 0")
        tols.append(tol)
        below.append(tol)
        above.append(tol)
    df["paper_value"] = values
    df["tolerance"] = tols
    df["tol_below"] = below
    df["tol_above"] = above
    dup = df.duplicated(["item", "quantity"])
    if dup.any():
        i = df.index[dup][0]
        raise ConfigError(f"{path}, row {i + 2}: duplicate quantity {df.at[i, 'quantity']!r} "
                          f"for item {df.at[i, 'item']!r}")
    df["qualitative"] = df["paper_value"].isna()
    return df


# --------------------------------------------------------------------------- verdicts

def verdict(paper: float, ours: float | bool | NotReproducible | Open,
            tolerance: float | tuple[float, float]) -> str:
    """The verdict for one number (``paper`` NaN means a qualitative claim); ``tolerance`` is
    the combined absolute half-width in the paper's unit, or ``(below, above)`` where the range
    the paper's printed form stands for is not symmetric (our number below the paper's is
    judged against ``below``, above it against ``above``)."""
    if isinstance(ours, NotReproducible):
        return NOT_REPRODUCIBLE
    if isinstance(ours, Open):
        return OPEN
    if paper is None or (isinstance(paper, float) and math.isnan(paper)):
        return REPRODUCED if ours else DIFFERS
    diff = float(ours) - paper
    err = abs(diff)
    if isinstance(tolerance, tuple):
        tolerance = tolerance[1] if diff > 0 else tolerance[0]
    # rounding slack of a few ulps, so that an exact quantity computed in floating point matches
    slack = 1e-9 * max(1.0, abs(paper))
    if err <= tolerance + slack:
        return REPRODUCED
    if err <= CLOSE_FACTOR * tolerance + slack:
        return CLOSE
    return DIFFERS


def combined_tolerance(paper_tol: float, basis: str, ours_ci: float = 0.0) -> float:
    """The tolerance a verdict uses: the paper side's half-width plus our 95 % half-width, or
    their root sum of squares when both are statistical (basis ``paper-ci``)."""
    if basis == "paper-ci":
        return float(math.hypot(paper_tol, ours_ci))
    return float(paper_tol + ours_ci)


def setting_shortfall(ours: Any, paper: Any, fields: tuple[str, ...] | list[str],
                      labels: Mapping[str, str] | None = None) -> str | None:
    """How the setting ``ours`` (a dataclass of sizes, e.g. a chapter's ``Scale``) departs from
    the paper's (``paper``, the same type) on ``fields``: the ``stand_in`` reason for
    :func:`compare`, ``"FLD D 20 (paper: 100); loads: 4 values (paper: 10 values)"``, or None when
    every field matches."""
    labels = dict(labels or {})
    out = []
    for f in fields:
        mine, theirs = getattr(ours, f), getattr(paper, f)
        if mine == theirs:
            continue
        label = labels.get(f, f)
        if isinstance(mine, tuple) and isinstance(theirs, tuple) and len(mine) != len(theirs):
            n = lambda k: f"{k} value{'' if k == 1 else 's'}"
            out.append(f"{label}: {n(len(mine))} (paper: {n(len(theirs))})")
        elif isinstance(mine, float) and isinstance(theirs, float):
            out.append(f"{label} {mine:g} (paper: {theirs:g})")
        else:
            out.append(f"{label} {mine} (paper: {theirs})")
    return "; ".join(out) or None


def changed_setting(ours: Mapping[str, Any], paper: Mapping[str, Any],
                    labels: Mapping[str, str] | None = None) -> str | None:
    """The ``substitute`` reason for :func:`compare` when a reader set parameters the paper
    fixes to other values: ``"your setting: a* = 80 (paper: 76)"``, or None when every
    parameter in ``paper`` has its paper value in ``ours``. Numbers compare by value
    (``76 == 76.0``)."""
    require(isinstance(ours, Mapping) and isinstance(paper, Mapping), "ours", type(ours).__name__,
            "ours and paper must be mappings parameter -> value")
    labels = dict(labels or {})
    out = []
    for k, theirs in paper.items():
        require(k in ours, "ours", k, "has no value for this parameter of the paper's setting")
        mine = ours[k]
        if mine == theirs:
            continue
        fmt = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
        out.append(f"{labels.get(k, k)} = {fmt(mine)} (paper: {fmt(theirs)})")
    return ("your setting: " + ", ".join(out)) if out else None


def substitute_verdict(rule_verdict: str) -> str:
    """The verdict of a row computed on a substitute: the rule's, labelled,
    ``"differs"`` -> ``"differs (substitute)"``."""
    require(rule_verdict in RULE_VERDICTS, "rule_verdict", rule_verdict,
            "must be one of " + ", ".join(map(repr, RULE_VERDICTS)))
    return f"{rule_verdict} ({SUBSTITUTE})"


def _fmt_width(x: float) -> str:
    return f"±{x:.2g}"


def _fmt_tol(below: float, above: float) -> str:
    """``±0.05``, or ``−0.083/+0.25`` where the two sides differ."""
    if math.isclose(below, above, rel_tol=1e-9, abs_tol=1e-15):
        return _fmt_width(above)
    return f"−{below:.2g}/+{above:.2g}"


def _basis_text(basis: str, paper_tol: float | tuple[float, float], ours_ci: float,
                paper: float = math.nan, rule: str = "our 95 % CI") -> str:
    below, above = paper_tol if isinstance(paper_tol, tuple) else (paper_tol, paper_tol)
    what = {"printed": "printed digits", "figure": "figure reading", "exact": "exact",
            "paper-ci": "paper's 95 % CI"}[basis]
    if (basis == "printed" and math.isfinite(paper) and paper != 0
            and max(below, above) > COARSE_PRINTED * abs(paper)):
        what = ONE_PRINTED_DIGIT  # the reader should see how little the printed number says
    parts = [what if basis == "exact" else f"{what} {_fmt_tol(below, above)}"]
    if ours_ci > 0:
        parts.append(f"{rule} {_fmt_width(ours_ci)}")
    return (" ⊕ " if basis == "paper-ci" else " + ").join(parts)


def compare(
    paper: str,
    item: str,
    ours: Mapping[str, float | bool | NotReproducible],
    notes: Mapping[str, str] | None = None,
    *,
    ci: Mapping[str, float] | None = None,
    stand_in: str | Mapping[str, str] | None = None,
    substitute: str | Mapping[str, str] | None = None,
    calibrated: str | Mapping[str, str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Side-by-side table of the paper's numbers for ``item`` and ours, with verdicts.

    ``ours`` maps every quantity the CSV lists for this item to our value: a number, a bool
    for a qualitative claim, or a :class:`NotReproducible`. ``notes`` adds a note per
    quantity (why we differ, what was calibrated). ``ci`` gives our 95 % confidence half-width
    of a number (absolute, in the paper's unit; a :class:`Measured` value carries its own),
    combined with the paper side's tolerance as the
    module docstring says; a number without one is taken as exact on our side. ``stand_in``
    says why our numbers were computed on a scaled-down stand-in of the paper's setting (one
    reason for the whole item, or one per quantity): such rows get the verdict ``stand-in``
    with what the rule would have given in their note. ``substitute`` (the same forms) says
    what our number was computed on instead of the paper's: substitute data, a substitute
    profile or model, or a reader's own setting of a parameter the paper fixes
    (:func:`changed_setting` words it), added to what the CSV's ``substitute`` column says;
    such rows get the rule's verdict with the label,
    ``"differs (substitute)"``, and the reason in their note. A row whose CSV ``calibrated``
    column is filled, or that ``calibrated`` names (the same forms: where the chapter's setting
    makes our number the paper's own data, an echo), gets the verdict ``calibrated`` (see the
    module docstring for the order of the labels). Columns: item, quantity, paper, ours, unit, ratio (ours/paper), tolerance
    (combined, absolute), basis, verdict, note, quote (the paper's words), source; rows in the
    CSV's order.
    """
    table = paper_numbers(paper, data_dir)
    rows = table[table["item"] == item]
    if rows.empty:
        items = list(dict.fromkeys(table["item"]))
        raise config_error("item", item, f"not in {paper}.csv; items are " + ", ".join(map(repr, items)))
    require(isinstance(ours, Mapping), "ours", ours, "must be a mapping quantity -> value")
    notes = dict(notes or {})
    ci = dict(ci or {})
    known = list(rows["quantity"])

    def per_quantity(name: str, arg: str | Mapping[str, str] | None) -> dict[str, str]:
        if arg is None or isinstance(arg, str):
            return {q: arg for q in known if arg}
        require(isinstance(arg, Mapping), name, arg,
                "must be a reason (str), a mapping quantity -> reason, or None")
        return {q: r for q, r in arg.items() if r}

    stand_ins = per_quantity("stand_in", stand_in)
    substitutes = per_quantity("substitute", substitute)
    echoes = per_quantity("calibrated", calibrated)
    for name, what in (("ours", ours), ("notes", notes), ("ci", ci), ("stand_in", stand_ins),
                       ("substitute", substitutes), ("calibrated", echoes)):
        unknown = [q for q in what if q not in known]
        if unknown:
            raise config_error(f"{name}[{unknown[0]!r}]", what[unknown[0]],
                               f"{paper}.csv has no such quantity for {item}; known quantities: "
                               + ", ".join(map(repr, known)))
    # the one substitute rule: what the CSV says a row is computed on (the paper's trace, its
    # prototype, its machine replaced by ours), then what the chapter adds (a reader's setting)
    for _, r in rows.iterrows():
        if r["substitute"]:
            q = r["quantity"]
            extra = substitutes.get(q, "")
            substitutes[q] = r["substitute"] + (f"; {extra}" if extra and extra != r["substitute"] else "")
    absent = [q for q in known if q not in ours]
    if absent:
        raise ConfigError(f"ours: missing {', '.join(map(repr, absent))} for {paper} {item}; "
                          f"give a value (or NotReproducible(reason)) for every quantity: "
                          + ", ".join(map(repr, known)))
    out = []
    for _, r in rows.iterrows():
        q = r["quantity"]
        val = ours[q]
        qualitative = bool(r["qualitative"])
        if q in echoes:  # the chapter's setting makes our number the paper's own data
            r = r.copy()
            r["calibrated"] = "; ".join(x for x in (r["calibrated"], echoes[q]) if x)
        note = notes.get(q, "")
        ratio = math.nan
        half = 0.0
        rule = "our 95 % CI"
        if q in ci or isinstance(val, Measured):
            half = ci[q] if q in ci else val.ci
            require(isinstance(half, (int, float, np.integer, np.floating))
                    and not isinstance(half, (bool, np.bool_)) and math.isfinite(float(half))
                    and half >= 0, f"ci[{q!r}]", half, "must be a finite number >= 0 "
                    "(our 95 % confidence half-width, in the paper's unit)")
            half = float(half)
            if isinstance(val, Measured) and q not in ci:
                rule = val.rule
        if isinstance(val, NotReproducible):
            note = "; ".join(x for x in (val.reason, note) if x)
            shown: Any = None
        elif isinstance(val, Open):
            opened = f"open: our bracket {val.bracket()} holds the paper's value; {val.reason}"
            note = "; ".join(x for x in (opened, note) if x)
            shown = val.bracket()
        elif qualitative:
            require(isinstance(val, (bool, np.bool_)), f"ours[{q!r}]", val,
                    f"{item}/{q} is a qualitative claim: give True if it holds, False if not")
            shown = bool(val)
        else:
            require(isinstance(val, (int, float, np.integer, np.floating))
                    and not isinstance(val, (bool, np.bool_)) and math.isfinite(float(val)),
                    f"ours[{q!r}]", val, "must be a finite number (or NotReproducible(reason))")
            shown = float(val)
            if r["paper_value"] != 0:
                ratio = shown / r["paper_value"]
        numeric = not qualitative and not isinstance(val, (NotReproducible, Open))
        asym = not math.isclose(r["tol_below"], r["tol_above"], rel_tol=1e-9, abs_tol=1e-15) \
            if numeric else False
        if numeric and asym:
            tol_pair = (combined_tolerance(r["tol_below"], r["basis"], half),
                        combined_tolerance(r["tol_above"], r["basis"], half))
            tol: Any = tol_pair
        else:
            tol = combined_tolerance(r["tolerance"], r["basis"], half) if numeric else math.nan
        v = verdict(r["paper_value"], val, tol)
        if v != NOT_REPRODUCIBLE:
            labels = []
            if r["calibrated"]:
                labels.append(f"calibrated: {r['calibrated']}, so this is no test")
            if q in stand_ins:
                labels.append(f"scaled-down stand-in ({stand_ins[q]})")
            if q in substitutes:
                labels.append(f"on a substitute ({substitutes[q]})")
            if r["calibrated"] or q in stand_ins:
                rule_said = ("at this scale the rule gives" if q in stand_ins and not r["calibrated"]
                             else "the rule gives")
                note = "; ".join(labels + [f"{rule_said}: {v}"] + ([note] if note else []))
                v = CALIBRATED if r["calibrated"] else STAND_IN
            elif q in substitutes:
                note = "; ".join(labels + ([note] if note else []))
                v = v if v == OPEN else substitute_verdict(v)
        paper_tol = ((r["tol_below"], r["tol_above"]) if asym else r["tolerance"])
        out.append({
            "item": item, "quantity": q, "paper": r["paper_value"], "ours": shown,
            "unit": r["unit"], "ratio": ratio,
            "tolerance": _fmt_tol(*tol) if isinstance(tol, tuple) else tol,
            "basis": (_basis_text(r["basis"], paper_tol, half, r["paper_value"], rule) if numeric
                      else CLAIM_BASES.get(r["basis"], "") if qualitative else ""),
            "verdict": v, "note": note, "quote": r["quote"], "source": r["source"],
        })
    df = pd.DataFrame(out, columns=list(TABLE_COLUMNS))
    df["ours"] = pd.Series([r["ours"] for r in out], dtype=object, index=df.index)
    return df


def summary_line(table: pd.DataFrame) -> str:
    """``"12 reproduced, 2 close, 1 differs, 4 on a substitute (3 reproduced, 1 differs),
    3 stand-in, 1 calibrated, 1 open, 2 not reproducible here"`` for a verdict table. Only the
    first three count the paper's setting reproduced or not; a row on a substitute, a stand-in, a
    calibrated row or one our bounds leave open is counted apart whatever its number, never as
    reproduced."""
    require(isinstance(table, pd.DataFrame) and "verdict" in table.columns, "table",
            type(table).__name__, "must be a DataFrame with a 'verdict' column (from compare)")
    bad = sorted(set(table["verdict"]) - set(VERDICTS))
    require(not bad, "verdict", bad[0] if bad else None, "must be one of " + ", ".join(map(repr, VERDICTS)))
    c = Counter(table["verdict"])
    parts = [f"{c.get(v, 0)} {v}" for v in RULE_VERDICTS]
    subs = [(v, c.get(s, 0)) for v, s in zip(RULE_VERDICTS, SUBSTITUTE_VERDICTS)]
    n_sub = sum(k for _, k in subs)
    parts.append(f"{n_sub} on a {SUBSTITUTE}" + (
        " (" + ", ".join(f"{k} {v}" for v, k in subs if k) + ")" if n_sub else ""))
    parts += [f"{c.get(v, 0)} {v}" for v in (STAND_IN, CALIBRATED, OPEN, NOT_REPRODUCIBLE)]
    return ", ".join(parts)


#: the kinds :func:`verdict_counts` counts, in display order
COUNT_KEYS: tuple[str, ...] = ("reproduced", "close", "differs", "holds", "fails", "substitute",
                               STAND_IN, CALIBRATED, OPEN, NOT_REPRODUCIBLE)


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    """A verdict table's rows counted apart by kind: numbers judged by the rule (``reproduced``,
    ``close``, ``differs``), qualitative claims judged by it (``holds``, ``fails``: a claim is
    a row without a paper value), and the rows that never count as reproduced (``substitute``,
    ``stand-in``, ``calibrated``, ``open``, ``not reproducible here``); ``rows`` is their sum."""
    require(isinstance(table, pd.DataFrame) and {"verdict", "paper"} <= set(table.columns),
            "table", type(table).__name__, "must be a verdict table with 'paper' and 'verdict' columns")
    out = dict.fromkeys(COUNT_KEYS, 0)
    for paper, v in zip(table["paper"], table["verdict"]):
        claim = paper is None or (isinstance(paper, float) and math.isnan(paper))
        if v in RULE_VERDICTS:
            out[("holds" if v == REPRODUCED else "fails") if claim else v] += 1
        elif v in SUBSTITUTE_VERDICTS:
            out[SUBSTITUTE] += 1
        else:
            require(v in VERDICTS, "verdict", v, "must be one of " + ", ".join(map(repr, VERDICTS)))
            out[v] += 1
    out["rows"] = sum(out[k] for k in COUNT_KEYS)
    return out


class _Counts:
    """Glued counts: JSON as the plain-text output, summed by ``{verdict-totals}``
    (:mod:`infsched.headlines`)."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = dict(counts)

    def __repr__(self) -> str:
        import json

        return json.dumps(self.counts, sort_keys=True)


# --------------------------------------------------------------------------- display

def _fmt_value(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return "holds" if v else "fails"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def _text(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip()


_TEX = re.compile(r"\$([^$]+?)\$")
_EMPH = re.compile(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])")


def quote_html(text: str) -> str:
    """The paper's words as HTML: escaped, with its ``$...$`` maths handed to MathJax (as
    ``\\(...\\)``, which the book's MathJax typesets) and its ``*emphasis*`` in italics, so
    no raw markup reaches the page. A pair of dollar signs around plain words (two prices) is
    left as it is."""
    maths: list[str] = []

    def stash(m: re.Match) -> str:
        body = m.group(1)
        if not re.search(r"[\\_^{}=<>|]", body) and not re.fullmatch(r"\s*[A-Za-z]\s*", body):
            return m.group(0)
        maths.append(f'<span class="math notranslate nohighlight">\\({html.escape(body.strip())}\\)</span>')
        return f"\x00{len(maths) - 1}\x00"

    bare = {r"\times": "×", r"\cdot": "·", r"\sim": "∼", r"\geq": "≥", r"\leq": "≤",
            r"\approx": "≈"}  # a TeX symbol the extraction left outside any maths
    rest = re.sub(r"\\(times|cdot|sim|geq|leq|approx)\b", lambda m: bare["\\" + m.group(1)],
                  _TEX.sub(stash, text))
    out = _EMPH.sub(r"<em>\1</em>", html.escape(rest))
    return re.sub("\x00(\\d+)\x00", lambda m: maths[int(m.group(1))], out)


def _quantity_cell(quantity: Any, quote: Any, source: Any) -> str:
    """The quantity's name (breakable after underscores) and, when the row has them, the
    paper's words and where they stand in a collapsed ``<details>``: one click shows them;
    folded they take no width, and unfolded at most 24em, so the table stays inside the page."""
    name = html.escape(str(quantity)).replace("_", "_<wbr>")
    quote, source = _text(quote), _text(source)
    if not quote and not source:
        return name
    body = []
    if quote:
        body.append("“" + " … ".join(quote_html(p) for p in quote.split(QUOTE_JOIN)) + "”")
    if source:
        body.append(f"({html.escape(source)})")
    return (f'<details class="infsched-quote"><summary>{name}</summary>'
            f'<span style="display: block; max-width: 24em; font-size: 0.9em; overflow-wrap: anywhere">'
            f'{" ".join(body)}</span></details>')


#: the columns a verdict table folds into its verdict cell (:func:`_verdict_cell`): read on
#: demand, they would otherwise wrap every row over several lines
FOLDED_COLUMNS: tuple[str, ...] = ("basis", "note")


def _verdict_cell(v: Any, basis: Any, note: Any) -> str:
    """The verdict in words and, when the row has them, the basis of its tolerance and its
    note in a collapsed ``<details>``: one line per row folded, at most 24em wide unfolded."""
    word = html.escape(_fmt_value(v))
    basis, note = _text(basis), _text(note)
    if not basis and not note:
        return word
    body = "<br>".join(x for x in (f"<em>basis</em>: {html.escape(basis)}" if basis else "",
                                   html.escape(note)) if x)
    return (f'<details class="infsched-why"><summary>{word}</summary>'
            f'<span style="display: block; max-width: 24em; font-size: 0.9em; overflow-wrap: anywhere">'
            f'{body}</span></details>')


def style_table(df: pd.DataFrame) -> Styler:
    """A pandas Styler for a verdict table: verdict cells coloured, numbers to 4 significant
    digits, tolerances as ``±`` half-widths in the row's unit, qualitative claims shown as
    holds/fails, missing values as a dash, no index. One line per row: the ``quote`` and
    ``source`` columns are not shown as columns, the quantity's cell unfolds to show them, and
    the ``basis`` and ``note`` are folded into the verdict's cell the same way (``<details>``);
    the ``item`` column is left out when every row has the same (a figure's own table). Only
    the display changes: the table, its CSV and its plain text keep every column."""
    require(isinstance(df, pd.DataFrame), "df", type(df).__name__, "must be a pandas DataFrame")
    disp = df.copy()
    if "item" in disp.columns and len(disp) > 0 and disp["item"].nunique(dropna=False) == 1:
        disp = disp.drop(columns="item")
    verdicts = list(disp["verdict"]) if "verdict" in disp.columns else []
    if "verdict" in disp.columns and any(c in disp.columns for c in FOLDED_COLUMNS):
        blank = [""] * len(disp)
        disp["verdict"] = [_verdict_cell(v, b, n) for v, b, n in zip(
            disp["verdict"], *(disp[c] if c in disp.columns else blank for c in FOLDED_COLUMNS))]
        disp = disp.drop(columns=[c for c in FOLDED_COLUMNS if c in disp.columns])
    if "paper" in disp.columns:
        disp["paper"] = [("claim" if isinstance(p, float) and math.isnan(p) else p)
                         for p in disp["paper"]]
    if "tolerance" in disp.columns:
        disp["tolerance"] = [(_fmt_width(t) if t > 0 else "0") if isinstance(t, float) and math.isfinite(t)
                             else _fmt_value(t) for t in disp["tolerance"]]
    if "quantity" in disp.columns:  # a line may break after an underscore, never inside a word
        quotes = disp["quote"] if "quote" in disp.columns else [""] * len(disp)
        sources = disp["source"] if "source" in disp.columns else [""] * len(disp)
        disp["quantity"] = [_quantity_cell(q, qt, src)
                            for q, qt, src in zip(disp["quantity"], quotes, sources)]
    # the paper's words and their place are folded into the quantity cell, not columns of their own
    disp = disp.drop(columns=[c for c in ("quote", "source") if c in disp.columns])
    disp = disp.astype(object)

    def colour(v: Any) -> str:
        c = VERDICT_COLORS.get(v)
        return f"background-color: {c}; color: black" if c else ""

    # a uuid derived from the content keeps the HTML identical from run to run
    uid = hashlib.sha256(df.to_json(default_handler=str).encode()).hexdigest()[:8]
    sty = disp.style.format(_fmt_value).hide(axis="index").set_uuid(f"verdicts-{uid}")
    if "verdict" in disp.columns:  # coloured by the verdict itself, whatever the cell holds
        sty = sty.apply(lambda col: [colour(v) for v in verdicts], subset=["verdict"])
    # a compact table that fits the content column: free text and long names wrap, numbers not
    sty = sty.set_table_styles([
        {"selector": "", "props": "font-size: 0.8em; border-collapse: collapse; max-width: 100%"},
        {"selector": "td, th", "props": "padding: 2px 4px; vertical-align: top"},
    ])
    words = [c for c in ("quantity", "basis", "verdict") if c in disp.columns]
    if words:
        sty = sty.set_properties(subset=words, **{"overflow-wrap": "break-word", "text-align": "left"})
    if "note" in disp.columns:  # free text may hold long tokens (paths, brackets): break anywhere
        sty = sty.set_properties(subset=["note"], **{"overflow-wrap": "anywhere", "text-align": "left"})
    if "note" in disp.columns:
        sty = sty.set_properties(subset=["note"], **{"min-width": "7em"})
    if "unit" in disp.columns:  # a unit such as "ratio to T_LP-LB" may break inside its symbol
        sty = sty.set_properties(subset=["unit"], **{"overflow-wrap": "anywhere"})
    digits = [c for c in ("paper", "ratio", "tolerance") if c in disp.columns]
    if digits:  # a number never breaks across lines (ours may be a bracket, which breaks at ", ")
        sty = sty.set_properties(subset=digits, **{"white-space": "nowrap"})
    return sty.set_table_attributes('class="infsched-verdicts"')


class VerdictTable:
    """What :func:`glue_verdicts` glues: styled HTML for the web page, plain text elsewhere."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.table = table

    def _repr_html_(self) -> str:
        return style_table(self.table).to_html()

    def __repr__(self) -> str:  # plain text: the paper's words would make every line too wide
        return self.table.drop(columns=[c for c in ("quote", "source") if c in self.table.columns]
                               ).to_string(index=False)


def glue_verdicts(chapter: str, table: pd.DataFrame) -> str:
    """Glue a chapter's verdict table as ``<chapter>_scorecard``, its one-line summary as
    ``<chapter>_summary`` and its :func:`verdict_counts` as ``<chapter>_counts`` (JSON; all
    with ``display=False``); return the summary.

    When the chapter runs under :func:`infsched.runner.run_chapter` (``$INFSCHED_RUN_DIR`` set),
    the table is also written to ``$INFSCHED_RUN_DIR/verdicts.csv``, so a re-run's conclusions
    can be read back and set beside another's."""
    require(isinstance(chapter, str) and chapter.isidentifier(), "chapter", chapter,
            "must be a chapter name such as 'tad' (letters, digits, underscores)")
    summary = summary_line(table)
    from myst_nb import glue

    glue(f"{chapter}_scorecard", VerdictTable(table.reset_index(drop=True)), display=False)
    glue(f"{chapter}_summary", summary, display=False)
    glue(f"{chapter}_counts", _Counts(verdict_counts(table)), display=False)  # for the totals
    run_dir = os.environ.get("INFSCHED_RUN_DIR")
    if run_dir:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        table.to_csv(Path(run_dir) / "verdicts.csv", index=False)
    return summary


# --------------------------------------------------------------------------- sphinx hook

def _glue_refs(doctree: Any) -> set[str]:
    from myst_nb.ext.glue.utils import PendingGlueReference

    return {n.refdoc for n in doctree.findall(PendingGlueReference)}


def _on_doctree_read(app: Any, doctree: Any) -> None:
    env = app.env
    deps = env.__dict__.setdefault("infsched_glue_refs", {})
    refs = _glue_refs(doctree)
    if refs:
        deps[env.docname] = refs
    else:
        deps.pop(env.docname, None)


def _on_purge(app: Any, env: Any, docname: str) -> None:
    env.__dict__.setdefault("infsched_glue_refs", {}).pop(docname, None)


def _on_merge(app: Any, env: Any, docnames: Any, other: Any) -> None:
    mine = env.__dict__.setdefault("infsched_glue_refs", {})
    theirs = getattr(other, "infsched_glue_refs", {})
    for d in docnames:
        if d in theirs:
            mine[d] = theirs[d]


def _on_get_outdated(app: Any, env: Any, added: set[str], changed: set[str],
                     removed: set[str]) -> list[str]:
    touched = set(added) | set(changed) | set(removed)
    deps = getattr(env, "infsched_glue_refs", {})
    return sorted(d for d, refs in deps.items() if refs & touched and d not in touched)


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: re-read pages that paste glue from a chapter whenever that chapter is
    re-read, so the scorecard never shows stale verdicts after an incremental build.

    Enable with ``sphinx: {extra_extensions: [infsched.report]}`` in ``_config.yml``.
    """
    app.connect("doctree-read", _on_doctree_read)
    app.connect("env-purge-doc", _on_purge)
    app.connect("env-merge-info", _on_merge)
    app.connect("env-get-outdated", _on_get_outdated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}
