"""What a table shows of the paired comparisons (textmetric_bench.measures.paired): per column, the metrics not
separated from the column's best, marked ▲; every comparison is written as ``significance_<measure>.csv`` and
drawn as a matrix in report.html.

One mark per cell reads at any number of metrics (a compact letter display needs up to one letter per rank
group, so a cell grows with the number of metrics). The mark is left out below FEW_REPETITIONS paired
repetitions, where the tables already warn that the paired tests are optimistic. The bound metrics (reports/bounds.py) are compared
like the others but are never the best and never marked.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    f"No {TOP_MARK} marks: the paired tests with each column's best rest on fewer than {FEW_REPETITIONS} complete "
    "repetitions (see the warnings); every pair is still in significance_<measure>.csv."
)
HINT_NOTE = (
    f"Striped cells: fewer than {FEW_REPETITIONS} paired repetitions (the run has fewer, or a failed evaluation "
    "voided a repetition of one of the two metrics): their colour is a hint, not a finding."
)
WILCOXON_NOTE = (
    "Wilcoxon signed-rank was not used: with 5 repetitions its smallest two-sided p is .0625, "
    "so it could never separate two metrics. The bootstrap can, but with few repetitions it is "
    "optimistic (it cannot see what the repetitions did not sample): read a 5-repetition "
    "separation as indicative and confirm it with more repetitions."
)


def _best(means: pd.Series, counts: pd.Series | None = None) -> str | None:
    """The highest mean's metric, bounds aside; with ``counts`` (the repetitions each mean averages), among the
    metrics with the most, as the bold of Table 3 (``table3.best_mask``)."""
    order = ranked(means.dropna().sort_values(ascending=False, kind="stable").index)
    if counts is not None and order:
        n = counts.reindex(order)
        order = [m for m in order if n[m] == n.max()]
    return order[0] if order else None


def _tests_of_best(
    means: pd.Series, comparisons: pd.DataFrame, min_repetitions: int, counts: pd.Series | None = None
) -> tuple[str | None, pd.DataFrame]:
    """The best metric of ``means`` (None: no mean) and its paired comparisons on at least ``min_repetitions``."""
    best = _best(means, counts)
    if best is None or comparisons.empty:
        return best, comparisons.iloc[0:0]
    with_best = (comparisons["metric_a"] == best) | (comparisons["metric_b"] == best)
    return best, comparisons[with_best & (comparisons["n"] >= min_repetitions)]


def _tested_for(comparisons: dict[str, pd.DataFrame], column: str) -> pd.DataFrame | None:
    """The comparisons behind a Table 3 column (T100 is tested on T: the same order)."""
    return comparisons.get("T" if column == "T100" else column)


def top_group(
    means: pd.Series,
    comparisons: pd.DataFrame,
    min_repetitions: int = FEW_REPETITIONS,
    counts: pd.Series | None = None,
) -> set[str]:
    """The best metric of ``means`` (bounds and missing means left out; with ``counts``, among the metrics with the
    most repetitions) and those its paired comparison on at least ``min_repetitions`` repetitions does not separate
    from it; empty when the best has no such comparison."""
    best, rows = _tests_of_best(means, comparisons, min_repetitions, counts)
    if rows.empty:
        return set()
    order = set(ranked(means.dropna().index))
    group = {best}
    for a, b, better in zip(rows["metric_a"], rows["metric_b"], rows["better"]):
        other = b if a == best else a
        if other in order and not better:
            group.add(other)
    return group


def untested(
    means: pd.Series,
    comparisons: pd.DataFrame,
    min_repetitions: int = FEW_REPETITIONS,
    counts: pd.Series | None = None,
) -> set[str]:
    """The metrics of ``means`` (bounds and missing means left out, the best too) whose paired comparison with the
    best rests on fewer than ``min_repetitions`` repetitions, or that have none: a failed evaluation voids its
    repetition, so such a metric stays unmarked without a test having put it below the best."""
    best, rows = _tests_of_best(means, comparisons, min_repetitions, counts)
    tested = set(rows["metric_a"]) | set(rows["metric_b"]) if not rows.empty else set()
    return {m for m in ranked(means.dropna().index) if m != best and m not in tested}


def column_marks(
    comparisons: dict[str, pd.DataFrame],
    means: pd.DataFrame,
    min_repetitions: int = FEW_REPETITIONS,
    counts: pd.DataFrame | None = None,
) -> dict[str, set[str]]:
    """The ▲ metrics of each column of a Table 3 of ``means`` (T100 is tested on T: the same order); a column
    whose tests rest on too few repetitions is left out. ``counts``: the repetitions each mean averages
    (``table3.repetition_counts``): the column's best is then among the metrics with the most."""
    marks = {}
    for column in means.columns:
        tested = _tested_for(comparisons, column)
        if tested is not None and not tested.empty:
            group = top_group(means[column], tested, min_repetitions, _column(counts, column))
            if group:
                marks[column] = group
    return marks


def marks_note(
    comparisons: dict[str, pd.DataFrame],
    marks: dict[str, set[str]],
    means: pd.DataFrame | None = None,
    labels: Mapping[str, str] | None = None,
    min_repetitions: int = FEW_REPETITIONS,
    counts: pd.DataFrame | None = None,
) -> str:
    """The legend of the marks: what ▲ means, or why there are none although metrics were compared; with
    ``means`` (the table's), also the columns left without marks and the metrics left unmarked because their
    comparison with the column's best rests on too few complete repetitions (not because a test separated them),
    each column named as ``labels`` writes it (default: as the table's header)."""
    if not marks:
        return FEW_NOTE if comparisons else ""
    if means is None:
        return TOP_NOTE
    label = (lambda column: labels.get(column, column)) if labels else str
    unmarked_columns, unmarked = [], {}
    for column in means.columns:
        tested = _tested_for(comparisons, column)
        if tested is None or tested.empty or _best(means[column], _column(counts, column)) is None:
            continue
        if column not in marks:
            unmarked_columns.append(label(column))
            continue
        for metric in sorted(untested(means[column], tested, min_repetitions, _column(counts, column))):
            unmarked.setdefault(metric, []).append(label(column))
    notes = [TOP_NOTE]
    if unmarked_columns:
        notes.append(
            f"No {TOP_MARK} in {', '.join(unmarked_columns)}: the column's best has fewer than {min_repetitions} "
            "complete repetitions paired with the others."
        )
    if unmarked:
        listed = "; ".join(f"{m} ({', '.join(columns)})" for m, columns in unmarked.items())
        notes.append(
            f"Unmarked for fewer than {min_repetitions} complete repetitions paired with the column's best, "
            f"not by a test: {listed}."
        )
    return " ".join(notes)


def _column(counts: pd.DataFrame | None, column: str) -> pd.Series | None:
    return counts[column] if counts is not None and column in counts.columns else None


def write_significance(comparisons: dict[str, pd.DataFrame], out_dir: Path, **tags) -> dict[str, Path]:
    """``significance_<measure>.csv`` per measure (long format), each row tagged with ``tags`` columns."""
    paths = {}
    for measure, frame in comparisons.items():
        path = Path(out_dir) / f"significance_{measure}.csv"
        frame.assign(**tags).to_csv(path, index=False)
        paths[f"significance_{measure}"] = path
    return paths
