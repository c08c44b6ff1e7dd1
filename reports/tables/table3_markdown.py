"""Table 3 as a markdown page (table3.md of a run): caption naming every number, warnings, failures."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from textmetric_bench.measures.intervals import INTERVAL_NAME, few_repetitions_warning
from textmetric_bench.reports.bounds import bound_label
from textmetric_bench.reports.labels import MEASURE_LABELS, SIMILARITY_NOTE, metric_labels, similarities
from textmetric_bench.reports.reference_rows import REFERENCE_NOTE, is_reference
from textmetric_bench.reports.tables.markdown import failures_markdown, markdown_table
from textmetric_bench.reports.tables.significance import GROUP_NOTE
from textmetric_bench.reports.tables.table3 import BOLD_TOLERANCE, table3_markdown_cells


def repetitions_text(summary: pd.DataFrame, planned: int | None) -> tuple[str, pd.Series | None]:
    """How many repetitions the cells average: "5", or "k of N" per metric when some failed.

    Returns the sentence fragment and, when counts differ from ``planned``, a per-metric column.
    """
    reps = summary.groupby("metric")["n"].max().astype(int)
    planned = int(planned) if planned else int(reps.max())
    if (reps == planned).all():
        return f"{planned} repetitions", None
    column = reps.map(lambda k: f"{k} of {planned}")
    return (f"the repetitions counted in column *reps* (k of {planned}: the others failed, see "
            "\"Failed metrics\")"), column


def table3_text(summary: pd.DataFrame, title: str, failures: Mapping[str, str] | None,
                   repetitions: int | None = None, groups=None) -> str:
    lines = [f"# {title}", ""]
    cells = table3_markdown_cells(summary, groups) if not summary.empty else pd.DataFrame()
    warning = few_repetitions_warning(int(summary["n"].max())) if not summary.empty else ""
    if warning:
        lines += [f"**Warning: {warning}.**", ""]
    if not cells.empty:
        n_text, per_metric = repetitions_text(summary, repetitions)
        if per_metric is not None:
            cells.insert(0, "reps", per_metric.reindex(cells.index).fillna(f"0 of {repetitions}"))
        explained = "; ".join(MEASURE_LABELS[m] for m in cells.columns if m in MEASURE_LABELS)
        similarity = " " + SIMILARITY_NOTE if similarities(summary) else ""
        cells = cells.rename(index=metric_labels(summary)).rename(index=bound_label)
        lines += [
            f"Measures: {explained}. Higher is better for all. Cells: mean over {n_text} [{INTERVAL_NAME}]; "
            f"bold = column best and those within {BOLD_TOLERANCE:g} of it.{similarity}"
            + (f" {GROUP_NOTE}" if groups else ""),
            "",
            markdown_table(cells.rename_axis("metric").reset_index()),
            "",
        ] + ([REFERENCE_NOTE, ""] if any(map(is_reference, cells.index)) else [])
    else:
        lines += ["No metric produced measures.", ""]
    lines += failures_markdown(failures)
    return "\n".join(lines)
