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
    return paired_bootstrap_ps([differences])[0]


#: At most this many resampled values (pairs x RESAMPLES x repetitions) are held at once by ``paired_bootstrap_ps``.
CHUNK_VALUES = 1 << 22


def paired_bootstrap_ps(samples) -> list[float]:
    """``paired_bootstrap_p`` of each array of differences in ``samples``, the same numbers bit for bit.

    The arrays of one size share their resampling (one seed), so they are resampled together: one indexing and one
    mean over the last axis per chunk of arrays instead of one per array. A run's tables compare 153 pairs of metrics
    on six measures, twice: 0.27-0.28 s a time one array after another, 0.13 s together (our AMD EPYC). Each row's
    mean is the same reduction of the same contiguous values as for one array alone.
    """
    out = [np.nan] * len(samples)
    by_size: dict[int, list[tuple[int, float, np.ndarray]]] = {}
    for i, differences in enumerate(samples):
        d = np.asarray(differences, dtype=float)
        if d.size < 2:
            continue
        observed = abs(d.mean())
        if np.ptp(d) == 0:  # identical differences: none (p = 1) or a constant shift, which no resampling varies
            out[i] = 1.0 if observed == 0 else 1.0 / (RESAMPLES + 1)
            continue
        by_size.setdefault(d.size, []).append((i, observed, d - d.mean()))
    for size, group in by_size.items():
        indices = resample_indices(size)
        step = max(1, CHUNK_VALUES // (RESAMPLES * size))
        for start in range(0, len(group), step):
            chunk = group[start : start + step]
            means = np.stack([centred for _, _, centred in chunk])[:, indices].mean(axis=2)
            observed = np.array([o for _, o, _ in chunk])
            counts = np.sum(np.abs(means) >= (observed - 1e-12)[:, None], axis=1)
            for (i, _, _), count in zip(chunk, counts):
                out[i] = float((count + 1) / (RESAMPLES + 1))
    return out


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
    table = np.empty((len(wide), len(wide.columns)))
    for i, m in enumerate(wide.columns):
        table[:, i] = pd.to_numeric(wide[m], errors="coerce").to_numpy(dtype=float)
    return _compared(tuple(wide.columns), table.shape, table.tobytes()).copy()


@lru_cache(maxsize=64)
def _compared(metrics: tuple, shape: tuple[int, int], table: bytes) -> pd.DataFrame:
    """``paired_comparisons`` of the metrics' values (one column each, one row per repetition; the bytes of a
    float64 table of ``shape``). Seeded, so the same values give the same table, and a run's tables and report,
    which compare the same measures, compute each once (callers get a copy)."""
    columns = np.frombuffer(table, dtype=float).reshape(shape)
    values = {m: columns[:, i] for i, m in enumerate(metrics)}
    rows, differences = [], []
    for a, b in itertools.combinations(sorted(metrics, key=str), 2):
        both = ~(np.isnan(values[a]) | np.isnan(values[b]))  # the repetitions where both have a value
        va, vb = values[a][both], values[b][both]
        d = va - vb
        differences.append(d)
        rows.append(
            [
                a,
                b,
                len(d),
                va.mean() if len(d) else np.nan,
                vb.mean() if len(d) else np.nan,
                d.mean() if len(d) else np.nan,
            ]
        )
    frame = pd.DataFrame(rows, columns=COLUMNS[:6])
    frame["p"] = paired_bootstrap_ps(differences) if differences else []
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
