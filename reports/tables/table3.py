"""Table 3 of a run, laid out like 004 Table 3, from the summary of its measures (textmetric_bench.measures.summaries).

One row per metric, one column of means per measure, each with its 95% bootstrap interval; the best value of each
column (and those within .015 of it) in bold; ▲ marks the metrics not separated from the column's best
(reports/tables/significance.py), ▼ an A or A^w significantly below chance (textmetric_bench.measures.chance). A table's optional ``orientation`` column says which metrics are
similarities, scored on their negation; they are shown as "name (similarity, negated)".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from textmetric_bench.measures.chance import BELOW_CHANCE_ADVICE, below_chance
from textmetric_bench.measures.chance import TEST_NAME as CHANCE_TEST
from textmetric_bench.reports.bounds import bound_of, table_order
from textmetric_bench.reports.labels import TABLE3_ORDER, format_score
from textmetric_bench.reports.tables.significance import TOP_MARK

#: Values within this distance of a column's best are bolded (004 Table 3 caption).
BOLD_TOLERANCE = 0.015
#: The mark of an A or A^w significantly below chance, and what it says.
BELOW_MARK = "▼"
BELOW_NOTE = (
    f"{BELOW_MARK}: significantly below chance (.5, what a constant metric scores; {CHANCE_TEST}): "
    f"the metric orders nested pairs the wrong way, {BELOW_CHANCE_ADVICE}."
)


def _ordered_columns(columns) -> list[str]:
    return [m for m in TABLE3_ORDER if m in set(columns)]


def table3(summary: pd.DataFrame, *, with_ci: bool = False) -> pd.DataFrame:
    """Wide table like 004 Table 3: one row per metric, one column of means per measure.

    With ``with_ci`` every measure ``X`` is followed by ``X_ci_low`` and ``X_ci_high``.
    The raw ``T`` is dropped in favour of ``T100``.
    """
    means = summary.pivot(index="metric", columns="measure", values="mean")
    means = means.reindex(table_order(means.index))  # ceiling first, floor last (reports/bounds.py)
    order = _ordered_columns(means.columns)
    if not with_ci:
        return means[order].rename_axis(columns=None)
    lows = summary.pivot(index="metric", columns="measure", values="ci_low")
    highs = summary.pivot(index="metric", columns="measure", values="ci_high")
    parts = {}
    for m in order:
        parts[m] = means[m]
        parts[f"{m}_ci_low"] = lows[m]
        parts[f"{m}_ci_high"] = highs[m]
    return pd.DataFrame(parts)


#: What the caption adds when some metric's cells average fewer complete repetitions than others'.
FEWER_REPETITIONS_NOTE = "among the metrics with the most complete repetitions in the column"


def best_mask(
    means: pd.DataFrame, tolerance: float = BOLD_TOLERANCE, counts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """True where a value is its column's best or within ``tolerance`` of it (higher is better); bounds never.

    ``counts``: the repetitions each cell averages (``repetition_counts``); then only the metrics with the column's
    most compete, so a partly failing metric's mean over fewer repetitions is neither bold nor the best."""
    names = means.index.get_level_values(-1)  # the metric, also under a sweep's (pair, k, n, metric) index
    competing = pd.DataFrame({c: [bound_of(m) is None for m in names] for c in means.columns}, index=means.index)
    competing &= means.notna()
    if counts is not None:
        n = counts.reindex(index=means.index, columns=means.columns).where(competing)
        competing &= n.ge(n.max(axis=0, skipna=True), axis=1)
    best = means.where(competing).max(axis=0, skipna=True)
    return means.ge(best - tolerance - 1e-12, axis=1) & competing


def repetition_counts(summary: pd.DataFrame) -> pd.DataFrame:
    """The repetitions each cell of ``table3(summary)`` averages (the summary's ``n``), laid out as its means."""
    return summary.pivot(index="metric", columns="measure", values="n")


def fewer_repetitions(summary: pd.DataFrame, by: Sequence[str] = ("measure",), count: str = "n") -> bool:
    """Whether some metric's cells (bounds aside) average fewer repetitions (``count``) than another's in the same
    column, a column being the rows of one value of ``by`` (a sweep's: its block's keys and the measure)."""
    if summary.empty:
        return False
    ranked = summary[[bound_of(m) is None for m in summary["metric"]]]
    return bool((ranked.groupby(list(by))[count].nunique() > 1).any())


def below_chance_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """The A and A^w cells of ``summary`` significantly below chance (bounds not tested): metric, measure, mean, n,
    p, p_holm (textmetric_bench.measures.chance)."""
    if summary.empty:
        return below_chance(summary)
    bounds = [m for m in summary["metric"].unique() if bound_of(m) is not None]
    return below_chance(summary, excluded=bounds)


def table3_markdown_cells(summary: pd.DataFrame, marks: Mapping[str, set] | None = None) -> pd.DataFrame:
    """Table 3 as strings ``mean [ci_low, ci_high]``, the best of each column bolded, ▼ after an A or A^w
    significantly below chance.

    ``marks``: per column, the metrics not separated from its best (reports/tables/significance.py), marked ▲.
    """
    wide = table3(summary, with_ci=True)
    means = table3(summary)
    bold = best_mask(means, counts=repetition_counts(summary))
    below = set(below_chance_cells(summary)[["metric", "measure"]].itertuples(index=False, name=None))
    cells = pd.DataFrame(index=means.index, columns=means.columns, dtype=object)
    for m in means.columns:
        for metric in means.index:
            text = format_score(wide.at[metric, m])
            if bold.at[metric, m]:
                text = f"**{text}**"
            if metric in (marks or {}).get(m, ()):
                text += f" {TOP_MARK}"
            if (metric, m) in below:
                text += f" {BELOW_MARK}"
            low, high = wide.at[metric, f"{m}_ci_low"], wide.at[metric, f"{m}_ci_high"]
            if np.isfinite(low) and np.isfinite(high):
                text += f" [{format_score(low)}, {format_score(high)}]"
            cells.at[metric, m] = text
    return cells
