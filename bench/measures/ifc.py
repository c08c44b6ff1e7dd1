"""Scoring Increasingly Fine-tuned Corpora (004 §5, Figure 5).

For every metric, iteration i and repetition r: d_r(i) = d(reference sample r, g_i), the
reference samples drawn from source texts the model never trained on. The self-distance
d(A, A) = E[d(r_1, r_2)] (004 §5) is the mean distance between two disjoint samples of the
same size. A metric that sees the model improve has d(i) falling toward d(A, A), so

- **IFC** = −Spearman(i, d_r(i)) per repetition: 1 when the distance falls at every step;
- **gap closed** = (d(0) − d(T)) / (d(0) − d(A, A)) on the means over repetitions: the share
  of the initial gap to the self-distance that the last iteration closed (1: all of it).

TTR (unique tokens / tokens, 004 §5) is reported for every corpus as a lexical-diversity check.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from textmetric_bench.api.tokens import tokenize
from textmetric_bench.measures.failures import per_repetition

MEASURE_COLUMNS = ["metric", "repetition", "IFC"]


def type_token_ratio(texts: Sequence[str]) -> float:
    """TTR: distinct word tokens over all word tokens of a corpus (004 §5), with ``textmetric_bench.api.tokens``."""
    tokens = [tok for text in texts for tok in tokenize(text)]
    return len(set(tokens)) / len(tokens) if tokens else float("nan")


def constant_distance(distances) -> bool:
    """True for two or more finite distances that are all the same: they rank no iteration, so no IFC."""
    d = np.asarray(distances, float)
    return bool(len(d) > 1 and np.isfinite(d).all() and np.ptp(d) == 0)


def ifc_score(iterations, distances) -> float:
    """−Spearman ρ of distance on iteration: higher is better, 1 for a distance falling at every step; NaN (no
    ranking) for fewer than two points, a failed one, or a ``constant_distance``."""
    x, d = np.asarray(iterations, float), np.asarray(distances, float)
    if len(x) < 2 or not np.isfinite(d).all() or constant_distance(d) or np.ptp(x) == 0:
        return float("nan")
    from scipy import stats

    return float(-stats.spearmanr(x, d).statistic)


def gap_closed(first: float, last: float, self_distance: float) -> float:
    """Share of the gap d(0) − d(A, A) that d(T) closed; NaN when g_0 was no farther than A from itself."""
    gap = first - self_distance
    if not all(map(math.isfinite, (first, last, self_distance))) or gap <= 0:
        return float("nan")
    return float((first - last) / gap)


def ifc_measures(distances: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """IFC per (metric, repetition); a repetition with a failed evaluation gets none and is reported."""
    gen = distances[distances["kind"] == "generated"]
    measures, failures = per_repetition(
        gen, lambda g: {"IFC": ifc_score(g["iteration"], g["distance"])}, MEASURE_COLUMNS
    )
    for name, grp in distances[distances["kind"] == "self"].groupby("metric"):
        errors = grp.loc[grp["error"] != "", "error"]
        if len(errors):
            failures.setdefault(name, f"self-distance failed: {errors.iloc[0]}")
    return measures, failures
