"""How metrics, measures and scores are named wherever a table or a figure shows them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from textmetric_bench.measures import registry

#: Column order of 004 Table 3; T100 is T in the paper's unit [100 op/s] (textmetric_bench.measures.registry).
TABLE3_ORDER = registry.table_columns()
#: Measures on a 0..1 "higher is better" scale (time excluded, as in 004 Figure 4).
QUALITY_MEASURES = registry.names(quality=True)
#: Short explanation of each column, used in headers and legends.
MEASURE_LABELS = {m.column: f"{m.column}: {m.legend}" for m in registry.MEASURES.values()}  # the column as headed
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


def row_labels(
    summary: pd.DataFrame, rows: Iterable[str], orientation: Mapping[str, str] | None
) -> tuple[dict[str, str], bool]:
    """The name to show for each metric of ``summary`` (``metric_labels``) and of ``rows`` that it lacks (a failed
    metric with no complete repetition), the latter marked as similarities by the run's ``orientation`` (metric ->
    "distance" or "similarity"); and whether any shown name carries the mark (so SIMILARITY_NOTE is due)."""
    labels = metric_labels(summary)
    lacking = [str(m) for m in rows if m not in labels and (orientation or {}).get(str(m)) == "similarity"]
    labels.update({m: f"{m}{SIMILARITY_MARK}" for m in lacking})
    return labels, bool(similarities(summary)) or bool(lacking)


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one: "1 repetition", "5 repetitions"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def format_score(value: float) -> str:
    """Three decimals without the leading zero, as printed in 004 (``.945``, ``-.020``, ``4.680``); a value that
    rounds to zero is ``.000``, never ``-.000``."""
    if value is None or not np.isfinite(value):
        return "–"
    text = f"{value:.3f}"
    if text == "-0.000":  # a value that rounds to zero has no sign to show
        text = "0.000"
    if text.startswith("0."):
        return text[1:]
    if text.startswith("-0."):
        return "-" + text[2:]
    return text
