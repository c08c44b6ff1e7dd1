"""The divergences of 000 eqs. 5-9 (metrics/divergences.py): hand-computed values, mauve-text's
frontier as reference, and Monte Carlo estimates converging to the exact values."""

import math

import numpy as np
import pytest
from mauve.compute_mauve import get_divergence_curve_for_multinomials
from sklearn.metrics import auc as area_under_curve

from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.divergences import (
    DIVERGENCES,
    auc,
    exp_kl,
    histogram_frontier,
    js,
    kl_backward,
    kl_forward,
    laplace_histogram,
    sample_frontier,
)

# p = (.5, .5), q = (.25, .75), by hand:
#   KL(p ‖ q) = .5 ln(.5/.25) + .5 ln(.5/.75) = .5 ln(4/3)                    = 0.143841
#   KL(q ‖ p) = .25 ln(.25/.5) + .75 ln(.75/.5) = .25 ln .5 + .75 ln 1.5     = 0.130812
#   e^KL(p ‖ q) - 1 = (4/3)^(1/2) - 1                                         = 0.154701
#   m = (.375, .625): KL(p ‖ m) = .5 ln(4/3) + .5 ln .8 = .5 ln(16/15)        = 0.032269
#                     KL(q ‖ m) = .25 ln(2/3) + .75 ln 1.2                     = 0.035375
#   JS = (0.032269 + 0.035375) / 2                                            = 0.033822
HAND = {
    "kl_forward": 0.5 * math.log(4 / 3),
    "kl_backward": 0.25 * math.log(0.5) + 0.75 * math.log(1.5),
    "exp_kl": math.sqrt(4 / 3) - 1,
    "js": 0.5 * (0.5 * math.log(16 / 15) + 0.25 * math.log(2 / 3) + 0.75 * math.log(1.2)),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_divergence_on_a_hand_computed_pair(name):
    assert DIVERGENCES[name](histogram_frontier([0.5, 0.5], [0.25, 0.75])) == pytest.approx(HAND[name], rel=1e-12)
    assert HAND["kl_forward"] == pytest.approx(0.143841, abs=1e-6) and HAND["js"] == pytest.approx(0.033822, abs=1e-6)


def test_auc_of_disjoint_supports_at_s_1_is_one_half():
    # p = (1, 0), q = (0, 1): KL(p ‖ r_λ) = -ln λ, KL(q ‖ r_λ) = -ln(1 - λ), so with s = 1 the frontier
    # is (1 - λ, λ): the line x + y = 1 from (1, 0) to (0, 1), under which the area is exactly 1/2.
    assert auc(histogram_frontier([1.0, 0.0], [0.0, 1.0]), scaling=1.0) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("scaling", [5.0, 2.0])
def test_auc_matches_mauve_texts_area_under_its_frontier(scaling):
    rng = np.random.default_rng(3)
    for _ in range(5):
        p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
        x, y = get_divergence_curve_for_multinomials(p, q, np.linspace(1e-6, 1 - 1e-6, 25), scaling).T
        i, j = np.argsort(x), np.argsort(y)
        mauve = 0.5 * (area_under_curve(x[i], y[i]) + area_under_curve(y[j], x[j]))
        assert auc(histogram_frontier(p, q), scaling=scaling) == pytest.approx(1 - mauve, abs=1e-12)


def test_identical_distributions_are_at_distance_zero_and_the_order_matters_only_for_the_kls():
    p, q = np.array([0.1, 0.2, 0.7]), np.array([0.3, 0.3, 0.4])
    for fn in DIVERGENCES.values():
        assert fn(histogram_frontier(p, p)) == pytest.approx(0.0, abs=1e-15)
    forward, backward = histogram_frontier(p, q), histogram_frontier(q, p)
    assert kl_backward(forward) == pytest.approx(kl_forward(backward), rel=1e-12)
    assert js(forward) == pytest.approx(js(backward), rel=1e-12)
    assert auc(forward) == pytest.approx(auc(backward), rel=1e-9)
    assert js(forward) <= math.log(2)


def test_laplace_smoothing_adds_alpha_to_every_bin():
    # counts (3, 0, 1), alpha = 1: (4, 1, 2) / 7; alpha = 0 leaves the relative frequencies
    assert laplace_histogram([3, 0, 1], 1.0) == pytest.approx([4 / 7, 1 / 7, 2 / 7])
    assert laplace_histogram([3, 0, 1], 0.0) == pytest.approx([3 / 4, 0, 1 / 4])
    # an empty bin of q makes KL(p ‖ q) infinite without smoothing, finite with it
    assert math.isinf(kl_forward(histogram_frontier(laplace_histogram([2, 2], 0), laplace_histogram([4, 0], 0))))
    assert math.isfinite(kl_forward(histogram_frontier(laplace_histogram([2, 2]), laplace_histogram([4, 0]))))
    with pytest.raises(MetricError, match="alpha"):
        laplace_histogram([1, 2], -1.0)


def test_monte_carlo_estimates_converge_to_the_exact_values():
    # Categorical p and q on 6 outcomes; samples from each; log p(x), log q(x) of every sample.
    p = np.array([0.30, 0.25, 0.20, 0.10, 0.10, 0.05])
    q = np.array([0.10, 0.10, 0.20, 0.20, 0.25, 0.15])
    rng = np.random.default_rng(0)
    from_p, from_q = rng.choice(6, 400_000, p=p), rng.choice(6, 400_000, p=q)
    estimate = sample_frontier(np.log(p[from_p]), np.log(q[from_p]), np.log(p[from_q]), np.log(q[from_q]))
    exact = histogram_frontier(p, q)
    for name, fn in DIVERGENCES.items():
        # standard errors at 400k samples are below 0.002 (per-sample log-ratio sd < 1.1)
        assert fn(estimate) == pytest.approx(fn(exact), abs=0.006), name


def test_monte_carlo_of_one_model_against_itself_is_zero():
    lp = np.log(np.random.default_rng(1).uniform(0.01, 1, 50))
    for fn in DIVERGENCES.values():
        assert fn(sample_frontier(lp, lp, lp, lp)) == pytest.approx(0.0, abs=1e-12)


def test_bad_inputs_name_the_problem():
    with pytest.raises(MetricError, match="summing to 1"):
        histogram_frontier([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(MetricError, match="same bins"):
        histogram_frontier([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(MetricError, match="non-finite"):
        sample_frontier([0.0, -np.inf], [0.0, 0.0], [0.0], [0.0])
    with pytest.raises(MetricError, match="overflows"):
        exp_kl(sample_frontier([0.0], [-800.0], [0.0], [0.0]))
    with pytest.raises(MetricError, match="scaling"):
        auc(histogram_frontier([0.5, 0.5], [0.5, 0.5]), scaling=0.0)
