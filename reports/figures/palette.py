"""One look per metric, shared by every figure: a colour of its own plus a marker, on a solid line.

The first seven colours are Okabe & Ito's palette for colour-vision deficiencies (its yellow left out: too
pale for lines on white); past seven metrics the colours continue with colorcet's Glasbey palette for dark
colours on white (each as far as possible from those before it), leaving out those close to the seven, so
every metric of a figure has a colour of its own (a critical-difference diagram shows colour only). Past
seven metrics the marker changes too, with each round through the seven, for readers who
cannot tell the added colours apart. Metrics are numbered in name order, so every figure drawn from the
same set of metrics gives a metric the same look; a page of figures of several metric sets (a report of a sweep over
``metrics=``) numbers every metric it shows at once (``metric_order``), so a metric keeps its look from one figure of
the page to the next. The bounds of ``textmetric_bench.reports.bounds``
(oracle, chance) take no palette entry: they are grey outlines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import colorcet
from matplotlib.colors import to_rgb

from textmetric_bench.reports.bounds import bound_of

#: Okabe-Ito (2008), without yellow: blue, orange, bluish green, vermillion, reddish purple, sky blue, black.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
#: How far (Euclidean, RGB in 0..1) an added colour must be from every Okabe-Ito colour and grey.
MIN_DISTANCE = 0.25
#: The bounds' look: a grey dashed ceiling and a grey dotted floor, behind the metrics.
BOUND_GREY = "#777777"


def _far_from(colour: str, others) -> bool:
    rgb = to_rgb(colour)
    return all(sum((a - b) ** 2 for a, b in zip(rgb, to_rgb(o))) ** 0.5 >= MIN_DISTANCE for o in others)


#: Every colour a metric can take, in the order metrics take them: Okabe-Ito, then Glasbey's dark colours.
COLOURS = OKABE_ITO + tuple(c for c in colorcet.glasbey_dark if _far_from(c, (*OKABE_ITO, BOUND_GREY, "#FFFFFF")))
#: Past this many metrics, the marker varies too.
SAFE_COLOURS = len(OKABE_ITO)
#: A metric's line: always solid, since dashed and dotted lines are the bounds' (BOUND_LINESTYLES) in every figure.
METRIC_LINESTYLE = "-"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
BOUND_LINESTYLES = {"ceiling": "--", "floor": ":"}


@dataclass(frozen=True)
class MetricStyle:
    """How one metric is drawn."""

    colour: str
    linestyle: str
    marker: str

    def line(self) -> dict:
        """Keyword arguments for ``Axes.plot``."""
        return {"color": self.colour, "linestyle": self.linestyle, "marker": self.marker}


#: The metrics a page of figures shows, all of them (``metric_order``); empty: each figure numbers its own.
PAGE_METRICS: ContextVar[tuple[str, ...]] = ContextVar("PAGE_METRICS", default=())


def metric_styles(metrics: Iterable) -> dict[str, MetricStyle]:
    """Style of each ordinary metric of ``metrics`` (bounds left out), numbered in name order among them and the
    metrics of the page being drawn (``metric_order``)."""
    wanted = {str(m) for m in metrics if bound_of(m) is None}
    names = sorted(wanted | {m for m in PAGE_METRICS.get() if bound_of(m) is None})
    styles = {}
    for index, name in enumerate(names):
        if name in wanted:
            cycle = index // SAFE_COLOURS
            styles[name] = MetricStyle(COLOURS[index % len(COLOURS)], METRIC_LINESTYLE, MARKERS[cycle % len(MARKERS)])
    return styles


@contextmanager
def metric_order(metrics: Iterable) -> Iterator[tuple[str, ...]]:
    """Within it, every figure numbers its metrics among ``metrics`` (a page's, all of them), so that a metric
    has one look on the whole page whichever of them a figure shows."""
    order = tuple(sorted({str(m) for m in metrics}))
    token = PAGE_METRICS.set(order)
    try:
        yield order
    finally:
        PAGE_METRICS.reset(token)


def drawn_in_order(order: tuple[str, ...], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` within ``metric_order(order)``: a figure job drawn in another process keeps the
    page's order (``textmetric_bench.reports.figures.parallel.FigureDrawer``)."""
    with metric_order(order):
        return fn(*args, **kwargs)


def bound_line(metric) -> dict:
    """Keyword arguments for ``Axes.plot`` of a bound row: grey, dashed (ceiling) or dotted (floor)."""
    kind = bound_of(metric)
    if kind is None:
        raise ValueError(f"{metric!r} is not a bound metric; the bounds are {', '.join(BOUND_LINESTYLES)}")
    return {"color": BOUND_GREY, "linestyle": BOUND_LINESTYLES[kind], "linewidth": 1.2}
