"""The README's suite example is checked against the suite results it was written from
(``reports/suite/<README_SUITE>_example/``), and those results against what today's code ships elsewhere:

- the results are a full suite (``suite=all``: at least 12 KSC settings over 6 pairs and the three length regimes;
  ``suite=paper``: 004's settings);
- the README section is exactly what ``readme.section`` writes from the committed tables;
- today's ranking code, run on the committed per-setting ``settings.csv``, gives the committed ``ranks.csv``, and
  (``suite=all``) today's paired test on the committed ``repetitions.csv`` gives the committed groups;
- the committed per-setting values equal 004's Table 3 reproduction (``reports/paper_table3``, rebuilt by
  ``make regenerate STEPS=paper``) and the shipped reference rows (``reports/reference``), which the integrity
  checks tie to today's code.

Recomputing the suite itself takes about an hour (``make suite-example``) and is not part of the test tiers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.reports.suite.groups import group_measure
from textmetric_bench.reports.suite.ranks import rank_measures, ranks_frame
from textmetric_bench.reports.suite.readme import (
    END,
    README_SUITE,
    RESULTS,
    START,
    paper_settings_problem,
    section,
    suite_problem,
)
from textmetric_bench.reports.suite.regimes import SHOWN

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / RESULTS.format(suite=README_SUITE)
DETERMINISTIC = ("A", "Aw", "rho", "omega2", "L", "S", "I")  # T is a speed: it moves with the machine's load


@pytest.fixture(scope="module")
def settings() -> pd.DataFrame:
    return pd.read_csv(RESULTS_DIR / "settings.csv")


@pytest.fixture(scope="module")
def ranks() -> pd.DataFrame:
    return pd.read_csv(RESULTS_DIR / "ranks.csv")


def test_the_committed_results_are_a_full_suite(settings):
    assert (suite_problem if README_SUITE == "all" else paper_settings_problem)(settings) is None


@pytest.mark.skipif(README_SUITE != "all", reason="groups are kept for suite=all")
def test_todays_paired_test_gives_the_committed_groups(settings):
    repetitions = pd.read_csv(RESULTS_DIR / "repetitions.csv")
    kept = pd.read_csv(RESULTS_DIR / "groups.csv")
    ranked = rank_measures(settings)
    for measure in SHOWN:
        result = group_measure(
            repetitions, measure, list(ranked[measure].values.index), list(ranked[measure].values.columns)
        )
        shipped = kept[kept["measure"] == measure].set_index("metric")["group"]
        assert result is not None and dict(result.groups) == shipped.to_dict(), measure


def test_the_readme_section_is_written_from_the_committed_ranks(ranks):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shipped = START + readme.split(START, 1)[1].split(END, 1)[0] + END
    assert shipped == section(RESULTS_DIR, README_SUITE)[0]


def test_todays_ranking_code_gives_the_committed_ranks(settings, ranks):
    again = ranks_frame(rank_measures(settings))
    again = again[again["measure"].isin(DETERMINISTIC)].reset_index(drop=True)
    shipped = ranks[ranks["measure"].isin(DETERMINISTIC)].reset_index(drop=True)
    assert list(again["measure"] + again["metric"]) == list(shipped["measure"] + shipped["metric"])
    for column in ("mean_rank", "place", "settings", "metrics", "friedman_chi2", "friedman_p"):
        np.testing.assert_allclose(
            again[column].astype(float), shipped[column].astype(float), rtol=1e-9, err_msg=column
        )
    for column in ("not_separated_from", "warning"):
        assert list(again[column].fillna("")) == list(shipped[column].fillna("")), column


def test_the_committed_values_equal_the_table3_reproduction(settings):
    checked = 0
    for path in sorted((ROOT / "reports" / "paper_table3").glob("*_k*.csv")):
        pair, k = path.stem.rsplit("_k", 1)
        table = pd.read_csv(path).set_index("metric")
        rows = settings[(settings["task"] == "ksc") & (settings["pair"] == pair) & (settings["k"] == int(k))]
        assert not rows.empty, f"suite=paper lacks {pair} k={k}"
        for row in rows[rows["measure"].isin(DETERMINISTIC) & rows["metric"].isin(table.index)].itertuples():
            assert row.mean == pytest.approx(table.loc[row.metric, row.measure], rel=1e-12), (path.name, row)
            checked += 1
    assert checked >= 4 * 8 * 5  # four settings, 004's eight metrics, five measures


def test_the_committed_values_equal_the_shipped_reference_rows(settings):
    checked = 0
    for path in sorted((ROOT / "reports" / "reference").glob("*.json")):
        shipped = json.loads(path.read_text())
        s = shipped["settings"]
        rows = settings[
            (settings["task"] == s["task"])
            & (settings["pair"] == s["pair"])
            & (settings["k"] == s["k"])
            & (settings["n"] == s["n"])
            & (settings["seed"] == s["seed"])
            & (settings["source"] == "run")
        ]
        if rows.empty:
            continue  # a reference setting outside suite=paper
        for metric, entry in shipped["metrics"].items():
            per_repetition = pd.DataFrame(entry["measures"])
            for measure in ("rho", "omega2", "L", "A", "Aw"):
                if measure not in per_repetition:
                    continue
                value = rows[(rows["metric"] == metric) & (rows["measure"] == measure)]["mean"]
                assert len(value) == 1, (path.name, metric, measure)
                assert value.iloc[0] == pytest.approx(per_repetition[measure].mean(), rel=1e-9), (
                    path.name,
                    metric,
                    measure,
                )
                checked += 1
    assert checked >= 2 * 18 * 5  # atis_news and clinc150_banking77 at k=7, every default metric


@pytest.mark.parametrize("suite", sorted({"paper", "all"} - {README_SUITE}))
def test_the_other_kept_suite_is_still_full_and_ranked_by_todays_code(suite):
    """The kept results of the suite the README does not show stay true too (``--suite`` writes its section)."""
    kept = ROOT / RESULTS.format(suite=suite)
    settings = pd.read_csv(kept / "settings.csv")
    assert (suite_problem if suite == "all" else paper_settings_problem)(settings) is None
    again = ranks_frame(rank_measures(settings))
    again = again[again["measure"].isin(DETERMINISTIC)].reset_index(drop=True)
    shipped = pd.read_csv(kept / "ranks.csv")
    shipped = shipped[shipped["measure"].isin(DETERMINISTIC)].reset_index(drop=True)
    assert list(again["measure"] + again["metric"]) == list(shipped["measure"] + shipped["metric"])
    np.testing.assert_allclose(again["mean_rank"].astype(float), shipped["mean_rank"].astype(float), rtol=1e-9)
