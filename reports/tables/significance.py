"""Rank groups of the paired comparisons (textmetric_bench.measures.paired) as a table shows them: a compact letter
display per column, and the comparisons written as ``significance_<measure>.csv``.

The bound metrics (reports/bounds.py) are compared like the others but take no part in rank groups.
"""

from __future__ import annotations

import string
from pathlib import Path

import pandas as pd

from textmetric_bench.measures.paired import TEST_NAME, separated
from textmetric_bench.reports.bounds import ranked

GROUP_LETTERS = string.ascii_lowercase + string.ascii_uppercase  # one letter per rank group, never reused
GROUP_NOTE = ("Superscript letters: rank groups; metrics sharing a letter in a column are not separated "
              "significantly (" + TEST_NAME + "); a–d stands for abcd; bounds (ceiling, floor) take no part.")
WILCOXON_NOTE = ("Wilcoxon signed-rank was not used: with 5 repetitions its smallest two-sided p is .0625, "
                 "so it could never separate two metrics. The bootstrap can, but with few repetitions it is "
                 "optimistic (it cannot see what the repetitions did not sample): read a 5-repetition "
                 "separation as indicative and confirm it with more repetitions.")


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
