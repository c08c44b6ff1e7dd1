"""Which metrics judge worse than chance: a judgement accuracy (A, A^w) significantly below what a constant
metric scores.

A constant metric ties every containment judgement and scores A = A^w = .5 (ties count ½; 004 §4.5). A mean
below .5 that the repetitions confirm says the metric orders nested pairs the wrong way at this corpus size
(e.g. an n-gram divergence whose estimate is dominated by sample-size bias at small n): it is inverted here,
not merely weak.

The test is one-sided, over repetitions (the unit: each repetition is an independent KSC collection; the
judgements of one collection share their distances and are not independent trials): a one-sample t test of
"mean ≥ .5" from the mean, sample sd and count that the summary already holds
(textmetric_bench.measures.summaries, from ``intervals.mean_interval``), Holm-corrected over the metrics of one
measure, α = .05; the t test rather than the percentile bootstrap interval, which is optimistic at few
repetitions (textmetric_bench.measures.paired). Below FEW_REPETITIONS (textmetric_bench.measures.intervals) nothing is
tested, as the tables already warn: at small k an accuracy takes few values, and two repetitions that agree
would make a spread of zero look like certainty. Bounds (oracle, chance) are not tested: the floor is chance
itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from textmetric_bench.measures import registry
from textmetric_bench.measures.holm import holm
from textmetric_bench.measures.intervals import FEW_REPETITIONS

#: What a constant metric scores on each judgement-accuracy measure.
CHANCE = {m.name: m.chance for m in registry.MEASURES.values() if m.chance is not None}
ALPHA = 0.05
TEST_NAME = (
    f"one-sided one-sample t test over repetitions of mean < .5, Holm-corrected over the metrics of each "
    f"measure, α = {ALPHA:g}"
)
#: What a reader can do about a metric judged below chance.
BELOW_CHANCE_ADVICE = "inverted at this size: more texts or another setting"


def below_chance_p(mean: float, std: float, n: int, chance: float = 0.5) -> float:
    """One-sided p of "the mean over repetitions is at least ``chance``" (t test from summary statistics).

    NaN below two repetitions; with no spread (every repetition the same) 0 when below chance, else 1."""
    if not np.isfinite(mean) or n is None or n < 2:
        return np.nan
    if not np.isfinite(std) or std == 0:
        return 0.0 if mean < chance else 1.0
    from scipy import stats

    t = (mean - chance) / (std / np.sqrt(n))
    return float(stats.t.cdf(t, df=n - 1))


def below_chance(summary: pd.DataFrame, excluded=(), min_repetitions: int = FEW_REPETITIONS) -> pd.DataFrame:
    """The (metric, measure) rows of ``summary`` whose A or A^w is significantly below chance.

    ``summary``: long, one row per metric and measure with ``mean``, ``std``, ``n`` (summarise_measures);
    ``excluded``: metrics not tested (the bounds); a row over fewer than ``min_repetitions`` is not tested.
    Returns columns metric, measure, mean, n, p, p_holm.
    """
    columns = ["metric", "measure", "mean", "n", "p", "p_holm"]
    if summary.empty:
        return pd.DataFrame(columns=columns)
    excluded = set(excluded)
    found = []
    for measure, chance in CHANCE.items():
        rows = summary[
            (summary["measure"] == measure) & ~summary["metric"].isin(excluded) & (summary["n"] >= min_repetitions)
        ].copy()
        rows["p"] = [
            below_chance_p(m, s, int(n) if np.isfinite(n) else 0, chance)
            for m, s, n in zip(rows["mean"], rows["std"], rows["n"])
        ]
        rows = rows[rows["p"].notna()]
        if rows.empty:
            continue
        rows["p_holm"] = holm(rows["p"])
        found.append(rows[(rows["p_holm"] < ALPHA) & (rows["mean"] < chance)])
    found = [f for f in found if not f.empty]
    if not found:
        return pd.DataFrame(columns=columns)
    return pd.concat(found, ignore_index=True)[columns]
