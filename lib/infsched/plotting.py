"""One seaborn theme for the whole book, stable policy colours, and a figure saver.

Line-style convention (from the TAD paper, used book-wide): **solid** for a theoretical bound,
**dash-dot** for a λ-aware policy, **dashed** for a λ-oblivious one. Policies not listed get a
colour from a stable hash of their name, so the same name has the same colour in every chapter.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import require

__all__ = [
    "PALETTE",
    "PolicyStyle",
    "POLICY_COLORS",
    "policy_color",
    "policy_style",
    "set_theme",
    "label_axes",
    "save",
]

#: seaborn's colour-blind palette (10 colours), as hex, fixed here so it never depends on state.
PALETTE: tuple[str, ...] = (
    "#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc",
    "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9",
)

SOLID, DASHDOT, DASHED, DOTTED = "-", "-.", "--", ":"


@dataclass(frozen=True)
class PolicyStyle:
    """Colour, line style and marker for one policy; ``kw`` gives matplotlib keyword args."""

    color: str
    linestyle: str = SOLID
    marker: str = "o"

    @property
    def kw(self) -> dict[str, str]:
        return {"color": self.color, "linestyle": self.linestyle, "marker": self.marker}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", name.lower())


#: Known policies. Keys are normalised (lower case, alphanumerics only): "TAD-OP" -> "tadop".
POLICY_COLORS: dict[str, PolicyStyle] = {
    # theoretical bounds / optima: solid
    "lp": PolicyStyle("#000000", SOLID, ""),
    "lpbound": PolicyStyle("#000000", SOLID, ""),
    "bound": PolicyStyle("#000000", SOLID, ""),
    "hindsight": PolicyStyle("#000000", SOLID, ""),
    "hindsightip": PolicyStyle("#000000", SOLID, ""),
    "optimal": PolicyStyle("#000000", SOLID, ""),
    # lambda-aware: dash-dot
    "rjiq": PolicyStyle(PALETTE[1], DASHDOT, "^"),
    "ramsis": PolicyStyle(PALETTE[2], DASHDOT, "D"),
    "kairos": PolicyStyle(PALETTE[2], DASHDOT, "D"),
    "herd": PolicyStyle(PALETTE[4], DASHDOT, "v"),
    # lambda-oblivious: dashed
    "tad": PolicyStyle(PALETTE[3], DASHED, "o"),
    "tadop": PolicyStyle(PALETTE[0], DASHED, "s"),
    "jiqfast": PolicyStyle(PALETTE[4], DASHED, "v"),
    "jiqaccurate": PolicyStyle(PALETTE[5], DASHED, "D"),
    "jsq": PolicyStyle(PALETTE[3], DASHED, "x"),
    "jiq": PolicyStyle(PALETTE[5], DASHED, "+"),
    "random": PolicyStyle(PALETTE[7], DASHED, "."),
    "jellyfish": PolicyStyle(PALETTE[3], DASHED, "s"),
    "modelswitching": PolicyStyle(PALETTE[1], DASHED, "v"),
    "roundrobin": PolicyStyle(PALETTE[7], DASHED, "."),
    "mcsf": PolicyStyle(PALETTE[0], DASHED, "s"),
    "fcfs": PolicyStyle(PALETTE[3], DASHED, "x"),
    "mcbenchmark": PolicyStyle(PALETTE[3], DASHED, "x"),
    "flex": PolicyStyle(PALETTE[0], DASHED, "s"),
    "clockwork": PolicyStyle(PALETTE[1], DASHED, "^"),
    "nexus": PolicyStyle(PALETTE[5], DASHED, "+"),
    # KAIROS chapter: the Oracle is a bound-like reference; the three state-of-the-art schemes
    "orcl": PolicyStyle("#000000", SOLID, ""),
    "kairosplus": PolicyStyle(PALETTE[0], DASHDOT, "s"),
    "ribbon": PolicyStyle(PALETTE[3], DASHED, "x"),
    "drs": PolicyStyle(PALETTE[5], DASHED, "+"),
    "clkwrk": PolicyStyle(PALETTE[1], DASHED, "^"),
    "homogeneous": PolicyStyle(PALETTE[7], DOTTED, "."),
}


def policy_style(name: str) -> PolicyStyle:
    """The style of a policy by name (case and punctuation ignored); stable for unknown names."""
    require(isinstance(name, str) and name.strip() != "", "name", name, "must be a policy name")
    k = _key(name)
    if k in POLICY_COLORS:
        return POLICY_COLORS[k]
    h = int(hashlib.sha256(k.encode()).hexdigest(), 16)
    return PolicyStyle(PALETTE[h % len(PALETTE)], DOTTED, "osD^vx+*"[h // len(PALETTE) % 8])


def policy_color(name: str) -> str:
    """The colour of a policy by name (see :func:`policy_style`)."""
    return policy_style(name).color


def set_theme(**rc: Any) -> None:
    """The book's one theme: seaborn "notebook"/"whitegrid", colour-blind palette, 6.4x4 in at
    110 dpi on screen, 150 dpi when saved. ``rc`` overrides matplotlib settings."""
    import seaborn as sns

    base = {
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "axes.titleweight": "bold",
        "legend.frameon": False,
        "figure.constrained_layout.use": True,
    }
    base.update(rc)
    sns.set_theme(context="notebook", style="whitegrid", palette=list(PALETTE), rc=base)


_UNIT_RE = re.compile(r"\(.+\)|\[.+\]")


def label_axes(ax: Any, x: str, y: str, *, title: str | None = None) -> Any:
    """Label both axes; each label must carry its unit in parentheses or brackets, e.g.
    ``"arrival rate λ (req/s)"``; use ``(-)`` or ``(1)`` for a dimensionless quantity."""
    for name, label in (("x", x), ("y", y)):
        require(isinstance(label, str) and bool(_UNIT_RE.search(label)), name, label,
                "must name the unit in parentheses or brackets, e.g. 'latency (ms)' or 'ratio (-)'")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if title is not None:
        ax.set_title(title)
    return ax


def save(fig: Any, name: str, *, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """Save ``fig`` as ``<$INFSCHED_FIGURES>/<name>.<fmt>`` when that variable is set (the
    chapter runner sets it); a no-op returning ``[]`` otherwise (the book shows figures inline)."""
    require(isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.\-]+", name or "") is not None,
            "name", name, "must be a file stem of letters, digits, '_', '-', '.'")
    folder = os.environ.get("INFSCHED_FIGURES")
    if not folder:
        return []
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = out / f"{name}.{fmt}"
        fig.savefig(p)
        paths.append(p)
    return paths
