"""One look per metric, shared by every figure: a colour-blind-safe colour plus a line style and marker.

Colours are Okabe & Ito's palette for colour-vision deficiencies (its yellow left out: too pale
for lines on white). With more metrics than colours, the line style and marker change with each
round through the colours, so no two metrics share (colour, line style, marker) up to
7 colours × 8 markers = 56 metrics. Metrics are numbered in
name order, so every figure drawn from the same set of metrics gives a metric the same look.
The bounds of ``textmetric_bench.reports.bounds`` (oracle, chance) take no palette entry: they are grey outlines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textmetric_bench.reports.bounds import bound_of

#: Okabe-Ito (2008), without yellow: blue, orange, bluish green, vermillion, reddish purple, sky blue, black.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: The bounds' look: a grey dashed ceiling and a grey dotted floor, behind the metrics.
BOUND_GREY = "#777777"
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


def metric_styles(metrics: Iterable) -> dict[str, MetricStyle]:
    """Style of each ordinary metric of ``metrics`` (bounds left out), numbered in name order."""
    names = sorted({str(m) for m in metrics if bound_of(m) is None})
    styles = {}
    for index, name in enumerate(names):
        cycle = index // len(COLOURS)
        styles[name] = MetricStyle(COLOURS[index % len(COLOURS)], LINESTYLES[cycle % len(LINESTYLES)],
                                   MARKERS[cycle % len(MARKERS)])
    return styles


def bound_line(metric) -> dict:
    """Keyword arguments for ``Axes.plot`` of a bound row: grey, dashed (ceiling) or dotted (floor)."""
    kind = bound_of(metric)
    if kind is None:
        raise ValueError(f"{metric!r} is not a bound metric; the bounds are {', '.join(BOUND_LINESTYLES)}")
    return {"color": BOUND_GREY, "linestyle": BOUND_LINESTYLES[kind], "linewidth": 1.2}
