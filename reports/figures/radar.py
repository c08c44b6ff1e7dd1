"""Radar charts of 004 Figure 4: small multiples (one radar per metric) and one overlaid radar of a few.

Any quality measure can be an axis (A, A^w, ρ, ω², L, S, I and IFC), all on one 0..1 scale, time
left out as in the paper. A missing value (the measure was not run for that metric) breaks the
outline at its axis and is written "n/a" there; it is never drawn as zero. The bounds of
``textmetric_bench.reports.bounds`` are drawn behind the metrics as grey outlines, dashed (ceiling) and dotted (floor).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from textmetric_bench.reports.bounds import bound_label, bound_of
from textmetric_bench.reports.figures.drawing import caption_below, keep_inside, save_figure, symbol, wrap_title
from textmetric_bench.reports.figures.palette import bound_line, metric_styles
from textmetric_bench.reports.labels import QUALITY_MEASURES, metric_labels

#: Default number of metrics in one overlaid radar; more cannot be told apart.
MAX_OVERLAID = 6
#: Width (inches) the overlaid radar's title is wrapped to: about its caption's (110 small characters).
OVERLAID_TITLE_INCHES = 7.0
#: Smallest width (inches) of the small multiples' figure, whatever the number of metrics.
SMALL_MULTIPLES_MIN_INCHES = 5.0
SMALL_MULTIPLES_CAPTION = (
    "One radar per metric over the quality measures (004 Figure 4), all on the same 0–1 "
    "scale, time left out; metrics in order of their mean over the axes. Good: a large "
    "polygon reaching the rim on every axis. Each metric's outline is solid, in its colour."
)
NA_SENTENCE = (
    "n/a: no mean for that metric (not zero): the measure was not run for it, none of its repetitions completed, "
    "or it is undefined there (an IFC whose distance never changed; the table says which)."
)
NEGATIVE_SENTENCE = "Negative means are drawn at 0."
BOUNDS_SENTENCE = "Grey dashed: the ceiling (oracle); grey dotted: the floor (chance)."
#: The overlaid radar's heading, followed by the run's setting when one is given.
OVERLAID_HEADING = "Quality measures per metric (mean over repetitions)"


def small_multiples_caption(summary: pd.DataFrame, axes=None) -> str:
    """``SMALL_MULTIPLES_CAPTION``, and only for what the figure of ``summary`` draws: the n/a marks, means drawn
    at 0, the bounds' grey outlines."""
    means = radar_means(summary, axes)
    drawn = means.loc[ranked_metrics(means)]
    sentences = [SMALL_MULTIPLES_CAPTION]
    sentences += [NA_SENTENCE] if bool(drawn.isna().any().any()) else []
    sentences += [NEGATIVE_SENTENCE] if bool((drawn < 0).any().any()) else []
    sentences += (
        [BOUNDS_SENTENCE] if any(bound_of(m) is not None and means.loc[m].notna().any() for m in means.index) else []
    )
    return " ".join(sentences)


def radar_means(summary: pd.DataFrame, axes=None) -> pd.DataFrame:
    """Means per metric (rows) and radar axis (columns): ``axes`` as given, or every quality measure with a value."""
    means = summary.pivot(index="metric", columns="measure", values="mean")
    if means.empty:
        raise ValueError("radar chart needs at least one metric in the summary; every metric failed?")
    if axes is None:
        axes = [m for m in QUALITY_MEASURES if m in means.columns and means[m].notna().any()]
    else:
        unknown = [a for a in axes if a not in QUALITY_MEASURES]
        if unknown:
            raise ValueError(
                f"radar axes must be quality measures on a 0..1 scale ({', '.join(QUALITY_MEASURES)}); "
                f"got {', '.join(map(str, unknown))}"
            )
    if len(axes) < 3:
        raise ValueError(
            f"radar chart needs at least 3 quality measures among {', '.join(QUALITY_MEASURES)}; "
            f"the summary has {list(axes) or 'none'}. Use the table instead for fewer measures."
        )
    return means.reindex(columns=list(axes)).astype(float)


def ranked_metrics(means: pd.DataFrame) -> list[str]:
    """Ordinary metrics (bounds left out), best mean over the axes first, ties by name."""
    score = means.clip(lower=0.0).mean(axis=1, skipna=True).fillna(-1.0)
    names = [m for m in means.index if bound_of(m) is None]
    return sorted(names, key=lambda m: (-score[m], str(m)))


def _angles(n: int) -> np.ndarray:
    return np.linspace(0, 2 * np.pi, n, endpoint=False)


def _outline(ax, values: np.ndarray, *, fill: bool, **line) -> None:
    """A closed outline over the axes; a NaN value leaves a gap at its axis (both edges), no vertex."""
    angles = _angles(values.size)
    radii = np.clip(values, 0.0, 1.0)
    closed_a, closed_r = np.append(angles, angles[0]), np.append(radii, radii[0])
    ax.plot(closed_a, closed_r, **line)
    if fill and np.isfinite(radii).all():
        ax.fill(closed_a, closed_r, alpha=0.12, color=line.get("color"), linewidth=0)


def _polar(ax, axes: list[str], fontsize: float, *, radial_labels: bool = True) -> None:
    ax.set_theta_offset(np.pi / 2)
    ax.set_theta_direction(-1)
    ax.set_xticks(_angles(len(axes)))
    ax.set_xticklabels([symbol(a) for a in axes], fontsize=fontsize)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_yticklabels(["", ".4", "", ".8", ""] if radial_labels else [], fontsize=max(fontsize - 1, 7))
    ax.set_rlabel_position(180 / len(axes))  # radial labels between two axes, not on one
    ax.grid(alpha=0.4)


def _bounds(ax, means: pd.DataFrame) -> list[str]:
    drawn = []
    for metric in means.index:
        if bound_of(metric) is not None and means.loc[metric].notna().any():
            _outline(
                ax, means.loc[metric].to_numpy(), fill=False, zorder=1, label=bound_label(metric), **bound_line(metric)
            )
            drawn.append(metric)
    return drawn


def _mark_missing(ax, values: np.ndarray, colour: str) -> None:
    for angle, value in zip(_angles(values.size), values):
        if not np.isfinite(value):
            ax.text(angle, 0.55, "n/a", color=colour, fontsize=8, fontstyle="italic", ha="center", va="center")


def _axis_label(axis: str, missing: list[str]) -> str:
    """An axis's symbol, followed by which metrics have no value on it."""
    if not missing:
        return symbol(axis)
    names = ", ".join(missing) if len(missing) <= 2 else f"{len(missing)} metrics"
    return f"{symbol(axis)}\nn/a: {names}"


def radar_small_multiples(
    summary: pd.DataFrame,
    *,
    axes=None,
    ncols: int | None = None,
    title: str | None = None,
    warnings: Sequence[str] = (),
) -> Figure:
    """One small radar per metric on a shared 0..1 scale, in a grid, best mean first (004 Figure 4); ``warnings``
    (the run's, ``textmetric_bench.measures.run_warnings``) in a caption below."""
    means = radar_means(summary, axes)
    metrics = ranked_metrics(means)
    if not metrics:
        raise ValueError("radar small multiples need at least one metric other than the bounds (oracle, chance)")
    labels, styles = metric_labels(summary), metric_styles(means.index)
    ncols = ncols or min(6, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    # at least SMALL_MULTIPLES_MIN_INCHES wide: the title of a figure of one or two metrics would otherwise wrap to
    # a narrow column of many lines, the last one on the panels' titles
    fig = Figure(figsize=(max(2.4 * ncols, SMALL_MULTIPLES_MIN_INCHES), 2.9 * nrows + 0.6), layout="constrained")
    fig.get_layout_engine().set(hspace=0.12, h_pad=0.12)  # polar axis labels stick out of the axes: room for them
    grid = fig.subplots(nrows, ncols, squeeze=False, subplot_kw={"projection": "polar"})
    for index, (ax, metric) in enumerate(zip(grid.flat, metrics)):
        _polar(ax, list(means.columns), fontsize=9, radial_labels=index == 0)
        _bounds(ax, means)
        values = means.loc[metric].to_numpy()
        style = styles[str(metric)]
        _outline(ax, values, fill=True, linewidth=1.6, markersize=4, zorder=3, **style.line())
        _mark_missing(ax, values, style.colour)
        ax.set_title(labels.get(metric, str(metric)).replace(" (", "\n("), fontsize=9, pad=12)
    for ax in list(grid.flat)[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(
        wrap_title(title or "Each metric's profile (mean over repetitions; 0–1, higher is better)", fig.get_figwidth())
    )
    caption_below(fig, warnings=warnings)
    return fig


def radar_chart(
    summary: pd.DataFrame,
    out_stem: Path,
    *,
    title: str | None = None,
    metrics=None,
    axes=None,
    warnings: Sequence[str] = (),
) -> list[Path]:
    """``overlaid_radar`` written to ``<out_stem>.png`` and ``<out_stem>.svg`` (``warnings`` in its caption)."""
    fig = overlaid_radar(summary, title=title, metrics=metrics, axes=axes, warnings=warnings)
    out_stem = Path(out_stem)
    return [save_figure(fig, out_stem.with_name(out_stem.name + ext)) for ext in (".png", ".svg")]


def overlaid_radar(
    summary: pd.DataFrame, *, title: str | None = None, metrics=None, axes=None, warnings: Sequence[str] = ()
) -> Figure:
    """One overlaid polygon per chosen metric (004 Figure 4), bounds behind, headed ``OVERLAID_HEADING`` and
    ``title`` (the run's setting) below it.

    ``metrics``: which to draw; by default the ``MAX_OVERLAID`` with the largest mean over the
    axes (all of them in ``radar_small_multiples``). ``axes``: quality measures to use, by default
    every one with a value. Negative means are drawn at 0, missing ones as a gap marked n/a. ``warnings``: the
    run's (``textmetric_bench.measures.run_warnings``), written into the caption below the chart.
    """
    means = radar_means(summary, axes)
    ranked = ranked_metrics(means)
    if metrics is None:
        chosen = ranked[:MAX_OVERLAID]
    else:
        unknown = [m for m in metrics if m not in means.index]
        if unknown:
            raise ValueError(
                f"radar chart: no metric {', '.join(map(str, unknown))} in the summary; "
                f"it has {', '.join(map(str, means.index))}"
            )
        chosen = [m for m in metrics if bound_of(m) is None]
    labels, styles = metric_labels(summary), metric_styles(means.index)
    columns = list(means.columns)
    fig = Figure(figsize=(6.5, 5.5))
    ax = fig.add_subplot(projection="polar")
    _polar(ax, columns, fontsize=11)
    has_bounds = bool(_bounds(ax, means))
    missing = {a: [] for a in columns}
    for metric in chosen:
        values = means.loc[metric].to_numpy()
        _outline(
            ax,
            values,
            fill=len(chosen) <= 2,
            linewidth=1.6,
            markersize=4,
            zorder=3,  # fills would merge
            label=labels.get(metric, str(metric)),
            **styles[str(metric)].line(),
        )
        for axis_name, value in zip(columns, values):
            if not np.isfinite(value):
                missing[axis_name].append(str(metric))
    ax.set_xticklabels([_axis_label(a, m) for a, m in missing.items()], fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), title="metric", fontsize="small")
    heading = f"{OVERLAID_HEADING}:\n{title}" if title else OVERLAID_HEADING
    ax.set_title(wrap_title(heading, OVERLAID_TITLE_INCHES), pad=20)
    caption = "Scale 0..1, higher is better; time excluded (004 Figure 4)."
    if len(chosen) < len(ranked):
        caption += (
            f" Shown: the {len(chosen)} of {len(ranked)} metrics with the largest mean over the axes "
            "(all of them: the table)."
        )
    if bool((means.loc[chosen] < 0).any().any()):
        caption += " Negative means drawn at 0."
    if any(missing.values()):
        caption += " A gap: n/a, not zero."
    if has_bounds:
        caption += " Grey: ceiling (dashed), floor (dotted)."
    if len({styles[str(m)].marker for m in chosen}) > 1:
        caption += " Markers tell apart metrics whose colours are alike: they change with every seven metrics."
    caption_below(fig, caption, warnings, width=110, x=0.02)
    keep_inside(fig)  # the legend right of the radar, and a title of several lines, inside the canvas
    return fig
