"""Ranks across settings (reports/suite/ranks.py), the suite report and the metric cards, from run directories
written here by hand: the mean ranks and Friedman's statistic are recomputed independently (by hand and by the
textbook formula, Demšar 2006 eq. 1), the post-hoc p by scipy and statsmodels, and the bounds stay out."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from statsmodels.stats.multitest import multipletests

from textmetric_bench.reports.suite.ranks import ENOUGH_SETTINGS, complete_block, few_settings_warning, rank_measures
from textmetric_bench.reports.suite.report import write_suite_report
from textmetric_bench.reports.suite.settings import load_settings, setting_table

#: rho of three metrics in four KSC settings, per repetition (two each): the per-setting means are 0.9/0.5/0.7,
#: 0.8/0.6/0.4, 0.6/0.7/0.5 and 0.9/0.3/0.8, so the ranks (1 = best) are by hand
#: (1,3,2), (1,2,3), (2,1,3), (1,3,2): mean ranks a 1.25, b 2.25, c 2.5.
RHO = {
    "s1": {"a": (0.85, 0.95), "b": (0.45, 0.55), "c": (0.7, 0.7)},
    "s2": {"a": (0.8, 0.8), "b": (0.5, 0.7), "c": (0.3, 0.5)},
    "s3": {"a": (0.6, 0.6), "b": (0.7, 0.7), "c": (0.4, 0.6)},
    "s4": {"a": (0.9, 0.9), "b": (0.2, 0.4), "c": (0.8, 0.8)},
}
BY_HAND = {"a": 1.25, "b": 2.25, "c": 2.5}


def write_run(
    directory: Path,
    *,
    task: str = "ksc",
    pair: str = "p",
    k: int = 7,
    n: int = 100,
    values: dict[str, dict[str, tuple]],
    source: dict[str, str] | None = None,
    own_noise: pd.DataFrame | None = None,
) -> Path:
    """A run directory as a task leaves it: .hydra/config.yaml, run.json and measures.csv (values: measure ->
    metric -> one value per repetition)."""
    (directory / ".hydra").mkdir(parents=True)
    config = {"task": {"name": task}, "pair": {"name": pair}, "seed": 0, **({"k": k, "n": n} if task == "ksc" else {})}
    (directory / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config))
    (directory / "run.json").write_text(json.dumps({"pair": pair, "task": task}))
    rows = {}
    for measure, per_metric in values.items():
        for metric, reps in per_metric.items():
            for r, value in enumerate(reps):
                rows.setdefault(
                    (metric, r), {"metric": metric, "repetition": r, "source": (source or {}).get(metric, "run")}
                )[measure] = value
    pd.DataFrame(list(rows.values())).to_csv(directory / "measures.csv", index=False)
    if own_noise is not None:
        own_noise.to_csv(directory / "own_noise.csv", index=False)
    return directory


@pytest.fixture
def suite_dir(tmp_path) -> Path:
    """Four KSC settings of rho (RHO) with the bounds, and two robustness settings of S."""
    for i, (setting, per_metric) in enumerate(RHO.items()):
        bounds = {"oracle": (1.0, 1.0), "chance": (0.01 * i, -0.01)}
        write_run(
            tmp_path / setting,
            pair=f"pair{i // 2}",
            k=(7, 12)[i % 2],
            values={"rho": {**per_metric, **bounds}},
            own_noise=pd.DataFrame(
                {"metric": ["b"], "seeds": [5], "own_sd": [0.01], "data_sd": [0.04], "ratio": [0.25]}
            ),
        )
    for i in range(2):
        write_run(
            tmp_path / f"rob{i}",
            task="robustness",
            pair=f"pair{i}",
            values={"S": {"a": (0.9, 0.9), "b": (0.8, 0.8), "c": (0.7 + 0.2 * i, 0.7 + 0.2 * i), "oracle": (1.0, 1.0)}},
        )
    return tmp_path


def test_mean_ranks_and_friedman_match_a_hand_and_a_textbook_computation(suite_dir):
    ranks = rank_measures(setting_table(load_settings(suite_dir), suite_dir))
    rho = ranks["rho"]
    assert rho.mean_ranks.to_dict() == pytest.approx(BY_HAND)
    # Friedman's statistic from the mean ranks (Demšar 2006 eq. 1), independent of the code under test
    n_settings, k = 4, 3
    chi2 = 12 * n_settings / (k * (k + 1)) * (sum(r**2 for r in BY_HAND.values()) - k * (k + 1) ** 2 / 4)
    assert rho.statistic == pytest.approx(chi2)
    assert rho.p == pytest.approx(stats.chi2.sf(chi2, k - 1))
    means = pd.DataFrame({m: [np.mean(RHO[s][m]) for s in RHO] for m in "abc"})
    assert rho.statistic == pytest.approx(stats.friedmanchisquare(*(means[m] for m in "abc")).statistic)


def test_the_post_hoc_test_is_wilcoxon_with_holm_over_the_setting_means(suite_dir):
    rho = rank_measures(setting_table(load_settings(suite_dir), suite_dir))["rho"]
    means = {m: np.array([np.mean(RHO[s][m]) for s in RHO]) for m in "abc"}
    pairs = [("a", "b"), ("a", "c"), ("b", "c")]
    raw = [stats.wilcoxon(means[x], means[y], zero_method="zsplit").pvalue for x, y in pairs]
    holm = multipletests(raw, method="holm")[1]
    for (x, y), p in zip(pairs, holm):
        assert rho.posthoc.loc[x, y] == pytest.approx(p)
        assert rho.posthoc.loc[y, x] == pytest.approx(p)


def test_bounds_are_never_ranked_and_are_drawn_as_reference_values(suite_dir):
    files = write_suite_report(suite_dir)
    ranks = pd.read_csv(files["ranks"])
    setting_ranks = pd.read_csv(files["setting_ranks"])
    assert {"friedman_chi2", "friedman_p", "mean_rank"} <= set(ranks.columns)
    assert set(ranks["metric"]) == {"a", "b", "c"}
    assert set(setting_ranks["metric"]) == {"a", "b", "c"}
    assert set(ranks["measure"]) == {"rho", "S"}
    assert not list(suite_dir.glob("card_oracle*")) and not list(suite_dir.glob("card_chance*"))
    assert sorted(p.name for p in suite_dir.glob("card_*.png")) == ["card_a.png", "card_b.png", "card_c.png"]
    assert (suite_dir / "cd_rho.png").stat().st_size > 10_000
    report = files["suite_report"].read_text()
    assert "## Bounds (reference lines, not ranked)" in report and "ceiling (oracle)" in report


def test_the_report_says_how_many_settings_and_warns_when_they_are_few(suite_dir):
    ranks = pd.read_csv(write_suite_report(suite_dir)["ranks"])
    rho, s = ranks[ranks["measure"] == "rho"].iloc[0], ranks[ranks["measure"] == "S"].iloc[0]
    assert (rho["settings"], s["settings"]) == (4, 2)
    assert "rest on 4 settings" in rho["warning"] and "Demšar" in rho["warning"]
    assert "2/2^2 = 0.5" in s["warning"]  # two settings can separate nothing
    report = (suite_dir / "suite_report.md").read_text()
    assert "**Warning** (Friedman, Wilcoxon–Holm): the tests rest on 4 settings" in report  # the caption


def test_the_warning_stops_at_the_threshold():
    assert few_settings_warning(ENOUGH_SETTINGS, 8) == ""
    assert "rest on 10 settings" in few_settings_warning(ENOUGH_SETTINGS - 1, 8)
    assert "5 metrics" in few_settings_warning(ENOUGH_SETTINGS, 5)


def test_an_incomplete_block_leaves_out_what_misses_most_and_says_so():
    wide = pd.DataFrame(
        {
            "a": [1, 2, 3, 4, 5, 6],
            "b": [1, np.nan, np.nan, np.nan, 5, 6],
            "c": [1, 2, np.nan, 4, 5, 6],
            "d": [1, 2, 3, 4, 5, 6],
        },
        index=[f"s{i}" for i in range(6)],
        dtype=float,
    )
    block, left_out = complete_block(wide)
    assert list(block.columns) == ["a", "c", "d"] and list(block.index) == ["s0", "s1", "s3", "s4", "s5"]
    assert left_out[0].startswith("metric b: no value in 3 of 6 settings")
    assert left_out[1] == "setting s2: no value of c"


def test_a_card_shows_intervals_ranks_reference_rows_own_noise_and_failure_modes(suite_dir):
    write_run(
        suite_dir / "s5",
        pair="pair9",
        values={"rho": {"a": (0.5, 0.7), "b": (0.9, 0.9), "c": (0.1, 0.2)}},
        source={"b": "reference"},
    )
    pd.DataFrame(
        {
            "metric": ["b"],
            "orientation": ["similarity"],
            "range": ["0 to 1"],
            "stochastic": ["yes"],
            "source": ["a paper"],
            "failure_modes": ["breaks on empty texts"],
        }
    ).to_csv(suite_dir / "metric_catalogue.csv", index=False)
    report = write_suite_report(suite_dir)["suite_report"].read_text()
    card_b = report[report.index("### b\n") : report.index("### c\n")]
    assert "breaks on empty texts" in card_b and "0 to 1" in card_b
    assert "own sd 0.01 vs data sd 0.04 (ratio 0.25)" in card_b
    assert "| pair9 k=7 n=100 | .900 [.900, .900] #1/3 ᴿ |" in card_b  # a reference value, first in its setting
    assert "a similarity (larger = more alike), scored on its negation" in card_b
    assert "| pair0 k=7 n=100 | .500 [.450, .550] #3/3 |" in card_b  # bootstrap interval of (.45, .55), ranked last
    assert "mean rank 2.00, place 2 of 3 over 5 settings" in card_b
    card_a = report[report.index("### a\n") : report.index("### b\n")]
    assert "not recorded" in card_a  # no catalogue row for a: said, not invented
