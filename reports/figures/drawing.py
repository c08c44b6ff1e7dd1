"""What every figure shares: saving, file-safe names, the measures' symbols, integer axes and fitted lines.

Figures are drawn on bare ``matplotlib.figure.Figure`` objects (Agg rendering, no pyplot
state), so plotting is safe in parallel sweep jobs and never opens a window.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, MaxNLocator
from scipy import stats

from textmetric_bench.measures import registry

#: How a measure is written in figures, in the paper's notation (A^w as a mathtext superscript).
MEASURE_SYMBOLS = {
    **{m.name: m.math for m in registry.MEASURES.values()},
    **{m.column: m.math for m in registry.MEASURES.values()},
}
#: Smallest font size (points) a figure may use for any label or tick.
MIN_FONT_PT = 7.0
_SVG_METADATA = {"Date": None}  # keeps SVG output byte-stable between runs
#: Characters of a small-text caption line per inch of figure width (wrapped before the figure's edge).
CAPTION_CHARS_PER_INCH = 15
#: Up to this many distinct values, an integer axis is ticked at exactly those values.
_MAX_EXACT_TICKS = 12


def symbol(measure: str) -> str:
    """The paper's symbol of a measure column (``Aw`` -> A^w); an unknown column is shown as named."""
    return MEASURE_SYMBOLS.get(str(measure), str(measure))


def safe_name(metric: str) -> str:
    """A metric name usable as a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(metric)).strip("_") or "metric"


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` (PNG at 100 dpi, or SVG with text kept as text); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    is_svg = path.suffix == ".svg"
    with rc_context({"svg.fonttype": "none"}):  # SVG text stays text: searchable and editable
        fig.savefig(path, dpi=100, bbox_inches="tight", metadata=_SVG_METADATA if is_svg else None)
    return path


def integer_axis(axis, values=None) -> None:
    """Tick an integer-valued axis (k, n, ℓ, s, an iteration) at integers only.

    With few distinct ``values`` the ticks are exactly those values; otherwise a locator
    that never places a tick between two integers.
    """
    if values is not None:
        distinct = np.unique(np.asarray(values, dtype=float)[np.isfinite(np.asarray(values, dtype=float))])
        if 0 < distinct.size <= _MAX_EXACT_TICKS and np.all(distinct == np.round(distinct)):
            axis.set_major_locator(FixedLocator(distinct))
            axis.set_major_formatter(lambda value, _pos: f"{value:.0f}")
            return
    axis.set_major_locator(MaxNLocator(integer=True))


def ols_band(x: np.ndarray, y: np.ndarray, grid: np.ndarray, confidence: float = 0.95):
    """OLS fit of y on x evaluated on ``grid``, with the t-band of the mean prediction; None if degenerate."""
    n = x.size
    sxx = float(((x - x.mean()) ** 2).sum())
    if n < 3 or sxx == 0.0:
        return None
    slope, intercept = np.polyfit(x, y, 1)
    residuals = y - (intercept + slope * x)
    s = math.sqrt(float((residuals**2).sum()) / (n - 2))
    fit = intercept + slope * grid
    half = stats.t.ppf(0.5 + confidence / 2, n - 2) * s * np.sqrt(1.0 / n + (grid - x.mean()) ** 2 / sxx)
    return fit, fit - half, fit + half


def warnings_caption(warnings: Sequence[str], width: int) -> str:
    """The run's warnings as caption lines (each "⚠ ...", wrapped to ``width`` characters), to follow a caption;
    "" when there are none. Warnings go below a figure, never into the plot."""
    lines = [textwrap.fill(f"⚠ {w}", width, subsequent_indent="   ") for w in warnings]
    return "".join(f"\n{line}" for line in lines)


def own_warnings(
    metric: str, warnings: Sequence[str], metric_warnings: Mapping[str, Sequence[str]] | None
) -> Sequence[str]:
    """The caption of a figure of ``metric`` alone: its entry of ``metric_warnings`` (the run's warnings about the
    whole run and about it, ``textmetric_bench.measures.run_warnings.warnings_by_metric``), else ``warnings``."""
    return warnings if metric_warnings is None else metric_warnings.get(metric, warnings)


def caption_below(
    fig: Figure, caption: str = "", warnings: Sequence[str] = (), *, width: int | None = None, x: float = 0.01
) -> None:
    """Write ``caption`` and then the run's ``warnings`` (``warnings_caption``) as one block of small text below
    ``fig``'s drawing area (``save_figure``'s tight box takes it in), lines wrapped at ``width`` characters (by
    default ``CAPTION_CHARS_PER_INCH`` per inch of figure width), from ``x``; nothing when both are empty."""
    width = width or int(CAPTION_CHARS_PER_INCH * fig.get_figwidth())
    text = (textwrap.fill(caption, width) if caption else "") + warnings_caption(warnings, width)
    if text:
        fig.text(x, 0.0, text.lstrip("\n"), fontsize="small", ha="left", va="top")
