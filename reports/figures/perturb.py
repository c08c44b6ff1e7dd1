"""Perturbation-sensitivity report: the table and heatmap of relative shifts (metric × perturbation).

The shift (``textmetric_bench.tasks.perturb``) places d(R, p(S)) on the scale from d(R, S), another sample of
the same source (0%), to d(R, O), a sample of the other source (100%). 000 Figure 4 shows the
raw distances of the same experiment; those are in the second table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from textmetric_bench.reports.figures.drawing import caption_below, save_figure
from textmetric_bench.reports.labels import metric_labels, plural
from textmetric_bench.reports.tables.markdown import failures_markdown, markdown_table

LEGEND = (
    "Cells: relative shift (d(R, p(S)) − d(R, S)) / (d(R, O) − d(R, S)) in %, mean ± sd "
    "[95% t-interval] over repetitions. 0% = no farther from the reference R than another sample "
    "S of the same source; 100% = as far as a sample O of the other source (a domain change). "
    "A repetition whose gap d(R, O) − d(R, S) is not positive gives no shift and is flagged; so is a "
    "gap whose sd over repetitions exceeds half its mean (the shifts then mostly measure noise)."
)
#: A gap with sd / mean above this over repetitions is flagged as noisy.
NOISY_GAP = 0.5


def _pct(value: float, sign: bool = True) -> str:
    if value is None or not np.isfinite(value):
        return "–"
    return f"{100 * value:+.1f}" if sign else f"{100 * value:.1f}"


def shift_cell(row) -> str:
    """``+3.1% ±1.2 [+1.6, +4.6]``; only the mean when fewer than two repetitions have a shift."""
    if not np.isfinite(row["mean"]):
        return "–"
    text = f"{_pct(row['mean'])}%"
    if np.isfinite(row["std"]):
        text += f" ±{_pct(row['std'], sign=False)}"
    if np.isfinite(row["ci_low"]) and np.isfinite(row["ci_high"]):
        text += f" [{_pct(row['ci_low'])}, {_pct(row['ci_high'])}]"
    return text


def gap_flag(summary: pd.DataFrame) -> pd.Series:
    """Per metric: empty, or why its shifts are missing or unreliable: repetitions with
    d(R, O) − d(R, S) <= 0, or a gap whose sd over repetitions exceeds NOISY_GAP × its mean."""
    per_metric = summary.groupby("metric", sort=False)[["gap_not_positive", "repetitions", "gap_cv"]].max()
    flags = {}
    for m, r in per_metric.iterrows():
        notes = []
        if r.gap_not_positive:
            notes.append(f"gap ≤ 0 in {int(r.gap_not_positive)} of {plural(int(r.repetitions), 'repetition')}")
        if np.isfinite(r.gap_cv) and r.gap_cv > NOISY_GAP:
            notes.append(f"noisy gap (sd/mean {r.gap_cv:.2f})")
        flags[m] = "; ".join(notes)
    return pd.Series(flags, dtype=object)


def perturbation_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """Metric × perturbation table of formatted shifts, with a ``flag`` column."""
    cells = summary.assign(cell=summary.apply(shift_cell, axis=1)).pivot(
        index="metric", columns="perturbation", values="cell"
    )
    cells = cells.reindex(
        index=list(dict.fromkeys(summary["metric"])), columns=list(dict.fromkeys(summary["perturbation"]))
    )
    cells["flag"] = gap_flag(summary).reindex(cells.index).fillna("")
    return cells.rename_axis(index=None, columns=None)


def raw_distance_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean raw distances per metric: d(R, S), d(R, p(S)) for each p, d(R, O)."""
    fmt = lambda v: f"{v:.4g}" if np.isfinite(v) else "–"  # noqa: E731
    wide = summary.pivot(index="metric", columns="perturbation", values="d_perturbed")
    wide = wide.reindex(
        index=list(dict.fromkeys(summary["metric"])), columns=list(dict.fromkeys(summary["perturbation"]))
    )
    ends = summary.groupby("metric", sort=False)[["d_same", "d_other"]].first()
    table = pd.concat(
        [
            ends[["d_same"]].rename(columns={"d_same": "(a) d(R, S)"}),
            wide.rename(columns=lambda p: f"(b) {p}"),
            ends[["d_other"]].rename(columns={"d_other": "(c) d(R, O)"}),
        ],
        axis=1,
    )
    return table.map(fmt)


def perturbation_markdown(
    summary: pd.DataFrame, info: Mapping, *, title: str, failures: Mapping[str, str] | None = None
) -> str:
    """The shift table, the raw-distance table, what each perturbation did, and failed metrics."""
    lines = [f"# {title}", ""]
    if summary.empty:
        lines += ["No metric produced distances.", ""]
    else:
        labels = metric_labels(summary)
        lines += [
            LEGEND,
            "",
            markdown_table(perturbation_cells(summary).rename(index=labels).rename_axis("metric").reset_index()),
            "",
            "## Raw distances (means over repetitions; 000 Figure 4)",
            "",
            markdown_table(raw_distance_table(summary).rename(index=labels).rename_axis("metric").reset_index()),
            "",
        ]
    perturbations = info.get("perturbations") or {}
    if perturbations:
        lines += [
            "## Perturbations (000 §6.2)",
            "",
            "| perturbation | 000 | what | texts changed | words kept |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {p} | {d['paper']} | {d['description']} | {100 * d['changed']:.0f}% | {100 * d['words_ratio']:.0f}% |"
            for p, d in perturbations.items()
        ]
        lines.append("")
    return "\n".join(lines + failures_markdown(failures))


def perturbation_heatmap(
    summary: pd.DataFrame, out_path: Path, *, title: str = "", warnings: Sequence[str] = ()
) -> Path | None:
    """Metric × perturbation heatmap of the mean shift, each cell annotated with mean and sd (in
    percentage points); colours saturate at ±100%, a shift as large as the domain change. ``warnings`` (the
    run's, ``textmetric_bench.measures.run_warnings``) in the caption below."""
    if summary.empty:
        return None
    metrics = list(dict.fromkeys(summary["metric"]))
    perts = list(dict.fromkeys(summary["perturbation"]))
    mean, std = (
        summary.pivot(index="metric", columns="perturbation", values=v).reindex(index=metrics, columns=perts)
        for v in ("mean", "std")
    )
    values = mean.to_numpy(float)
    norm = Normalize(vmin=-1.0, vmax=1.0)  # colour saturates at a full domain change either way
    fig = Figure(figsize=(1.5 * len(perts) + 3.0, 0.55 * len(metrics) + 2.0), layout="constrained")
    ax = fig.add_subplot()
    ax.set_facecolor("#dddddd")  # NaN cells (no positive gap) show the background
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", norm=norm, aspect="auto")
    flags = gap_flag(summary)
    for i, m in enumerate(metrics):
        for j in range(len(perts)):
            v, s = values[i, j], std.iat[i, j]
            if np.isfinite(v):
                text = f"{int(round(100 * v)):+d}%" + (f"\n±{100 * s:.0f}" if np.isfinite(s) else "")
                dark = abs(v) > 0.6
            else:
                text, dark = ("gap ≤ 0" if "≤ 0" in flags.get(m, "") else "–"), False
            ax.text(j, i, text, ha="center", va="center", fontsize="small", color="white" if dark else "black")
    ax.set_xticks(range(len(perts)), perts, rotation=20, ha="right")
    labels = metric_labels(summary)
    ax.set_yticks(range(len(metrics)), [f"{labels[m]} *" if flags.get(m) else labels[m] for m in metrics])
    flagged = any(flags.get(m) for m in metrics)
    caption_below(
        fig, "* flagged: a gap d(R, O) − d(R, S) not positive or noisy; see the table" if flagged else "", warnings
    )
    fig.colorbar(
        image,
        ax=ax,
        extend="both",
        label="shift: 0% = same source, 100% = other source",
        format=PercentFormatter(1.0, decimals=0),
    )
    ax.set_title(title or "Perturbation sensitivity (000 §6.2)", fontsize="medium")
    return save_figure(fig, Path(out_path))
