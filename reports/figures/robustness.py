"""Figures of a robustness run: distance against sample size s (004 Figure 2 middle and bottom).

Per metric, ``robustness_<metric>.png`` has two panels: the size curve d(a_s, b_s) and the
imbalance curve d(a_s, b_{N-s}); each shows every repetition as a dot, the mean across
repetitions as a line with a ±1 sd band, and the asymptotic distance d(A, B) as a green
horizontal line. ``robustness_all.png`` puts all metrics side by side, size curves on top.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from textmetric_bench.reports.figures.drawing import (
    caption_below,
    integer_axis,
    own_warnings,
    panels_legend,
    safe_name,
    save_figure,
)
from textmetric_bench.reports.labels import format_score, metric_labels

PANEL_TITLES = {"size": "size: d(a_s, b_s)", "imbalance": "imbalance: d(a_s, b_(N−s)), N = {total}"}
#: What the asymptotic line is, where a legend stands for panels of different values.
ASYMPTOTIC = "d(A, B): the distance of the whole corpora"
#: Room above and below a panel's data (share of its range), so a line at the extreme is not on the frame.
Y_MARGIN = 0.1


def _finite(curves: pd.DataFrame) -> pd.DataFrame:
    frame = curves.copy()
    frame["distance"] = pd.to_numeric(frame["distance"], errors="coerce")
    return frame[np.isfinite(frame["distance"])]


def draw_curve(ax, rows: pd.DataFrame, asymptotic: float | None, *, asymptotic_label: str | None = None) -> None:
    """One panel: dots per repetition, mean line, ±1 sd band across repetitions, d(A, B) line (labelled with its
    value, or ``asymptotic_label``)."""
    if len(rows):
        ax.scatter(
            rows["s"], rows["distance"], s=8, alpha=0.35, color="tab:gray", edgecolors="none", label="one repetition"
        )
        stats = rows.groupby("s")["distance"].agg(["mean", "std"]).sort_index()
        sd = stats["std"].fillna(0.0)
        ax.plot(
            stats.index,
            stats["mean"],
            color="tab:blue",
            marker="o",
            markersize=3,
            linewidth=1.5,
            label="mean over repetitions",
        )
        ax.fill_between(
            stats.index,
            stats["mean"] - sd,
            stats["mean"] + sd,
            color="tab:blue",
            alpha=0.2,
            linewidth=0,
            label="± 1 sd across repetitions",
        )
    if asymptotic is not None and np.isfinite(asymptotic):
        ax.axhline(asymptotic, color="tab:green", linewidth=2, label=asymptotic_label or f"d(A, B) = {asymptotic:.4g}")
    ax.margins(y=Y_MARGIN)
    ax.set_xlabel("s")
    integer_axis(ax.xaxis, rows["s"] if len(rows) else None)
    ax.grid(alpha=0.3)


def _scores(measures: pd.DataFrame | None, metric: str) -> str:
    if measures is None or measures.empty:
        return ""
    mine = measures[measures["metric"] == metric]
    parts = [
        f"{m} = {format_score(pd.to_numeric(mine[m], errors='coerce').mean())}"
        for m in ("S", "I")
        if m in mine.columns and len(mine)
    ]
    return ": " + ", ".join(parts) if parts else ""


def robustness_figures(
    curves: pd.DataFrame,
    measures: pd.DataFrame | None,
    out_dir: Path,
    *,
    imbalance_total: int,
    setting: str = "",
    warnings: Sequence[str] = (),
    metric_warnings: Mapping[str, Sequence[str]] | None = None,
) -> list[Path]:
    """Write ``robustness_<metric>.png`` for every metric with a finite distance, and ``robustness_all.png``; each
    title names the run's ``setting`` (pair, sizes, repetitions), each caption its ``warnings``
    (``textmetric_bench.measures.run_warnings``), a metric's own figure its entry of ``metric_warnings`` when
    given (``warnings_by_metric``)."""
    line = f"\n{setting}" if setting else ""
    out_dir = Path(out_dir)
    rows = _finite(curves)
    metrics = [m for m in dict.fromkeys(curves["metric"]) if (rows["metric"] == m).any()]
    asymptotic = {
        m: rows.loc[(rows["metric"] == m) & (rows["curve"] == "asymptotic"), "distance"].mean() for m in metrics
    }
    labels = metric_labels(curves)
    paths = []
    for metric in metrics:
        fig = Figure(figsize=(10, 3.8), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, curve in zip(axes, ("size", "imbalance")):
            draw_curve(ax, rows[(rows["metric"] == metric) & (rows["curve"] == curve)], asymptotic[metric])
            ax.set_title(PANEL_TITLES[curve].format(total=imbalance_total))
            ax.set_ylabel("distance")
        axes[0].legend(fontsize="small")
        fig.suptitle(f"{labels[metric]}{_scores(measures, metric)} (004 Figure 2 middle and bottom){line}")
        caption_below(fig, warnings=own_warnings(metric, warnings, metric_warnings))
        paths.append(save_figure(fig, out_dir / f"robustness_{safe_name(metric)}.png"))
    if not metrics:
        return paths

    fig = robustness_all_figure(curves, measures, imbalance_total=imbalance_total, setting=setting, warnings=warnings)
    paths.append(save_figure(fig, out_dir / "robustness_all.png"))
    return paths


def robustness_all_figure(
    curves: pd.DataFrame,
    measures: pd.DataFrame | None,
    *,
    imbalance_total: int,
    setting: str = "",
    warnings: Sequence[str] = (),
) -> Figure:
    """Every metric with a finite distance side by side, size curves on top and imbalance curves below, with one
    legend for what every panel draws; ``setting`` in the title, ``warnings`` in the caption."""
    rows = _finite(curves)
    metrics = [m for m in dict.fromkeys(curves["metric"]) if (rows["metric"] == m).any()]
    labels = metric_labels(curves)
    ncols = len(metrics)
    fig = Figure(figsize=(max(3.2 * ncols, 6), 6), layout="constrained")
    grid = fig.subplots(2, ncols, squeeze=False)
    for col, metric in enumerate(metrics):
        mine = rows[rows["metric"] == metric]
        asymptotic = mine.loc[mine["curve"] == "asymptotic", "distance"].mean()
        for row, curve in enumerate(("size", "imbalance")):
            ax = grid[row, col]
            draw_curve(ax, mine[mine["curve"] == curve], asymptotic, asymptotic_label=ASYMPTOTIC)
            ax.set_title(f"{labels[metric]}{_scores(measures, metric)}" if row == 0 else "", fontsize="medium")
        grid[0, col].set_xlabel("")
    grid[0, 0].set_ylabel("d(a_s, b_s)")
    grid[1, 0].set_ylabel(f"d(a_s, b_(N−s)), N = {imbalance_total}")
    panels_legend(fig, grid.flat)
    line = f"\n{setting}" if setting else ""
    fig.suptitle(f"Distance against sample size s (004 Figure 2 middle and bottom){line}")
    caption_below(fig, warnings=warnings)
    return fig
