"""Figures over many repetitions or many runs: 004 Figure 6 boxplots and sweep trends."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from textmetric_bench.measures import registry
from textmetric_bench.reports.bounds import bound_label, bound_of
from textmetric_bench.reports.figures.drawing import caption_below, integer_axis, save_figure
from textmetric_bench.reports.figures.palette import BOUND_LINESTYLES, bound_line, metric_styles
from textmetric_bench.reports.labels import QUALITY_MEASURES, metric_labels

#: Panel titles: the paper's symbol and what the measure is.
MEASURE_TITLES = {m.name: f"{m.math}: {m.title}" for m in registry.MEASURES.values() if m.quality}
#: How opaque a bound's band (its range over repetitions) is in the box plots.
BAND_ALPHA = 0.15
#: A bound's line style in words.
LINE_NAMES = {"--": "dashed", ":": "dotted"}


def _bound_band(ax, values: np.ndarray, metric: str) -> None:
    """A bound as a shaded band over its range across repetitions, with a line at its median."""
    if values.size == 0:
        return
    line = bound_line(metric)
    ax.axvspan(values.min(), values.max(), color=line["color"], alpha=BAND_ALPHA, linewidth=0, zorder=0)
    ax.axvline(float(np.median(values)), zorder=1, label=bound_label(metric), **line)


def bound_lines(metrics, drawn: str = "line") -> str:
    """The bounds among ``metrics`` in the palette's words, capitalised ("Grey dashed line: the ceiling (oracle);
    grey dotted line: the floor (chance)"; ``drawn``: what the grey marks are), "" when there is none."""
    kinds = {bound_of(m): bound_label(m) for m in metrics}
    named = [
        f"grey {LINE_NAMES[style]} {drawn}: the {kinds[kind]}"
        for kind, style in BOUND_LINESTYLES.items()
        if kind in kinds
    ]
    text = "; ".join(named)
    return f"{text[0].upper()}{text[1:]}" if named else ""


def bounds_caption(bounds) -> str:
    """What the grey lines and bands of the box plots are, for the bounds drawn ("" when none is), in the palette's
    words: the ceiling dashed, the floor dotted."""
    text = bound_lines(bounds)
    return f"{text}: at the median over repetitions, in a shaded band over their range." if text else ""


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
    drawn = [
        m
        for m in metrics
        if bound_of(m) is not None and measures.loc[measures["metric"] == m, present].notna().any(axis=None)
    ]
    caption_below(fig, bounds_caption(drawn), warnings)
    return fig


def _swept_setting(long: pd.DataFrame, axis: str) -> str:
    """The sweep's pairs, the KSC parameters it did not sweep, its repetitions and seeds, as a figure's title names
    them."""

    def values(column: str) -> str:
        found = sorted({str(v) for v in long[column].dropna()}, key=lambda v: (len(v), v)) if column in long else []
        return ", ".join(found) or "?"

    fixed = [f"{c}={values(c)}" for c in ("k", "n") if c != axis]
    reps = sorted({int(v) for v in long["n_reps"].dropna()}) if "n_reps" in long else []
    shown = " or ".join(map(str, reps)) if reps else "?"
    seeds = values("seed")
    return (
        f"{values('pair')} · {', '.join(fixed)} · {shown} repetition{'' if reps == [1] else 's'} · "
        f"seed{'s' if ',' in seeds else ''} {seeds} · {axis}={values(axis)}"
    )


#: Marker fills telling apart the lines of a sweep's settings (its pairs, or the KSC parameter not on the x axis):
#: a line's colour stays its metric's and the line solid, as in every figure (dashed and dotted are the bounds').
SETTING_FILLS = ("full", "none", "left", "top", "right", "bottom")
#: Share of the smallest step between swept values over which a panel's lines are set apart, so that their
#: interval bars do not hide one another.
DODGE = 0.3
TRENDS_CAPTION = (
    "Bars: 95% interval over repetitions, each line's points set slightly apart along the x axis so that the bars "
    "do not hide one another (they belong to the swept value they surround). Grey lines: the bounds' means."
)


def _setting_name(key: tuple, columns: list[str], many_pairs: bool) -> str:
    return " ".join(str(v) if c == "pair" else f"{c}={v}" for c, v in zip(columns, key) if c != "pair" or many_pairs)


def sweep_trends(long: pd.DataFrame, out_path: Path, *, warnings: Sequence[str] = ()) -> Path | None:
    """``trends_figure`` written to ``out_path``; None when nothing was swept."""
    fig = trends_figure(long, warnings=warnings)
    return None if fig is None else save_figure(fig, out_path)


def trends_figure(long: pd.DataFrame, *, warnings: Sequence[str] = ()) -> Figure | None:
    """How each measure moves with the swept KSC parameter (k or n), one line per metric and setting (pair, and the
    other parameter when both were swept) with bars of its 95% interval; ticks at the swept values. A metric keeps its
    colour and marker, a setting its marker fill (``SETTING_FILLS``); the bounds are grey lines of their means, the
    ceiling dashed and the floor dotted. One legend entry per metric, setting and bound; ``warnings`` (the sweep's
    runs', ``textmetric_bench.reports.html.report.sweep_warnings``) in a caption below."""
    varying = [c for c in ("k", "n") if c in long and long[c].nunique() > 1]
    if not varying:
        return None
    axis = varying[0]
    present = [m for m in QUALITY_MEASURES if m in set(long["measure"])]
    if not present:
        return None
    columns = ["pair", *varying[1:]]
    many_pairs = long["pair"].nunique() > 1
    settings = sorted(set(long[columns].itertuples(index=False, name=None)), key=lambda t: tuple(map(str, t)))
    fills = {key: SETTING_FILLS[i % len(SETTING_FILLS)] for i, key in enumerate(settings)}
    styles, labels = metric_styles(long["metric"].unique()), metric_labels(long)
    ordinary = sorted(styles)
    bounds = sorted({str(m) for m in long["metric"] if bound_of(m) is not None}, key=lambda m: bound_of(m) != "ceiling")
    swept = np.unique(long[axis].to_numpy(float))
    spread = DODGE * float(np.diff(swept).min())
    series = [(m, key) for m in ordinary for key in settings]
    offsets = dict(zip(series, np.linspace(-spread / 2, spread / 2, len(series)) if len(series) > 1 else [0.0]))

    ncols = min(3, len(present))
    nrows = math.ceil(len(present) / ncols)
    fig = Figure(figsize=(max(3.6 * ncols, 6), 2.8 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, measure in zip(axes.flat, present):
        rows = long[long["measure"] == measure]
        for (metric, *key), grp in rows.groupby(["metric", *columns]):
            grp, key = grp.sort_values(axis), tuple(key)
            x, mean = grp[axis].to_numpy(float), grp["mean"].to_numpy(float)
            if bound_of(metric) is not None:  # a reference, not a result: its mean only
                marker = {"marker": "o", "markersize": 4, "fillstyle": fills[key]} if len(settings) > 1 else {}
                ax.plot(x, mean, zorder=1, **bound_line(metric), **marker)
                continue
            low, high = grp["ci_low"].to_numpy(float), grp["ci_high"].to_numpy(float)
            bars = np.where(np.isfinite(low) & np.isfinite(high), [mean - low, high - mean], 0.0).clip(min=0.0)
            ax.errorbar(
                x + offsets[(str(metric), key)],
                mean,
                yerr=bars,
                fillstyle=fills[key],
                linewidth=1.2,
                elinewidth=0.8,
                markersize=5,
                zorder=2,
                **styles[str(metric)].line(),
            )
        ax.set_title(MEASURE_TITLES.get(measure, measure), fontsize="medium")
        ax.set_xlabel(axis)
        integer_axis(ax.xaxis, long[axis])
    for ax in list(axes.flat)[len(present) :]:
        ax.set_visible(False)
    handles = [Line2D([], [], **styles[m].line()) for m in ordinary]
    names = [labels.get(m, m) for m in ordinary]
    if len(settings) > 1:
        handles += [Line2D([], [], color="black", marker="o", fillstyle=fills[key]) for key in settings]
        names += [_setting_name(key, columns, many_pairs) for key in settings]
    handles += [Line2D([], [], **bound_line(m)) for m in bounds]
    names += [bound_label(m) for m in bounds]
    fig.legend(handles, names, loc="outside right upper", fontsize="small")
    fig.suptitle(
        f"Measures against {axis} (mean and 95% interval over repetitions); higher is better\n"
        f"{_swept_setting(long, axis)}"
    )
    caption_below(fig, TRENDS_CAPTION, warnings)
    return fig
