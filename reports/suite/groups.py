"""Groups of metrics that cannot be separated, from the repetitions inside each setting.

With few settings, the tests over settings' means (Friedman, Wilcoxon-Holm; ``ranks.py``) can separate nothing:
Wilcoxon's smallest two-sided p over N settings is 2/2^N. Each repetition of a setting is an independent
collection from its own seed, on which every metric is evaluated with its own metric seed, so two metrics' values
are paired by (setting, repetition), and their differences carry the data's noise and the metrics' own noise.
Following the WMT metrics meta-evaluation (mt-metrics-eval: paired permutation tests, significance clusters):

- **The test** of two metrics a and b: the statistic is the mean over settings of the per-setting mean difference
  (every setting weighs the same, whatever its repetitions); its null distribution flips the sign of every
  (setting, repetition) difference at random (a swaps with b within each repetition; the settings stay where they
  are), two-sided, p = (1 + #flips at least as extreme) / (1 + flips) as ``scipy.stats.permutation_test`` counts
  it (exact enumeration when it has no more sign patterns than resamples). Holm's correction over all pairs.
  It is conditioned on the settings: it says "better on average over these settings, over collections drawn anew
  in them", not "better on settings not run".
- **Groups**: the metrics sorted by that mean, best first; a metric opens a new group when the test separates it
  from any member of the current group (mt-metrics-eval's ``AssignRanks``), so the members of a group are never
  separated from one another, and every metric is separated from some member of the group before its own.

One sign-flip matrix serves every pair of a measure, so the pairs' p come from one matrix product (the test
validated against ``scipy.stats.permutation_test`` in the tests; that function, called per pair, took ~70 ms a
pair at 9,999 resamples, 153 pairs x 6 measures per report, and hours for the simulation that validates the test).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from textmetric_bench.measures.holm import holm
from textmetric_bench.reports.suite.ranks import ALPHA, HIGHER_IS_BETTER

#: Random sign patterns of the permutation test (the smallest p is 1/(RESAMPLES + 1); Holm over the 153 pairs of
#: 18 metrics needs p < .05/153 = 3.3e-4 for its first step).
RESAMPLES = 9999
#: The random generator's seed: the same results give the same p.
SEED = 0
TEST = (
    "paired sign-flip permutation test over (setting, repetition), stratified by setting, on the mean of "
    "per-setting mean differences, Holm-adjusted"
)


@dataclass
class MeasureGroups:
    """One measure's groups of metrics that the paired test does not separate."""

    measure: str
    means: pd.Series  # metric -> mean over settings of its per-setting mean, best first
    p: pd.DataFrame  # metric x metric: Holm-adjusted two-sided p
    difference: pd.DataFrame  # metric x metric: mean over settings of (row - column), the test's statistic
    groups: pd.Series  # metric -> group (1 = the best), in the order of ``means``
    settings: int
    repetitions: int  # paired (setting, repetition) observations
    left_out: list[str]
    patterns: int  # sign patterns of the null distribution
    exact: bool  # all 2^observations patterns (else random ones)

    def members(self, group: int) -> list[str]:
        return [m for m, g in self.groups.items() if g == group]


def sign_patterns(n: int, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """(patterns x n) signs: all 2^n patterns when they are no more than ``resamples`` (exact), else
    ``resamples`` random ones."""
    if 2**n <= resamples:
        return np.array(list(itertools.product((1.0, -1.0), repeat=n))), True
    return rng.choice((1.0, -1.0), size=(resamples, n)), False


def sign_flip_p(
    differences: np.ndarray, weights: np.ndarray, resamples: int = RESAMPLES, rng: np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided p of the paired sign-flip test of every row of ``differences`` (pairs x observations), with the
    statistic ``differences @ weights``; returns (statistic, p). The p are ``scipy.stats.permutation_test``'s
    (``permutation_type='samples'`` on one sample): the tolerance for ties, +1 for random resamples, 2 x the
    smaller tail."""
    rng = np.random.default_rng(SEED) if rng is None else rng
    weighted = np.asarray(differences, float) * np.asarray(weights, float)
    observed = weighted.sum(axis=1)
    signs, exact = sign_patterns(weighted.shape[1], resamples, rng)
    null = signs @ weighted.T  # patterns x pairs
    gamma = np.abs(np.finfo(float).eps * 100 * observed)  # scipy's tolerance for equal statistics
    adjust = 0 if exact else 1
    greater = ((null >= observed - gamma).sum(axis=0) + adjust) / (len(signs) + adjust)
    less = ((null <= observed + gamma).sum(axis=0) + adjust) / (len(signs) + adjust)
    return observed, np.clip(2 * np.minimum(greater, less), 0, 1)


def significance_groups(order: list[str], p: pd.DataFrame, alpha: float = ALPHA) -> pd.Series:
    """Group numbers (1 = best) of the metrics in ``order`` (best first): a metric opens a new group when ``p``
    separates it (p < alpha) from any member of the current group (mt-metrics-eval's ``AssignRanks``)."""
    separated = p.loc[order, order].to_numpy() < alpha
    groups, current, start = [], 1, 0
    for i in range(len(order)):
        if separated[start:i, i].any():
            current, start = current + 1, i
        groups.append(current)
    return pd.Series(groups, index=order, name="group", dtype=int)


def repetition_block(
    repetitions: pd.DataFrame, measure: str, settings: list[str], metrics: list[str]
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The values (metrics x observations) of ``measure`` at the (setting, repetition)s where every metric of
    ``metrics`` has one, each observation's setting index, and what was left out (repetitions missing a value)."""
    rows = repetitions[
        (repetitions["measure"] == measure)
        & repetitions["metric"].isin(metrics)
        & repetitions["setting"].isin(settings)
    ]
    wide = rows.pivot_table(index=["setting", "repetition"], columns="metric", values="value", aggfunc="first")
    wide = wide.reindex(columns=metrics)
    incomplete = wide.isna().any(axis=1)
    left_out = [
        f"setting {s} repetition {r}: no value of {', '.join(wide.columns[wide.loc[(s, r)].isna()])}"
        for s, r in wide.index[incomplete]
    ]
    wide = wide[~incomplete]
    position = {s: i for i, s in enumerate(settings)}
    kept = [s for s in settings if s in set(wide.index.get_level_values("setting"))]
    left_out += [f"setting {s}: no repetition with every metric" for s in settings if s not in kept]
    setting_index = np.array([position[s] for s in wide.index.get_level_values("setting")], dtype=int)
    return wide.to_numpy(float).T, setting_index, left_out


def stratified_weights(setting_index: np.ndarray) -> np.ndarray:
    """Each observation's weight in the mean over settings of per-setting means: 1 / (settings x its setting's
    repetitions)."""
    _, inverse, counts = np.unique(setting_index, return_inverse=True, return_counts=True)
    return 1.0 / (len(counts) * counts[inverse])


def compare(
    values: np.ndarray,
    setting_index: np.ndarray,
    metrics: list[str],
    measure: str = "",
    higher_is_better: bool = True,
    resamples: int = RESAMPLES,
    alpha: float = ALPHA,
    rng: np.random.Generator | None = None,
    left_out: list[str] | None = None,
) -> MeasureGroups:
    """The paired test between every two metrics (rows of ``values``, metrics x observations), Holm over the
    pairs, and the groups."""
    weights = stratified_weights(setting_index)
    means = pd.Series(values @ weights, index=metrics)
    order = list(means.sort_values(ascending=not higher_is_better, kind="stable").index)
    a, b = np.triu_indices(len(metrics), k=1)
    p, difference = np.ones((len(metrics),) * 2), np.zeros((len(metrics),) * 2)
    if len(a):
        statistic, raw = sign_flip_p(values[a] - values[b], weights, resamples, rng)
        p[a, b] = p[b, a] = holm(raw)
        difference[a, b], difference[b, a] = statistic, -statistic
    p = pd.DataFrame(p, index=metrics, columns=metrics).loc[order, order]
    difference = pd.DataFrame(difference, index=metrics, columns=metrics).loc[order, order]
    exact = 2 ** values.shape[1] <= resamples
    return MeasureGroups(
        measure,
        means[order],
        p,
        difference,
        significance_groups(order, p, alpha),
        len(np.unique(setting_index)),
        values.shape[1],
        list(left_out or []),
        2 ** values.shape[1] if exact else resamples,
        exact,
    )


def group_measure(
    repetitions: pd.DataFrame, measure: str, settings: list[str], metrics: list[str], resamples: int = RESAMPLES
) -> MeasureGroups | None:
    """The groups of ``measure`` over the given settings and metrics (the complete block the rank tests rest
    on); None when fewer than two metrics have repetitions there."""
    values, setting_index, left_out = repetition_block(repetitions, measure, settings, metrics)
    if len(metrics) < 2 or values.shape[1] == 0:
        return None
    return compare(
        values, setting_index, metrics, measure, HIGHER_IS_BETTER.get(measure, True), resamples, left_out=left_out
    )


def groups_frame(results: dict[str, MeasureGroups]) -> pd.DataFrame:
    """``groups.csv``: one row per (measure, metric): its mean, group, the other members of its group, and the
    smallest Holm-adjusted p between it and a member of the group above (below ALPHA for the metric that opens a
    group: why it is not in the group above)."""
    rows = []
    for measure, g in results.items():
        for metric, mean in g.means.items():
            group = int(g.groups[metric])
            before = g.members(group - 1)
            rows.append(
                {
                    "measure": measure,
                    "metric": metric,
                    "mean": mean,
                    "group": group,
                    "groups": int(g.groups.max()),
                    "settings": g.settings,
                    "observations": g.repetitions,
                    "group_members": " ".join(m for m in g.members(group) if m != metric),
                    "min_p_to_group_above": min((g.p.loc[metric, m] for m in before), default=np.nan),
                    "test": TEST,
                    "sign_patterns": g.patterns,
                    "exact": g.exact,
                    "alpha": ALPHA,
                    "left_out": " | ".join(g.left_out),
                }
            )
    return pd.DataFrame(
        rows,
        columns=[
            "measure",
            "metric",
            "mean",
            "group",
            "groups",
            "settings",
            "observations",
            "group_members",
            "min_p_to_group_above",
            "test",
            "sign_patterns",
            "exact",
            "alpha",
            "left_out",
        ],
    )
