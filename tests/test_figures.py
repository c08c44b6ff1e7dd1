"""Figures that scale with the number of metrics: tens of metrics stay distinct and legible.

The summary tables here are synthetic (fabricated metric names and numbers): these tests check
drawing only -- distinct looks, legible and non-overlapping labels, order, missing values and the
bounds -- and need no model or corpus.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from scipy import stats

from textmetric_bench.measures.summaries import summarise_measures
from textmetric_bench.reports.bounds import BOUNDS, bound_label
from textmetric_bench.reports.figures.drawing import MIN_FONT_PT
from textmetric_bench.reports.figures.heatmap import measure_heatmap
from textmetric_bench.reports.figures.ksc import _draw_scatter, _with_z, scatter_look
from textmetric_bench.reports.figures.overview import boxplot_figure, trends_figure
from textmetric_bench.reports.figures.palette import BOUND_GREY, COLOURS, OKABE_ITO, SAFE_COLOURS, metric_styles
from textmetric_bench.reports.figures.radar import (
    BOUNDS_SENTENCE,
    NA_SENTENCE,
    NEGATIVE_SENTENCE,
    OVERLAID_HEADING,
    overlaid_radar,
    radar_small_multiples,
    small_multiples_caption,
)

QUALITY = ("A", "Aw", "rho", "omega2", "L", "S", "I", "IFC")
STEMS = (
    "mauve",
    "fid",
    "prdc_precision",
    "classifier",
    "zipf",
    "chi",
    "irpr",
    "cosine_similarity",
    "kl_truncate",
    "js_divergence",
)


def synthetic_names(count: int) -> list[str]:
    """``count`` fabricated metric names of realistic and varied lengths."""
    return [f"{STEMS[i % len(STEMS)]}_{i:02d}" for i in range(count)]


def synthetic_measures(count: int, *, bounds: bool = False, repetitions: int = 5, seed: int = 0) -> pd.DataFrame:
    """A synthetic measures table (one row per metric and repetition), a few metrics marked similarities."""
    rng = np.random.default_rng(seed)
    names = synthetic_names(count) + (list(BOUNDS) if bounds else [])
    rows = []
    for name in names:
        centre = {"oracle": 0.98, "chance": 0.05}.get(name, rng.uniform(0.2, 0.9))
        for rep in range(repetitions):
            row = {
                "metric": name,
                "repetition": rep,
                "T": rng.uniform(10, 5000),
                "orientation": "similarity" if name.startswith("cosine") else "distance",
            }
            row.update({m: float(np.clip(centre + rng.normal(0, 0.05), 0, 1)) for m in QUALITY})
            rows.append(row)
    return pd.DataFrame(rows)


def synthetic_summary(count: int, *, bounds: bool = False) -> pd.DataFrame:
    return summarise_measures(synthetic_measures(count, bounds=bounds))


def rendered(fig):
    """Draw ``fig`` on an Agg canvas (layout done) and return its renderer."""
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def boxes(texts, renderer):
    return [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text()]


def assert_apart(texts, renderer, what: str) -> None:
    """No two of ``texts`` overlap on the drawn canvas."""
    extents = boxes(texts, renderer)
    assert extents, f"no {what} drawn"
    for a in range(len(extents)):
        for b in range(a + 1, len(extents)):
            assert not extents[a].overlaps(extents[b]), f"{what} {a} and {b} overlap"


def contrast(a, b) -> float:
    """WCAG contrast ratio of two RGB colours (1 to 21)."""

    def luminance(rgb):
        c = np.asarray(rgb, float)
        return float(np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4) @ [0.2126, 0.7152, 0.0722])

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def assert_legible(fig) -> None:
    sizes = [t.get_fontsize() for t in fig.findobj(lambda o: hasattr(o, "get_fontsize")) if t.get_text()]
    assert sizes and min(sizes) >= MIN_FONT_PT, f"a text is smaller than {MIN_FONT_PT} pt: {min(sizes)}"


@pytest.mark.parametrize("count", [18, 30])
def test_no_two_metrics_share_colour_and_style(count):
    names = synthetic_names(count) + list(BOUNDS)
    styles = metric_styles(names)
    assert set(styles) == set(synthetic_names(count)), "bounds take no palette entry"
    looks = {(s.colour, s.linestyle, s.marker) for s in styles.values()}
    assert len(looks) == count
    assert len({s.colour for s in styles.values()}) == count, "every metric has a colour of its own"
    assert {s.colour for s in styles.values()} <= set(COLOURS)
    first = [styles[name] for name in sorted(styles)][:SAFE_COLOURS]
    assert [s.colour for s in first] == list(OKABE_ITO), "the first seven take the colour-blind-safe palette"


def test_a_page_of_figures_numbers_its_metrics_at_once_in_this_process_and_in_drawing_processes():
    """A page showing figures of several metric sets (a report of a sweep over ``metrics=``) gives each metric one
    look: within ``metric_order`` a figure of zipf alone draws it as one of chi and zipf does, also when a drawing
    process (started afresh: spawn, so no state is inherited) draws it."""
    import multiprocessing

    from textmetric_bench.reports.figures.palette import metric_order
    from textmetric_bench.reports.figures.parallel import FigureDrawer

    alone = metric_styles(["zipf", "oracle"])["zipf"]
    assert alone.colour == OKABE_ITO[0]  # without a page, each figure numbers its own metrics
    with metric_order(["chi", "zipf", "oracle"]):
        assert set(metric_styles(["zipf"])) == {"zipf"}
        assert metric_styles(["zipf"])["zipf"] == metric_styles(["chi", "zipf"])["zipf"]
        assert metric_styles(["zipf"])["zipf"].colour == OKABE_ITO[1]
        with FigureDrawer(2, multiprocessing.get_context("spawn")) as drawer:
            assert drawer.processes == 2 or len(os.sched_getaffinity(0)) < 2
            drawn = drawer.result(drawer.submit(metric_styles, ["zipf"]))
        assert drawn["zipf"].colour == OKABE_ITO[1]
    assert metric_styles(["zipf"])["zipf"] == alone  # the page's order ends with it


@pytest.mark.parametrize("count", [18, 30])
def test_heatmap_labels_legible_and_apart(count):
    fig = measure_heatmap(synthetic_summary(count, bounds=True), sort_by="A")
    renderer = rendered(fig)
    ax = fig.axes[0]
    assert len(ax.get_yticklabels()) == count + 2
    assert_apart(ax.get_yticklabels(), renderer, "heatmap row labels")
    assert_apart([*ax.get_xticklabels(), ax.title], renderer, "heatmap column headers and title")
    assert_legible(fig)
    assert len(ax.texts) == (count + 2) * 9  # a value in every cell: 9 measures incl. T
    image = ax.get_images()[0].get_array()
    for text in ax.texts:  # every value readable on its cell: WCAG contrast of at least 4.5
        i, j = round(text.get_position()[1]), round(text.get_position()[0])
        assert contrast(image[i, j][:3], to_rgb(text.get_color())) >= 4.5, text.get_text()


def test_heatmap_rows_sorted_with_bounds_on_top_and_bottom():
    summary = synthetic_summary(18, bounds=True)
    fig = measure_heatmap(summary, sort_by="rho")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == bound_label("oracle") and labels[-1] == bound_label("chance")
    rho = summary[summary["measure"] == "rho"].set_index("metric")["mean"].drop(list(BOUNDS))
    plain = [label.replace(" (similarity, negated)", "") for label in labels[1:-1]]
    assert plain == list(rho.sort_values(ascending=False, kind="stable").index)
    for tick in (ax.get_yticklabels()[0], ax.get_yticklabels()[-1]):
        assert tick.get_fontstyle() == "italic"
    separators = sorted(line.get_ydata()[0] for line in ax.get_lines())
    assert separators == [0.5, len(labels) - 1.5]
    assert "sorted by ρ" in ax.get_title()


def test_heatmap_marks_missing_and_rejects_unknown_sort():
    summary = synthetic_summary(4)
    summary.loc[(summary["metric"] == "fid_01") & (summary["measure"] == "S"), "mean"] = np.nan
    texts = [t.get_text() for t in measure_heatmap(summary).axes[0].texts]
    assert "n/a" in texts
    with pytest.raises(ValueError, match="cannot sort by 'speed'.*rho"):
        measure_heatmap(summary, sort_by="speed")


def test_heatmap_of_a_run_without_a_sorts_by_the_first_measure_it_has():
    """A robustness run has S and I, an IFC run IFC: the report's heatmap (sort_by=None) sorts by the first of them
    instead of refusing for want of A, as it once did, leaving an error box in the report."""
    summary = synthetic_summary(4)
    robustness = summary[summary["measure"].isin(["S", "I"])]
    ax = measure_heatmap(robustness, sort_by=None).axes[0]
    assert "sorted by S" in ax.get_title() and [t.get_text() for t in ax.get_xticklabels()] == ["S", "I"]
    s = robustness[robustness["measure"] == "S"].set_index("metric")["mean"]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(s.sort_values(ascending=False, kind="stable").index)
    assert "sorted by A" in measure_heatmap(summary, sort_by=None).axes[0].get_title()


def test_radar_accepts_s_i_and_ifc_axes_and_marks_missing_not_zero():
    summary = synthetic_summary(3)
    summary.loc[(summary["metric"] == "fid_01") & (summary["measure"] == "IFC"), "mean"] = np.nan
    fig = radar_small_multiples(summary)
    axis_labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert axis_labels == ["A", "$A^w$", "ρ", "ω²", "L", "S", "I", "IFC"]
    panel = next(ax for ax in fig.axes if ax.get_title().startswith("fid_01"))
    (outline,) = [line for line in panel.get_lines() if line.get_color() != BOUND_GREY]
    radii = np.asarray(outline.get_ydata(), float)
    assert np.isnan(radii[QUALITY.index("IFC")]), "a missing IFC must leave a gap, not a vertex"
    assert np.all(radii[np.isfinite(radii)] > 0)
    assert "n/a" in [t.get_text() for t in panel.texts]
    overlaid = overlaid_radar(summary)
    assert any("n/a: fid_01" in t.get_text() for t in overlaid.axes[0].get_xticklabels())


def test_the_small_radars_caption_speaks_only_of_what_is_drawn():
    ksc_only = synthetic_summary(3)
    ksc_only = ksc_only[ksc_only["measure"].isin(["A", "Aw", "rho", "omega2", "L", "T"])]
    plain = small_multiples_caption(ksc_only)
    assert not any(sentence in plain for sentence in (NA_SENTENCE, NEGATIVE_SENTENCE, BOUNDS_SENTENCE))
    gap = synthetic_summary(3, bounds=True)
    gap.loc[(gap["metric"] == "fid_01") & (gap["measure"] == "IFC"), "mean"] = np.nan
    gap.loc[(gap["metric"] == "mauve_00") & (gap["measure"] == "rho"), "mean"] = -0.2
    assert all(
        sentence in small_multiples_caption(gap) for sentence in (NA_SENTENCE, NEGATIVE_SENTENCE, BOUNDS_SENTENCE)
    )
    a_bound_alone = gap.copy()  # a bound's n/a is not a drawn metric's
    a_bound_alone.loc[a_bound_alone["metric"] != "oracle", "mean"] = 0.5
    a_bound_alone.loc[(a_bound_alone["metric"] == "oracle") & (a_bound_alone["measure"] == "I"), "mean"] = np.nan
    assert NA_SENTENCE not in small_multiples_caption(a_bound_alone)


@pytest.mark.parametrize("count", [1, 2])
def test_a_few_small_radars_keep_their_titles_clear_of_the_figures_title(count):
    setting = "KSC on fortune_computing_people · k=4, n=20 · 4 repetitions · seed 0"
    fig = radar_small_multiples(
        synthetic_summary(count), title=f"Each metric's profile (mean over repetitions): {setting}"
    )
    renderer = rendered(fig)
    panels = [ax.title for ax in fig.axes if ax.get_visible()]
    assert_apart([fig._suptitle, *panels], renderer, "figure title and panel titles")


def test_the_overlaid_radar_is_named_for_what_it_shows_and_explains_its_markers():
    fig = overlaid_radar(synthetic_summary(9), title="KSC on a pair", metrics=synthetic_names(9))
    assert fig.axes[0].get_title().startswith(OVERLAID_HEADING) and "KSC on a pair" in fig.axes[0].get_title()
    caption = " ".join(t.get_text() for t in fig.texts)
    assert "Markers tell apart" in caption  # nine metrics drawn take two markers (from the 8th on, another)
    few = overlaid_radar(synthetic_summary(5))
    assert few.axes[0].get_title() == OVERLAID_HEADING
    assert "Markers" not in " ".join(t.get_text() for t in few.texts)


def test_overlaid_radar_shows_a_few_and_bounds_as_grey_outlines():
    summary = synthetic_summary(18, bounds=True)
    fig = overlaid_radar(summary)
    ax = fig.axes[0]
    assert_apart(
        [*ax.get_xticklabels(), ax.title, *fig.texts, *ax.get_legend().get_texts()],
        rendered(fig),
        "radar labels, title, caption and legend",
    )
    assert_legible(fig)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len([name for name in legend if name not in map(bound_label, BOUNDS)]) == 6
    chosen = overlaid_radar(summary, metrics=["zipf_04", "chi_05", "irpr_06"])
    legend = [t.get_text() for t in chosen.axes[0].get_legend().get_texts()]
    assert {"zipf_04", "chi_05", "irpr_06"} <= set(legend)
    with pytest.raises(ValueError, match="no metric nope"):
        overlaid_radar(summary, metrics=["nope"])
    grey = {line.get_linestyle() for line in chosen.axes[0].get_lines() if line.get_color() == BOUND_GREY}
    assert grey == {"--", ":"}


@pytest.mark.parametrize("count", [18, 30])
def test_small_multiples_one_panel_per_metric_legible(count):
    fig = radar_small_multiples(synthetic_summary(count, bounds=True))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == count
    renderer = rendered(fig)
    assert_apart(
        [ax.title for ax in panels] + [t for ax in panels for t in ax.get_xticklabels()],
        renderer,
        "panel titles and axis labels",
    )
    assert_legible(fig)
    assert all(ax.get_ylim() == (0.0, 1.0) for ax in panels)
    for ax in panels:  # the ceiling dashed and the floor dotted, behind every metric
        grey = sorted(
            (line.get_linestyle(), line.get_zorder()) for line in ax.get_lines() if line.get_color() == BOUND_GREY
        )
        assert [style for style, _ in grey] == ["--", ":"]
        assert max(z for _, z in grey) < min(
            line.get_zorder() for line in ax.get_lines() if line.get_color() != BOUND_GREY
        )


def test_one_metric_one_colour_in_radar_and_boxplots():
    measures = synthetic_measures(12)
    colour = metric_styles(measures["metric"])["chi_05"].colour
    fig = radar_small_multiples(summarise_measures(measures))
    panel = next(ax for ax in fig.axes if ax.get_title() == "chi_05")
    assert panel.get_lines()[-1].get_color() == colour
    box_ax = boxplot_figure(measures).axes[0]
    labels = [t.get_text() for t in box_ax.get_yticklabels()]
    patch = box_ax.patches[labels.index("chi_05")]
    assert patch.get_facecolor()[:3] == pytest.approx(tuple(int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)))


@pytest.mark.parametrize("count", [18, 30])
def test_boxplots_horizontal_sorted_by_median_with_bound_bands(count):
    measures = synthetic_measures(count, bounds=True)
    fig = boxplot_figure(measures)
    renderer = rendered(fig)
    for ax in (a for a in fig.axes if a.get_visible()):
        measure = next(
            m for m in QUALITY if ax.get_title().startswith({"Aw": "$A^w$", "rho": "ρ", "omega2": "ω²"}.get(m, m) + ":")
        )
        labels = [t.get_text().replace(" (similarity, negated)", "") for t in ax.get_yticklabels()]
        medians = measures.groupby("metric")[measure].median()
        assert not set(labels) & set(BOUNDS)
        assert [medians[m] for m in labels] == sorted(medians[m] for m in labels)  # bottom to top
        assert_apart(ax.get_yticklabels(), renderer, "box labels")
        spans = [p for p in ax.patches if p.get_facecolor()[:3] == pytest.approx((0.467, 0.467, 0.467), abs=0.01)]
        assert len(spans) == 2, "ceiling and floor drawn as shaded bands"
    assert_legible(fig)


def test_sweep_ticks_are_the_swept_integers():
    rows = [
        {"pair": "p", "metric": m, "k": k, "measure": q, "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6}
        for m in ("fid", "mauve")
        for k in (5, 6, 7)
        for q in ("A", "rho")
    ]
    fig = trends_figure(pd.DataFrame(rows))
    for ax in (a for a in fig.axes if a.get_visible()):
        assert list(ax.get_xticks()) == [5, 6, 7]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["5", "6", "7"]


def test_scatter_ell_axis_has_integer_ticks():
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    ell = np.repeat(np.arange(1, 7), 5)
    look = scatter_look("m", metric_styles(["m"]))
    _draw_scatter(ax, ell, ell + np.random.default_rng(0).normal(size=ell.size), np.random.default_rng(0), look)
    ticks = ax.get_xticks()
    assert np.all(ticks == np.round(ticks))


def test_figure_z_scores_use_population_sd_like_the_measures():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"metric": "m", "repetition": np.repeat([0, 1], 6), "distance": rng.normal(size=12)})
    z = _with_z(frame)["z"].to_numpy()
    expected = np.concatenate([stats.zscore(frame["distance"][:6]), stats.zscore(frame["distance"][6:])])
    np.testing.assert_allclose(z, expected)


def test_the_report_guide_numbers_follow_the_palette_and_radar():
    from pathlib import Path

    from textmetric_bench.reports.figures.palette import MARKERS
    from textmetric_bench.reports.figures.radar import MAX_OVERLAID

    text = " ".join((Path(__file__).parents[1] / "docs" / "report.md").read_text(encoding="utf-8").split())
    capacity = len(COLOURS)
    assert f"for at most {MAX_OVERLAID} metrics" in text
    assert f"past {SAFE_COLOURS} metrics a marker too" in text
    assert "A metric's line is always solid: dashed and dotted mean the bounds" in text
    assert f"up to {capacity} metrics" in text
    styles = metric_styles(synthetic_names(capacity)).values()
    assert len({s.colour for s in styles}) == capacity
    assert {s.linestyle for s in styles} == {"-"}  # dashed and dotted are the bounds' own
    assert len({s.marker for s in styles}) == min(len(MARKERS), -(-capacity // SAFE_COLOURS))


def test_robustness_size_axis_has_integer_ticks():
    from matplotlib.figure import Figure

    from textmetric_bench.reports.figures.robustness import draw_curve

    ax = Figure().add_subplot()
    rows = pd.DataFrame({"s": np.repeat([20, 40, 80], 4), "distance": np.random.default_rng(0).uniform(size=12)})
    draw_curve(ax, rows, 0.5)
    assert list(ax.get_xticks()) == [20, 40, 80]


def test_heatmap_colours_quality_on_one_scale_with_bars_and_leaves_out_measures_not_run():
    from textmetric_bench.reports.figures.heatmap import CMAP, heatmap_caption

    summary = synthetic_summary(4)
    a = summary["measure"] == "A"
    summary.loc[a, "mean"] = [0.92, 0.98, 0.95, 0.93]
    summary.loc[summary["measure"] == "IFC", "mean"] = np.nan  # IFC not run
    fig = measure_heatmap(summary, sort_by="A")
    ax = fig.axes[0]
    headers = [t.get_text() for t in ax.get_xticklabels()]
    assert "IFC" not in headers and len(headers) == 8
    image = ax.get_images()[0].get_array()
    column = headers.index("A")
    rows = [t.get_text() for t in ax.get_yticklabels()]
    means = summary[a].set_index("metric")["mean"]
    for i, metric in enumerate(rows):  # the colour is the value's on the shared 0-1 scale, not the column's rank
        assert np.allclose(image[i, column], CMAP(means[metric])), metric
    bars = [axis.get_ylabel() for axis in fig.axes[1:]]
    assert len(bars) == 2 and any("0–1" in label for label in bars) and any("log scale" in label for label in bars)
    caption = heatmap_caption(summary)
    assert "share one colour scale" in caption and "ceiling" not in caption  # no bounds drawn, none named
    assert "ceiling (oracle)" in heatmap_caption(synthetic_summary(4, bounds=True))


def test_the_speed_colour_bar_of_a_narrow_range_has_a_few_plain_ticks():
    """T within one decade (9.75 to 11.5 [100 op/s]): matplotlib labelled the log scale's minor ticks as well, a
    crowd of "1.125×10¹" labels; four plain labels from the lowest to the highest value instead."""
    summary = synthetic_summary(3)
    summary.loc[summary["measure"] == "T100", "mean"] = [9.75, 10.5, 11.5]
    fig = measure_heatmap(summary, sort_by="A")
    rendered(fig)
    (bar,) = [axis for axis in fig.axes[1:] if "log scale" in axis.get_ylabel()]
    labels = [t.get_text() for t in bar.get_yticklabels(minor=False) + bar.get_yticklabels(minor=True) if t.get_text()]
    assert labels == ["9.75", "10.3", "10.9", "11.5"]


def test_a_font_cache_of_another_environment_draws_without_findfont_lines(tmp_path):
    """matplotlib's font cache is per version, shared by every environment of that version; one written by a build
    without matplotlib's own fonts (a distribution's, using the system's) lists none of them, and every figure with
    mathtext (A^w) logged 21 "findfont: ... not found" lines (into a notebook and a run's log). The figures' module
    adds matplotlib's own fonts."""
    import json
    import subprocess

    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, check=True, timeout=300)
    (cache,) = tmp_path.glob("fontlist-v*.json")
    fonts = json.loads(cache.read_text())
    # matplotlib's own fonts are stored relative to its data directory: a build without them wrote none
    fonts["ttflist"] = [entry for entry in fonts["ttflist"] if os.path.isabs(entry["fname"])]
    cache.write_text(json.dumps(fonts))
    draw = (
        "from matplotlib.figure import Figure\n"
        "from matplotlib.backends.backend_agg import FigureCanvasAgg\n"
        "fig = Figure()\nfig.add_subplot().set_title('$A^w$')\nFigureCanvasAgg(fig).draw()\n"
    )
    plain = subprocess.run([sys.executable, "-c", draw], env=env, capture_output=True, text=True, timeout=300)
    assert "findfont" in plain.stderr  # the stale cache is what it was: matplotlib alone complains
    ours = subprocess.run(
        [sys.executable, "-c", "import textmetric_bench.reports.figures.drawing\n" + draw],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ours.returncode == 0 and "findfont" not in ours.stderr, ours.stderr[-2000:]
