"""The IFC run's page (table3.md of an IFC run): warnings, the IFC table with its intervals, TTR per corpus, failures."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from textmetric_bench.measures.intervals import INTERVAL_NAME, few_repetitions_warning
from textmetric_bench.reports.labels import format_score, metric_labels
from textmetric_bench.reports.tables.markdown import markdown_table

#: The mark of an IFC cell with repetitions whose distance never changed, and what it means.
CONSTANT_NOTE = (
    "d constant: in so many repetitions the metric gave the same distance to every g_i, which ranks no iteration, "
    "so those repetitions have no IFC (– when none has one)."
)


def ifc_markdown(
    summary: pd.DataFrame,
    ttr: pd.DataFrame,
    *,
    title: str,
    failures: Mapping[str, str] | None = None,
    repetitions: int | None = None,
) -> str:
    """The page: title, the warning of too few repetitions (as Table 3's page; the run's other warnings are put
    under the title by ``head_with_warnings``), the IFC table (mean [interval], gap closed and the distances behind
    it), then TTR per corpus, then failed metrics. ``repetitions``: the run's, for the count of repetitions with a
    constant distance (default: those with an IFC and those)."""
    lines = [f"# {title}", ""]
    most = int(summary["repetitions"].max()) if not summary.empty else repetitions
    if most is not None and (warning := few_repetitions_warning(most)):
        lines += [f"**Warning: {warning}.**", ""]
    if summary.empty:
        lines += ["No metric produced distances.", ""]
    else:
        constant = summary["constant_repetitions"].astype(int)
        total = (summary["repetitions"] + constant).astype(int) if repetitions is None else [repetitions] * len(summary)
        cells = [
            _with_ci(r.IFC, r.IFC_ci_low, r.IFC_ci_high) + (f" (d constant in {c} of {t})" if c else "")
            for r, c, t in zip(summary.itertuples(), constant, total)
        ]
        table = pd.DataFrame(
            {
                "metric": summary["metric"].map(metric_labels(summary)),
                "IFC": cells,
                "gap closed": summary["gap_closed"].map(format_score),
                "d(g_0)": summary["first_distance"].map(_number),
                "d(g_T)": summary["last_distance"].map(_number),
                "d(A, A)": summary["self_distance"].map(_number),
            }
        )
        lines += [
            "IFC: −Spearman ρ of d(reference, g_i) on the iteration i, per repetition (1 = the distance "
            f"falls at every step), mean over repetitions [{INTERVAL_NAME}]; gap closed: (d(g_0) − d(g_T)) / "
            "(d(g_0) − d(A, A)) on the means over repetitions (1 = the last corpus is as close as the source to "
            "itself). 004 §5." + (f" {CONSTANT_NOTE}" if constant.any() else ""),
            "",
            markdown_table(table),
            "",
        ]
    if not ttr.empty:
        ref = ttr[ttr["corpus"] == "reference"]
        rows = [("source (all texts)", int(ttr.iloc[0]["texts"]), _number(ttr.iloc[0]["TTR"]))]
        if len(ref):
            rows.append(
                (f"reference samples (mean of {len(ref)})", int(ref["texts"].iloc[0]), _number(ref["TTR"].mean()))
            )
        rows += [(r.corpus, int(r.texts), _number(r.TTR)) for r in ttr[ttr["corpus"].str.startswith("g_")].itertuples()]
        lines += [
            "## Type-token ratio",
            "",
            "TTR falls with corpus size: compare g_i with the reference samples, which have the same size.",
            "",
            markdown_table(pd.DataFrame(rows, columns=["corpus", "texts", "TTR"])),
            "",
        ]
    if failures:
        lines += ["## Failed metrics", ""]
        lines += [
            f"- `{m}`: {str(e).strip().splitlines()[0][:300] if str(e).strip() else 'unknown error'}"
            for m, e in sorted(failures.items())
        ]
        lines.append("")
    return "\n".join(lines)


def _number(value) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.4g}"


def _with_ci(mean, low, high) -> str:
    text = format_score(mean)
    if np.isfinite(low) and np.isfinite(high):
        text += f" [{format_score(low)}, {format_score(high)}]"
    return text
