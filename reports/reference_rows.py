"""Rows of a measures table taken from reference results (``source`` = reference) instead of computed in
the run: tables and figures show them as "<metric> (reference)", with a note saying what that means."""

from __future__ import annotations

import pandas as pd

REFERENCE_MARK = " (reference)"
REFERENCE_NOTE = ("Rows marked (reference) were not computed in this run: they are the reference results shipped "
                  "for these settings (reports/reference/; run.json names the file), made by the same metric version "
                  "with the same parameters. Their T was measured on the machine that made them, and they have no "
                  "scatter plot.")


def labelled(measures: pd.DataFrame) -> pd.DataFrame:
    """``measures`` with every reference row's metric named "<metric> (reference)" and no ``source`` column."""
    if "source" not in measures.columns:
        return measures
    names = measures["metric"].astype(str)
    out = measures.drop(columns="source")
    out["metric"] = names.where(measures["source"] != "reference", names + REFERENCE_MARK)
    return out


def is_reference(label) -> bool:
    """Whether a metric label of a table or figure names reference rows."""
    return str(label).endswith(REFERENCE_MARK)
