"""Failed evaluations, reported honestly: every failing (metric, repetition) with its reasons."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

REASON_CHARS = 200


def _reason(error: str) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else "unknown error"
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "…"


def failure_summary(evaluations: pd.DataFrame, by: str = "repetition") -> dict[str, str]:
    """metric -> one line naming every ``by`` group (repetition) with failures, their count and reasons.

    ``evaluations`` has columns metric, ``by``, error ("" when it succeeded) and optionally attempts.
    """
    out: dict[str, str] = {}
    if evaluations.empty:
        return out
    failed = evaluations[evaluations["error"].fillna("").astype(str) != ""]
    totals = evaluations.groupby("metric").size()
    for metric, grp in failed.groupby("metric", sort=True):
        parts = []
        for group, rows in grp.groupby(by, sort=True):
            reasons = rows["error"].map(_reason).value_counts()
            listed = "; ".join(f"{n} × {reason}" if n > 1 else str(reason) for reason, n in reasons.items())
            parts.append(f"{by} {group}: {listed}")
        tries = ""
        if "attempts" in grp.columns and grp["attempts"].max() > 1:
            tries = f" (latest of up to {int(grp['attempts'].max())} attempts)"
        groups = grp[by].nunique()
        out[str(metric)] = (
            f"{len(grp)} of {int(totals[metric])} evaluations failed{tries} in "
            f"{groups} {by}{'s' if groups != 1 else ''}: " + " | ".join(parts)
        )
    return out


def failed_of(summary_line: str) -> tuple[int, int] | None:
    """(failed, all) evaluations from a line of ``failure_summary`` ("13 of 105 evaluations failed ..."), or None
    for a failure said otherwise (a metric that could not be scored at all)."""
    found = re.match(r"\s*(\d+) of (\d+) evaluations failed", str(summary_line))
    return (int(found.group(1)), int(found.group(2))) if found else None


def failure_counts(evaluations: pd.DataFrame) -> dict[str, tuple[int, int, str]]:
    """metric -> (its failed evaluations, all its evaluations, the first failure's reason), for failing metrics."""
    if evaluations.empty:
        return {}
    failed = evaluations[evaluations["error"].fillna("").astype(str) != ""]
    totals = evaluations.groupby("metric").size()
    return {
        str(metric): (len(grp), int(totals[metric]), _reason(grp["error"].iloc[0]))
        for metric, grp in failed.groupby("metric", sort=True)
    }


def write_failures_csv(evaluations: pd.DataFrame, out_dir, tracebacks: pd.DataFrame | None = None) -> "Path | None":
    """``failures.csv``: every failed evaluation with its reason, attempt count and, when the metric raised,
    its traceback (``tracebacks``: the evaluations' key columns and ``traceback``); None when none failed."""
    failed = evaluations[evaluations["error"].fillna("").astype(str) != ""]
    if failed.empty:
        return None
    if tracebacks is not None and len(tracebacks):
        keys = [c for c in tracebacks.columns if c != "traceback"]
        failed = failed.merge(tracebacks, how="left", on=keys)
    failed = failed.assign(traceback=failed["traceback"].fillna("") if "traceback" in failed else "")
    path = Path(out_dir) / "failures.csv"
    failed.to_csv(path, index=False)
    return path


def per_repetition(distances: pd.DataFrame, compute, columns: list[str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """Apply ``compute(group) -> dict`` to each (metric, repetition) of an evaluation table.

    A repetition with any failed evaluation gets no measures; the failures of each metric are
    returned as one text naming every failing repetition and its reasons (``textmetric_bench.measures.failures``).
    """
    rows = []
    for (name, rep), grp in distances.groupby(["metric", "repetition"], sort=True):
        if (grp["error"].fillna("").astype(str) != "").any():
            continue
        rows.append({"metric": name, "repetition": rep, **compute(grp)})
    return pd.DataFrame(rows, columns=columns), failure_summary(distances)
