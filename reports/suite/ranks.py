"""Which metric is better across settings, per measure: mean ranks, a Friedman test and a post-hoc test.

Demšar (JMLR 2006) compares methods over many data sets by ranking them within each data set and testing the
ranks; here a data set is a setting (one run: a pair at one k and n, or a robustness run), and a metric's value
in it is its mean over that setting's repetitions (``textmetric_bench.reports.suite.settings``), never repetitions
pooled across settings. Per measure:

- the ranks within each setting (1 = best, ties share the mean rank; ``scipy.stats.rankdata``) and their mean;
- Friedman's test of "every metric ranks alike" (``scipy.stats.friedmanchisquare``);
- the post-hoc test: Wilcoxon's signed-rank test on every two metrics' values over the settings, zero differences
  split between the signs as Demšar §3.1.3 does (``zsplit``), p adjusted by Holm over the pairs
  (``scikit_posthocs.posthoc_wilcoxon``). Benavoli, Corani & Mangili (JMLR 2016) recommend it over the mean-rank
  tests (Nemenyi): whether Nemenyi separates two metrics depends on which other metrics are compared, so adding a
  plugin metric to a suite could change the verdict between two built-ins; Wilcoxon's does not.

Tests need complete blocks: where a metric has no value in a setting (it failed, or was not run there), the
metric or the setting missing the largest share of its values is left out, one at a time, until every remaining
metric has a value in every remaining setting; what was left out is reported. The bounds (``oracle``, ``chance``)
are never ranked (``textmetric_bench.reports.bounds``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import pandas as pd
import scikit_posthocs as sp
from scipy import stats

from textmetric_bench.measures import registry
from textmetric_bench.reports.bounds import ranked

#: Significance level of the post-hoc test, after Holm's adjustment.
ALPHA = 0.05
#: Demšar 2006 §3.2.2: Friedman's statistic follows chi² with k - 1 degrees of freedom "when N and k are big
#: enough (as a rule of a thumb, N > 10 and k > 5)"; below this many settings the report warns.
ENOUGH_SETTINGS = 11
ENOUGH_METRICS = 6
#: Which way each measure is better. Every measure of the harness grows with quality: A, A^w, ρ, ω², L, S, I and
#: IFC are scores, and T is a speed (evaluations per second, 004 §4.4), not a duration.
HIGHER_IS_BETTER = {name: registry.MEASURES[name].higher_is_better for name in registry.quality_then_others()}
POSTHOC = "Wilcoxon signed-rank over settings (zero differences split), Holm-adjusted"


@dataclass
class MeasureRanks:
    """One measure's ranks over settings and the tests on them."""

    measure: str
    values: pd.DataFrame  # settings x metrics: the complete block the tests rest on
    ranks: pd.DataFrame  # the same shape: 1 = best within each setting
    statistic: float  # Friedman's chi-square
    p: float  # its p-value
    posthoc: pd.DataFrame  # metric x metric: Holm-adjusted p of the Wilcoxon signed-rank test
    left_out: list[str] = field(default_factory=list)
    warning: str = ""

    @property
    def mean_ranks(self) -> pd.Series:
        """Each metric's mean rank over the settings, best first."""
        return self.ranks.mean(axis=0).sort_values(kind="stable")

    @property
    def settings(self) -> int:
        return len(self.values.index)


def complete_block(wide: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A complete block of ``wide`` (settings x metrics), found greedily, and what was left out and why.

    Leaves out, one at a time, the metric or the setting missing the largest share of its values (a metric on a
    tie), until no value is missing: a metric run in few settings goes, and so does a setting where few ran."""
    left_out = []
    while wide.size and wide.isna().any(axis=None):
        by_metric, by_setting = wide.isna().mean(axis=0), wide.isna().mean(axis=1)
        if by_metric.max() >= by_setting.max():
            name = by_metric.idxmax()
            missing = wide.index[wide[name].isna()]
            left_out.append(
                f"metric {name}: no value in {len(missing)} of {len(wide.index)} settings "
                f"({', '.join(map(str, missing))})"
            )
            wide = wide.drop(columns=name)
        else:
            name = by_setting.idxmax()
            missing = wide.columns[wide.loc[name].isna()]
            left_out.append(f"setting {name}: no value of {', '.join(map(str, missing))}")
            wide = wide.drop(index=name)
    return wide, left_out


def within_setting_ranks(values: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank the metrics within each setting (row): 1 = best, ties share their mean rank."""
    signed = -values if higher_is_better else values
    return pd.DataFrame(stats.rankdata(signed.to_numpy(), axis=1), index=values.index, columns=values.columns)


def few_settings_warning(settings: int, metrics: int) -> str:
    """The report's warning when the tests rest on too few settings (or metrics) to mean much, else ""."""
    notes = []
    if settings < ENOUGH_SETTINGS or metrics < ENOUGH_METRICS:
        notes.append(
            f"the tests rest on {settings} setting{'s' if settings != 1 else ''} and {metrics} metrics; "
            f"Friedman's chi-square holds for more than {ENOUGH_SETTINGS - 1} settings and "
            f"{ENOUGH_METRICS - 1} metrics (Demšar 2006, §3.2.2), so its p is a rough guide"
        )
    if 0 < settings <= 5:
        notes.append(
            f"with {settings} settings Wilcoxon's smallest two-sided p is 2/2^{settings} = "
            f"{2 / 2**settings:.3g}, so no two metrics can be separated at {ALPHA:g}: add settings"
        )
    return "; ".join(notes)


def friedman(values: pd.DataFrame) -> tuple[float, float]:
    """Friedman's chi-square and p over the settings (rows); NaN below 3 metrics or 2 settings."""
    if values.shape[1] < 3 or values.shape[0] < 2:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # every setting ranks the metrics alike: statistic NaN
        result = stats.friedmanchisquare(*(values[c].to_numpy() for c in values.columns))
    return float(result.statistic), float(result.pvalue)


def wilcoxon_holm(values: pd.DataFrame) -> pd.DataFrame:
    """Holm-adjusted p of Wilcoxon's signed-rank test between every two metrics (columns), paired by setting.
    A pair whose values never differ gets p = 1 (nothing separates them)."""
    names = list(values.columns)
    if len(names) < 2 or values.shape[0] < 2:
        return pd.DataFrame(1.0, index=names, columns=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's notes on ties and small samples: the exact test is used
        p = sp.posthoc_wilcoxon([values[c].to_numpy() for c in names], zero_method="zsplit", p_adjust="holm")
    p.index, p.columns = names, names
    return p.fillna(1.0)


def rank_measure(table: pd.DataFrame, measure: str) -> MeasureRanks | None:
    """Ranks and tests of ``measure`` over the settings of the per-setting ``table``; None when no setting
    has two ranked metrics."""
    rows = table[(table["measure"] == measure)]
    rows = rows[rows["metric"].isin(ranked(rows["metric"].unique()))]
    if rows.empty:
        return None
    wide = rows.pivot_table(index="setting", columns="metric", values="mean", aggfunc="first", sort=False)
    wide = wide.reindex(index=list(dict.fromkeys(rows["setting"])), columns=sorted(wide.columns))
    wide, left_out = complete_block(wide)
    if wide.shape[1] < 2 or wide.shape[0] < 1:
        return None
    statistic, p = friedman(wide)
    return MeasureRanks(
        measure,
        wide,
        within_setting_ranks(wide, HIGHER_IS_BETTER.get(measure, True)),
        statistic,
        p,
        wilcoxon_holm(wide),
        left_out,
        few_settings_warning(*wide.shape),
    )


def rank_measures(table: pd.DataFrame, measures=HIGHER_IS_BETTER) -> dict[str, MeasureRanks]:
    """``rank_measure`` for every measure of ``measures`` present in ``table``."""
    out = {}
    for measure in measures:
        result = rank_measure(table, measure)
        if result is not None:
            out[measure] = result
    return out


def not_separated(result: MeasureRanks, metric: str) -> list[str]:
    """The metrics the post-hoc test does not separate from ``metric`` at ALPHA."""
    row = result.posthoc.loc[metric]
    return [m for m in result.mean_ranks.index if m != metric and row[m] >= ALPHA]


def ranks_frame(results: dict[str, MeasureRanks]) -> pd.DataFrame:
    """``ranks.csv``: one row per (measure, metric): mean rank, its place, the Friedman statistic and p of the
    measure, the post-hoc test and the metrics it does not separate from this one, and the warning."""
    rows = []
    for measure, r in results.items():
        for place, (metric, mean_rank) in enumerate(r.mean_ranks.items(), start=1):
            rows.append(
                {
                    "measure": measure,
                    "metric": metric,
                    "mean_rank": mean_rank,
                    "place": place,
                    "settings": r.settings,
                    "metrics": r.values.shape[1],
                    "higher_is_better": HIGHER_IS_BETTER.get(measure, True),
                    "friedman_chi2": r.statistic,
                    "friedman_p": r.p,
                    "posthoc": POSTHOC,
                    "alpha": ALPHA,
                    "not_separated_from": " ".join(not_separated(r, metric)),
                    "left_out": " | ".join(r.left_out),
                    "warning": r.warning,
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "measure",
            "metric",
            "mean_rank",
            "place",
            "settings",
            "metrics",
            "higher_is_better",
            "friedman_chi2",
            "friedman_p",
            "posthoc",
            "alpha",
            "not_separated_from",
            "left_out",
            "warning",
        ],
    )


def setting_ranks_frame(results: dict[str, MeasureRanks]) -> pd.DataFrame:
    """``setting_ranks.csv``: every value the tests rest on and its rank within its setting."""
    frames = []
    for measure, r in results.items():
        values = r.values.rename_axis(index="setting", columns="metric").stack().rename("value")
        ranks = r.ranks.rename_axis(index="setting", columns="metric").stack().rename("rank")
        frames.append(pd.concat([values, ranks], axis=1).reset_index().assign(measure=measure))
    if not frames:
        return pd.DataFrame(columns=["measure", "setting", "metric", "value", "rank"])
    return pd.concat(frames, ignore_index=True)[["measure", "setting", "metric", "value", "rank"]]
