"""The critical-difference diagram of one measure (Demšar 2006, Fig. 1), drawn by scikit-posthocs, and below it
the groups of the paired test over repetitions (``textmetric_bench.reports.suite.groups``).

Top: each metric sits at its mean rank over the settings (1 = best, on the left); a bar joins metrics that the
post-hoc test (Wilcoxon signed-rank with Holm, ``textmetric_bench.reports.suite.ranks``) does not separate at
``ALPHA``. Bottom, where the runs hold repetitions: each metric at its mean over the settings, best on top, and a
bar at the right joining the members of each group the paired test does not separate. Warnings are not drawn:
``cd_caption`` gives them to the report, under the figure.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import scikit_posthocs as sp  # noqa: E402

from textmetric_bench.reports.figures.palette import metric_styles  # noqa: E402
from textmetric_bench.reports.labels import MEASURE_LABELS  # noqa: E402
from textmetric_bench.reports.suite.groups import MeasureGroups  # noqa: E402
from textmetric_bench.reports.suite.ranks import ALPHA, MeasureRanks  # noqa: E402

TITLE_WIDTH = 95  # characters per title line: a longer line runs past the 8-inch figure


def measure_title(measure: str) -> str:
    """The measure's label as the tables give it (T in its own unit: evaluations per second)."""
    if measure == "T":
        return "T: speed, pair evaluations per second (§4.4)"
    return MEASURE_LABELS.get(measure, measure)


def cd_caption(result: MeasureRanks, groups: MeasureGroups | None = None) -> str:
    """The figure's caption: what the panels show, and the warnings (which the figure leaves out)."""
    text = (
        f"Top: mean rank over {result.settings} settings (1 = best); bars join the metrics Wilcoxon–Holm does "
        f"not separate at {ALPHA:g}."
    )
    if groups is not None:
        text += (
            f" Bottom: mean over the settings; bars join each group of metrics the paired sign-flip test over "
            f"{groups.repetitions} (setting, repetition) pairs does not separate at {ALPHA:g} (Holm): "
            f"better on these settings, not on settings not run."
        )
    else:
        text += " No paired test over repetitions: the runs hold no repetition of these metrics."
    if result.warning:
        text += f" **Warning** (Friedman, Wilcoxon–Holm): {result.warning}."
    return text


def groups_panel(ax, groups: MeasureGroups, colours: dict[str, str]) -> None:
    """Each metric at its mean (best on top) with a bar at the right joining each group's members."""
    names = list(groups.means.index)
    y = {m: -i for i, m in enumerate(names)}
    ax.scatter(
        groups.means.to_numpy(), [y[m] for m in names], c=[colours.get(m, "black") for m in names], zorder=3, s=18
    )
    ax.set_yticks([y[m] for m in names], labels=names, fontsize=7)
    lo, hi = float(groups.means.min()), float(groups.means.max())
    span = (hi - lo) or max(abs(hi), 1.0) * 0.05
    right = hi + 0.12 * span
    for group in sorted(set(groups.groups)):
        members = groups.members(group)
        top, bottom = y[members[0]], y[members[-1]]
        shade = "#eeeeee" if group % 2 else "white"
        ax.axhspan(bottom - 0.5, top + 0.5, color=shade, zorder=0)
        ax.plot([right, right], [bottom - 0.2, top + 0.2], color="black", linewidth=2.5, solid_capstyle="butt")
        ax.text(right + 0.03 * span, (top + bottom) / 2, f"G{group}", va="center", fontsize=7)
    ax.set_xlim(lo - 0.08 * span, hi + 0.3 * span)
    ax.set_ylim(-len(names) + 0.5, 0.5)
    ax.set_xlabel(
        f"mean over {groups.settings} settings; groups G1 (best) ... by the paired test over repetitions", fontsize=7
    )
    ax.tick_params(axis="x", labelsize=7)


def cd_diagram(result: MeasureRanks, path: Path, groups: MeasureGroups | None = None) -> Path:
    """Write ``cd_<measure>.png`` for ``result`` (and its ``groups``, when given) to ``path`` and return it."""
    mean_ranks = result.mean_ranks
    n = len(mean_ranks)
    top_height = 1.4 + 0.28 * n
    heights = [top_height] + ([0.8 + 0.22 * len(groups.means)] if groups is not None else [])
    fig, axes = plt.subplots(len(heights), 1, figsize=(8, sum(heights)), height_ratios=heights, squeeze=False)
    colours = {m: style.colour for m, style in metric_styles(mean_ranks.index).items()}
    sp.critical_difference_diagram(
        mean_ranks,
        result.posthoc,
        ax=axes[0, 0],
        alpha=ALPHA,
        color_palette=colours,
        label_fmt_left="{label} ({rank:.2f})",
        label_fmt_right="({rank:.2f}) {label}",
    )
    friedman = (
        "Friedman: too few metrics or settings"
        if math.isnan(result.statistic)
        else f"Friedman χ² = {result.statistic:.2f}, p = {result.p:.3g}"
    )
    axes[0, 0].set_title(
        measure_title(result.measure)
        + "\n"
        + textwrap.fill(f"mean rank over {result.settings} settings; {friedman}; bars: Wilcoxon–Holm", TITLE_WIDTH),
        fontsize=8,
        loc="left",
    )
    if groups is not None:
        groups_panel(axes[1, 0], groups, colours)
        axes[1, 0].set_title(
            f"Groups not separated by the paired test over {groups.repetitions} (setting, "
            f"repetition) pairs, Holm, {ALPHA:g}",
            fontsize=8,
            loc="left",
        )
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
