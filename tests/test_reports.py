"""Tests of reports/: summary statistics, Table 3 layout and bolding, figures, sweep aggregation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from textmetric_bench.measures.summaries import summarise_measures
from textmetric_bench.reports.figures.ksc import distance_scatter
from textmetric_bench.reports.figures.radar import radar_chart
from textmetric_bench.reports.labels import format_score
from textmetric_bench.reports.sweep.aggregate import aggregate_sweep, main, write_sweep_tables
from textmetric_bench.reports.tables.files import write_tables
from textmetric_bench.reports.tables.markdown import failures_from_distances
from textmetric_bench.reports.tables.table3 import table3, table3_markdown_cells

REPO_ROOT = Path(__file__).resolve().parents[1]
K, REPETITIONS = 6, 4


def simulated_distances(seed: int = 0) -> pd.DataFrame:
    """KSC pair distances for a monotone noisy metric, a near-constant one and one that always fails."""
    rng = np.random.default_rng(seed)
    rows = []
    pairs = [(i, j) for i in range(1, K + 1) for j in range(i + 1, K + 1)]
    for rep in range(REPETITIONS):
        for i, j in pairs:
            ell = j - i
            rows.append(("monotone", rep, i, j, ell, 0.1 * ell + rng.normal(0, 0.05), 0.002, ""))
            rows.append(("flat", rep, i, j, ell, 1.0 + rng.normal(0, 1e-3), 0.001, ""))
            rows.append(("broken", rep, i, j, ell, np.nan, 0.0, "MetricError: corpus too small"))
    frame = pd.DataFrame(rows, columns=["metric", "repetition", "i", "j", "ell", "distance", "seconds", "error"])
    grouped = frame.groupby(["metric", "repetition"])["distance"]
    frame["z"] = (frame["distance"] - grouped.transform("mean")) / grouped.transform("std")
    return frame


def simulated_measures(seed: int = 1, metrics=("monotone", "flat", "chi")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    centre = {"monotone": 0.93, "flat": 0.55, "chi": 0.90}
    rows = []
    for metric in metrics:
        for rep in range(REPETITIONS):
            c = centre[metric]
            rows.append(
                {
                    "metric": metric,
                    "repetition": rep,
                    "rho": c + rng.normal(0, 0.02),
                    "omega2": c - 0.1 + rng.normal(0, 0.03),
                    "L": c - 0.05 + rng.normal(0, 0.02),
                    "A": c + rng.normal(0, 0.01),
                    "Aw": c - 0.03 + rng.normal(0, 0.01),
                    "T": 300 + rng.normal(0, 20),
                    "notes": "extra column the reports must ignore",
                }
            )
    return pd.DataFrame(rows)


def summary_with_means(column_means: dict[str, dict[str, float]]) -> pd.DataFrame:
    """A summary table with given means (std/CI filled so the formatter has something to show)."""
    rows = [
        (metric, measure, mean, 0.01, 5, mean - 0.01, mean + 0.01)
        for measure, by_metric in column_means.items()
        for metric, mean in by_metric.items()
    ]
    return pd.DataFrame(rows, columns=["metric", "measure", "mean", "std", "n", "ci_low", "ci_high"])


# --- tables -----------------------------------------------------------------------------------


def test_interval_is_a_bootstrap_of_the_mean_inside_the_range_of_the_repetitions():
    measures = simulated_measures()
    summary = summarise_measures(measures)
    for (metric, measure), row in summary.set_index(["metric", "measure"]).iterrows():
        column = "T" if measure == "T100" else measure
        values = measures.loc[measures.metric == metric, column].to_numpy() / (100 if measure == "T100" else 1)
        assert row["n"] == REPETITIONS
        assert values.min() - 1e-12 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= values.max() + 1e-12
        assert row["std"] == pytest.approx(values.std(ddof=1))


def test_an_interval_computed_once_is_scipy_s_seeded_bootstrap_of_those_values_bit_for_bit():
    """Intervals are kept per values (a run's tables, figures and report summarise the same measures); a kept one
    is the one scipy gives for those values now, and other values, or a float64 view of other bytes, get theirs."""
    from textmetric_bench.measures.intervals import RESAMPLES, SEED, bootstrap_interval

    rng = np.random.default_rng(4)
    samples = [rng.normal(0.5, 0.1, int(size)) for size in rng.integers(2, 12, 40)]
    for values in samples + samples:  # the second pass finds each kept
        kept = bootstrap_interval(values)
        fresh = stats.bootstrap(
            (values,), np.mean, method="percentile", n_resamples=RESAMPLES, rng=np.random.default_rng(SEED)
        ).confidence_interval
        assert np.array([kept]).tobytes() == np.array([[fresh.low, fresh.high]]).tobytes()
    assert bootstrap_interval([0.1, 0.2, 0.3]) != bootstrap_interval([0.1, 0.2, 0.4])
    assert bootstrap_interval([0.1, 0.2, 0.3], confidence=0.5) != bootstrap_interval([0.1, 0.2, 0.3])


def test_interval_of_a_measure_near_its_bound_stays_inside_the_range():
    """A = 1, 1, 1, .9 would give a Student t-interval reaching 1.06; the bootstrap stays in [0, 1]."""
    values = [1.0, 1.0, 1.0, 0.9]
    measures = pd.DataFrame({"metric": "m", "repetition": range(4), "A": values, "rho": [-1.0, -1.0, -0.95, -1.0]})
    summary = summarise_measures(measures).set_index("measure")
    t_high = stats.t.interval(0.95, 3, loc=np.mean(values), scale=stats.sem(values))[1]
    assert t_high > 1 and summary.loc["A", "ci_high"] <= 1.0 and summary.loc["A", "ci_low"] >= 0.9
    assert summary.loc["rho", "ci_low"] >= -1.0


def test_t100_is_t_over_100_and_unknown_columns_ignored():
    measures = simulated_measures()
    summary = summarise_measures(measures).set_index(["metric", "measure"])
    for metric in ("monotone", "flat", "chi"):
        expected = measures.loc[measures.metric == metric, "T"].mean() / 100
        assert summary.loc[(metric, "T100"), "mean"] == pytest.approx(expected)
    measured = set(summary.index.get_level_values("measure"))
    assert measured == {"A", "Aw", "T", "T100", "rho", "omega2", "L"}
    assert list(table3(summary.reset_index()).columns) == ["A", "Aw", "T100", "rho", "omega2", "L"]


def test_single_repetition_gives_nan_ci_and_present_subset_with_s_and_i():
    measures = pd.DataFrame({"metric": ["m"], "repetition": [0], "A": [0.8], "S": [0.9], "I": [-0.1]})
    summary = summarise_measures(measures).set_index("measure")
    assert summary.loc["A", "n"] == 1 and summary.loc["A", "mean"] == pytest.approx(0.8)
    assert summary[["ci_low", "ci_high", "std"]].isna().all().all()
    assert list(table3(summary.reset_index()).columns) == ["A", "S", "I"]
    cells = table3_markdown_cells(summary.reset_index())
    assert cells.loc["m", "I"] == "**-.100**"  # no CI shown when it is undefined


def test_format_score_drops_leading_zero_like_the_paper():
    assert format_score(0.9451) == ".945"
    assert format_score(-0.02) == "-.020"
    assert format_score(4.68) == "4.680"
    assert format_score(-0.0002) == format_score(-0.0) == ".000"  # rounds to zero: no sign
    assert format_score(float("nan")) == "–"


def test_bold_marks_best_and_values_within_tolerance_only():
    summary = summary_with_means(
        {
            "A": {"best": 0.900, "close": 0.890, "edge": 0.885, "just_out": 0.884, "far": 0.5},
            "rho": {"best": 0.2, "close": 0.95, "edge": 0.94, "just_out": 0.9, "far": float("nan")},
            "L": {"best": -0.3, "close": -0.2, "edge": -0.21, "just_out": -0.5, "far": -0.216},
        }
    )
    cells = table3_markdown_cells(summary)
    bolded = cells.apply(lambda col: col.str.startswith("**"))
    assert set(bolded.index[bolded["A"]]) == {"best", "close", "edge"}
    assert set(bolded.index[bolded["rho"]]) == {"close", "edge"}
    assert set(bolded.index[bolded["L"]]) == {"close", "edge"}
    assert cells.loc["far", "rho"] == "–"
    assert cells.loc["best", "A"] == "**.900** [.890, .910]"


def measures_with_a_partly_failing_metric() -> pd.DataFrame:
    """``monotone`` and ``chi`` complete in every repetition; ``partial`` high everywhere but complete in two only."""
    full = simulated_measures(metrics=("monotone", "chi"))
    partial = full[full["metric"] == "monotone"].head(2).assign(metric="partial")
    for measure in ("rho", "omega2", "L", "A", "Aw"):
        partial[measure] = 0.99
    partial["T"] = 900.0
    return pd.concat([full, partial], ignore_index=True)


def test_a_metric_with_fewer_complete_repetitions_is_not_bold_nor_the_best():
    """A partly failing metric's means average fewer repetitions (issue 48): its .990 over two beats the others'
    over all of them by chance as much as by merit, so the bold compares the metrics with the column's most."""
    from textmetric_bench.reports.html.tables import table3_html
    from textmetric_bench.reports.tables.table3 import FEWER_REPETITIONS_NOTE
    from textmetric_bench.reports.tables.table3_markdown import table3_text

    summary = summarise_measures(measures_with_a_partly_failing_metric())
    cells = table3_markdown_cells(summary)
    bolded = cells.apply(lambda col: col.str.startswith("**"))
    assert not bolded.loc["partial"].any() and cells.loc["partial", "A"].startswith(".990")
    assert bolded.loc["monotone"].all()  # the best of the complete ones (.93 against chi's .90), T100 aside
    assert not bolded.loc["chi", ["A", "rho"]].any()
    failures = {"partial": f"3 of {REPETITIONS * 10} evaluations failed"}
    text = table3_text(summary, "t", failures, repetitions=REPETITIONS)
    assert f"of it, {FEWER_REPETITIONS_NOTE}." in text
    html = table3_html(summary, {}, {}, failed={"partial": (3, 30)}, repetitions=REPETITIONS)
    row = next(part for part in html.split("<tr") if "partial" in part)
    assert "<b>" not in row and FEWER_REPETITIONS_NOTE in html
    complete = summarise_measures(simulated_measures(metrics=("monotone", "chi")))
    assert FEWER_REPETITIONS_NOTE not in table3_text(complete, "t", None) + table3_html(complete, {}, {})


def test_write_tables_outputs_every_metric_and_failures(tmp_path):
    measures = simulated_measures()
    failures = failures_from_distances(simulated_distances())
    assert failures == {"broken": "MetricError: corpus too small"}
    paths = write_tables(measures, tmp_path / "out", title="clinc150 vs banking77, k=6", failures=failures)
    assert set(paths) == {"summary", "table3_csv", "table3_md"} | {
        f"significance_{m}" for m in ("A", "Aw", "T", "rho", "omega2", "L")
    }
    text = paths["table3_md"].read_text()
    assert text.startswith("# clinc150 vs banking77, k=6")
    for metric in ("monotone", "flat", "chi", "broken"):
        assert metric in text
    assert "## Failed metrics" in text and "corpus too small" in text
    assert "[100 op/s]" in text
    wide = pd.read_csv(paths["table3_csv"], index_col="metric")
    assert {"A", "A_ci_low", "A_ci_high", "T100"} <= set(wide.columns) and "notes" not in wide.columns
    assert sorted(wide.index) == ["chi", "flat", "monotone"]
    assert len(pd.read_csv(paths["summary"])) == 3 * 7


def test_write_tables_with_no_measures_still_writes_a_note(tmp_path):
    empty = pd.DataFrame(columns=["metric", "repetition", "A", "T"])
    paths = write_tables(empty, tmp_path, failures={"mauve": "ImportError: mauve-text missing\ntraceback"})
    text = paths["table3_md"].read_text()
    assert "No metric produced measures" in text and "mauve" in text and "traceback" not in text


# --- figures ----------------------------------------------------------------------------------


def assert_png(path: Path):
    assert path.is_file() and path.stat().st_size > 0
    image = mpimg.imread(path)
    assert image.ndim == 3 and image.shape[0] > 0 and image.shape[1] > 0


def test_radar_chart_writes_png_and_svg(tmp_path):
    summary = summarise_measures(simulated_measures())
    paths = radar_chart(summary, tmp_path / "fig" / "radar", title="k = 6")
    assert [p.name for p in paths] == ["radar.png", "radar.svg"]
    assert_png(paths[0])
    assert "<svg" in paths[1].read_text()


def test_radar_chart_single_metric_with_negative_value(tmp_path):
    summary = summary_with_means({"A": {"only": 0.9}, "rho": {"only": 0.7}, "omega2": {"only": -0.02}})
    png, svg = radar_chart(summary, tmp_path / "one")
    assert_png(png)
    assert "drawn at 0" in svg.read_text()


def test_radar_chart_needs_three_axes(tmp_path):
    summary = summary_with_means({"A": {"m": 0.9}, "T100": {"m": 3.0}, "rho": {"m": 0.7}})
    with pytest.raises(ValueError, match="at least 3 quality measures"):
        radar_chart(summary, tmp_path / "radar")
    assert not list(tmp_path.iterdir())


def test_distance_scatter_one_file_per_working_metric(tmp_path):
    paths = distance_scatter(simulated_distances(), tmp_path)
    assert sorted(p.name for p in paths) == ["scatter_all.png", "scatter_flat.png", "scatter_monotone.png"]
    for path in paths:
        assert_png(path)
    grid_only = distance_scatter(simulated_distances(), tmp_path / "grid", per_metric=False)
    assert [p.name for p in grid_only] == ["scatter_all.png"]
    assert grid_only[0].read_bytes() == (tmp_path / "scatter_all.png").read_bytes()  # the same grid either way


def test_distance_scatter_without_z_column_and_odd_metric_name(tmp_path):
    distances = simulated_distances().drop(columns="z")
    distances = distances[distances.metric == "monotone"].assign(metric="mauve/gpt2 large")
    paths = distance_scatter(distances, tmp_path)
    assert sorted(p.name for p in paths) == ["scatter_all.png", "scatter_mauve_gpt2_large.png"]


# --- sweep aggregation ------------------------------------------------------------------------


def make_job(job_dir: Path, k: int, measures: pd.DataFrame):
    (job_dir / ".hydra").mkdir(parents=True)
    measures.to_csv(job_dir / "measures.csv", index=False)
    config = {
        "pair": {"name": "clinc150-banking77", "a": "clinc150"},
        "task": {"name": "ksc"},
        "k": k,
        "n": 100,
        "repetitions": REPETITIONS,
        "seed": 7,
        "out": "${hydra:runtime.output_dir}",
    }
    (job_dir / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    (job_dir / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([f"k={k}"]))


@pytest.fixture
def sweep_dir(tmp_path) -> Path:
    sweep = tmp_path / "multirun" / "2024-01-01" / "12-00-00"
    make_job(sweep / "0", 7, simulated_measures(seed=2))
    make_job(sweep / "1" / "nested", 12, simulated_measures(seed=3, metrics=("monotone", "chi")))
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    return sweep


def test_aggregate_sweep_has_rows_for_each_k(sweep_dir):
    long = aggregate_sweep(sweep_dir)
    assert sorted(long["k"].unique()) == [7, 12]
    assert set(long["pair"]) == {"clinc150-banking77"} and set(long["task"]) == {"ksc"}
    assert set(long["n"]) == {100} and set(long["n_reps"]) == {REPETITIONS}
    assert set(long.loc[long.k == 12, "metric"]) == {"monotone", "chi"}
    assert set(long["overrides"]) == {"k=7", "k=12"}
    assert long["run_dir"].nunique() == 2


def test_a_sweep_table_bolds_among_the_metrics_with_the_most_repetitions(tmp_path):
    from textmetric_bench.reports.tables.table3 import FEWER_REPETITIONS_NOTE

    sweep = tmp_path / "multirun"
    make_job(sweep / "0", 7, measures_with_a_partly_failing_metric())
    make_job(sweep / "1", 12, simulated_measures(metrics=("monotone", "chi")))
    text = write_sweep_tables(sweep)["sweep_table"].read_text()
    rows = {line.split("|")[4].strip(): line for line in text.splitlines() if line.startswith("| clinc150")}
    assert "**" not in rows["partial"] and rows["monotone"].count("**") >= 8
    assert FEWER_REPETITIONS_NOTE in text


def test_write_sweep_tables_defaults_to_sweep_dir(sweep_dir):
    paths = write_sweep_tables(sweep_dir)
    assert {p.parent for p in paths.values()} == {sweep_dir}
    text = paths["sweep_table"].read_text()
    assert text.count("| clinc150-banking77") == 5  # 3 metrics at k=7, 2 at k=12
    assert "**" in text


def test_cli_prints_table_and_paths(sweep_dir, tmp_path, capsys):
    assert main([str(sweep_dir), "--out", str(tmp_path / "agg")]) == 0
    out = capsys.readouterr().out
    assert "monotone" in out and f"wrote {tmp_path / 'agg' / 'sweep_table.md'}" in out


def test_cli_on_empty_dir_exits_non_zero_naming_it(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path)])
    assert exit_info.value.code not in (0, None)
    assert str(tmp_path) in str(exit_info.value.code)


def test_python_dash_m_entry_point(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "textmetric_bench.reports.sweep.aggregate", str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "no run directory" in result.stderr and "RuntimeWarning" not in result.stderr
