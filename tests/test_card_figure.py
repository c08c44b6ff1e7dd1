"""The card figure (reports/cards/figure.py): rank labels clear of the data, bounds drawn exactly when the title
names them, T in the tables' unit [100 op/s]. Cards are built from a suite table written here by hand."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from textmetric_bench.reports.cards.card import build_card
from textmetric_bench.reports.cards.figure import draw_card

SETTINGS = ("p0 k=7 n=100", "p0 k=12 n=100", "p1 k=7 n=100", "p1 k=12 n=100")


def suite_table(bounds: bool) -> pd.DataFrame:
    """Per (setting, measure, metric): values near the panel's right edge (A at 1.000), where a label in the
    axes would cover them, and T in evaluations per second."""
    rows = []
    metrics = ["m", "n", *(["oracle", "chance"] if bounds else [])]
    for s, setting in enumerate(SETTINGS):
        for metric in metrics:
            for measure, value in (("A", 1.0 - 0.01 * s), ("rho", 0.9 + 0.02 * s), ("T", 150.0 + 10 * s)):
                if metric == "n":
                    value *= 0.9
                elif metric == "oracle":
                    value = 1.0 if measure != "T" else np.nan
                elif metric == "chance":
                    value = 0.5 if measure != "T" else np.nan
                rows.append(
                    {
                        "setting": setting,
                        "metric": metric,
                        "measure": measure,
                        "mean": value,
                        "ci_low": value - 0.005,
                        "ci_high": min(value + 0.005, 1.0) if measure != "T" else value + 3,
                        "source": "run",
                        "orientation": "distance",
                    }
                )
    return pd.DataFrame(rows).dropna(subset=["mean"])


def card(bounds: bool):
    return build_card("m", suite_table(bounds), {}, pd.DataFrame(), pd.DataFrame())


@pytest.mark.parametrize("bounds", [True, False])
def test_rank_labels_never_overlap_the_data(bounds):
    fig = draw_card(card(bounds))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    try:
        for ax in fig.axes:
            labels = [t for t in ax.texts if t.get_text().startswith(("#", "not ranked"))]
            if not labels:
                continue
            points = []
            for line in ax.lines:
                xy = np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float)
                points.append(ax.transData.transform(xy))
            for collection in ax.collections:
                for path in collection.get_paths():
                    points.append(ax.transData.transform(path.vertices))
            data = np.vstack(points)
            for label in labels:
                box = label.get_window_extent(renderer).expanded(1.02, 1.1)
                inside = (
                    (data[:, 0] >= box.x0) & (data[:, 0] <= box.x1) & (data[:, 1] >= box.y0) & (data[:, 1] <= box.y1)
                )
                assert not inside.any(), f"rank label {label.get_text()!r} covers data in panel {ax.get_title()!r}"
    finally:
        plt.close(fig)


@pytest.mark.parametrize("bounds", [True, False])
def test_the_title_names_the_bounds_exactly_when_they_are_drawn(bounds):
    fig = draw_card(card(bounds))
    try:
        title = next(t.get_text() for t in fig.findobj(plt.Text) if t.get_text().startswith("m: every measure"))
        a_panel = next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("A"))
        drawn = [c for c in a_panel.collections if c.get_label().startswith(("ceiling", "floor"))]
        assert ("oracle" in title and "chance" in title) == bounds
        assert len(drawn) == (2 if bounds else 0)
        if bounds:  # at the bounds' values, dashed ceiling and dotted floor
            ceiling = next(c for c in drawn if c.get_label().startswith("ceiling"))
            assert np.allclose([seg[0][0] for seg in ceiling.get_segments()], 1.0)
    finally:
        plt.close(fig)


def test_t_is_shown_in_the_tables_unit():
    fig = draw_card(card(False))
    try:
        panel = next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("T"))
        assert "[100 op/s]" in panel.get_title(loc="left")
        means = np.asarray(panel.lines[0].get_xdata(), dtype=float)
        assert sorted(means) == pytest.approx([1.5, 1.6, 1.7, 1.8])
    finally:
        plt.close(fig)
