"""The paired test over (setting, repetition) and its groups (reports/suite/groups.py): its p against
``scipy.stats.permutation_test``, the groups against mt-metrics-eval's rule by hand, the report's files against an
independent recomputation, suite=paper's real repetitions, and the simulation that says what the test can do.

The simulation (docs/suites.md, "How the ranks are made") draws a rho-like measure, chosen from the spreads of the
shipped reference rows (reports/reference/: a metric's sd over 5 repetitions of rho has median .032, quartiles
.017 and .048) before any test was run:

    value[m, s, r] = mu_s + c[s, r] + sd[m, s] * z[m, s, r]  (+ EFFECT for the better metric)

with 12 settings of 5 repetitions, mu_s ~ U(.55, .95) (settings differ in difficulty), c[s, r] ~ N(0, .01) (the
collection of repetition r, shared by every metric), sd[m, s] log-uniform in [.015, .05] (each metric's noise in
each setting: its own seed's noise and its response to the collection), z standard normal.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from textmetric_bench.reports.suite.groups import (
    RESAMPLES,
    compare,
    sign_flip_p,
    significance_groups,
    stratified_weights,
)
from textmetric_bench.reports.suite.report import write_suite_report

from test_suite_ranks import RHO, write_run

ROOT = Path(__file__).resolve().parents[1]
SETTINGS, REPETITIONS = 12, 5
DIFFICULTY = (0.55, 0.95)
COLLECTION_SD = 0.01
NOISE_SD = (0.015, 0.05)
#: The effect the power claim is stated for: the better metric's value is this much higher in every repetition.
EFFECT = 0.04


def simulated_suite(rng: np.random.Generator, metrics: int, effect: float = 0.0, interaction: float = 0.0):
    """(metrics x observations) values and each observation's setting, from the model of the module docstring;
    metric 0 is better by ``effect``; ``interaction``: sd of a metric x setting term (metrics that differ per
    setting but not on average)."""
    mu = rng.uniform(*DIFFICULTY, SETTINGS)
    collection = rng.normal(0, COLLECTION_SD, (SETTINGS, REPETITIONS))
    sd = np.exp(rng.uniform(*np.log(NOISE_SD), (metrics, SETTINGS)))
    noise = sd[:, :, None] * rng.standard_normal((metrics, SETTINGS, REPETITIONS))
    values = mu[None, :, None] + collection[None] + noise
    values += rng.normal(0, interaction, (metrics, SETTINGS))[:, :, None] if interaction else 0
    values[0] += effect
    return values.reshape(metrics, -1), np.repeat(np.arange(SETTINGS), REPETITIONS)


def separation_rates(
    suites: int, metrics: int, effect: float, interaction: float = 0.0, seed: int = 0, resamples: int = 9999
) -> tuple[float, float]:
    """Over ``suites`` simulated suites: the share where metric 0 is alone in group 1 (separated from every other
    metric), and the share where the groups are more than one (some pair separated)."""
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(metrics)]
    alone = some = 0
    for _ in range(suites):
        values, setting = simulated_suite(rng, metrics, effect, interaction)
        groups = compare(values, setting, names, resamples=resamples, rng=rng).groups
        alone += bool(groups["m0"] == 1 and (groups == 1).sum() == 1)
        some += bool(groups.max() > 1)
    return alone / suites, some / suites


# --- the test itself ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [7, 12])
def test_the_p_are_scipys_exact_permutation_test(n):
    rng = np.random.default_rng(n)
    differences = rng.normal(0.3, 1.0, (4, n))
    weights = stratified_weights(np.array([0, 0, 0] + [1] * (n - 3)))  # two settings, 3 and n - 3 repetitions
    statistic, p = sign_flip_p(differences, weights)
    for row, s, q in zip(differences, statistic, p):
        ref = stats.permutation_test(
            (row,),
            lambda d, axis=-1: np.sum(d * weights, axis=axis),
            vectorized=True,
            permutation_type="samples",
            n_resamples=9999,
        )
        assert s == pytest.approx(ref.statistic)
        assert q == pytest.approx(ref.pvalue)  # both exact: 2^n <= 9999 patterns


def test_with_random_patterns_the_p_agree_with_scipys_within_monte_carlo_error():
    rng = np.random.default_rng(1)
    differences = rng.normal(0.12, 1.0, (3, 60))
    weights = stratified_weights(np.repeat(np.arange(12), 5))
    _, p = sign_flip_p(differences, weights, resamples=20000, rng=rng)
    for row, q in zip(differences, p):
        ref = stats.permutation_test(
            (row,),
            lambda d, axis=-1: np.sum(d * weights, axis=axis),
            vectorized=True,
            permutation_type="samples",
            n_resamples=20000,
            rng=rng,
        )
        tail = ref.pvalue / 2  # a two-sided p is twice a tail's share of the patterns
        assert abs(q - ref.pvalue) < 4 * 2 * np.sqrt(tail * (1 - tail) / 20000) * np.sqrt(2) + 1e-4


def test_every_setting_weighs_the_same_whatever_its_repetitions():
    values = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])  # setting 0: three repetitions, setting 1: one
    result = compare(values, np.array([0, 0, 0, 1]), ["a", "b"])
    assert result.means["a"] == pytest.approx(0.5)  # (1 + 0) / 2, not 3 / 4
    assert result.difference.loc["a", "b"] == pytest.approx(0.5)


def test_groups_follow_mt_metrics_evals_rule():
    order = ["a", "b", "c", "d", "e"]
    p = pd.DataFrame(1.0, index=order, columns=order)
    p.loc["a", "c"] = p.loc["c", "a"] = 0.01  # c is separated from a, not from b: c opens group 2 (any member)
    p.loc["b", "e"] = p.loc["e", "b"] = 0.01  # b is in group 1, not the current group when e comes: e stays
    assert list(significance_groups(order, p)) == [1, 1, 2, 2, 2]
    p.loc["c", "e"] = p.loc["e", "c"] = 0.04
    assert list(significance_groups(order, p)) == [1, 1, 2, 2, 3]


def test_identical_values_are_never_separated():
    values = np.tile(np.linspace(0.5, 0.9, 10), (3, 1))
    result = compare(values, np.repeat(np.arange(5), 2), ["a", "b", "c"])
    assert (result.p.to_numpy() == 1).all() and set(result.groups) == {1}


# --- the report -----------------------------------------------------------------------------------------------


def test_the_report_writes_the_groups_an_independent_computation_gives(tmp_path):
    for i, (setting, per_metric) in enumerate(RHO.items()):
        write_run(
            tmp_path / setting,
            pair=f"pair{i // 2}",
            k=(7, 12)[i % 2],
            values={"rho": {**per_metric, "oracle": (1.0, 1.0)}},
        )
    files = write_suite_report(tmp_path)
    groups, ranks = pd.read_csv(files["groups"]), pd.read_csv(files["ranks"])
    # by hand: scipy's exact test on each pair's 8 differences, statistic = mean of the 4 settings' means, Holm
    values = {m: np.array([v for s in RHO for v in RHO[s][m]]) for m in "abc"}
    weights = np.full(8, 1 / 8)
    pairs = list(itertools.combinations("abc", 2))
    raw = [
        stats.permutation_test(
            (values[x] - values[y],),
            lambda d, axis=-1: np.sum(d * weights, axis=axis),
            vectorized=True,
            permutation_type="samples",
        ).pvalue
        for x, y in pairs
    ]
    holm = dict(zip(pairs, multipletests(raw, method="holm")[1]))
    paired = pd.read_csv(files["paired_rho"], index_col="metric")
    for (x, y), q in holm.items():
        assert paired.loc[x, y] == pytest.approx(q)
    means = {m: np.mean([np.mean(RHO[s][m]) for s in RHO]) for m in "abc"}
    order = sorted(means, key=means.get, reverse=True)
    expected = significance_groups(order, paired)
    assert list(groups["metric"]) == order
    assert list(groups["group"]) == list(expected)
    assert groups["mean"].tolist() == pytest.approx([means[m] for m in order])
    assert ranks.set_index("metric")["group"].to_dict() == expected.to_dict()
    assert "oracle" not in set(groups["metric"])
    report = files["suite_report"].read_text()
    assert "**Groups by the paired test over repetitions** (4 settings, 8 (setting, repetition) pairs" in report
    repetitions = pd.read_csv(files["repetitions"])
    assert len(repetitions[(repetitions["measure"] == "rho") & (repetitions["metric"] != "oracle")]) == 4 * 3 * 2


def test_a_repetition_missing_a_value_is_left_out_and_said(tmp_path):
    for i, (setting, per_metric) in enumerate(RHO.items()):
        values = {m: v for m, v in per_metric.items()}
        if setting == "s2":
            values["c"] = (0.3, float("nan"))
        write_run(tmp_path / setting, pair=f"pair{i}", values={"rho": values})
    groups = pd.read_csv(write_suite_report(tmp_path)["groups"])
    assert (groups["observations"] == 7).all()
    assert groups["left_out"].iloc[0] == "setting pair1 k=7 n=100 repetition 1: no value of c"


def test_too_few_repetitions_to_separate_anything_are_said(tmp_path):
    for i in range(2):
        write_run(
            tmp_path / f"rob{i}",
            task="robustness",
            pair=f"pair{i}",
            values={"S": {"a": (0.9, 0.95), "b": (0.5, 0.6), "c": (0.1, 0.2)}},
        )
    files = write_suite_report(tmp_path)
    assert (pd.read_csv(files["groups"])["group"] == 1).all()  # a is better in all 4 pairs: 2/2^4 is no evidence
    assert "smallest two-sided p is 2/2^4 = 0.125, so it can separate nothing" in files["suite_report"].read_text()


# --- real repetitions: suite=paper's four KSC settings ----------------------------------------------------------


@pytest.fixture(scope="module")
def paper_repetitions() -> pd.DataFrame:
    """Per-repetition rho, omega2, L, A, Aw of 004's metrics in suite=paper's four KSC settings, from the committed
    distances of the Table 3 reproduction (reports/paper_table3/distances.csv)."""
    from textmetric_bench.measures.ksc import collection_measures

    distances = pd.read_csv(ROOT / "reports" / "paper_table3" / "distances.csv")
    rows = []
    for (pair, k, metric, r), g in distances.groupby(["pair", "k", "metric", "repetition"]):
        measures = collection_measures(g["i"], g["j"], g["distance"], np.ones(len(g)), int(k))
        rows += [
            {"setting": f"{pair} k={k} n=100", "metric": metric, "repetition": r, "measure": m, "value": v}
            for m, v in measures.items()
            if m != "T"
        ]
    return pd.DataFrame(rows)


def test_the_repetitions_give_the_committed_example_suites_setting_means(paper_repetitions):
    example = pd.read_csv(ROOT / "reports" / "suite" / "paper_example" / "settings.csv")
    means = paper_repetitions.groupby(["setting", "metric", "measure"])["value"].mean()
    checked = 0
    for row in example[example["measure"].isin(["rho", "omega2", "L", "A", "Aw"])].itertuples():
        if (row.setting, row.metric, row.measure) in means.index:
            assert means[(row.setting, row.metric, row.measure)] == pytest.approx(row.mean, rel=1e-9)
            checked += 1
    assert checked >= 4 * 8 * 5


def test_on_suite_papers_settings_the_paired_test_separates_where_wilcoxon_cannot(paper_repetitions):
    rho = paper_repetitions[paper_repetitions["measure"] == "rho"]
    wide = rho.pivot_table(index=["setting", "repetition"], columns="metric", values="value")
    settings = wide.index.get_level_values("setting")
    setting_index = pd.factorize(settings)[0]
    result = compare(wide.to_numpy().T, setting_index, list(wide.columns), "rho")
    example = pd.read_csv(ROOT / "reports" / "suite" / "paper_example" / "ranks.csv")
    assert example.loc[example["measure"] == "rho", "not_separated_from"].str.split().str.len().eq(17).all()
    assert result.groups.max() > 1  # 4 settings x 5 repetitions separate some of 004's metrics


# --- the simulation ---------------------------------------------------------------------------------------------


def test_simulated_a_better_metric_is_separated_and_identical_ones_are_not():
    """Six metrics, 200 simulated suites per case (the slow tier runs 18 metrics)."""
    alone, _ = separation_rates(200, 6, EFFECT, seed=1)
    _, some = separation_rates(200, 6, 0.0, seed=2)
    assert alone >= 0.8, f"the better metric was separated from the others in {alone:.0%} of suites"
    assert some <= 0.05, f"identical metrics were separated in {some:.0%} of suites"


def test_docs_suites_md_states_the_simulations_model_and_the_tests_resamples():
    docs = " ".join((ROOT / "docs" / "suites.md").read_text(encoding="utf-8").split())
    assert f"{RESAMPLES:,} random sign patterns" in docs
    assert f"in {SETTINGS} settings of {REPETITIONS} repetitions" in docs
    assert f"μ_s ~ U({DIFFICULTY[0]:g}, {DIFFICULTY[1]:g})".replace("0.", ".") in docs
    assert f"c_{{s,r}} ~ N(0, {COLLECTION_SD:g})".replace("0.", ".") in docs
    assert f"log-uniform in [{NOISE_SD[0]:g}, {NOISE_SD[1]:g}]".replace("0.", ".") in docs
    assert f"better metric is +{EFFECT:g} in every repetition" in docs


def test_the_reference_rows_spread_is_what_docs_suites_md_says():
    """The noise model's source: the sd of rho over the 5 repetitions of every metric of the shipped reference
    rows."""
    import json

    sds = [
        np.std([r["rho"] for r in entry["measures"]], ddof=1)
        for path in sorted((ROOT / "reports" / "reference").glob("*.json"))
        for entry in json.loads(path.read_text())["metrics"].values()
    ]
    quartiles = np.quantile(sds, [0.25, 0.5, 0.75])
    docs = " ".join((ROOT / "docs" / "suites.md").read_text(encoding="utf-8").split())
    stated = "median {1}, quartiles {0} and {2}".format(*(f"{q:.3f}"[1:] for q in quartiles))
    assert stated in docs
    assert NOISE_SD[0] < quartiles[0] and quartiles[2] < NOISE_SD[1]  # the model's range spans the middle half


SIMULATION_CASES = {  # the rows of docs/suites.md's simulation table: (effect, interaction)
    "better by 0.02": (0.02, 0.0),
    "better by 0.03": (0.03, 0.0),
    f"better by {EFFECT:g}": (EFFECT, 0.0),
    "identical": (0.0, 0.0),
    "equal on average, metric x setting sd 0.02": (0.0, 0.02),
}


def simulation_table(suites: int = 500, metrics: int = 18) -> dict[str, tuple[float, float]]:
    return {
        case: separation_rates(suites, metrics, effect, interaction, seed=i)
        for i, (case, (effect, interaction)) in enumerate(SIMULATION_CASES.items())
    }


@pytest.mark.slow
def test_simulated_suites_of_18_metrics_as_docs_suites_md_says():
    table = simulation_table()
    assert table[f"better by {EFFECT:g}"][0] >= 0.8
    assert table["identical"][1] <= 0.05
    docs = (ROOT / "docs" / "suites.md").read_text(encoding="utf-8")
    for case, (alone, some) in table.items():
        line = f"| {case} | {alone:.0%} | {some:.0%} |"
        assert line in docs, f"docs/suites.md should have the line {line!r}"
    assert re.search(rf"better metric is \+{EFFECT:g}", docs)
