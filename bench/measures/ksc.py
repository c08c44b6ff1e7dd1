"""Quality measures of a metric on one KSC collection (004 §4).

Each takes the distances D = {d(c_i, c_j) : i < j} of one repetition, as arrays of
i, j and distance. All measures are invariant to a positive affine rescaling of the
distances, so z-scoring first (004 §3) does not change them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd


def monotonicity(ell, distance) -> float:
    """rho: Spearman rank correlation of distance with ell (004 §4.1)."""
    ell, distance = np.asarray(ell, float), np.asarray(distance, float)
    if np.ptp(distance) == 0 or np.ptp(ell) == 0:
        return float("nan")
    from scipy import stats

    return float(stats.spearmanr(ell, distance).statistic)


def omega_squared(ell, distance) -> float:
    """omega^2 of a one-way fixed-effects ANOVA with ell as categorical treatment (004 eq. 4).

    (SS_treatment - df_treatment * MS_residual) / (SS_total + MS_residual), from statsmodels.
    """
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    frame = pd.DataFrame({"ell": np.asarray(ell, int), "d": np.asarray(distance, float)})
    if frame["d"].nunique() < 2:
        return float("nan")
    table = anova_lm(smf.ols("d ~ C(ell)", data=frame).fit(), typ=1)
    ss_treat, ss_resid = table["sum_sq"].iloc[0], table["sum_sq"].iloc[1]
    df_treat, ms_resid = table["df"].iloc[0], table["mean_sq"].iloc[1]
    return float((ss_treat - df_treat * ms_resid) / (ss_treat + ss_resid + ms_resid))


def linearity(ell, distance) -> float:
    """L: coefficient of determination R^2 of distance regressed on ell (004 §4.3).

    004's text defines R^2; its authors' code stored Pearson r instead.
    """
    ell, distance = np.asarray(ell, float), np.asarray(distance, float)
    if np.ptp(distance) == 0:
        return float("nan")
    from scipy import stats

    return float(stats.linregress(ell, distance).rvalue ** 2)


@lru_cache(maxsize=32)
def judgement_set(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct containment judgements J of 004 §4.5 (eq. 5, footnote 8).

    Returns (inner, outer, weight): pair indices into ``corpus_pairs(k)`` order, where the
    inner interval (q, r) lies strictly inside the outer (i, j): i <= q < r <= j, (q, r) != (i, j);
    weight = 1 / (ell_outer - ell_inner). |J| = 105 for k = 7 and 935 for k = 12.
    """
    pairs = [(i, j) for i in range(1, k + 1) for j in range(i + 1, k + 1)]
    inner, outer, weight = [], [], []
    for o, (i, j) in enumerate(pairs):
        for n_, (q, r) in enumerate(pairs):
            if i <= q and r <= j and (q, r) != (i, j):
                inner.append(n_)
                outer.append(o)
                weight.append(1.0 / ((j - i) - (r - q)))
    return np.array(inner), np.array(outer), np.array(weight)


def judgement_accuracy(i, j, distance, k: int, *, weighted: bool = False) -> float:
    """A (or A^w when ``weighted``): share of judgements where the inner pair is closer (004 eq. 6-7).

    A judgement is correct when d(inner) < d(outer); a tie counts one half, so a constant
    metric scores 0.5. A^w weights each judgement by 1 / (ell_outer - ell_inner),
    normalised by the sum of weights.
    """
    index = {(a, b): n for n, (a, b) in enumerate((a, b) for a in range(1, k + 1) for b in range(a + 1, k + 1))}
    d = np.full(len(index), np.nan)
    for a, b, v in zip(np.asarray(i, int), np.asarray(j, int), np.asarray(distance, float)):
        d[index[(a, b)]] = v
    if np.isnan(d).any():
        return float("nan")
    inner, outer, weight = judgement_set(k)
    score = np.where(d[inner] < d[outer], 1.0, np.where(d[inner] == d[outer], 0.5, 0.0))
    w = weight if weighted else np.ones_like(weight)
    return float((w * score).sum() / w.sum())


def zscore(distance) -> np.ndarray:
    """Distances standardised within one (metric, repetition) for pooling and plots (004 §3)."""
    d = np.asarray(distance, float)
    if not np.isfinite(d).any():
        return np.full_like(d, np.nan)
    sd = np.nanstd(d)
    return (d - np.nanmean(d)) / sd if sd > 0 else np.zeros_like(d)


def collection_measures(i, j, distance, seconds, k: int) -> dict[str, float]:
    """All KSC measures of one (metric, repetition): rho, omega2, L, A, Aw and T (pairs/s)."""
    i, j = np.asarray(i, int), np.asarray(j, int)
    distance = np.asarray(distance, float)
    ell = j - i
    total = float(np.nansum(seconds))
    return {
        "rho": monotonicity(ell, distance),
        "omega2": omega_squared(ell, distance),
        "L": linearity(ell, distance),
        "A": judgement_accuracy(i, j, distance, k),
        "Aw": judgement_accuracy(i, j, distance, k, weighted=True),
        "T": len(distance) / total if total > 0 else float("nan"),
    }
