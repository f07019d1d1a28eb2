"""The head-to-head contenders' names and display labels, in one module below both
:mod:`.contenders` (which builds each contender) and :mod:`.plugins` (which adds a reader's
policies to the labels and refuses their names for a new policy), so neither imports the other."""

from __future__ import annotations

__all__ = ["LABELS", "CONTENDERS", "MEAN_PLANNED", "MONITORED"]

#: contender -> its display name (also its plotting style key)
LABELS: dict[str, str] = {
    "most-accurate": "most-accurate",
    "fastest": "fastest",
    "slack-accurate": "slack-accurate",
    "batch-greedy": "batch-greedy",
    "tad": "TAD",
    "tad-batch": "TAD+batching",
    "tad-op": "TAD-OP",
    "r-jiq": "R-JIQ",
    "ramsis": "RAMSIS",
    "jellyfish+": "Jellyfish+",
    "modelswitching": "ModelSwitching",
    "flex": "FLEX",
    "flex-np": "FLEX-NP",
}
#: variants planned once, for the stream's mean rate: what re-planning buys (not in the sweeps)
MEAN_PLANNED: dict[str, str] = {"ramsis@mean": "RAMSIS (mean λ)", "jellyfish+@mean": "Jellyfish+ (mean λ)",
                                 "modelswitching@mean": "ModelSwitching (mean λ)"}
#: variants of the contenders told the mean rate that estimate it instead, from the RAMSIS
#: paper's 500 ms monitor (issue 33: every contender gets the same information; not in the sweeps)
MONITORED: dict[str, str] = {"r-jiq@monitor": "R-JIQ (monitor)", "flex@monitor": "FLEX (monitor)"}
#: the built-in contenders, in the order the chapter lists them
CONTENDERS: tuple[str, ...] = tuple(LABELS)
LABELS.update(MEAN_PLANNED)
LABELS.update(MONITORED)
