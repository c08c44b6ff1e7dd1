"""The Kneser-Ney model and the n-gram divergences (metrics/ngram_divergences.py)."""

import math
import time

import numpy as np
import pytest

from bench.api.registry import get_metric
from bench.api.sharing import sharing
from bench.api.tokens import tokenize
from bench.errors import MetricError
from metrics.divergences import kl_forward
from metrics.ngram_divergences import UNK, _discount, fit_kneser_ney, ngram_frontier, pair_log_probs

NAMES = ["ngram_kl_forward", "ngram_kl_backward", "ngram_exp_kl", "ngram_js", "ngram_auc"]


def test_bigram_model_on_a_hand_computed_corpus():
    # "a b" and "a c", order 2, discount 0.5. Padded: <s> a b </s>, <s> a c </s>.
    # Unigram continuation counts (distinct left neighbours): a 1, b 1, c 1, </s> 2; total 5; 4 types.
    #   P1(w) = max(N(.w) - .5, 0) / 5 + (.5 * 4 / 5) * 1/5   (uniform over a, b, c, </s>, <unk>)
    #   P1(a) = P1(b) = P1(c) = .1 + .08 = .18, P1(</s>) = .3 + .08 = .38, P1(<unk>) = .08
    # Context "a": b 1, c 1 -> P(b|a) = .5/2 + (.5 * 2/2) * .18 = .34, P(a|a) = .5 * .18 = .09
    # Context "<s>": a 2 -> P(a|<s>) = 1.5/2 + (.5 * 1/2) * .18 = .795
    # Context "b": </s> 1 -> P(</s>|b) = .5 + .5 * .38 = .69
    model = fit_kneser_ney([["a", "b"], ["a", "c"]], order=2, discount=0.5)
    assert model.probability("a", ["<s>"]) == pytest.approx(0.795)
    assert model.probability("b", ["a"]) == pytest.approx(0.34)
    assert model.probability("a", ["a"]) == pytest.approx(0.09)
    assert model.probability(UNK, ["a"]) == pytest.approx(0.04)
    assert math.exp(model.log_probability(["a", "b"])) == pytest.approx(0.795 * 0.34 * 0.69)
    # an unseen word is <unk>; the context "<unk>" was never seen, so </s> backs off to P1(</s>) = .38
    assert math.exp(model.log_probability(["a", "zebra"])) == pytest.approx(0.795 * 0.04 * 0.38)


def test_auto_discount_is_ney_essen_knesers_estimate():
    # counts of counts n1 = 4, n2 = 1: D = 4 / (4 + 2) ; no singletons: 0.5
    assert _discount({"w": 1, "x": 1, "y": 1, "z": 1, "v": 2}, "auto") == pytest.approx(4 / 6)
    assert _discount({"w": 2, "x": 3}, "auto") == 0.5


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_probabilities_sum_to_one_in_every_context(order, real_samples):
    texts = real_samples.draws[0][0]["a1"]
    model = fit_kneser_ney([tokenize(t) for t in texts], order=order)
    words = sorted(model.vocabulary) + [UNK]
    first = tokenize(texts[0]) + ["x", "y", "z"]
    contexts = [["<s>"] * 3, first[:3], first[1:4], ["the", "of", "a"], ["zebra", "unseen", "words"],
                [UNK, "the", "computer"], first[-3:]]
    for context in contexts:
        assert sum(model.probability(w, context) for w in words) == pytest.approx(1.0, abs=1e-12), context


def test_other_corpus_texts_get_finite_log_probabilities(real_samples):
    texts = real_samples.draws[0][0]
    model = fit_kneser_ney([tokenize(t) for t in texts["a1"]], order=3)
    scores = [model.log_probability(tokenize(t)) for t in texts["b1"]]
    assert np.isfinite(scores).all() and max(scores) < 0


def test_text_unit_is_the_token_unit_times_the_mean_text_length(real_samples):
    p, q = real_samples.draws[0][0]["a1"], real_samples.draws[0][0]["b1"]
    per_token = kl_forward(ngram_frontier(p, q, order=2, discount="auto", unit="token"))
    per_text = kl_forward(ngram_frontier(p, q, order=2, discount="auto", unit="text"))
    tokens_per_text = np.mean([len(tokenize(t)) + 1 for t in p])  # + </s>
    assert per_text == pytest.approx(per_token * tokens_per_text, rel=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_a_corpus_against_itself_is_at_distance_zero(name, real_samples):
    a1 = real_samples.draws[0][0]["a1"]
    assert get_metric(name)(a1, a1) == pytest.approx(0.0, abs=1e-12)


def test_the_five_divergences_share_the_models_and_the_scores(real_samples):
    p, q = real_samples.draws[0][0]["a1"], real_samples.draws[0][0]["b1"]
    with sharing() as memo:
        start = time.perf_counter()
        values = [get_metric(name)(p, q) for name in NAMES]
        seconds = time.perf_counter() - start
    kinds = [key[1] for key in memo.store]
    assert kinds.count(pair_log_probs.__qualname__) == 1  # scored once for the five metrics
    assert kinds.count("corpus_model") == 2 and kinds.count("tokenised") == 2
    assert np.isfinite(values).all()
    print(f"five n-gram divergences of one 100-text pair: {seconds * 1000:.0f} ms")


def test_bad_parameters_name_the_problem(real_samples):
    p, q = real_samples.draws[0][0]["a1"], real_samples.draws[0][0]["b1"]
    with pytest.raises(MetricError, match="unit"):
        get_metric("ngram_js")(p, q, unit="word")
    with pytest.raises(MetricError, match="order"):
        get_metric("ngram_js")(p, q, order=0)
    with pytest.raises(MetricError, match="discount"):
        get_metric("ngram_js")(p, q, discount=1.5)
