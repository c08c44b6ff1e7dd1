"""The overview of a run: a heatmap of metrics × measures, the mean printed in every cell.

Rows are sorted by a chosen measure (best on top). Colour means one thing per measure family, each with its colour
bar: the quality measures (A, A^w, ρ, ω², L, S, I, IFC) share one fixed 0–1 scale (below 0 is coloured as 0), so
.92 against .98 looks as close as it is; the speed T has a scale of its own, logarithmic, between the run's slowest
and fastest metric. Measures no metric was scored on are left out. The ceiling (oracle) is the top row and the
floor (chance) the bottom one, set apart by a line, labelled in grey italics and not coloured.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from textmetric_bench.measures import registry
from textmetric_bench.measures.chance import below_chance
from textmetric_bench.reports.bounds import bound_label, bound_of
from textmetric_bench.reports.figures.drawing import caption_below, symbol
from textmetric_bench.reports.labels import TABLE3_ORDER, format_score, metric_labels

CMAP = colormaps["viridis"]  # the quality measures: perceptually uniform, readable with colour-vision deficiencies
SPEED_CMAP = colormaps["Oranges"]  # T: another family, another colour scale
MISSING_COLOUR = (0.88, 0.88, 0.88, 1.0)
BOUND_COLOUR = (1.0, 1.0, 1.0, 1.0)
#: Column headers: the paper's symbol and, for T, its unit and what better means.
HEADERS = {m.column: f"{m.symbol}\n{m.shown_unit}" for m in registry.MEASURES.values() if m.scaled}
SPEED = registry.measure("T").column
#: The heatmap's caption, sentence by sentence; ``heatmap_caption`` keeps those about what a figure draws.
CAPTION_PARTS = {
    "base": "Mean over repetitions of every measure (004 Table 3), one row per metric, rows sorted by the measure "
    "named in the title (best on top); all measures are higher-is-better.",
    "quality": "The quality measures share one colour scale, 0 to 1 (a mean below 0 is coloured as 0; the cell "
    "prints it), shown by its colour bar.",
    "speed": "T is a speed in hundreds of pair evaluations per second (embedding excluded), on its own logarithmic "
    "scale from the run's slowest to its fastest metric (its own colour bar).",
    "missing": "Grey n/a: no mean for that metric (the measure was not run for it, none of its repetitions "
    "completed, or it is undefined there, as an IFC whose distance never changed; the run's table says which).",
    "bounds": "Top and bottom rows in grey italics: the ceiling (oracle) and the floor (chance), not coloured.",
    "below": "▼: an A or A^w significantly below chance (.5), as in Table 3.",
}
HEATMAP_CAPTION = " ".join(CAPTION_PARTS.values())


def heatmap_caption(summary: pd.DataFrame) -> str:
    """The caption of ``measure_heatmap(summary)``: only the sentences about what it draws (bounds, T, n/a cells,
    ▼ marks only when there are some)."""
    means = summary.pivot(index="metric", columns="measure", values="mean")
    measures = [m for m in TABLE3_ORDER if m in means.columns and means[m].notna().any()]
    shown = means[measures].astype(float) if measures else means.iloc[:, :0]
    bounds = [m for m in shown.index if bound_of(m) is not None]
    keep = {
        "base": True,
        "quality": any(m != SPEED for m in measures),
        "speed": SPEED in measures,
        "missing": bool(shown.drop(index=bounds).isna().to_numpy().any()),
        "bounds": bool(bounds),
        "below": not below_chance(summary, excluded=bounds).empty,
    }
    return " ".join(text for part, text in CAPTION_PARTS.items() if keep[part])


def heatmap_rows(means: pd.DataFrame, sort_by: str) -> list:
    """Row order: ceiling, ordinary metrics by ``sort_by`` (best first, missing last, ties by name), floor."""
    key = means[sort_by]
    ordinary = [m for m in means.index if bound_of(m) is None]
    ordinary.sort(key=lambda m: (0 if np.isfinite(key[m]) else 1, -key[m] if np.isfinite(key[m]) else 0, str(m)))
    return (
        [m for m in means.index if bound_of(m) == "ceiling"]
        + ordinary
        + [m for m in means.index if bound_of(m) == "floor"]
    )


def text_colour(background) -> str:
    """Black or white, whichever reads better on ``background`` (an RGBA colour): by its WCAG luminance."""
    channels = np.asarray(background[:3], dtype=float)
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    luminance = float(linear @ [0.2126, 0.7152, 0.0722])
    return "black" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "white"


def speed_range(values: pd.Series, ordinary: list) -> tuple[float, float] | None:
    """log10 of the slowest and fastest ordinary metric's T (None when none is positive)."""
    x = values.loc[ordinary].to_numpy(dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    return (float(np.log10(x.min())), float(np.log10(x.max()))) if x.size else None


def _column_shades(values: pd.Series, measure: str, ordinary: list) -> np.ndarray:
    """Each value's place on its family's scale, 0..1 (NaN if missing): the quality measures as they are, clipped
    to 0..1; T by its log between the ordinary metrics' slowest and fastest."""
    x = values.to_numpy(dtype=float)
    if measure != SPEED:
        return np.clip(x, 0.0, 1.0)
    span = speed_range(values, ordinary)
    if span is None:
        return np.full(x.shape, np.nan)
    logs = np.log10(np.where(x > 0, x, np.nan))
    low, high = span
    if high == low:
        return np.where(np.isfinite(logs), 0.5, np.nan)
    return np.clip((logs - low) / (high - low), 0.0, 1.0)


def measure_heatmap(
    summary: pd.DataFrame, sort_by: str | None = "A", *, setting: str = "", warnings: Sequence[str] = ()
) -> Figure:
    """Heatmap of metrics × measures from ``textmetric_bench.measures.summaries.summarise_measures``' long table,
    rows sorted by ``sort_by`` (None: A, or else the first measure of Table 3's order the summary has a value of, as
    in a robustness or IFC run); ``setting`` (the pair, k, n and repetitions) is named in the title; ``warnings``
    (the run's) go into a caption below the map."""
    means = summary.pivot(index="metric", columns="measure", values="mean")
    measures = [m for m in TABLE3_ORDER if m in means.columns]
    if means.empty or not measures:
        raise ValueError(
            "measure heatmap needs a summary with at least one metric and one measure "
            f"({', '.join(TABLE3_ORDER)}); got columns {', '.join(map(str, summary.columns))}"
        )
    if sort_by is None:
        scored = [m for m in measures if means[m].notna().any()] or measures
        sort_by = "A" if "A" in scored else scored[0]
    sort_by = registry.measure(sort_by).column if sort_by in registry.MEASURES else sort_by
    if sort_by not in measures:
        raise ValueError(f"measure heatmap cannot sort by {sort_by!r}: the summary has {', '.join(measures)}")
    means = means[measures].astype(float)
    measures = [m for m in measures if means[m].notna().any()]  # a measure no metric was scored on: left out
    means = means[measures]
    rows = heatmap_rows(means, sort_by)
    means = means.loc[rows]
    ordinary = [m for m in rows if bound_of(m) is None]
    shades = np.column_stack([_column_shades(means[m], m, ordinary) for m in measures])
    speed = [j for j, m in enumerate(measures) if m == SPEED]
    colours = CMAP(np.nan_to_num(shades, nan=0.0))
    colours[:, speed] = SPEED_CMAP(np.nan_to_num(shades[:, speed], nan=0.0))
    colours[~np.isfinite(shades)] = MISSING_COLOUR
    bound_rows = [i for i, m in enumerate(rows) if bound_of(m) is not None]
    colours[bound_rows] = BOUND_COLOUR
    flagged = below_chance(summary, excluded=[m for m in rows if bound_of(m) is not None])
    below = set(flagged[["metric", "measure"]].itertuples(index=False, name=None))

    fig = Figure(figsize=(2.0 + 0.95 * len(measures), 1.6 + 0.32 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    ax.imshow(colours, aspect="auto", interpolation="nearest")
    for i, metric in enumerate(rows):
        for j, measure in enumerate(measures):
            value = means.at[metric, measure]
            is_bound = i in bound_rows
            text = format_score(value) if np.isfinite(value) else "n/a"
            text += " ▼" if (metric, measure) in below else ""
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=9,
                color=text_colour(colours[i, j]),
                fontstyle="italic" if is_bound or not np.isfinite(value) else "normal",
            )
    labels = metric_labels(summary)
    ax.set_yticks(
        range(len(rows)), [bound_label(m) if bound_of(m) else labels.get(m, str(m)) for m in rows], fontsize=9
    )
    for i in bound_rows:
        tick = ax.get_yticklabels()[i]
        tick.set_color("#666666")
        tick.set_fontstyle("italic")
    ax.set_xticks(range(len(measures)), [HEADERS.get(m, symbol(m)) for m in measures], fontsize=10)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for edge in _separators(rows):
        ax.axhline(edge, color="#444444", linewidth=1.5)
    ax.set_xticks(np.arange(len(measures) + 1) - 0.5, minor=True)
    ax.grid(which="minor", axis="x", color="white", linewidth=1.5)
    ax.set_title(
        f"Measures per metric (mean over repetitions), rows sorted by {symbol(sort_by)} (best on top)"
        + (f"\n{setting}" if setting else ""),
        fontsize=10,
    )
    _colour_bars(fig, ax, means, measures, ordinary)
    caption_below(fig, warnings=warnings, width=int(12 * fig.get_figwidth()))
    return fig


def _colour_bars(fig: Figure, ax, means: pd.DataFrame, measures: list, ordinary: list) -> None:
    """One colour bar per measure family drawn: the quality measures' 0..1, and T's log scale in 100 op/s."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LogNorm, Normalize

    quality = [m for m in measures if m != SPEED]
    if quality:
        bar = fig.colorbar(ScalarMappable(Normalize(0, 1), CMAP), ax=ax, location="right", fraction=0.04, pad=0.02)
        bar.set_label(f"{', '.join(symbol(m) for m in quality)} (0–1)", fontsize=9)
        bar.ax.tick_params(labelsize=8)
    span = speed_range(means[SPEED], ordinary) if SPEED in measures else None
    if span is not None:
        low, high = 10 ** span[0], 10 ** span[1]
        if high == low:
            low, high = low / 2, high * 2
        bar = fig.colorbar(
            ScalarMappable(LogNorm(low, high), SPEED_CMAP), ax=ax, location="right", fraction=0.04, pad=0.02
        )
        bar.set_label("T [100 op/s], log scale", fontsize=9)
        if high / low < 100:  # within two decades matplotlib labels its minor ticks too, crowded: four plain ones
            bar.ax.minorticks_off()
            ticks = np.geomspace(low, high, 4)
            bar.set_ticks(ticks, labels=[f"{t:.3g}" for t in ticks])
        bar.ax.tick_params(labelsize=8)


def _separators(rows: list) -> list[float]:
    """y positions of the lines between the ceiling, the ordinary metrics and the floor."""
    kinds = [bound_of(m) for m in rows]
    return [
        i + 0.5
        for i in range(len(rows) - 1)
        if (kinds[i] == "ceiling") != (kinds[i + 1] == "ceiling") or (kinds[i] == "floor") != (kinds[i + 1] == "floor")
    ]
