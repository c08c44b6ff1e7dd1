"""Table 3 as a markdown page (table3.md of a run): caption naming every number, warnings, failures."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from textmetric_bench.measures.failures import failed_of
from textmetric_bench.measures.intervals import INTERVAL_NAME, few_repetitions_warning
from textmetric_bench.reports.bounds import bound_label, table_order
from textmetric_bench.reports.labels import (
    MEASURE_LABELS,
    SIMILARITY_NOTE,
    format_score,
    metric_labels,
    plural,
    row_labels,
)
from textmetric_bench.reports.reference_rows import REFERENCE_NOTE, is_reference
from textmetric_bench.reports.tables.markdown import failures_markdown, markdown_table
from textmetric_bench.reports.tables.table3 import (
    BELOW_MARK,
    BELOW_NOTE,
    BOLD_TOLERANCE,
    FEWER_REPETITIONS_NOTE,
    below_chance_cells,
    fewer_repetitions,
    table3_markdown_cells,
)


def complete_repetitions(summary: pd.DataFrame, failed: Mapping[str, tuple[int, int]] | None = None) -> pd.Series:
    """The complete repetitions each metric's cells average (the summary's largest n), 0 for a failed metric with
    none."""
    reps = summary.groupby("metric")["n"].max().astype(int) if not summary.empty else pd.Series(dtype=int)
    return pd.concat([reps, pd.Series(0, index=[m for m in (failed or {}) if m not in reps.index], dtype=int)])


def repetitions_text(
    summary: pd.DataFrame, planned: int | None, failed: Mapping[str, tuple[int, int]] | None = None
) -> tuple[str, pd.Series | None]:
    """How many repetitions the cells average: "5", or "k of N" per metric when some failed (``failed``: metric ->
    (failed, all) evaluations; "k of N, 13 of 105 evaluations failed" for those).

    Returns the sentence fragment and, when counts differ from ``planned`` or evaluations failed, a per-metric column.
    """
    reps = complete_repetitions(summary, failed)
    planned = int(planned) if planned else int(reps.max())
    if (reps == planned).all() and not failed:
        return plural(planned, "repetition"), None
    column = pd.Series(
        {
            m: f"{k} of {planned}"
            + (f"; {failed[m][0]} of {failed[m][1]} evaluations failed" if m in (failed or {}) else "")
            for m, k in reps.items()
        }
    )
    return (
        f"the complete repetitions in column *reps* (out of {planned}; a repetition with a failed evaluation "
        'counts for none, see "Failed metrics")'
    ), column


def failed_counts(failures: Mapping[str, str] | None) -> dict[str, tuple[int, int]]:
    """metric -> (failed, all) evaluations, for the failing metrics whose failure line gives the counts."""
    return {m: counts for m, line in (failures or {}).items() if (counts := failed_of(line)) is not None}


def below_chance_markdown(summary: pd.DataFrame) -> list[str]:
    """What ▼ says, and every A or A^w below chance with its mean, repetitions and Holm p; nothing when none is."""
    below = below_chance_cells(summary)
    if below.empty:
        return []
    labels = metric_labels(summary)
    items = [
        f"- {BELOW_MARK} `{labels.get(r.metric, r.metric)}`: {'A^w' if r.measure == 'Aw' else r.measure} = "
        f"{format_score(r.mean)} over {plural(int(r.n), 'repetition')} (Holm p = {r.p_holm:.3g})"
        for r in below.itertuples()
    ]
    return [BELOW_NOTE, "", *items, ""]


def table3_text(
    summary: pd.DataFrame,
    title: str,
    failures: Mapping[str, str] | None,
    repetitions: int | None = None,
    marks=None,
    marks_note: str = "",
    orientation: Mapping[str, str] | None = None,
) -> str:
    """The page: title, warning, caption, the table (``marks``: the ▲ metrics per column, explained by
    ``marks_note``), a note on ▼ cells when there are any, reference rows, failures. ``orientation`` (metric ->
    "distance" or "similarity", the run's) names a failed metric with no complete repetition, which has no row in
    ``summary``, as its kind."""
    lines = [f"# {title}", ""]
    cells = table3_markdown_cells(summary, marks) if not summary.empty else pd.DataFrame()
    warning = few_repetitions_warning(int(summary["n"].max())) if not summary.empty else ""
    if warning:
        lines += [f"**Warning: {warning}.**", ""]
    failed = failed_counts(failures)
    if not cells.empty:
        for metric in failed:  # a metric with no complete repetition keeps its row: no number, and why
            if metric not in cells.index:
                cells.loc[metric] = "–"
        cells = cells.reindex(table_order(cells.index))  # ceiling first and floor last, a failed metric between
        n_text, per_metric = repetitions_text(summary, repetitions, failed)
        if per_metric is not None:
            cells.insert(0, "reps", per_metric.reindex(cells.index).fillna(f"0 of {repetitions}"))
        explained = "; ".join(MEASURE_LABELS[m] for m in cells.columns if m in MEASURE_LABELS)
        labels, any_similarity = row_labels(summary, cells.index, orientation)
        similarity = " " + SIMILARITY_NOTE if any_similarity else ""
        cells = cells.rename(index=labels).rename(index=bound_label)
        lines += [
            f"Measures: {explained}. Higher is better for all. Cells: mean over {n_text} [{INTERVAL_NAME}]; "
            f"bold = column best and those within {BOLD_TOLERANCE:g} of it"
            f"{', ' + FEWER_REPETITIONS_NOTE if fewer_repetitions(summary) else ''}.{similarity}"
            + (f" {marks_note}" if marks_note else ""),
            "",
            markdown_table(cells.rename_axis("metric").reset_index()),
            "",
        ]
        lines += below_chance_markdown(summary)
        lines += [REFERENCE_NOTE, ""] if any(map(is_reference, cells.index)) else []
    else:
        lines += ["No metric produced measures.", ""]
    lines += failures_markdown(failures)
    return "\n".join(lines)
