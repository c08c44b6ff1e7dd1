"""What a figure draws is explained on it, in every metric's own look, and stays on its canvas.

Box plots, sweep trends, scatter plots, robustness and IFC grids and radars, drawn from small synthetic tables (no
model, no corpus): each mark has a legend entry or caption sentence, a metric its palette colour and a bound its grey
dashed (ceiling) or dotted (floor) line, long titles wrap, and a plain ``savefig`` keeps title and caption.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from test_figures import rendered, synthetic_measures, synthetic_summary

from textmetric_bench.measures.summaries import summarise_measures
from textmetric_bench.reports.bounds import bound_label
from textmetric_bench.reports.figures.drawing import CAPTION_GID
from textmetric_bench.reports.figures.heatmap import measure_heatmap
from textmetric_bench.reports.figures.ifc import ifc_all_figure
from textmetric_bench.reports.figures.ksc import scatter_figures
from textmetric_bench.reports.figures.overview import LINE_NAMES, boxplot_figure, trends_figure
from textmetric_bench.reports.figures.palette import BOUND_GREY, BOUND_LINESTYLES, metric_styles
from textmetric_bench.reports.figures.radar import overlaid_radar, radar_small_multiples
from textmetric_bench.reports.figures.robustness import ASYMPTOTIC, draw_curve, robustness_all_figure

#: A joined report's setting: as long as the one that made the small radars tiny.
LONG_SETTING = (
    "clinc150_banking77 · k=4, n=20 · 3 repetitions · seed 0 + robustness (clinc150_banking77 · robustness · "
    "2 repetitions · seed 0) + ifc (banking77 (generated) · ifc · 2 repetitions · seed 0)"
)
WARNINGS = ["Only 3 repetitions (fewer than 5): intervals are rough and the paired tests between metrics optimistic"]


def caption_of(fig) -> str:
    return "\n".join(t.get_text() for t in fig.texts if t.get_gid() == CAPTION_GID)


def test_boxplot_caption_says_what_the_grey_lines_and_bands_are():
    fig = boxplot_figure(synthetic_measures(4, bounds=True))
    caption = " ".join(caption_of(fig).split())
    ax = fig.axes[0]
    drawn = {line.get_label(): line.get_linestyle() for line in ax.get_lines() if line.get_color() == BOUND_GREY}
    assert set(drawn) == {bound_label("oracle"), bound_label("chance")}
    for label, style in drawn.items():  # named with the style it is drawn in, the palette's for its bound
        assert f"grey {LINE_NAMES[style]} line: the {label}" in caption.lower()
    assert drawn[bound_label("oracle")] == BOUND_LINESTYLES["ceiling"]
    assert "median over repetitions" in caption and "shaded band over their range" in caption
    assert "grey" not in caption_of(boxplot_figure(synthetic_measures(4))).lower(), "no bound drawn, none explained"


def sweep_long(metrics=("chi", "fid", "oracle", "chance")) -> pd.DataFrame:
    """A sweep's long table: k and n both swept, one seed, 3 repetitions, intervals around every mean."""
    rng = np.random.default_rng(0)
    rows = [
        {"pair": "p", "k": k, "n": n, "seed": 0, "n_reps": 3, "metric": m, "orientation": "distance", "measure": q}
        | {"mean": (mean := rng.uniform(0.2, 0.9)), "ci_low": mean - 0.1, "ci_high": mean + 0.1}
        for m in metrics
        for k in (4, 5)
        for n in (20, 30)
        for q in ("A", "rho", "L")
    ]
    return pd.DataFrame(rows)


def test_trends_legend_has_one_entry_per_meaning_and_settings_are_told_apart():
    fig = trends_figure(sweep_long())
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) == len(set(labels)), f"an entry twice: {labels}"
    assert set(labels) == {"chi", "fid", "n=20", "n=30", bound_label("oracle"), bound_label("chance")}
    handles = dict(zip(labels, legend.legend_handles))
    assert (
        handles[bound_label("oracle")].get_linestyle() == "--" and handles[bound_label("chance")].get_linestyle() == ":"
    )
    assert handles["n=20"].get_fillstyle() != handles["n=30"].get_fillstyle()
    panel = fig.axes[0]
    looks = [(line.get_color(), line.get_linestyle(), line.get_fillstyle()) for line in panel.get_lines()]
    assert len(looks) == len(set(looks)), "two lines of one panel (a metric or bound at two n) look the same"
    assert {style for colour, style, _ in looks if colour != BOUND_GREY} == {"-"}, "a metric's line is solid"
    assert not [c for c in panel.collections if isinstance(c, PolyCollection)], "no band over another"
    assert "seed 0" in fig._suptitle.get_text()


def test_trends_of_one_setting_need_no_setting_entry():
    long = sweep_long()
    fig = trends_figure(long[long["n"] == 20])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["chi", "fid", bound_label("oracle"), bound_label("chance")]


@pytest.mark.parametrize("draw", [radar_small_multiples, overlaid_radar])
def test_a_long_radar_title_wraps_within_the_figure(draw):
    fig = draw(synthetic_summary(4, bounds=True), title=f"Each metric's profile: {LONG_SETTING}")
    renderer = rendered(fig)
    title = fig._suptitle if draw is radar_small_multiples else fig.axes[0].title
    assert "\n" in title.get_text()
    assert title.get_window_extent(renderer).width <= fig.bbox.width


def ksc_distances() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        (metric, r, i, j, j - i, (j - i) * scale + rng.normal(0, 0.3))
        for metric, scale in (("alpha", 1.0), ("beta", 0.5), ("oracle", 1.0), ("chance", 0.0))
        for r in range(2)
        for i in range(4)
        for j in range(i + 1, 5)
    ]
    return pd.DataFrame(rows, columns=["metric", "repetition", "i", "j", "ell", "distance"])


def test_scatter_draws_each_metric_in_its_colour_and_bounds_grey():
    figures = scatter_figures(ksc_distances())
    styles = metric_styles(["alpha", "beta", "oracle", "chance"])
    panels = {ax.get_title().split("\n")[0]: ax for ax in figures["scatter_all"].axes if ax.get_visible()}
    for name in ("alpha", "beta"):
        for ax in (panels[name], figures[f"scatter_{name}"].axes[0]):
            (fit,) = ax.get_lines()
            assert fit.get_color() == styles[name].colour and fit.get_linestyle() == "-"
            (points,) = [c for c in ax.collections if isinstance(c, PathCollection)]
            assert tuple(points.get_facecolor()[0][:3]) == pytest.approx(to_rgb(styles[name].colour))
    for name, kind in (("oracle", "ceiling"), ("chance", "floor")):
        for ax in (panels[bound_label(name)], figures[f"scatter_{name}"].axes[0]):
            (fit,) = ax.get_lines()
            assert fit.get_color() == BOUND_GREY and fit.get_linestyle() == BOUND_LINESTYLES[kind]
    assert figures["scatter_oracle"].axes[0].get_title().startswith(bound_label("oracle"))
    assert styles["alpha"].colour != styles["beta"].colour


def test_scatter_panels_stand_in_table_order_and_the_caption_names_the_bounds_lines():
    """The grid's panels stand as the tables' rows (the ceiling first, the floor last), and the caption says what
    the grey dashed and dotted lines are, in the figure of all metrics and in a bound's own; a figure without a
    bound says nothing of them."""
    figures = scatter_figures(ksc_distances())
    titles = [ax.get_title().split("\n")[0] for ax in figures["scatter_all"].axes if ax.get_visible()]
    assert titles == [bound_label("oracle"), "alpha", "beta", bound_label("chance")]
    for name, shown in (("scatter_all", ("oracle", "chance")), ("scatter_oracle", ("oracle",))):
        caption = " ".join(caption_of(figures[name]).split()).lower()
        for bound in shown:
            style = BOUND_LINESTYLES["ceiling" if bound == "oracle" else "floor"]
            assert f"grey {LINE_NAMES[style]} line and points: the {bound_label(bound)}" in caption, caption
    assert "grey" not in caption_of(figures["scatter_alpha"]).lower()
    assert "dotted" not in caption_of(figures["scatter_oracle"]).lower()


def robustness_curves() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for metric in ("chi", "fid"):
        for r in range(2):
            rows.append((metric, "asymptotic", 100, r, 2.0))
            rows += [
                (metric, c, s, r, 1.0 + s / 100 + rng.normal(0, 0.05))
                for c in ("size", "imbalance")
                for s in (20, 40, 80)
            ]
    return pd.DataFrame(rows, columns=["metric", "curve", "s", "repetition", "distance"])


def test_robustness_grid_explains_its_marks_and_keeps_d_ab_off_the_frame():
    fig = robustness_all_figure(robustness_curves(), None, imbalance_total=100, setting="a setting")
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["one repetition", "mean over repetitions", "± 1 sd across repetitions", ASYMPTOTIC]
    for ax in fig.axes:  # d(A, B) = 2.0 lies above every point: a margin between it and the frame
        low, high = ax.get_ylim()
        assert (high - 2.0) / (high - low) >= 0.08


def test_robustness_panel_leaves_a_margin_above_the_asymptote():
    ax = Figure().add_subplot()
    rows = pd.DataFrame({"s": np.repeat([20, 40, 80], 2), "distance": [1.1, 1.2, 1.25, 1.3, 1.4, 1.5]})
    draw_curve(ax, rows, 1.62)
    low, high = ax.get_ylim()
    assert (high - 1.62) / (high - low) >= 0.08


def ifc_distances(metrics) -> pd.DataFrame:
    rows = []
    for k, metric in enumerate(metrics):
        for r in range(2):
            rows += [
                {"metric": metric, "kind": "generated", "iteration": i, "repetition": r, "distance": 3.0 - i + k}
                for i in range(3)
            ]
            rows.append({"metric": metric, "kind": "self", "iteration": math.nan, "repetition": r, "distance": 0.1})
    return pd.DataFrame(rows)


def test_ifc_grid_labels_every_column_and_the_distance_axis():
    metrics = [f"m{i}" for i in range(6)]  # 4 columns: the last two columns end on the top row
    summary = pd.DataFrame({"metric": metrics, "IFC": 1.0, "gap_closed": 1.0})
    fig = ifc_all_figure(ifc_distances(metrics), summary)
    renderer = rendered(fig)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 6
    for ax in panels[2:4]:  # top row, nothing below
        assert [t.get_text() for t in ax.get_xticklabels() if t.get_visible()], "no iteration ticks"
        assert ax.get_xlabel() == "fine-tuning iteration i"
        assert ax.xaxis.get_ticklabels()[0].get_window_extent(renderer).height > 0
    assert panels[0].get_ylabel() == panels[4].get_ylabel() == "distance to the source"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"d(reference, g_i)", "self-distance d(A, A)"} <= set(labels)


def inside_canvas(fig, tmp_path) -> list[str]:
    """Saved with a plain ``savefig``: the texts of ``fig`` (titles, caption, legend) that reach past its canvas."""
    fig.savefig(tmp_path / "plain.png")
    renderer = rendered(fig)
    texts = [*fig.texts, *(ax.title for ax in fig.axes)]
    texts += [
        t for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if legend for t in legend.get_texts()
    ]
    out = []
    for text in texts:
        if not text.get_text() or not text.get_visible():
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < 0 or box.y0 < 0 or box.x1 > fig.bbox.width or box.y1 > fig.bbox.height:
            out.append(text.get_text()[:40])
    return out


def test_the_api_radar_keeps_its_title_caption_and_legend_on_a_plain_savefig(tmp_path):
    """``Result.radar()``: a notebook user's plain ``fig.savefig("x.png")`` keeps the few-repetitions warning."""
    fig = overlaid_radar(synthetic_summary(4, bounds=True), title=LONG_SETTING, warnings=WARNINGS * 3)
    assert not inside_canvas(fig, tmp_path)
    assert any("Only 3 repetitions" in t.get_text() for t in fig.texts)


def test_the_api_heatmap_keeps_its_title_and_caption_on_a_plain_savefig(tmp_path):
    fig = measure_heatmap(
        summarise_measures(synthetic_measures(5, bounds=True)), setting="a setting", warnings=WARNINGS
    )
    assert not inside_canvas(fig, tmp_path)


def test_a_constrained_figure_keeps_its_caption_on_a_plain_savefig(tmp_path):
    assert not inside_canvas(boxplot_figure(synthetic_measures(4, bounds=True), warnings=WARNINGS), tmp_path)
