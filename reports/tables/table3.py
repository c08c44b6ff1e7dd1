"""Summary tables of the robustness measures, laid out like 004 Table 3.

The runner writes one row of measures per (metric, repetition); here they become a
mean with a 95% bootstrap interval over repetitions per (metric, measure) (bench/measures/intervals.py),
then a wide table with
the best value of each column (and those within .015 of it) in bold. A table's optional
``orientation`` column says which metrics are similarities, scored on their negation; they
are shown as "name (similarity, negated)".
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from textmetric_bench.measures.intervals import mean_interval
from textmetric_bench.reports.bounds import bound_of, table_order
from textmetric_bench.reports.reference_rows import labelled
from textmetric_bench.reports.tables.significance import compact_letters

#: Measure columns the runner may write, in the order they are summarised.
RAW_MEASURES = ("A", "Aw", "T", "rho", "omega2", "L", "S", "I", "IFC")
#: Column order of 004 Table 3; T100 is T in the paper's unit [100 op/s].
TABLE3_ORDER = ("A", "Aw", "T100", "rho", "omega2", "L", "S", "I", "IFC")
#: Measures on a 0..1 "higher is better" scale (time excluded, as in 004 Figure 4).
QUALITY_MEASURES = ("A", "Aw", "rho", "omega2", "L", "S", "I", "IFC")
#: Short explanation of each column, used in headers and legends.
MEASURE_LABELS = {
    "A": "A: judgement accuracy (004 §4.5, eq. 6)",
    "Aw": "Aw: hardness-weighted accuracy (eq. 7)",
    "T100": "T: speed in [100 op/s], embedding excluded (§4.4)",
    "rho": "rho: Spearman monotonicity (§4.1)",
    "omega2": "omega2: separability, ANOVA ω² (eq. 4)",
    "L": "L: linearity R² (§4.3)",
    "S": "S: size robustness (eq. 8)",
    "I": "I: imbalance robustness (§4.7)",
    "IFC": "IFC: −Spearman of distance with fine-tuning iteration (§5)",
}
#: Values within this distance of a column's best are bolded (004 Table 3 caption).
BOLD_TOLERANCE = 0.015
SUMMARY_COLUMNS = ["metric", "measure", "mean", "std", "n", "ci_low", "ci_high"]
#: What a similarity's name is followed by wherever it is shown.
SIMILARITY_MARK = " (similarity, negated)"
SIMILARITY_NOTE = ("A metric marked (similarity, negated) is a similarity (larger = more alike), "
                   "scored on its negation so that, like a distance, larger means more different.")


def similarities(frame: pd.DataFrame) -> set[str]:
    """The metrics of ``frame`` that its ``orientation`` column marks as similarities."""
    if frame.empty or "orientation" not in frame.columns:
        return set()
    return set(frame.loc[frame["orientation"] == "similarity", "metric"].astype(str))


def metric_labels(frame: pd.DataFrame) -> dict[str, str]:
    """The name to show for each metric of ``frame``: a similarity's is followed by SIMILARITY_MARK."""
    if "metric" not in frame.columns:
        return {}
    similar = similarities(frame)
    return {m: f"{m}{SIMILARITY_MARK}" if str(m) in similar else str(m) for m in frame["metric"].unique()}


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, int, float, float]:
    """Mean, sample std, count and Student-t CI of the mean of the finite values (NaN CI if n < 2).

    Not used for Table 3 (see bench/measures/intervals.py); kept for the perturbation table and reference checks."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return np.nan, np.nan, 0, np.nan, np.nan
    mean = float(x.mean())
    if n == 1:
        return mean, np.nan, 1, np.nan, np.nan
    std = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / np.sqrt(n)
    return mean, std, n, mean - half, mean + half


def summarise_measures(measures: pd.DataFrame) -> pd.DataFrame:
    """Long table, one row per (metric, measure): mean, std (ddof=1), n and the 95% percentile bootstrap
    interval of the mean across repetitions (``ci_low``, ``ci_high``).

    Adds ``T100`` = T / 100, the unit of 004 Table 3. An ``orientation`` column is kept (one value
    per metric); other columns than the known measures (and ``metric``/``repetition``) are ignored.
    """
    if "metric" not in measures.columns:
        raise ValueError("measures table needs a 'metric' column; got " + ", ".join(map(str, measures.columns)))
    frame = labelled(measures).copy()  # reference rows read "<metric> (reference)"
    if "T" in frame.columns:
        frame["T100"] = pd.to_numeric(frame["T"], errors="coerce") / 100.0
    present = [m for m in (*RAW_MEASURES, "T100") if m in frame.columns]
    rows = []
    for metric, group in frame.groupby("metric", sort=True):
        for measure in present:
            values = pd.to_numeric(group[measure], errors="coerce").to_numpy()
            rows.append((metric, measure, *mean_interval(values)))
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    if "orientation" in frame.columns:
        summary["orientation"] = summary["metric"].map(frame.groupby("metric")["orientation"].first())
    return summary


def _ordered_columns(columns) -> list[str]:
    return [m for m in TABLE3_ORDER if m in set(columns)]


def table3(summary: pd.DataFrame, *, with_ci: bool = False) -> pd.DataFrame:
    """Wide table like 004 Table 3: one row per metric, one column of means per measure.

    With ``with_ci`` every measure ``X`` is followed by ``X_ci_low`` and ``X_ci_high``.
    The raw ``T`` is dropped in favour of ``T100``.
    """
    means = summary.pivot(index="metric", columns="measure", values="mean")
    means = means.reindex(table_order(means.index))  # ceiling first, floor last (reports/bounds.py)
    order = _ordered_columns(means.columns)
    if not with_ci:
        return means[order].rename_axis(columns=None)
    lows = summary.pivot(index="metric", columns="measure", values="ci_low")
    highs = summary.pivot(index="metric", columns="measure", values="ci_high")
    parts = {}
    for m in order:
        parts[m] = means[m]
        parts[f"{m}_ci_low"] = lows[m]
        parts[f"{m}_ci_high"] = highs[m]
    return pd.DataFrame(parts)


def best_mask(means: pd.DataFrame, tolerance: float = BOLD_TOLERANCE) -> pd.DataFrame:
    """True where a value is its column's best or within ``tolerance`` of it (higher is better); bounds never."""
    names = means.index.get_level_values(-1)  # the metric, also under a sweep's (pair, k, n, metric) index
    competing = pd.Series([bound_of(m) is None for m in names], index=means.index)
    best = means[competing].max(axis=0, skipna=True)
    return means.ge(best - tolerance - 1e-12, axis=1) & means.notna() & pd.DataFrame(
        {c: competing for c in means.columns}, index=means.index)


def format_score(value: float) -> str:
    """Three decimals without the leading zero, as printed in 004 (``.945``, ``-.020``, ``4.680``)."""
    if value is None or not np.isfinite(value):
        return "–"
    text = f"{value:.3f}"
    if text.startswith("0."):
        return text[1:]
    if text.startswith("-0."):
        return "-" + text[2:]
    return text


def table3_markdown_cells(summary: pd.DataFrame, groups: Mapping[str, Mapping[str, str]] | None = None,
                          ) -> pd.DataFrame:
    """Table 3 as strings ``mean [ci_low, ci_high]``, with the best of each column bolded.

    ``groups``: rank-group letters per column and metric (reports/tables/significance.py), shown as ``<sup>ab</sup>`` (runs as ``<sup>a–d</sup>``).
    """
    wide = table3(summary, with_ci=True)
    means = table3(summary)
    bold = best_mask(means)
    cells = pd.DataFrame(index=means.index, columns=means.columns, dtype=object)
    for m in means.columns:
        for metric in means.index:
            text = format_score(wide.at[metric, m])
            if bold.at[metric, m]:
                text = f"**{text}**"
            if (groups or {}).get(m, {}).get(metric):
                text += f"<sup>{compact_letters(groups[m][metric])}</sup>"
            low, high = wide.at[metric, f"{m}_ci_low"], wide.at[metric, f"{m}_ci_high"]
            if np.isfinite(low) and np.isfinite(high):
                text += f" [{format_score(low)}, {format_score(high)}]"
            cells.at[metric, m] = text
    return cells


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
