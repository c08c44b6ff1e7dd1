"""What every figure shares: saving, file-safe names, the measures' symbols, integer axes and fitted lines.

Figures are drawn on bare ``matplotlib.figure.Figure`` objects (Agg rendering, no pyplot
state), so plotting is safe in parallel sweep jobs and never opens a window.
"""

from __future__ import annotations

import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib import font_manager, rc_context
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
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
#: Characters of a title line (12 pt) per inch of figure width (wrapped before the figure's edge).
TITLE_CHARS_PER_INCH = 11
#: Room (inches) left between a figure's content and the edge of its canvas.
CANVAS_MARGIN = 0.08
#: The ``gid`` of a figure's caption (``caption_below``), by which it is found again.
CAPTION_GID = "caption"
#: Up to this many distinct values, an integer axis is ticked at exactly those values.
_MAX_EXACT_TICKS = 12


def add_bundled_fonts() -> list[str]:
    """Add matplotlib's own fonts (in its ``mpl-data``) that its font list lacks; returns the files added.

    matplotlib keeps its font list in a cache per version (``~/.cache/matplotlib/fontlist-v<version>.json``), shared
    by every environment with that version. One written by a build without matplotlib's own fonts (a distribution's
    matplotlib, which uses the system's) lists none of them, and every figure with mathtext (A^w) then logged 21
    "findfont: Font family ['STIXGeneral'] not found" lines, into a notebook and a run's log. The fonts are
    matplotlib's own: where the list is whole, nothing is added."""
    known = {os.path.realpath(entry.fname) for entry in font_manager.fontManager.ttflist}
    bundled = sorted((Path(matplotlib.get_data_path()) / "fonts" / "ttf").glob("*.ttf"))
    added = [path for path in bundled if os.path.realpath(path) not in known]
    for path in added:
        font_manager.fontManager.addfont(str(path))
    return [str(path) for path in added]


add_bundled_fonts()


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


def wrap_title(title: str, width_inches: float, *, chars_per_inch: float = TITLE_CHARS_PER_INCH) -> str:
    """``title`` with each of its lines wrapped to fit ``width_inches`` (a long setting, as a joined report's, would
    otherwise make the figure as wide as the title and every panel small when it is scaled to a page)."""
    width = max(int(chars_per_inch * width_inches), 20)
    return "\n".join(textwrap.fill(line, width) if line else line for line in title.split("\n"))


def _renderer(fig: Figure) -> RendererAgg:
    """A renderer to measure ``fig``'s texts with, leaving its canvas as it is."""
    return RendererAgg(max(int(fig.bbox.width), 1), max(int(fig.bbox.height), 1), fig.dpi)


def grow(fig: Figure, *, left: float = 0.0, bottom: float = 0.0, right: float = 0.0, top: float = 0.0) -> None:
    """Add room (inches) on each side of ``fig``'s canvas, keeping what is drawn at its size and in its place
    relative to the rest: the constrained layout's rectangle shrinks to the old canvas, or, without a layout
    engine, every Axes moves; the figure's texts (figure coordinates) move with them. A figure saved with a plain
    ``savefig`` then shows what lay outside its canvas, which only ``bbox_inches="tight"`` took in before."""
    if not any((left, bottom, right, top)):
        return
    old_w, old_h = fig.get_figwidth(), fig.get_figheight()
    new_w, new_h = old_w + left + right, old_h + bottom + top

    def x(value: float) -> float:
        return (value * old_w + left) / new_w

    def y(value: float) -> float:
        return (value * old_h + bottom) / new_h

    engine = fig.get_layout_engine()
    fig.set_size_inches(new_w, new_h)
    if isinstance(engine, ConstrainedLayoutEngine):
        x0, y0, w, h = engine.get()["rect"]
        engine.set(rect=(x(x0), y(y0), w * old_w / new_w, h * old_h / new_h))
    else:
        for ax in fig.axes:
            pos = ax.get_position(original=True)
            ax.set_position((x(pos.x0), y(pos.y0), pos.width * old_w / new_w, pos.height * old_h / new_h))
    for text in fig.texts:
        px, py = text.get_position()
        text.set_position((x(px), y(py)))


def keep_inside(fig: Figure, margin: float = CANVAS_MARGIN) -> None:
    """Grow ``fig`` (``grow``) until everything drawn lies inside its canvas, for a figure without a layout engine
    whose titles or legend stick out of it."""
    box = fig.get_tightbbox(_renderer(fig))  # inches
    width, height = fig.get_figwidth(), fig.get_figheight()
    grow(
        fig,
        left=max(0.0, margin - box.x0),
        bottom=max(0.0, margin - box.y0),
        right=max(0.0, box.x1 + margin - width),
        top=max(0.0, box.y1 + margin - height),
    )


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


def label_lowest_panels(grid, count: int, label: str) -> None:
    """In ``grid`` (rows × columns of Axes sharing x, the first ``count`` drawn in reading order), give the lowest
    drawn panel of each column the x tick labels and ``label``: a panel with nothing below it carries the axis."""
    for col in range(grid.shape[1]):
        bottom = grid[(count - 1 - col) // grid.shape[1], col]
        bottom.xaxis.set_tick_params(labelbottom=True)
        bottom.set_xlabel(label)


def panels_legend(fig: Figure, axes) -> None:
    """One legend beside ``fig`` for what its panels draw, each label once, from whichever panel has it."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(list(entries.values()), list(entries), loc="outside right upper", fontsize="small")


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
    ``fig``'s drawing area, lines wrapped at ``width`` characters (by default ``CAPTION_CHARS_PER_INCH`` per inch of
    figure width), from ``x``; nothing when both are empty. The canvas grows at the bottom to hold it (``grow``), so
    a plain ``savefig`` keeps the warnings, as ``save_figure``'s tight box does. Call it once the figure is drawn;
    with constrained layout, the figure's bottom edge is the caption's: no ``supxlabel`` or legend placed
    "outside lower"."""
    width = width or int(CAPTION_CHARS_PER_INCH * fig.get_figwidth())
    text = (textwrap.fill(caption, width) if caption else "") + warnings_caption(warnings, width)
    if text:
        block = fig.text(x, 0.0, text.lstrip("\n"), fontsize="small", ha="left", va="top", gid=CAPTION_GID)
        grow(fig, bottom=block.get_window_extent(_renderer(fig)).height / fig.dpi + CANVAS_MARGIN)
