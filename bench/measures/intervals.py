"""The interval shown beside every mean of a measure, and the warning when repetitions are few.

Every cell of Table 3 is the mean over repetitions with a 95% percentile bootstrap interval over
repetitions (scipy.stats.bootstrap, seeded). A percentile interval of a mean lies between the
smallest and the largest repetition, so it never leaves the measure's range (A in [0, 1], ρ in
[-1, 1], ...), unlike the Student t-interval it replaces.

A and A^w are proportions of judgements, but the judgements of one collection share their
distances and are not independent trials, so a Wilson interval over all judgements would be far
too narrow; they get the same bootstrap over repetitions as the other measures.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 0
#: Below this many repetitions an interval and a significance test say little: tables warn.
FEW_REPETITIONS = 5
INTERVAL_NAME = "95% percentile bootstrap interval over repetitions"


def bootstrap_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of the finite ``values``; NaN, NaN below two values."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return np.nan, np.nan
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0])
    return _percentile_interval(x.tobytes(), float(confidence))


@lru_cache(maxsize=4096)
def _percentile_interval(values: bytes, confidence: float) -> tuple[float, float]:
    """``bootstrap_interval`` of the float64 ``values`` (their bytes): seeded, so the same values give the same
    interval, and a run's tables, figures and report, which summarise the same measures, compute each once."""
    from scipy import stats

    result = stats.bootstrap(
        (np.frombuffer(values, dtype=float),),
        np.mean,
        method="percentile",
        n_resamples=RESAMPLES,
        confidence_level=confidence,
        rng=np.random.default_rng(SEED),
    )
    low, high = result.confidence_interval
    return float(low), float(high)


def mean_interval(values) -> tuple[float, float, int, float, float]:
    """Mean, sample std (ddof=1), count and bootstrap interval of the finite values."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.nan, np.nan, 0, np.nan, np.nan
    std = float(x.std(ddof=1)) if x.size > 1 else np.nan
    return (float(x.mean()), std, int(x.size), *bootstrap_interval(x))


def few_repetitions_warning(n: int) -> str:
    """The warning shown wherever a table rests on fewer than FEW_REPETITIONS repetitions, else ""."""
    if n >= FEW_REPETITIONS:
        return ""
    return (
        f"only {n} repetition{'s' if n != 1 else ''} (fewer than {FEW_REPETITIONS}): intervals are "
        "rough and the paired tests between metrics optimistic; run more repetitions"
    )


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, int, float, float]:
    """Mean, sample std, count and Student-t CI of the mean of the finite values (NaN CI if n < 2).

    Not used for Table 3 or IFC (bootstrap_interval is); the perturbation table uses it and says so."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return np.nan, np.nan, 0, np.nan, np.nan
    mean = float(x.mean())
    if n == 1:
        return mean, np.nan, 1, np.nan, np.nan
    std = float(x.std(ddof=1))
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / np.sqrt(n)
    return mean, std, n, mean - half, mean + half
