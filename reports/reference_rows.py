"""Rows of a measures table taken from reference results (``source`` = reference) instead of computed in
the run: tables and figures show them as "<metric> (reference)" (textmetric_bench.measures.summaries.labelled), with a
note saying what that means."""

from __future__ import annotations

from textmetric_bench.measures.summaries import REFERENCE_MARK

REFERENCE_NOTE = (
    "Rows marked (reference) were not computed in this run: they are the reference results shipped "
    "for these settings (reports/reference/; run.json names the file), made by the same metric version "
    "with the same parameters. Their T was measured on the machine that made them, and they have no "
    "scatter plot."
)


def is_reference(label) -> bool:
    """Whether a metric label of a table or figure names reference rows."""
    return str(label).endswith(REFERENCE_MARK)
