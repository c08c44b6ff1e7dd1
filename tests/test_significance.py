"""Paired comparisons of metrics over repetitions and their Holm correction (bench/measures/paired.py), the ▲ marks
of the metrics not separated from a column's best (reports/tables/significance.py)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from textmetric_bench.measures import paired
from textmetric_bench.measures.paired import all_comparisons, paired_bootstrap_p, paired_comparisons, separated
from textmetric_bench.measures.summaries import summarise_measures
from textmetric_bench.reports.bounds import bound_label, bound_of, ranked
from textmetric_bench.reports.tables.files import write_tables
from textmetric_bench.reports.tables.significance import (
    FEW_NOTE,
    TOP_MARK,
    TOP_NOTE,
    column_marks,
    marks_note,
    top_group,
    untested,
)
from textmetric_bench.reports.tables.table3 import table3, table3_markdown_cells


def measures_of(centres: dict[str, float], repetitions: int = 5, noise: float = 0.01, seed: int = 0) -> pd.DataFrame:
    """Per-repetition rho of metrics sharing a per-repetition collection effect (the pairing) plus own noise."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(0, 0.05, repetitions)
    rows = [
        {"metric": m, "repetition": r, "rho": c + shared[r] + rng.normal(0, noise)}
        for m, c in centres.items()
        for r in range(repetitions)
    ]
    return pd.DataFrame(rows)


def test_five_repetitions_can_separate_two_metrics_where_wilcoxon_cannot():
    d = np.array([0.05, 0.06, 0.04, 0.05, 0.07])
    assert stats.wilcoxon(d).pvalue >= 0.0625
    assert paired_bootstrap_p(d) < 0.01


def test_p_is_large_for_differences_centred_on_zero_and_one_for_identical_metrics():
    assert paired_bootstrap_p([0.03, -0.02, 0.01, -0.03, 0.02]) > 0.5
    assert paired_bootstrap_p([0.0] * 5) == 1.0
    assert np.isnan(paired_bootstrap_p([0.1]))


def one_at_a_time(differences) -> float:
    """The paired bootstrap's p by its definition, one array alone: the zero-centred differences resampled with the
    module's draws, p = (count of |resampled mean| >= |observed mean| + 1) / (resamples + 1)."""
    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        return np.nan
    observed = abs(d.mean())
    if np.ptp(d) == 0:
        return 1.0 if observed == 0 else 1.0 / (paired.RESAMPLES + 1)
    means = (d - d.mean())[paired.resample_indices(d.size)].mean(axis=1)
    return float((np.sum(np.abs(means) >= observed - 1e-12) + 1) / (paired.RESAMPLES + 1))


def test_arrays_resampled_together_give_each_its_own_p_bit_for_bit(monkeypatch):
    """Sizes 0-39 mixed, constant arrays among them, chunks small enough that a size spans several."""
    rng = np.random.default_rng(1)
    samples = []
    for _ in range(400):
        size = int(rng.integers(0, 40))
        if rng.random() < 0.1:
            samples.append(np.full(size, rng.choice([0.0, 0.5])))
        else:
            samples.append(rng.normal(rng.choice([0.0, 0.01, 1.0]), rng.choice([1e-3, 1.0, 100.0]), size))
    monkeypatch.setattr(paired, "CHUNK_VALUES", 3 * paired.RESAMPLES * 39)
    batched = np.array(paired.paired_bootstrap_ps(samples))
    alone = np.array([one_at_a_time(s) for s in samples])
    assert batched.tobytes() == alone.tobytes()
    assert np.isnan(batched).sum() == sum(len(s) < 2 for s in samples) > 0
    assert len({p for p in batched if not np.isnan(p)}) > 50


def test_comparing_the_same_values_again_gives_the_same_table_and_each_caller_its_own():
    """A run's tables and its report compare the same measures: computed once, handed out as copies."""
    measures = measures_of({"a": 0.9, "b": 0.85, "c": 0.7}, noise=0.02)
    first = paired_comparisons(measures, "rho")
    first.loc[0, "better"], first.loc[0, "p"] = "changed by a caller", -1.0
    again = paired_comparisons(measures.sample(frac=1.0, random_state=0), "rho")  # the same values, rows shuffled
    assert again.loc[0, "better"] != "changed by a caller" and again.loc[0, "p"] > 0
    assert again.equals(paired_comparisons(measures_of({"a": 0.9, "b": 0.85, "c": 0.7}, noise=0.02), "rho"))
    moved = measures.copy()
    moved.loc[(moved["metric"] == "a") & (moved["repetition"] == 0), "rho"] += 0.05
    assert paired_comparisons(moved, "rho")["mean_a"].iloc[0] != again["mean_a"].iloc[0]  # other values: computed


def test_pairing_uses_the_same_repetition():
    """The shared collection effect (sd .05) dwarfs the .02 gap; only a paired test sees the gap."""
    frame = paired_comparisons(measures_of({"good": 0.82, "worse": 0.80}, noise=0.002), "rho")
    row = frame.iloc[0]
    unpaired = stats.ttest_ind(
        *(g["rho"] for _, g in measures_of({"good": 0.82, "worse": 0.80}, noise=0.002).groupby("metric"))
    ).pvalue
    assert unpaired > 0.05 and row["p_holm"] < 0.05 and row["better"] == "good"
    assert row["mean_diff"] == pytest.approx(row["mean_a"] - row["mean_b"])


def test_holm_never_lowers_p_and_tied_metrics_are_not_separated():
    frame = paired_comparisons(measures_of({"a": 0.9, "b": 0.9, "c": 0.7, "d": 0.5}), "rho")
    assert len(frame) == 6 and (frame["p_holm"] >= frame["p"] - 1e-15).all()
    assert frozenset(("a", "b")) not in separated(frame)
    assert frame.set_index(["metric_a", "metric_b"]).loc[("a", "d"), "better"] == "a"


def test_top_group_is_the_best_and_those_not_separated_from_it_without_bounds():
    measures = measures_of({"oracle": 1.0, "top": 0.9, "tied": 0.9, "low": 0.5, "chance": 0.0})
    comparisons = paired_comparisons(measures, "rho")
    means = measures.groupby("metric")["rho"].mean()
    group = top_group(means, comparisons)
    assert group == {"top", "tied"}
    best = means.drop(["oracle", "chance"]).idxmax()
    apart = separated(comparisons)
    for metric in ("top", "tied", "low"):
        assert (metric in group) == (metric == best or frozenset((best, metric)) not in apart)


def test_top_group_needs_enough_paired_repetitions():
    measures = measures_of({"top": 0.9, "tied": 0.9, "low": 0.5}, repetitions=4)
    comparisons = paired_comparisons(measures, "rho")
    means = measures.groupby("metric")["rho"].mean()
    assert top_group(means, comparisons) == set()
    assert means.idxmax() in top_group(means, comparisons, min_repetitions=4) and "low" not in top_group(
        means, comparisons, min_repetitions=4
    )


def test_a_metric_with_a_failed_repetition_is_left_unmarked_by_name_not_put_below_the_best():
    """A failed evaluation voids its repetition: a metric paired with the best on 4 repetitions is not tested, and
    the legend says so (the ▲ legend alone would read its missing mark as "significantly below the best")."""
    measures = measures_of({"top": 0.9, "tied": 0.9, "gap": 0.85, "low": 0.5})
    measures = measures[~((measures["metric"] == "gap") & (measures["repetition"] == 3))]
    comparisons = paired_comparisons(measures, "rho")
    pairs = comparisons.set_index(["metric_a", "metric_b"])["n"]
    assert {n for (a, b), n in pairs.items() if "gap" in (a, b)} == {4}
    assert {n for (a, b), n in pairs.items() if "gap" not in (a, b)} == {5}
    means = measures.groupby("metric")["rho"].mean()
    group = top_group(means, comparisons)
    assert means.drop("gap").idxmax() in group and "gap" not in group and "low" not in group
    assert untested(means, comparisons) == {"gap"}
    table = pd.DataFrame({"rho": means, "L": means.drop("gap")})
    marks = column_marks({"rho": comparisons, "L": comparisons}, table)
    note = marks_note({"rho": comparisons, "L": comparisons}, marks, table)
    assert note.startswith(TOP_NOTE) and "Unmarked for fewer than 5 complete repetitions" in note
    assert "gap (rho)" in note  # L has no gap mean: it is not named there
    assert "gap (ρ)" in marks_note({"rho": comparisons, "L": comparisons}, marks, table, {"rho": "ρ"})  # report.html


def test_a_column_whose_best_lost_a_repetition_has_no_marks_and_says_why():
    measures = measures_of({"top": 0.95, "next": 0.9, "low": 0.5})
    measures = measures[~((measures["metric"] == "top") & (measures["repetition"] == 0))]
    comparisons = paired_comparisons(measures, "rho")
    means = measures.groupby("metric")["rho"].mean()
    assert means.idxmax() == "top" and top_group(means, comparisons) == set()
    assert untested(means, comparisons) == {"next", "low"}
    without_top = measures[measures["metric"] != "top"]
    table = pd.DataFrame({"rho": means, "L": without_top.groupby("metric")["rho"].mean()})
    comparisons_by = {"rho": comparisons, "L": paired_comparisons(without_top, "rho")}
    marks = column_marks(comparisons_by, table)
    assert set(marks) == {"L"}
    note = marks_note(comparisons_by, marks, table)
    assert "No ▲ in rho: the column's best has fewer than 5 complete repetitions" in note and "Unmarked" not in note
    assert marks_note(comparisons_by, {}, table) == FEW_NOTE and marks_note({}, {}, table) == ""


def test_with_counts_the_best_is_among_the_metrics_with_the_most_repetitions_as_the_bold():
    """Told how many repetitions each mean averages (as a run's tables are), the column's best is that of the
    metrics with the most, as the bold's: the column keeps its ▲ and the metric that lost one is named as untested
    (without the counts, its mean over 4 made it the best and left the column without marks)."""
    from textmetric_bench.reports.tables.table3 import repetition_counts

    measures = measures_of({"top": 0.95, "next": 0.9, "tied": 0.9, "low": 0.5})
    measures = measures[~((measures["metric"] == "top") & (measures["repetition"] == 0))]
    comparisons = {"rho": paired_comparisons(measures, "rho")}
    summary = summarise_measures(measures)
    means, counts = table3(summary)[["rho"]], repetition_counts(summary)
    assert means["rho"].idxmax() == "top" and counts.loc["top", "rho"] == 4
    marks = column_marks(comparisons, means, counts=counts)
    assert marks == {"rho": {"next", "tied"}}
    assert untested(means["rho"], comparisons["rho"], counts=counts["rho"]) == {"top"}
    note = marks_note(comparisons, marks, means, counts=counts)
    assert "not by a test: top (rho)" in note and "No ▲" not in note
    assert column_marks(comparisons, means) == {}  # the best by mean alone: top, paired on 4 repetitions


def test_write_tables_writes_long_significance_csv_and_marks_the_top_group(tmp_path):
    measures = measures_of({"top": 0.9, "tied": 0.9, "low": 0.5})
    paths = write_tables(measures, tmp_path)
    table = pd.read_csv(paths["significance_rho"])
    assert list(table.columns[:3]) == ["metric_a", "metric_b", "n"] and {"p", "p_holm", "better"} <= set(table.columns)
    assert len(table) == 3 and (table["n"] == 5).all()
    text = paths["table3_md"].read_text()
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert TOP_MARK in rows["top"] and TOP_MARK in rows["tied"] and TOP_MARK not in rows["low"]
    assert "<sup>" not in text and TOP_NOTE in text
    assert "Warning" not in text  # five repetitions: no warning


def test_twenty_metrics_read_with_one_mark_per_cell(tmp_path):
    """At 20 metrics a cell holds its mean, at most one ▲ and its interval: no letters, whatever the separations."""
    centres = {f"metric{i:02d}": 0.95 - (0.001 * i if i < 4 else 0.02 * i) for i in range(20)}  # 4 close at the top
    measures = measures_of(centres, noise=0.004)
    comparisons = paired_comparisons(measures, "rho")
    paths = write_tables(measures, tmp_path)
    text = paths["table3_md"].read_text()
    rows = [line for line in text.splitlines() if line.startswith("| metric") and not line.startswith("| metric |")]
    assert len(rows) == 20
    marked = {row.split("|")[1].strip() for row in rows if TOP_MARK in row}
    means = measures.groupby("metric")["rho"].mean()
    assert marked == top_group(means, comparisons) and len(marked) >= 2 and "metric19" not in marked
    for row in rows:
        cell = row.split("|")[2].strip()  # the rho column
        assert cell.count(TOP_MARK) <= 1 and "<sup>" not in cell
        assert re.fullmatch(r"(\*\*)?-?\d*\.\d{3}(\*\*)?( ▲)? \[-?\d*\.\d{3}, -?\d*\.\d{3}\]", cell), cell


def test_column_marks_test_t100_on_t():
    measures = measures_of({"fast": 0.9, "slow": 0.5}).rename(columns={"rho": "T"})
    comparisons = {"T": paired_comparisons(measures, "T")}
    means = pd.DataFrame({"T100": measures.groupby("metric")["T"].mean() / 100})
    assert column_marks(comparisons, means) == {"T100": {"fast"}}


def test_fewer_than_five_repetitions_warn_in_the_markdown_and_mark_nothing(tmp_path):
    paths = write_tables(measures_of({"x": 0.9, "y": 0.9, "z": 0.5}, repetitions=3), tmp_path)
    text = paths["table3_md"].read_text()
    assert "Warning: only 3 repetitions" in text and FEW_NOTE in text
    assert TOP_MARK not in text.replace(FEW_NOTE, "")


def test_bounds_are_first_and_last_and_never_bold():
    summary = pd.DataFrame(
        [(m, "A", v, 0.0, 5, v, v) for m, v in (("chance", 0.5), ("zeta", 0.8), ("alpha", 0.7), ("oracle", 1.0))],
        columns=["metric", "measure", "mean", "std", "n", "ci_low", "ci_high"],
    )
    cells = table3_markdown_cells(summary)
    assert list(cells.index) == ["oracle", "alpha", "zeta", "chance"]
    assert cells.loc["zeta", "A"].startswith("**") and not cells.loc["oracle", "A"].startswith("**")


def test_bounds_are_known_by_name_in_every_shown_form():
    for name in ("oracle", "oracle (reference)", "ceiling (oracle)", "oracle (similarity, negated)"):
        assert bound_of(name) == "ceiling" and bound_label(name).startswith("ceiling (oracle")
    assert bound_of("floor (chance)") == "floor" and bound_of("oracle_v2") is None and bound_of("chancery") is None
    assert ranked(["chance", "fid", "oracle"]) == ["fid"]


def test_comparisons_need_two_metrics_and_repetitions():
    assert all_comparisons(measures_of({"only": 0.5}), ["rho"]) == {}


def test_sweep_table_puts_the_ceiling_first_the_floor_last_and_bolds_neither(tmp_path):
    from textmetric_bench.reports.sweep.aggregate import sweep_markdown

    long = pd.DataFrame(
        [
            {
                "pair": "p",
                "k": 4,
                "n": 12,
                "task": "ksc",
                "run_dir": str(tmp_path / "0"),
                "metric": m,
                "measure": "A",
                "mean": v,
                "warning": "",
            }
            for m, v in (("chance", 0.5), ("fid", 0.9), ("chi", 0.7), ("oracle", 1.0))
        ]
    )
    rows = [line for line in sweep_markdown(long, tmp_path).splitlines() if line.startswith("| p |")]
    assert [r.split("|")[4].strip() for r in rows] == ["ceiling (oracle)", "chi", "fid", "floor (chance)"]
    assert "**.900**" in rows[2] and "**" not in rows[0] + rows[3]


def test_the_matrix_reads_equal_metrics_as_zero_both_ways_and_stripes_too_few_repetitions():
    from textmetric_bench.reports.html.tables import significance_html

    same = pd.DataFrame({"metric": ["a", "b"] * 5, "repetition": [r for r in range(5) for _ in "ab"], "rho": 0.5})
    comparisons = {"rho": paired_comparisons(same, "rho")}
    means = pd.DataFrame({"rho": same.groupby("metric")["rho"].mean()})
    page = significance_html(comparisons, means)
    assert page.count(">.000</td>") == 2 and "-.000" not in page and "hint" not in page
    short = paired_comparisons(same[same["repetition"] < 4], "rho")
    page = significance_html({"rho": short}, means)
    assert page.count("class='tie hint' title='Holm p = 1.0000; 4 paired repetitions: a hint, not a finding'") == 2


def test_the_matrix_legend_speaks_of_t_s_unit_only_where_t_is_compared():
    from textmetric_bench.reports.html.tables import significance_html

    rows = measures_of({"a": 0.5, "b": 0.6})
    rows["T"] = np.where(rows["metric"] == "a", 300.0, 500.0)
    means = pd.DataFrame(
        {"rho": rows.groupby("metric")["rho"].mean(), "T100": rows.groupby("metric")["T"].mean() / 100}
    )
    legend = "in the table's unit [100 op/s] (the test is the same in pair evaluations per second)"
    assert "op/s" not in significance_html({"rho": paired_comparisons(rows, "rho")}, means)
    assert legend in significance_html(all_comparisons(rows, ["rho", "T"]), means)
