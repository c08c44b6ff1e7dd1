"""Figures over many repetitions or many runs: 004 Figure 6 boxplots and sweep trends."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from textmetric_bench.measures import registry
from textmetric_bench.reports.bounds import bound_label, bound_of
from textmetric_bench.reports.figures.drawing import caption_below, integer_axis, save_figure
from textmetric_bench.reports.figures.palette import bound_line, metric_styles
from textmetric_bench.reports.labels import QUALITY_MEASURES, metric_labels

#: Panel titles: the paper's symbol and what the measure is.
MEASURE_TITLES = {m.name: f"{m.math}: {m.title}" for m in registry.MEASURES.values() if m.quality}


def _bound_band(ax, values: np.ndarray, metric: str) -> None:
    """A bound as a shaded band over its range across repetitions, with a line at its median."""
    if values.size == 0:
        return
    line = bound_line(metric)
    ax.axvspan(values.min(), values.max(), color=line["color"], alpha=0.15, linewidth=0, zorder=0)
    ax.axvline(float(np.median(values)), zorder=1, label=bound_label(metric), **line)


def _panel(ax, measures: pd.DataFrame, measure: str, labels: dict, styles: dict) -> None:
    """One measure: a horizontal box per metric, the largest median on top, bounds as grey bands."""
    values = {
        m: measures.loc[measures["metric"] == m, measure].dropna().to_numpy(float) for m in measures["metric"].unique()
    }
    ordinary = [m for m, v in values.items() if bound_of(m) is None and v.size]
    order = sorted(ordinary, key=lambda m: (float(np.median(values[m])), str(m)))  # bottom to top
    boxes = ax.boxplot(
        [values[m] for m in order],
        orientation="horizontal",
        widths=0.6,
        patch_artist=True,
        tick_labels=[labels.get(m, str(m)) for m in order],
        medianprops={"color": "black"},
    )
    for patch, metric in zip(boxes["boxes"], order):
        patch.set_facecolor(styles[str(metric)].colour)
        patch.set_alpha(0.55)
    for metric, v in values.items():
        if bound_of(metric) is not None:
            _bound_band(ax, v, metric)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title(MEASURE_TITLES.get(measure, measure), fontsize="medium")
    ax.grid(axis="x", alpha=0.3)


def measure_boxplots(
    measures: pd.DataFrame, out_path: Path, *, setting: str = "", warnings: Sequence[str] = ()
) -> Path | None:
    """``boxplot_figure`` written to ``out_path``; None when no quality measure has a value."""
    fig = boxplot_figure(measures, setting=setting, warnings=warnings)
    return None if fig is None else save_figure(fig, out_path)


def boxplot_figure(measures: pd.DataFrame, *, setting: str = "", warnings: Sequence[str] = ()) -> Figure | None:
    """004 Figure 6: per quality measure, one horizontal box per metric over repetitions, sorted by median;
    ``setting`` (the pair, k, n and repetitions) is named in the title, ``warnings`` (the run's) in a caption below.

    The bounds (oracle, chance) are grey bands over their range with a line at the median.
    """
    present = [m for m in QUALITY_MEASURES if m in measures and measures[m].notna().any()]
    if not present or measures.empty:
        return None
    metrics = measures["metric"].unique()
    labels, styles = metric_labels(measures), metric_styles(metrics)
    ncols = min(3, len(present))
    nrows = math.ceil(len(present) / ncols)
    fig = Figure(figsize=(max(3.8 * ncols, 5.5), 0.27 * len(metrics) * nrows + 1.4 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, measure in zip(axes.flat, present):
        _panel(ax, measures, measure, labels, styles)
    for ax in list(axes.flat)[len(present) :]:
        ax.set_visible(False)
    fig.suptitle(
        "Measures across repetitions, one value per repetition (004 Figure 6); largest median on top, "
        "further right is better" + (f"\n{setting}" if setting else "")
    )
    caption_below(fig, warnings=warnings)
    return fig


def _swept_setting(long: pd.DataFrame, axis: str) -> str:
    """The sweep's pairs, the KSC parameters it did not sweep and its repetitions, as a figure's title names them."""

    def values(column: str) -> str:
        found = sorted({str(v) for v in long[column].dropna()}, key=lambda v: (len(v), v)) if column in long else []
        return ", ".join(found) or "?"

    fixed = [f"{c}={values(c)}" for c in ("k", "n") if c != axis]
    reps = sorted({int(v) for v in long["n_reps"].dropna()}) if "n_reps" in long else []
    shown = " or ".join(map(str, reps)) if reps else "?"
    return (
        f"{values('pair')} · {', '.join(fixed)} · {shown} repetition{'' if reps == [1] else 's'} · "
        f"{axis}={values(axis)}"
    )


def sweep_trends(long: pd.DataFrame, out_path: Path, *, warnings: Sequence[str] = ()) -> Path | None:
    """``trends_figure`` written to ``out_path``; None when nothing was swept."""
    fig = trends_figure(long, warnings=warnings)
    return None if fig is None else save_figure(fig, out_path)


def trends_figure(long: pd.DataFrame, *, warnings: Sequence[str] = ()) -> Figure | None:
    """How each measure moves with the swept KSC parameter (k or n), one line per metric; ticks at the swept values;
    ``warnings`` (the sweep's runs', ``textmetric_bench.reports.html.report.sweep_warnings``) in a caption below."""
    varying = [c for c in ("k", "n") if c in long and long[c].nunique() > 1]
    if not varying:
        return None
    axis = varying[0]
    fixed = [c for c in varying[1:]]
    present = [m for m in QUALITY_MEASURES if m in set(long["measure"])]
    if not present:
        return None
    ncols = min(3, len(present))
    nrows = math.ceil(len(present) / ncols)
    fig = Figure(figsize=(max(3.6 * ncols, 6), 2.8 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    groups = ["pair", "metric", *fixed]
    styles = metric_styles(long["metric"].unique())
    variants = list(dict.fromkeys(long[["pair", *fixed]].itertuples(index=False, name=None)))
    for ax, measure in zip(axes.flat, present):
        rows = long[long["measure"] == measure]
        for key, grp in rows.groupby(groups):
            grp = grp.sort_values(axis)
            label = " ".join(
                f"{v}" if g == "metric" else f"{g}={v}"
                for g, v in zip(groups, key)
                if g != "pair" or rows["pair"].nunique() > 1
            )
            x = grp[axis].to_numpy(float)
            metric, variant = key[1], variants.index((key[0], *key[2:]))
            line = bound_line(metric) if bound_of(metric) else styles[str(metric)].line()
            hollow = {"markerfacecolor": "none", "linewidth": 1.0} if variant else {}  # a second pair or n
            ax.plot(x, grp["mean"], label=bound_label(metric) if bound_of(metric) else label, **{**line, **hollow})
            lo, hi = grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float)
            if np.isfinite(lo).any():
                ax.fill_between(x, lo, hi, alpha=0.12, color=line["color"], linewidth=0)
        ax.set_title(MEASURE_TITLES.get(measure, measure), fontsize="medium")
        ax.set_xlabel(axis)
        integer_axis(ax.xaxis, long[axis])
    for ax in list(axes.flat)[len(present) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    fig.suptitle(
        f"Measures against {axis} (mean and 95% CI over repetitions); higher is better\n{_swept_setting(long, axis)}"
    )
    caption_below(fig, warnings=warnings)
    return fig
