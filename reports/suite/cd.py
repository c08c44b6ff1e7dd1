"""The critical-difference diagram of one measure (Demšar 2006, Fig. 1), drawn by scikit-posthocs.

Each metric sits at its mean rank over the settings (1 = best, on the left); a bar joins metrics that the
post-hoc test (Wilcoxon signed-rank with Holm, ``textmetric_bench.reports.suite.ranks``) does not separate at
``ALPHA``. The title says how many settings the ranks rest on, and the Friedman statistic and p; a subtitle
carries the warning when the settings are too few.
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
from textmetric_bench.reports.suite.ranks import ALPHA, MeasureRanks  # noqa: E402


TITLE_WIDTH = 95  # characters per title line: a longer line runs past the 8-inch figure


def measure_title(measure: str) -> str:
    """The measure's label as the tables give it (T in its own unit: evaluations per second)."""
    if measure == "T":
        return "T: speed, pair evaluations per second (§4.4)"
    return MEASURE_LABELS.get(measure, measure)


def cd_diagram(result: MeasureRanks, path: Path) -> Path:
    """Write ``cd_<measure>.png`` for ``result`` to ``path`` and return it."""
    mean_ranks = result.mean_ranks
    n = len(mean_ranks)
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.28 * n))
    colours = {m: style.colour for m, style in metric_styles(mean_ranks.index).items()}
    sp.critical_difference_diagram(mean_ranks, result.posthoc, ax=ax, alpha=ALPHA, color_palette=colours,
                                   label_fmt_left="{label} ({rank:.2f})", label_fmt_right="({rank:.2f}) {label}")
    friedman = ("Friedman: too few metrics or settings" if math.isnan(result.statistic) else
                f"Friedman χ² = {result.statistic:.2f}, p = {result.p:.3g}")
    lines = [measure_title(result.measure),
             textwrap.fill(f"mean rank over {result.settings} settings (1 = best); {friedman}; "
                           f"bars: not separated by Wilcoxon–Holm at {ALPHA:g}", TITLE_WIDTH)]
    if result.warning:
        lines.append(textwrap.fill("Warning: " + result.warning, TITLE_WIDTH))
    title = "\n".join(lines)
    ax.set_title(title, fontsize=8, loc="left")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
