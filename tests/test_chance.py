"""An A or A^w significantly below chance (.5) is flagged where Table 3 shows it (bench/measures/chance.py,
reports/tables): the one-sided t test over repetitions, its Holm correction, and the ▼ with its remark."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from textmetric_bench.measures.chance import BELOW_CHANCE_ADVICE, below_chance, below_chance_p
from textmetric_bench.measures.summaries import summarise_measures
from textmetric_bench.reports.html.tables import below_chance_html, table3_html
from textmetric_bench.reports.tables.files import write_tables
from textmetric_bench.reports.tables.table3 import BELOW_MARK


def accuracies(centres: dict[str, float], repetitions: int = 5, spread: float = 0.02, seed: int = 1) -> pd.DataFrame:
    """Per-repetition A and A^w of metrics around the given centres (a constructed measures table)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        [
            {"metric": m, "repetition": r, "A": c + rng.normal(0, spread), "Aw": c + rng.normal(0, spread)}
            for m, c in centres.items()
            for r in range(repetitions)
        ]
    )


def test_p_is_the_one_sided_t_test_over_repetitions():
    values = np.array([0.39, 0.41, 0.37, 0.40, 0.38])
    p = below_chance_p(values.mean(), values.std(ddof=1), values.size)
    assert p == pytest.approx(stats.ttest_1samp(values, 0.5, alternative="less").pvalue)
    assert below_chance_p(0.45, 0.0, 3) == 0.0 and below_chance_p(0.55, 0.0, 3) == 1.0
    assert np.isnan(below_chance_p(0.3, np.nan, 1))  # one repetition: no test


def test_an_inverted_metric_is_flagged_and_a_chance_level_one_is_not():
    # like CHI and the n-gram divergences on fortune at k=4, n=30 (A = .389), beside a metric at chance and a good one
    summary = summarise_measures(accuracies({"inverted": 0.389, "at_chance": 0.5, "good": 0.9, "chance": 0.3}))
    flagged = below_chance(summary, excluded={"chance"})
    assert set(flagged["metric"]) == {"inverted"} and set(flagged["measure"]) == {"A", "Aw"}
    assert (flagged["p_holm"] < 0.05).all() and (flagged["p_holm"] >= flagged["p"]).all()


def test_below_five_repetitions_nothing_is_tested():
    """Two repetitions that agree (an accuracy takes few values at small k) would give a spread of zero."""
    measures = pd.DataFrame({"metric": "zipf", "repetition": [0, 1], "Aw": [0.4, 0.4]})
    summary = summarise_measures(measures)
    assert below_chance(summary).empty and not below_chance(summary, min_repetitions=2).empty


def test_a_mean_below_chance_that_the_repetitions_do_not_confirm_is_not_flagged():
    measures = pd.DataFrame({"metric": "noisy", "repetition": range(5), "A": [0.30, 0.62, 0.41, 0.55, 0.44]})
    summary = summarise_measures(measures)
    assert summary["mean"].iloc[0] < 0.5 and below_chance(summary).empty


def test_the_flag_shows_in_the_markdown_and_the_html_with_its_advice(tmp_path):
    measures = accuracies({"inverted": 0.389, "at_chance": 0.5, "good": 0.9, "oracle": 0.2})
    text = write_tables(measures, tmp_path)["table3_md"].read_text()
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert BELOW_MARK in rows["inverted"] and BELOW_MARK not in rows["at_chance"] + rows["good"]
    assert BELOW_MARK not in rows["ceiling (oracle)"]  # a bound is not tested
    assert BELOW_CHANCE_ADVICE in text and "`inverted`: A = " in text
    summary = summarise_measures(measures)
    assert BELOW_MARK in table3_html(summary, {}, {}) and "inverted" in below_chance_html(summary)
    assert below_chance_html(summarise_measures(accuracies({"at_chance": 0.5, "good": 0.9}))) == ""


def test_the_heatmap_marks_the_same_cells():
    from textmetric_bench.reports.figures.heatmap import measure_heatmap

    fig = measure_heatmap(summarise_measures(accuracies({"inverted": 0.389, "at_chance": 0.5, "good": 0.9})))
    marked = [t.get_text() for t in fig.axes[0].texts if BELOW_MARK in t.get_text()]
    assert len(marked) == 2  # inverted's A and A^w, nothing else
    assert all(text.startswith(".3") for text in marked)


def test_the_sweep_table_marks_the_job_whose_accuracy_is_below_chance(tmp_path):
    from textmetric_bench.reports.sweep.aggregate import sweep_markdown

    rows = []
    for job, centre in (("0", 0.389), ("1", 0.5)):
        summary = summarise_measures(accuracies({"chi": centre, "fid": 0.95}))
        for r in summary.itertuples():
            rows.append(
                {
                    "pair": "p",
                    "k": 4,
                    "n": 30 if job == "0" else 100,
                    "task": "ksc",
                    "run_dir": str(tmp_path / job),
                    "metric": r.metric,
                    "measure": r.measure,
                    "mean": r.mean,
                    "std": r.std,
                    "n_reps": r.n,
                    "warning": "",
                }
            )
    text = sweep_markdown(pd.DataFrame(rows), tmp_path)
    chi = [line for line in text.splitlines() if "| chi |" in line]
    assert len(chi) == 2 and chi[0].count(BELOW_MARK) == 2 and BELOW_MARK not in chi[1]
    assert BELOW_CHANCE_ADVICE in text
