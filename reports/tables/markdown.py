"""Markdown of a run's pages: pipe tables, and the sections on failed metrics and reversed orientations."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (index dropped; reset it first to keep it); cells are written as given."""
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = "| " + " | ".join(cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def failures_from_distances(distances: pd.DataFrame) -> dict[str, str]:
    """Metrics whose every pair evaluation failed, mapped to their first error text."""
    if distances.empty or "error" not in distances.columns:
        return {}
    failed = {}
    for metric, group in distances.groupby("metric", sort=True):
        if group["distance"].isna().all():
            errors = group["error"].dropna().astype(str)
            errors = errors[errors.str.strip() != ""]
            failed[str(metric)] = errors.iloc[0] if len(errors) else "no distance computed"
    return failed


def failures_markdown(failures: Mapping[str, str] | None) -> list[str]:
    """A "Failed metrics" section (every failing repetition and its reasons), or nothing when none failed."""
    if not failures:
        return []
    lines = ["## Failed metrics", ""]
    for metric, error in sorted(failures.items()):
        first = str(error).strip().splitlines()[0] if str(error).strip() else "unknown error"
        lines.append(f"- `{metric}`: {first[:4000]}")
    return lines + [""]


def orientation_markdown(warnings: Mapping[str, str] | None) -> list[str]:
    """An "Orientation" section: metrics whose declared direction looks reversed, or nothing."""
    if not warnings:
        return []
    lines = ["## Orientation", "", ("These metrics' values run against their declared direction "
                                    "(mean ρ clearly negative), so their measures may be upside down:"), ""]
    return lines + [f"- `{metric}`: {text}" for metric, text in sorted(warnings.items())] + [""]
