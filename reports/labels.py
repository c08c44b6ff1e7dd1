"""How metrics, measures and scores are named wherever a table or a figure shows them."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Column order of 004 Table 3; T100 is T in the paper's unit [100 op/s].
TABLE3_ORDER = ("A", "Aw", "T100", "rho", "omega2", "L", "S", "I", "IFC")
#: Measures on a 0..1 "higher is better" scale (time excluded, as in 004 Figure 4).
QUALITY_MEASURES = ("A", "Aw", "rho", "omega2", "L", "S", "I", "IFC")
#: Short explanation of each column, used in headers and legends.
MEASURE_LABELS = {
    "A": "A: judgement accuracy (004 §4.5, eq. 6)",
    "Aw": "Aw: hardness-weighted accuracy (eq. 7)",
    "T100": "T: speed in [100 op/s], embedding excluded (§4.4)",
    "rho": "rho: Spearman monotonicity (§4.1)",
    "omega2": "omega2: separability, ANOVA ω² (eq. 4)",
    "L": "L: linearity R² (§4.3)",
    "S": "S: size robustness (eq. 8)",
    "I": "I: imbalance robustness (§4.7)",
    "IFC": "IFC: −Spearman of distance with fine-tuning iteration (§5)",
}
#: What a similarity's name is followed by wherever it is shown.
SIMILARITY_MARK = " (similarity, negated)"
SIMILARITY_NOTE = (
    "A metric marked (similarity, negated) is a similarity (larger = more alike), "
    "scored on its negation so that, like a distance, larger means more different."
)


def similarities(frame: pd.DataFrame) -> set[str]:
    """The metrics of ``frame`` that its ``orientation`` column marks as similarities."""
    if frame.empty or "orientation" not in frame.columns:
        return set()
    return set(frame.loc[frame["orientation"] == "similarity", "metric"].astype(str))


def metric_labels(frame: pd.DataFrame) -> dict[str, str]:
    """The name to show for each metric of ``frame``: a similarity's is followed by SIMILARITY_MARK."""
    if "metric" not in frame.columns:
        return {}
    similar = similarities(frame)
    return {m: f"{m}{SIMILARITY_MARK}" if str(m) in similar else str(m) for m in frame["metric"].unique()}


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one: "1 repetition", "5 repetitions"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_score(value: float) -> str:
    """Three decimals without the leading zero, as printed in 004 (``.945``, ``-.020``, ``4.680``)."""
    if value is None or not np.isfinite(value):
        return "–"
    text = f"{value:.3f}"
    if text.startswith("0."):
        return text[1:]
    if text.startswith("-0."):
        return "-" + text[2:]
    return text
