"""What a table shows of the paired comparisons (textmetric_bench.measures.paired): per column, the metrics not
separated from the column's best, marked ▲; every comparison is written as ``significance_<measure>.csv`` and
drawn as a matrix in report.html.

One mark per cell reads at any number of metrics (a compact letter display needs up to one letter per rank
group, so a cell grows with the number of metrics). The mark is left out below FEW_REPETITIONS paired
repetitions, where the tables already warn that the paired tests are optimistic. The bound metrics (reports/bounds.py) are compared
like the others but are never the best and never marked.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from textmetric_bench.measures.intervals import FEW_REPETITIONS
from textmetric_bench.measures.paired import TEST_NAME
from textmetric_bench.reports.bounds import ranked

#: The mark of a metric that no test separates from its column's best.
TOP_MARK = "▲"
TOP_NOTE = (
    f"{TOP_MARK}: the column's best metric and every metric not separated from it significantly ({TEST_NAME}); "
    "an unmarked metric is significantly below the best. Bounds (ceiling, floor) take no part. Every pair "
    "of metrics: the significance matrices of report.html and significance_<measure>.csv."
)
FEW_NOTE = (
    f"No {TOP_MARK} marks: the paired tests rest on fewer than {FEW_REPETITIONS} repetitions "
    "(see the warning); every pair is still in significance_<measure>.csv."
)
WILCOXON_NOTE = (
    "Wilcoxon signed-rank was not used: with 5 repetitions its smallest two-sided p is .0625, "
    "so it could never separate two metrics. The bootstrap can, but with few repetitions it is "
    "optimistic (it cannot see what the repetitions did not sample): read a 5-repetition "
    "separation as indicative and confirm it with more repetitions."
)


def top_group(means: pd.Series, comparisons: pd.DataFrame, min_repetitions: int = FEW_REPETITIONS) -> set[str]:
    """The best metric of ``means`` (bounds and missing means left out) and those its paired comparison on at
    least ``min_repetitions`` repetitions does not separate from it; empty when the best has no such comparison."""
    order = ranked(means.dropna().sort_values(ascending=False, kind="stable").index)
    if not order or comparisons.empty:
        return set()
    best = order[0]
    rows = comparisons[
        ((comparisons["metric_a"] == best) | (comparisons["metric_b"] == best)) & (comparisons["n"] >= min_repetitions)
    ]
    if rows.empty:
        return set()
    group = {best}
    for a, b, better in zip(rows["metric_a"], rows["metric_b"], rows["better"]):
        other = b if a == best else a
        if other in order and not better:
            group.add(other)
    return group


def column_marks(
    comparisons: dict[str, pd.DataFrame], means: pd.DataFrame, min_repetitions: int = FEW_REPETITIONS
) -> dict[str, set[str]]:
    """The ▲ metrics of each column of a Table 3 of ``means`` (T100 is tested on T: the same order); a column
    whose tests rest on too few repetitions is left out."""
    marks = {}
    for column in means.columns:
        tested = comparisons.get("T" if column == "T100" else column)
        if tested is not None and not tested.empty:
            group = top_group(means[column], tested, min_repetitions)
            if group:
                marks[column] = group
    return marks


def marks_note(comparisons: dict[str, pd.DataFrame], marks: dict[str, set[str]]) -> str:
    """The legend of the marks: what ▲ means, or why there are none although metrics were compared."""
    if marks:
        return TOP_NOTE
    return FEW_NOTE if comparisons else ""


def write_significance(comparisons: dict[str, pd.DataFrame], out_dir: Path, **tags) -> dict[str, Path]:
    """``significance_<measure>.csv`` per measure (long format), each row tagged with ``tags`` columns."""
    paths = {}
    for measure, frame in comparisons.items():
        path = Path(out_dir) / f"significance_{measure}.csv"
        frame.assign(**tags).to_csv(path, index=False)
        paths[f"significance_{measure}"] = path
    return paths
