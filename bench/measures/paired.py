"""Which metric is better: paired comparisons of every two metrics on every measure.

Two metrics of one run are scored on the same collections, so repetition r of one pairs with
repetition r of the other. For each measure and each two metrics the test is a **paired
bootstrap** of the mean difference: the differences are centred on zero (the null hypothesis),
resampled 9999 times with a fixed seed, and p is the share of resampled means at least as far
from zero as the observed one (two-sided, (count + 1) / (resamples + 1)). The p values of one
measure are corrected together by Holm (textmetric_bench.measures.holm: statsmodels' numbers).

Why not Wilcoxon signed-rank: the default run has ``repetitions=5`` (the KSC task's settings), and with
five pairs the smallest two-sided Wilcoxon p is 2 / 2^5 = .0625, so it could never show a
difference at .05. The bootstrap can, but with few repetitions it is optimistic (it cannot see tails
that the repetitions did not sample); the report warns below FEW_REPETITIONS (textmetric_bench.measures.intervals).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
import pandas as pd
from textmetric_bench.measures.holm import holm
from textmetric_bench.measures.intervals import FEW_REPETITIONS

ALPHA = 0.05
RESAMPLES = 9999
SEED = 0
COLUMNS = ["metric_a", "metric_b", "n", "mean_a", "mean_b", "mean_diff", "p", "p_holm", "better", "caution"]
TEST_NAME = (
    "paired bootstrap of the mean difference over repetitions (9999 resamples), "
    f"Holm-corrected within each measure, α = {ALPHA:g}"
)


def paired_bootstrap_p(differences) -> float:
    """Two-sided p of "mean difference = 0" from a bootstrap of the zero-centred differences."""
    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        return np.nan
    observed = abs(d.mean())
    if np.ptp(d) == 0:  # identical differences: none (p = 1) or a constant shift, which no resampling varies
        return 1.0 if observed == 0 else 1.0 / (RESAMPLES + 1)
    centred = d - d.mean()
    means = centred[resample_indices(d.size)].mean(axis=1)
    return float((np.sum(np.abs(means) >= observed - 1e-12) + 1) / (RESAMPLES + 1))


@lru_cache(maxsize=16)
def resample_indices(size: int) -> np.ndarray:
    """The bootstrap's draws for ``size`` paired values: the same for every pair of metrics (one seed), so drawn
    once per size (read-only)."""
    indices = np.random.default_rng(SEED).integers(0, size, size=(RESAMPLES, size))
    indices.flags.writeable = False
    return indices


def paired_comparisons(measures: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One row per two metrics (a before b in name order): means, paired difference a − b, p, Holm p, better."""
    wide = measures.pivot_table(index="repetition", columns="metric", values=measure, aggfunc="first")
    values = {m: pd.to_numeric(wide[m], errors="coerce").to_numpy(dtype=float) for m in wide.columns}
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns, key=str), 2):
        both = ~(np.isnan(values[a]) | np.isnan(values[b]))  # the repetitions where both have a value
        va, vb = values[a][both], values[b][both]
        d = va - vb
        rows.append(
            [
                a,
                b,
                len(d),
                va.mean() if len(d) else np.nan,
                vb.mean() if len(d) else np.nan,
                d.mean() if len(d) else np.nan,
                paired_bootstrap_p(d),
            ]
        )
    frame = pd.DataFrame(rows, columns=COLUMNS[:7])
    frame["p_holm"] = np.nan
    tested = frame["p"].notna()
    if tested.any():
        frame.loc[tested, "p_holm"] = holm(frame.loc[tested, "p"])
    significant = frame["p_holm"] < ALPHA
    frame["better"] = np.where(significant, np.where(frame["mean_diff"] > 0, frame["metric_a"], frame["metric_b"]), "")
    frame["caution"] = [caution(int(n)) for n in frame["n"]]
    return frame[COLUMNS]


def caution(n: int) -> str:
    """What a comparison on ``n`` paired repetitions carries beside its verdict: below FEW_REPETITIONS the test is
    optimistic, so ``better`` is a hint, not a finding (the tables then draw no ▲); "" from FEW_REPETITIONS on."""
    if n >= FEW_REPETITIONS:
        return ""
    return (
        f"only {n} paired repetition{'s' if n != 1 else ''} (fewer than {FEW_REPETITIONS}): p is optimistic "
        "and `better` a hint, not a finding"
    )


def all_comparisons(measures: pd.DataFrame, measure_names) -> dict[str, pd.DataFrame]:
    """Paired comparisons per measure, for the measures of ``measure_names`` present in ``measures``."""
    if "repetition" not in measures.columns or measures["metric"].nunique() < 2:
        return {}
    return {
        m: paired_comparisons(measures, m)
        for m in measure_names
        if m in measures.columns and pd.to_numeric(measures[m], errors="coerce").notna().any()
    }


def separated(comparisons: pd.DataFrame) -> set[frozenset]:
    """The pairs of metrics whose difference is significant after Holm."""
    hits = comparisons[comparisons["better"] != ""]
    return {frozenset((a, b)) for a, b in zip(hits["metric_a"], hits["metric_b"])}
