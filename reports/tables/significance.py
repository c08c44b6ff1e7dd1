"""Which metric is better: paired comparisons of every two metrics on every measure.

Two metrics of one run are scored on the same collections, so repetition r of one pairs with
repetition r of the other. For each measure and each two metrics the test is a **paired
bootstrap** of the mean difference: the differences are centred on zero (the null hypothesis),
resampled 9999 times with a fixed seed, and p is the share of resampled means at least as far
from zero as the observed one (two-sided, (count + 1) / (resamples + 1)). The p values of one
measure are corrected together by Holm (statsmodels ``multipletests``).

Why not Wilcoxon signed-rank: the default run has ``repetitions: 5`` (conf/task/ksc.yaml), and with
five pairs the smallest two-sided Wilcoxon p is 2 / 2^5 = .0625, so it could never show a
difference at .05. The bootstrap can, but with few repetitions it is optimistic (it cannot see tails
that the repetitions did not sample); the report warns below FEW_REPETITIONS.

The bound metrics (reports/bounds.py) are compared like the others but take no part in rank groups.
"""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from textmetric_bench.reports.bounds import ranked

ALPHA = 0.05
GROUP_LETTERS = string.ascii_lowercase + string.ascii_uppercase  # one letter per rank group, never reused
RESAMPLES = 9999
SEED = 0
COLUMNS = ["metric_a", "metric_b", "n", "mean_a", "mean_b", "mean_diff", "p", "p_holm", "better"]
TEST_NAME = ("paired bootstrap of the mean difference over repetitions (9999 resamples), "
             f"Holm-corrected within each measure, α = {ALPHA:g}")
GROUP_NOTE = ("Superscript letters: rank groups; metrics sharing a letter in a column are not separated "
              "significantly (" + TEST_NAME + "); a–d stands for abcd; bounds (ceiling, floor) take no part.")
WILCOXON_NOTE = ("Wilcoxon signed-rank was not used: with 5 repetitions its smallest two-sided p is .0625, "
                 "so it could never separate two metrics. The bootstrap can, but with few repetitions it is "
                 "optimistic (it cannot see what the repetitions did not sample): read a 5-repetition "
                 "separation as indicative and confirm it with more repetitions.")


def paired_bootstrap_p(differences) -> float:
    """Two-sided p of "mean difference = 0" from a bootstrap of the zero-centred differences."""
    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        return np.nan
    observed = abs(d.mean())
    if np.ptp(d) == 0:  # identical differences: none (p = 1) or a constant shift, which no resampling varies
        return 1.0 if observed == 0 else 1.0 / (RESAMPLES + 1)
    rng = np.random.default_rng(SEED)
    centred = d - d.mean()
    means = centred[rng.integers(0, d.size, size=(RESAMPLES, d.size))].mean(axis=1)
    return float((np.sum(np.abs(means) >= observed - 1e-12) + 1) / (RESAMPLES + 1))


def paired_comparisons(measures: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One row per two metrics (a before b in name order): means, paired difference a − b, p, Holm p, better."""
    wide = measures.pivot_table(index="repetition", columns="metric", values=measure, aggfunc="first")
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns, key=str), 2):
        pair = wide[[a, b]].apply(pd.to_numeric, errors="coerce").dropna()
        d = (pair[a] - pair[b]).to_numpy()
        rows.append([a, b, len(d), pair[a].mean(), pair[b].mean(), d.mean() if len(d) else np.nan,
                     paired_bootstrap_p(d)])
    frame = pd.DataFrame(rows, columns=COLUMNS[:7])
    frame["p_holm"] = np.nan
    tested = frame["p"].notna()
    if tested.any():
        frame.loc[tested, "p_holm"] = multipletests(frame.loc[tested, "p"], alpha=ALPHA, method="holm")[1]
    significant = frame["p_holm"] < ALPHA
    frame["better"] = np.where(significant, np.where(frame["mean_diff"] > 0, frame["metric_a"], frame["metric_b"]), "")
    return frame[COLUMNS]


def all_comparisons(measures: pd.DataFrame, measure_names) -> dict[str, pd.DataFrame]:
    """Paired comparisons per measure, for the measures of ``measure_names`` present in ``measures``."""
    if "repetition" not in measures.columns or measures["metric"].nunique() < 2:
        return {}
    return {m: paired_comparisons(measures, m) for m in measure_names
            if m in measures.columns and pd.to_numeric(measures[m], errors="coerce").notna().any()}


def separated(comparisons: pd.DataFrame) -> set[frozenset]:
    """The pairs of metrics whose difference is significant after Holm."""
    hits = comparisons[comparisons["better"] != ""]
    return {frozenset((a, b)) for a, b in zip(hits["metric_a"], hits["metric_b"])}


def rank_groups(means: pd.Series, comparisons: pd.DataFrame) -> dict[str, str]:
    """Letters of a compact letter display (Piepho 2004, insert-and-absorb): every two metrics that are not
    separated significantly share a letter, and no two separated metrics do (a metric may hold several
    letters when separations are not transitive: a ~ b, b ~ c, but a > c).

    Letter a goes to the group holding the best mean, b to the next, and so on. Bounds and metrics
    without a mean get no letter.
    """
    order = ranked(means.dropna().sort_values(ascending=False, kind="stable").index)
    groups = [set(order)] if order else []
    for pair in separated(comparisons):
        x, y = tuple(pair)
        if x not in order or y not in order:
            continue
        split = []
        for group in groups:
            split += [group - {x}, group - {y}] if x in group and y in group else [group]
        groups = [g for g in split if g and not any(g < other for other in split)]
        groups = [g for n, g in enumerate(groups) if g not in groups[:n]]
    groups.sort(key=lambda g: sorted(order.index(m) for m in g))  # by best member, then the next
    if len(groups) > len(GROUP_LETTERS):
        raise ValueError(f"{len(groups)} rank groups: more than the {len(GROUP_LETTERS)} letters a display can use")
    letters = dict.fromkeys(order, "")
    for letter, group in zip(GROUP_LETTERS, groups):
        for metric in group:
            letters[metric] += letter
    return {m: "".join(sorted(v, key=GROUP_LETTERS.index)) for m, v in letters.items()}


def compact_letters(letters: str) -> str:
    """How a table shows a metric's rank-group letters: a run of three or more consecutive letters as
    its first and last ("klmnop" -> "k–p"), so a weakly separated metric does not widen its column."""
    shown, run = [], []
    for letter in letters:
        if run and GROUP_LETTERS.index(letter) != GROUP_LETTERS.index(run[-1]) + 1:
            shown.append(run[0] + "–" + run[-1] if len(run) >= 3 else "".join(run))
            run = []
        run.append(letter)
    if run:
        shown.append(run[0] + "–" + run[-1] if len(run) >= 3 else "".join(run))
    return "".join(shown)


def write_significance(comparisons: dict[str, pd.DataFrame], out_dir: Path, **tags) -> dict[str, Path]:
    """``significance_<measure>.csv`` per measure (long format), each row tagged with ``tags`` columns."""
    paths = {}
    for measure, frame in comparisons.items():
        path = Path(out_dir) / f"significance_{measure}.csv"
        frame.assign(**tags).to_csv(path, index=False)
        paths[f"significance_{measure}"] = path
    return paths


def column_groups(comparisons: dict[str, pd.DataFrame], means: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Rank-group letters per column of a Table 3 of ``means`` (T100 is tested on T: the same order)."""
    groups = {}
    for column in means.columns:
        tested = comparisons.get("T" if column == "T100" else column)
        if tested is not None and not tested.empty:
            groups[column] = rank_groups(means[column], tested)
    return groups
