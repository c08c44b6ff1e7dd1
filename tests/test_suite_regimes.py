"""The suite report's length regimes (reports/suite/regimes.py): a run records its pair's regime from the texts
it uses, and the report groups the metrics again over each regime's settings alone, with the paired test."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.data.lengths import pair_regime
from textmetric_bench.reports.suite.groups import group_measure
from textmetric_bench.reports.suite.report import write_suite_report
from textmetric_bench.reports.suite.settings import load_settings, repetition_table, setting_table

from test_suite_ranks import write_run


@pytest.mark.parametrize(
    ("a_words", "b_words", "regime"),
    [
        (8, 12, "sentence"),
        (80, 150, "paragraph"),
        (300, 250, "document"),
        (10, 90, "sentence+paragraph"),
        (400, 20, "sentence+document"),
    ],
)
def test_a_pairs_regime_is_both_sides_median_words(a_words, b_words, regime):
    side = lambda words, n: [" ".join(["w"] * (words + i % 3 - 1)) for i in range(n)]  # noqa: E731
    assert pair_regime(side(a_words, 7), side(b_words, 9)) == regime


def suite(tmp_path, rng) -> None:
    """Two sentence settings where a leads b by .1 and two document settings where b leads a by .1, five
    repetitions each with little noise: a regime's groups must follow its own settings, not the whole suite's."""
    for i, (regime, lead) in enumerate([("sentence", "a"), ("sentence", "a"), ("document", "b"), ("document", "b")]):
        values = {m: tuple(0.8 + (0.1 if m == lead else 0.0) + rng.normal(0, 0.005, 5)) for m in ("a", "b", "c")}
        run = write_run(tmp_path / f"s{i}", pair=f"{regime}{i}", k=7 + i, values={"rho": values})
        (run / "run.json").write_text(json.dumps({"pair": f"{regime}{i}", "task": "ksc", "regime": regime}))


def test_the_report_groups_each_regime_over_its_own_settings(tmp_path):
    suite(tmp_path, np.random.default_rng(0))
    files = write_suite_report(tmp_path)
    regimes = pd.read_csv(files["regimes"])
    assert set(regimes["regime"]) == {"sentence", "document"}
    assert set(regimes["settings"]) == {2}
    lead = regimes[regimes["group"] == 1].groupby("regime")["metric"].apply(set).to_dict()
    assert lead == {"sentence": {"a"}, "document": {"b"}}
    # the same groups as the paired test run directly on each regime's settings
    runs = load_settings(tmp_path)
    table, repetitions = setting_table(runs, tmp_path), repetition_table(runs, tmp_path)
    sentence = sorted(table.loc[table["regime"] == "sentence", "setting"].unique())
    direct = group_measure(repetitions, "rho", sentence, ["a", "b", "c"])
    got = regimes[regimes["regime"] == "sentence"].set_index("metric")["group"]
    assert got.to_dict() == direct.groups.to_dict()
    report = files["suite_report"].read_text()
    assert "## By length regime" in report and "| sentence | 2 | rho |" in report


def test_runs_without_a_recorded_regime_are_said_so(tmp_path):
    write_run(tmp_path / "old", values={"rho": {"a": (0.9, 0.8), "b": (0.5, 0.6)}})
    files = write_suite_report(tmp_path)
    assert pd.read_csv(files["regimes"]).empty
    assert "No run of this suite recorded its pair's regime" in files["suite_report"].read_text()
