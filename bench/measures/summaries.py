"""A measures table (one row per metric and repetition) summarised per metric and measure: the mean over
repetitions with its 95% percentile bootstrap interval (textmetric_bench.measures.intervals), as Table 3 shows it.

Rows taken from shipped reference results (``source`` = reference) are summarised apart from computed ones, under
"<metric> (reference)".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from textmetric_bench.measures import registry
from textmetric_bench.measures.intervals import mean_interval

#: Measure columns the runner may write, in the order they are summarised.
RAW_MEASURES = registry.names()
SUMMARY_COLUMNS = ["metric", "measure", "mean", "std", "n", "ci_low", "ci_high"]
#: What the name of a reference row is followed by.
REFERENCE_MARK = " (reference)"


def labelled(measures: pd.DataFrame) -> pd.DataFrame:
    """``measures`` with every reference row's metric named "<metric> (reference)" and no ``source`` column."""
    if "source" not in measures.columns:
        return measures
    names = measures["metric"].astype(str)
    out = measures.drop(columns="source")
    out["metric"] = names.where(measures["source"] != "reference", names + REFERENCE_MARK)
    return out


def summarise_measures(measures: pd.DataFrame) -> pd.DataFrame:
    """Long table, one row per (metric, measure): mean, std (ddof=1), n and the 95% percentile bootstrap
    interval of the mean across repetitions (``ci_low``, ``ci_high``).

    Adds ``T100`` = T / 100, the unit of 004 Table 3. An ``orientation`` column is kept (one value
    per metric); other columns than the known measures (and ``metric``/``repetition``) are ignored.
    """
    if "metric" not in measures.columns:
        raise ValueError("measures table needs a 'metric' column; got " + ", ".join(map(str, measures.columns)))
    frame = labelled(measures).copy()
    scaled = [m for m in registry.MEASURES.values() if m.scaled]
    for m in scaled:  # T100 = T / 100
        if m.name in frame.columns:
            frame[m.column] = pd.to_numeric(frame[m.name], errors="coerce") / m.shown_scale
    present = [m for m in (*RAW_MEASURES, *(s.column for s in scaled)) if m in frame.columns]
    rows = []
    for metric, group in frame.groupby("metric", sort=True):
        for measure in present:
            values = pd.to_numeric(group[measure], errors="coerce").to_numpy()
            rows.append((metric, measure, *mean_interval(values)))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    if "orientation" in frame.columns:
        summary["orientation"] = summary["metric"].map(frame.groupby("metric")["orientation"].first())
    return summary


def most_repetitions(measures: pd.DataFrame) -> int | None:
    """The largest ``n`` of ``summarise_measures(measures)`` (the most repetitions in which a metric has a finite
    value of one measure) without its bootstrap, so a run's warnings are known before its summary; None for a
    table without measures."""
    frame = labelled(measures)
    present = [m for m in RAW_MEASURES if m in frame.columns]
    if frame.empty or not present or "metric" not in frame.columns:
        return None
    finite = np.isfinite(frame[present].apply(pd.to_numeric, errors="coerce").astype(float))
    return int(finite.groupby(frame["metric"]).sum().to_numpy().max())
