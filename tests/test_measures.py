"""Quality measures (004 §4) against hand computations and reference libraries."""

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.formula.api import ols

from textmetric_bench.collections.ksc import corpus_pairs, mixture_counts
from textmetric_bench.measures.ksc import (
    collection_measures,
    judgement_accuracy,
    judgement_set,
    linearity,
    monotonicity,
    omega_squared,
    zscore,
)


def brute_force_judgements(k):
    pairs = list(itertools.combinations(range(1, k + 1), 2))
    return {
        (inner, outer)
        for inner in pairs
        for outer in pairs
        if inner != outer and outer[0] <= inner[0] and inner[1] <= outer[1]
    }


@pytest.mark.parametrize("k,size", [(3, 2), (7, 105), (12, 935)])
def test_judgement_set_size(k, size):
    inner, outer, weight = judgement_set(k)
    assert len(inner) == size == len(brute_force_judgements(k))
    pairs = corpus_pairs(k)
    found = {(pairs[a], pairs[b]) for a, b in zip(inner, outer)}
    assert found == brute_force_judgements(k)
    ells = np.array([j - i for i, j in pairs])
    assert np.allclose(weight, 1.0 / (ells[outer] - ells[inner]))


def table(k, values):
    pairs = corpus_pairs(k)
    i = np.array([p[0] for p in pairs])
    j = np.array([p[1] for p in pairs])
    return i, j, np.array([values(a, b) for a, b in pairs], dtype=float)


@pytest.mark.parametrize("k", [7, 12])
def test_accuracy_of_a_perfect_metric_is_one(k):
    share = [a / 100 for a, _ in mixture_counts(k, 100)]
    i, j, d = table(k, lambda a, b: abs(share[a - 1] - share[b - 1]))
    assert judgement_accuracy(i, j, d, k) == 1.0
    assert judgement_accuracy(i, j, d, k, weighted=True) == 1.0


@pytest.mark.parametrize("k", [7, 12])
def test_constant_metric_scores_one_half_and_reversed_scores_zero(k):
    i, j, d = table(k, lambda a, b: 3.0)
    assert judgement_accuracy(i, j, d, k) == 0.5
    assert judgement_accuracy(i, j, d, k, weighted=True) == 0.5
    i, j, d = table(k, lambda a, b: -(b - a))
    assert judgement_accuracy(i, j, d, k) == 0.0


def test_weighted_accuracy_by_hand_k4():
    # Pairs of k=4; the only wrong judgement: (1,2) inside (1,3) (ell 1 vs 2, weight 1).
    d = {(1, 2): 5.0, (2, 3): 1.0, (3, 4): 1.0, (1, 3): 4.0, (2, 4): 2.0, (1, 4): 6.0}
    i, j, dist = table(4, lambda a, b: d[(a, b)])
    inner, outer, weight = judgement_set(4)
    # 9 judgements: 4 of ell 1 inside ell 2 (weight 1), 3 of ell 1 inside ell 3 (weight 1/2),
    # 2 of ell 2 inside ell 3 (weight 1); total weight 7.5, the wrong one weighs 1.
    assert sorted(weight.tolist()) == [0.5] * 3 + [1.0] * 6
    assert judgement_accuracy(i, j, dist, 4) == pytest.approx(8 / 9)
    assert judgement_accuracy(i, j, dist, 4, weighted=True) == pytest.approx((7.5 - 1.0) / 7.5)


def test_tie_counts_one_half():
    d = {(1, 2): 1.0, (2, 3): 2.0, (1, 3): 2.0}
    i, j, dist = table(3, lambda a, b: d[(a, b)])
    assert judgement_accuracy(i, j, dist, 3) == pytest.approx(0.75)


def test_omega_squared_by_hand():
    ell = [1, 1, 1, 2, 2, 2]
    d = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # SS_treat = 3(2-3.5)^2 + 3(5-3.5)^2 = 13.5; SS_res = 4; df = 1; MS_res = 4/4; SS_tot = 17.5
    assert omega_squared(ell, d) == pytest.approx((13.5 - 1.0) / (17.5 + 1.0))


def test_omega_squared_equals_statsmodels_on_random_data():
    rng = np.random.default_rng(0)
    ell = np.repeat(np.arange(1, 7), [6, 5, 4, 3, 2, 1])
    d = ell * 0.3 + rng.normal(size=ell.size)
    frame = pd.DataFrame({"ell": ell, "d": d})
    res = sm.stats.anova_lm(ols("d ~ C(ell)", frame).fit())
    ss_t, ss_r = res.sum_sq.iloc[0], res.sum_sq.iloc[1]
    expected = (ss_t - res.df.iloc[0] * res.mean_sq.iloc[1]) / (ss_t + ss_r + res.mean_sq.iloc[1])
    # and by hand from group means
    grand = d.mean()
    ss_treat = sum(d[ell == g].size * (d[ell == g].mean() - grand) ** 2 for g in np.unique(ell))
    ss_total = ((d - grand) ** 2).sum()
    ms_res = (ss_total - ss_treat) / (d.size - 6)
    by_hand = (ss_treat - 5 * ms_res) / (ss_total + ms_res)
    assert omega_squared(ell, d) == pytest.approx(expected) == pytest.approx(by_hand)


def test_linearity_is_r_squared_not_r():
    ell = np.array([1, 2, 3, 4, 5, 6], float)
    d = np.array([6.1, 4.8, 4.2, 2.9, 2.2, 0.8])
    r = stats.pearsonr(ell, d).statistic
    assert r < 0
    assert linearity(ell, d) == pytest.approx(r**2)


def test_monotonicity_is_spearman_and_nan_for_constant():
    ell = [1, 2, 3, 4]
    assert monotonicity(ell, [1, 4, 9, 16]) == pytest.approx(1.0)
    assert monotonicity(ell, [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(monotonicity(ell, [1, 1, 1, 1]))


def test_measures_are_invariant_to_z_scoring():
    rng = np.random.default_rng(1)
    i, j, d = table(7, lambda a, b: (b - a) + rng.normal(scale=0.8))
    raw = collection_measures(i, j, d, np.full(d.size, 0.01), 7)
    z = collection_measures(i, j, zscore(d), np.full(d.size, 0.01), 7)
    for name in ("rho", "omega2", "L", "A", "Aw"):
        assert raw[name] == pytest.approx(z[name])
    assert raw["T"] == pytest.approx(100.0)
    assert 0 < raw["Aw"] <= 1 and 0 < raw["A"] <= 1
