"""IFC report: the per-metric plots of 004 Figure 5 and the IFC table.

Figure 5: distance of every reference sample to g_i against the iteration i (orange dots),
the regression line with its 95% band (blue), and the self-distance d(A, A) as a horizontal
line (green). Drawn on bare ``Figure`` objects like ``textmetric_bench.reports.figures.ksc``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from textmetric_bench.reports.figures.drawing import (
    caption_below,
    label_lowest_panels,
    ols_band,
    own_warnings,
    panels_legend,
    safe_name,
    save_figure,
)
from textmetric_bench.reports.labels import format_score, metric_labels


def _draw_ifc(ax, rows: pd.DataFrame, self_distance: float, rng: np.random.Generator) -> None:
    gen = rows[(rows["kind"] == "generated") & np.isfinite(rows["distance"])]
    x, y = gen["iteration"].to_numpy(float), gen["distance"].to_numpy(float)
    if x.size:
        ax.scatter(
            x + rng.uniform(-0.12, 0.12, x.size),
            y,
            s=14,
            alpha=0.7,
            color="tab:orange",
            edgecolors="none",
            label="d(reference, g_i)",
        )
        grid = np.linspace(x.min(), x.max(), 50)
        band = ols_band(x, y, grid)
        if band is not None:
            fit, low, high = band
            ax.plot(grid, fit, color="tab:blue", linewidth=1.5, label="regression, 95% band")
            ax.fill_between(grid, low, high, color="tab:blue", alpha=0.2, linewidth=0)
        ax.set_xticks(np.unique(x))
    if math.isfinite(self_distance):
        ax.axhline(self_distance, color="tab:green", linewidth=1.5, label="self-distance d(A, A)")


def _caption(summary: pd.DataFrame, metric: str) -> str:
    row = summary[summary["metric"] == metric]
    if row.empty:
        return metric
    row = row.iloc[0]
    return f"{metric_labels(summary)[metric]}: IFC = {format_score(row['IFC'])}, gap closed = {format_score(row['gap_closed'])}"


def ifc_figures(
    distances: pd.DataFrame,
    summary: pd.DataFrame,
    out_dir: Path,
    *,
    setting: str = "",
    warnings: Sequence[str] = (),
    metric_warnings: Mapping[str, Sequence[str]] | None = None,
) -> list[Path]:
    """``ifc_<metric>.png`` per metric with a finite distance (004 Figure 5), and ``ifc_all.png``; ``warnings``
    (the run's, ``textmetric_bench.measures.run_warnings``) in a caption below each, or on a metric's own figure
    its entry of ``metric_warnings`` when given (``warnings_by_metric``)."""
    out_dir = Path(out_dir)
    finite = distances[np.isfinite(pd.to_numeric(distances["distance"], errors="coerce"))]
    metrics = sorted(finite["metric"].unique(), key=str)
    selfd = finite[finite["kind"] == "self"].groupby("metric")["distance"].mean()
    paths = []
    for metric in metrics:
        fig = Figure(figsize=(5.5, 3.8), layout="constrained")
        ax = fig.add_subplot()
        _draw_ifc(ax, finite[finite["metric"] == metric], float(selfd.get(metric, math.nan)), np.random.default_rng(0))
        ax.set_xlabel("fine-tuning iteration i")
        ax.set_ylabel("distance to the source")
        ax.set_title(_caption(summary, metric), fontsize="medium")
        ax.legend(fontsize="small")
        if setting:  # the run: source, iterations, sizes, repetitions
            fig.suptitle(setting, fontsize="small")
        caption_below(fig, warnings=own_warnings(metric, warnings, metric_warnings))
        paths.append(save_figure(fig, out_dir / f"ifc_{safe_name(metric)}.png"))
    if len(metrics) > 1:
        fig = ifc_all_figure(distances, summary, setting=setting, warnings=warnings)
        paths.append(save_figure(fig, out_dir / "ifc_all.png"))
    return paths


def ifc_all_figure(
    distances: pd.DataFrame, summary: pd.DataFrame, *, setting: str = "", warnings: Sequence[str] = ()
) -> Figure:
    """One panel per metric with a finite distance (004 Figure 5), sharing the iteration axis: the lowest panel of
    each column carries its ticks and label, the first of each row the distance's label; ``setting`` in the title,
    ``warnings`` in the caption."""
    finite = distances[np.isfinite(pd.to_numeric(distances["distance"], errors="coerce"))]
    metrics = sorted(finite["metric"].unique(), key=str)
    selfd = finite[finite["kind"] == "self"].groupby("metric")["distance"].mean()
    ncols = min(4, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    fig = Figure(figsize=(3.4 * ncols, 2.8 * nrows + 0.6), layout="constrained")
    grid = fig.subplots(nrows, ncols, squeeze=False, sharex=True)
    for ax, metric in zip(grid.flat, metrics):
        _draw_ifc(ax, finite[finite["metric"] == metric], float(selfd.get(metric, math.nan)), np.random.default_rng(0))
        ax.set_title(_caption(summary, metric), fontsize="small")
    for ax in list(grid.flat)[len(metrics) :]:
        ax.set_visible(False)
    label_lowest_panels(grid, len(metrics), "fine-tuning iteration i")
    for ax in grid[:, 0]:
        ax.set_ylabel("distance to the source")
    panels_legend(fig, grid.flat)
    fig.suptitle(
        "Distance to the source per fine-tuning iteration (004 Figure 5)" + (f"\n{setting}" if setting else "")
    )
    caption_below(fig, warnings=warnings)
    return fig
