"""The files of a run's Table 3: ``summary.csv``, ``table3.csv``, ``table3.md`` and the significance tables."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from textmetric_bench.measures.paired import all_comparisons
from textmetric_bench.measures.summaries import RAW_MEASURES, labelled, summarise_measures
from textmetric_bench.reports.tables.significance import column_marks, marks_note, write_significance
from textmetric_bench.reports.tables.table3 import repetition_counts, table3
from textmetric_bench.reports.bounds import table_order
from textmetric_bench.reports.tables.table3_markdown import failed_counts, table3_text


def write_tables(
    measures: pd.DataFrame,
    out_dir: Path,
    *,
    title: str | None = None,
    failures: Mapping[str, str] | None = None,
    repetitions: int | None = None,
    orientation: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """Write ``summary.csv``, ``table3.csv``, ``table3.md`` and ``significance_<measure>.csv`` into ``out_dir``.

    With an ``orientation`` column in ``measures``, table3.csv has it too and table3.md marks similarities.

    ``repetitions``: how many the run planned, so a metric with failed repetitions reads "k of N". ``orientation``:
    the run's (metric -> "distance" or "similarity"), for a failed metric with no complete repetition, which no
    measure carries.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarise_measures(measures)
    paths = {
        "summary": out_dir / "summary.csv",
        "table3_csv": out_dir / "table3.csv",
        "table3_md": out_dir / "table3.md",
    }
    summary.to_csv(paths["summary"], index=False)
    comparisons = all_comparisons(labelled(measures), RAW_MEASURES)
    paths.update(write_significance(comparisons, out_dir))
    means = table3(summary) if not summary.empty else None
    counts = repetition_counts(summary) if means is not None else None
    marks = column_marks(comparisons, means, counts=counts) if means is not None else {}
    wide = table3(summary, with_ci=True) if not summary.empty else pd.DataFrame()
    if "orientation" in summary.columns and not wide.empty:
        wide.insert(0, "orientation", summary.groupby("metric")["orientation"].first().reindex(wide.index))
    failed = failed_counts(failures)
    if failed:  # a failing metric keeps its row: its complete repetitions, its failed evaluations (none: no numbers)
        for metric in failed:
            if metric not in wide.index:
                wide.loc[metric] = float("nan")
                if "orientation" in wide.columns:
                    wide.loc[metric, "orientation"] = (orientation or {}).get(metric, "")
        wide = wide.reindex(table_order(wide.index))  # an added row goes above the floor, as every row
        reps = summary.groupby("metric")["n"].max() if not summary.empty else pd.Series(dtype=int)
        wide["reps"] = [int(reps.get(m, 0)) for m in wide.index]
        # numbers, as every other column: how many of the metric's evaluations failed, and of how many
        wide["failed_evaluations"] = [int(failed[m][0]) if m in failed else 0 for m in wide.index]
        wide["evaluations"] = [int(failed[m][1]) if m in failed else pd.NA for m in wide.index]
    wide.rename_axis("metric").to_csv(paths["table3_csv"])
    text = table3_text(
        summary,
        title or "Quality measures per metric (004 Table 3)",
        failures,
        repetitions,
        marks,
        marks_note(comparisons, marks, means, counts=counts),
        orientation,
    )
    paths["table3_md"].write_text(text, encoding="utf-8")
    return paths
