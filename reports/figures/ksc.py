"""Charts of a run: the distance-vs-ℓ scatter of 004 Figure 2 (top); the radar of Figure 4 is in
``textmetric_bench.reports.figures.radar`` and importable from here.

Figures are drawn on bare ``matplotlib.figure.Figure`` objects (Agg rendering, no pyplot
state), so plotting is safe in parallel sweep jobs and never opens a window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from scipy import stats

from textmetric_bench.measures.ksc import monotonicity
from textmetric_bench.reports.bounds import bound_label, bound_of, table_order
from textmetric_bench.reports.figures.drawing import (
    caption_below,
    integer_axis,
    label_lowest_panels,
    ols_band,
    own_warnings,
    safe_name,
    save_figure,
)
from textmetric_bench.reports.figures.overview import bound_lines
from textmetric_bench.reports.figures.palette import METRIC_LINESTYLE, MetricStyle, bound_line, metric_styles
from textmetric_bench.reports.labels import format_score, metric_labels, similarities

#: How far (in ℓ) a scatter's points are shifted sideways at random, so that points of one ℓ do not hide each other.
JITTER = 0.15
#: How the two ρ of a scatter are named: the table's mean of per-repetition ρ, and one ρ over pooled points.
MEAN_RHO = "ρ (mean over repetitions, as the table)"
POOLED_RHO = "pooled ρ"
#: What a scatter draws, below every scatter figure (the report's caption says more).
SCATTER_CAPTION = (
    f"Points: one evaluation each, shifted sideways by up to ±{JITTER:g} so that equal ℓ do not hide each other; "
    "line: least-squares fit; band: its 95% confidence interval."
)


def bound_lines_sentence(metrics) -> str:
    """What the grey lines of the bounds among ``metrics`` are in a scatter (the ceiling's dashed, the floor's
    dotted); "" when there is none."""
    text = bound_lines(metrics, "line and points")
    return f"{text}." if text else ""


def scatter_caption(metrics) -> str:
    """``SCATTER_CAPTION``, and what the grey lines of the bounds among ``metrics`` are."""
    return f"{SCATTER_CAPTION} {bound_lines_sentence(metrics)}".strip()


def scatter_look(metric, styles: Mapping[str, MetricStyle]) -> dict:
    """How ``metric``'s points and line are drawn (``styles``: ``metric_styles`` of the figure's metrics): in its
    palette colour on a solid line, or, for a bound (oracle, chance), in grey on its dashed (ceiling) or dotted
    (floor) line."""
    if bound_of(metric) is not None:
        return bound_line(metric)
    return {"color": styles[str(metric)].colour, "linestyle": METRIC_LINESTYLE, "linewidth": 1.5}


def scatter_label(metric, labels: Mapping[str, str]) -> str:
    """A scatter's name for ``metric``: a bound as the tables name it (ceiling (oracle)), others as ``labels`` do."""
    return bound_label(metric) if bound_of(metric) is not None else labels.get(metric, str(metric))


def _draw_scatter(ax, ell: np.ndarray, y: np.ndarray, rng: np.random.Generator, look: dict) -> float:
    """Jittered points, OLS line and 95% band on ``ax`` drawn in ``look`` (``scatter_look``: the line's keyword
    arguments, colour included); returns the pooled Spearman ρ."""
    jitter = rng.uniform(-JITTER, JITTER, size=ell.size)
    # a darker edge of the same colour keeps the palette's paler colours visible on white
    edge = tuple(0.6 * c for c in to_rgb(look["color"]))
    ax.scatter(ell + jitter, y, s=10, alpha=0.55, color=look["color"], edgecolors=[edge], linewidths=0.5)
    integer_axis(ax.xaxis, ell)
    grid = np.linspace(ell.min(), ell.max(), 50)
    band = ols_band(ell, y, grid)
    if band is not None:
        fit, low, high = band
        ax.plot(grid, fit, **look)
        ax.fill_between(grid, low, high, color=look["color"], alpha=0.2, linewidth=0)
    if np.unique(ell).size < 2 or np.unique(y).size < 2:
        return float("nan")
    return float(stats.spearmanr(ell, y).statistic)


def _finite_rows(distances: pd.DataFrame, column: str) -> pd.DataFrame:
    frame = distances[["metric", "ell", column]].copy()
    frame["ell"] = pd.to_numeric(frame["ell"], errors="coerce")
    frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame[np.isfinite(frame["ell"]) & np.isfinite(frame[column])]


def _with_z(distances: pd.DataFrame) -> pd.DataFrame:
    """Distances with a ``z`` column, computed within (metric, repetition) when the runner gave none
    (of a similarity's negation, with the population sd, ddof=0, as the measures do)."""
    if "z" in distances.columns:
        return distances
    frame = distances.copy()
    keys = ["metric", "repetition"] if "repetition" in frame.columns else ["metric"]
    value = frame["distance"].where(~frame["metric"].astype(str).isin(similarities(frame)), -frame["distance"])
    grouped = value.groupby([frame[k] for k in keys])
    frame["z"] = (value - grouped.transform("mean")) / grouped.transform("std", ddof=0)
    return frame


def mean_rho(distances: pd.DataFrame, metric: str, negate: bool) -> float:
    """The table's ρ of ``metric``: Spearman ρ of distance with ℓ within each repetition (of a similarity's
    negation), averaged over repetitions."""
    rows = distances[distances["metric"] == metric]
    groups = rows.groupby("repetition") if "repetition" in rows.columns else [(0, rows)]
    values = [monotonicity(g["ell"], -g["distance"] if negate else g["distance"]) for _, g in groups]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def distance_scatter(
    distances: pd.DataFrame,
    out_dir: Path,
    *,
    setting: str = "",
    per_metric: bool = True,
    warnings: Sequence[str] = (),
    metric_warnings: Mapping[str, Sequence[str]] | None = None,
) -> list[Path]:
    """``scatter_figures`` written as ``<name>.png`` into ``out_dir``."""
    figures = scatter_figures(
        distances, setting, per_metric=per_metric, warnings=warnings, metric_warnings=metric_warnings
    )
    return [save_figure(fig, Path(out_dir) / f"{name}.png") for name, fig in figures.items()]


def scatter_names(distances: pd.DataFrame, *, per_metric: bool = True) -> list[str]:
    """The names of the figures ``scatter_figures`` draws, in its order (none without a finite distance)."""
    metrics = sorted(_finite_rows(distances, "distance")["metric"].unique(), key=str)
    if not metrics:
        return []
    return [f"scatter_{safe_name(m)}" for m in metrics if per_metric] + ["scatter_all"]


def scatter_file(
    distances: pd.DataFrame,
    out_dir: Path,
    name: str,
    *,
    setting: str = "",
    warnings: Sequence[str] = (),
    metric_warnings: Mapping[str, Sequence[str]] | None = None,
) -> Path:
    """The one figure ``name`` of ``scatter_figures`` written as ``<name>.png`` into ``out_dir`` (a job of
    ``textmetric_bench.reports.figures.parallel``)."""
    figure = scatter_figures(distances, setting, names={name}, warnings=warnings, metric_warnings=metric_warnings)
    return save_figure(figure[name], Path(out_dir) / f"{name}.png")


def scatter_figures(
    distances: pd.DataFrame,
    setting: str = "",
    *,
    per_metric: bool = True,
    names=None,
    warnings: Sequence[str] = (),
    metric_warnings: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Figure]:
    """Raw distance against ℓ per metric, pooled over repetitions (004 Figure 2 top), plus a z-scored grid.

    ``scatter_<metric>`` for every metric with at least one finite distance and ``scatter_all`` with one panel
    per such metric. A similarity's raw values fall with ℓ when
    it works; its z (computed on the negation, as every measure) rises like a distance's. Each title gives the
    table's ρ (mean over repetitions) and the pooled ρ of the points drawn, each named, and ``setting`` (the
    pair, k, n and repetitions). ``per_metric=False``: the grid only (what the report shows; drawing a figure
    costs about 0.3 s). ``names``: only the figures of these names (``scatter_names``). ``warnings``: the run's
    (``textmetric_bench.measures.run_warnings``), in a caption below every figure; a metric's own figure carries
    its entry of ``metric_warnings`` instead when given (``warnings_by_metric``: not another metric's failure).
    """
    raw = _finite_rows(distances, "distance")
    if "repetition" in distances.columns:
        raw["repetition"] = distances.loc[raw.index, "repetition"]
    metrics = table_order(sorted(raw["metric"].unique(), key=str))  # as the tables: the ceiling first, the floor last
    labels, similar, styles = metric_labels(distances), similarities(distances), metric_styles(metrics)
    wanted = [m for m in metrics if names is None or "scatter_all" in names or f"scatter_{safe_name(m)}" in names]
    table_rho = {m: mean_rho(raw, m, m in similar) for m in wanted}  # one figure of a metric needs its ρ alone
    figures: dict[str, Figure] = {}
    for metric in metrics if per_metric else []:
        if names is not None and f"scatter_{safe_name(metric)}" not in names:
            continue
        rows = raw[raw["metric"] == metric]
        fig = Figure(figsize=(5.5, 4.2))
        ax = fig.add_subplot()
        rho = _draw_scatter(
            ax,
            rows["ell"].to_numpy(),
            rows["distance"].to_numpy(),
            np.random.default_rng(0),
            scatter_look(metric, styles),
        )
        ax.set_xlabel("ℓ (separation j − i)")
        if metric in similar:  # ρ of the negation, as in the measures
            rho = -rho
        ax.set_ylabel("similarity (raw; measures use its negation)" if metric in similar else "distance (raw)")
        ax.set_title(
            f"{scatter_label(metric, labels)}: {MEAN_RHO} = {format_score(table_rho[metric])}\n"
            f"{POOLED_RHO} of the raw distances shown = {format_score(rho)}" + (f"\n{setting}" if setting else ""),
            fontsize="medium",
        )
        caption_below(fig, scatter_caption([metric]), own_warnings(metric, warnings, metric_warnings))
        figures[f"scatter_{safe_name(metric)}"] = fig
    if not metrics or (names is not None and "scatter_all" not in names):
        return figures

    zrows = _finite_rows(_with_z(distances), "z")
    ncols = min(4, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    fig = Figure(figsize=(max(3.2 * ncols, 5.5), 2.8 * nrows + 0.5), layout="constrained")
    grid = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    for ax, metric in zip(grid.flat, metrics):
        rows = zrows[zrows["metric"] == metric]
        rho = float("nan")
        if len(rows):
            rho = _draw_scatter(
                ax,
                rows["ell"].to_numpy(),
                rows["z"].to_numpy(),
                np.random.default_rng(0),
                scatter_look(metric, styles),
            )
        ax.set_title(
            f"{scatter_label(metric, labels)}\nρ {format_score(table_rho[metric])} · pooled ρ (z) {format_score(rho)}",
            fontsize="medium",
        )
    for index in range(len(metrics), nrows * ncols):
        grid.flat[index].set_visible(False)
    label_lowest_panels(grid, len(metrics), "ℓ")
    for ax in grid[:, 0]:
        ax.set_ylabel("distance (z)")
    fig.suptitle(
        "Distance vs ℓ, z-scored within repetition with the population sd (ddof=0, as the measures); "
        "004 Figure 2 top" + (f"\n{setting}" if setting else "") + f"\nρ: {MEAN_RHO}; pooled ρ (z): one "
        "Spearman ρ over the z-scores of every repetition drawn"
    )
    caption_below(fig, scatter_caption(metrics), warnings)
    figures["scatter_all"] = fig
    return figures
