"""``card_<metric>.png``: one panel per measure, one row per setting, and the card's facts underneath.

Each panel shows the metric's mean in each setting with its 95% interval, its rank there (``#2/8``, 1 = best,
in the panel's right margin, clear of the data) and, as reference lines, the bounds in the same setting where
the suite ran them (grey: dashed the ceiling ``oracle``, dotted the floor ``chance``), which take no rank; the
title names the bounds only when some are drawn. The panel's title gives the mean rank over the settings and
the place. T is in the tables' unit [100 op/s] (``T100`` of ``textmetric_bench.reports.labels``), on a log
scale. Under the panels: orientation, own noise and the known failure modes from the catalogue.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402
import numpy as np  # noqa: E402

from textmetric_bench.measures import registry  # noqa: E402
from textmetric_bench.reports.bounds import BOUNDS  # noqa: E402
from textmetric_bench.reports.cards.card import NOT_RECORDED, Card, orientation_line, own_noise_text  # noqa: E402
from textmetric_bench.reports.figures.palette import BOUND_GREY, BOUND_LINESTYLES  # noqa: E402

SYMBOLS = {m.name: f"{m.math} {m.shown_unit}".strip() for m in registry.MEASURES.values()}
#: T is recorded in pair evaluations per second and shown, as in the tables, in 004's unit [100 op/s].
SCALE = {m.name: m.shown_scale for m in registry.MEASURES.values() if m.scaled}
COLUMNS = 3
#: KSC's measures first, T among them (same settings), then the robustness task's and IFC's.
PANEL_ORDER = registry.by_task()
COLOUR = "#0072B2"


def card_figure(card: Card, path: Path) -> Path:
    """Draw ``card`` into ``path`` (a PNG) and return it."""
    fig = draw_card(card)
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def draw_card(card: Card) -> plt.Figure:
    """The card's figure: one panel per measure and the facts underneath."""
    measures = [m for m in PANEL_ORDER if m in card.measures] + [m for m in card.measures if m not in PANEL_ORDER]
    rows = max(1, math.ceil(len(measures) / COLUMNS))
    per_measure = card.values.groupby("measure")["setting"].nunique()
    height_panel = 0.9 + 0.3 * int(per_measure.max())
    fig = plt.figure(figsize=(14, rows * height_panel + 1.6))
    grid = fig.add_gridspec(rows + 1, COLUMNS, height_ratios=[height_panel] * rows + [1.2], hspace=0.75, wspace=0.22)
    previous = None
    for index, measure in enumerate(measures):
        settings = list(card.values.loc[card.values["measure"] == measure, "setting"])
        labelled = index % COLUMNS == 0 or settings != previous  # labels only where the settings change
        _panel(fig.add_subplot(grid[index // COLUMNS, index % COLUMNS]), card, measure, labelled)
        previous = settings
    text_ax = fig.add_subplot(grid[rows, :])
    text_ax.axis("off")
    text_ax.text(0, 1, _facts_text(card), va="top", ha="left", fontsize=8, family="DejaVu Sans")
    drawn = [f"{kind} {bound}" for bound, kind in BOUNDS.items() if card.values[bound].notna().any()]
    bounds = f"; grey: {' and '.join(drawn)}" if drawn else ""
    fig.suptitle(
        f"{card.metric}: every measure in every setting (mean, 95% interval over repetitions, rank there{bounds})",
        fontsize=11,
        x=0.01,
        ha="left",
    )
    return fig


def _panel(ax, card: Card, measure: str, labelled: bool) -> None:
    rows = card.values[card.values["measure"] == measure].reset_index(drop=True)
    scale = SCALE.get(measure, 1.0)
    rows[["mean", "ci_low", "ci_high", *BOUNDS]] = rows[["mean", "ci_low", "ci_high", *BOUNDS]] / scale
    y = np.arange(len(rows))[::-1]
    low = (rows["mean"] - rows["ci_low"]).clip(lower=0).fillna(0)
    high = (rows["ci_high"] - rows["mean"]).clip(lower=0).fillna(0)
    ax.errorbar(rows["mean"], y, xerr=[low, high], fmt="o", color=COLOUR, ecolor=COLOUR, capsize=3, zorder=3)
    for bound, kind in BOUNDS.items():
        drawn = rows[bound].notna()
        if drawn.any():
            ax.vlines(
                rows.loc[drawn, bound],
                y[drawn] - 0.35,
                y[drawn] + 0.35,
                colors=BOUND_GREY,
                zorder=2,
                linestyles=BOUND_LINESTYLES[kind],
                linewidth=1.4,
                label=f"{kind} ({bound})",
            )
    for yi, row in zip(y, rows.itertuples()):  # in the right margin: a rank never covers a point or interval
        rank = f"#{row.rank:g}/{int(row.of)}" if np.isfinite(row.rank) else "not ranked"
        ax.annotate(
            rank + (" ᴿ" if row.source == "reference" else ""),
            (1.01, yi),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            va="center",
            ha="left",
            annotation_clip=False,
        )
    ax.set_yticks(y)
    ax.set_yticklabels(rows["setting"] if labelled else [], fontsize=7)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    if measure == "T" and (rows["mean"] > 0).all():
        ax.set_xscale("log")
        # a speed range often spans less than a decade: plain numbers at 1-2-5 steps, no crowded minor labels
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    title = SYMBOLS.get(measure, measure)
    if measure in card.mean_ranks:
        mean_rank, place, of, settings, _ = card.mean_ranks[measure]
        title += f": mean rank {mean_rank:.2f}, place {place}/{of}, {settings} settings"
    ax.set_title(title, fontsize=8, loc="left")


def _facts_text(card: Card) -> str:
    failure = card.facts.get("failure_modes") if card.facts else NOT_RECORDED
    lines = [
        f"Orientation: {orientation_line(card)}",
        f"Own noise: {own_noise_text(card)}",
        f"Known failure modes (catalogue): {failure or 'none declared'}",
    ]
    if card.facts:
        lines.insert(
            1,
            f"Range: {card.facts.get('range', '')}; stochastic: {card.facts.get('stochastic', '')}; "
            f"source: {card.facts.get('source', '')}",
        )
    lines.append(
        "Ranks: 1 = best among the ranked metrics of the setting (bounds never ranked); "
        "ᴿ = value taken from the shipped reference results"
    )
    return "\n".join(textwrap.fill(line, 190, subsequent_indent="    ") for line in lines)
