"""CTRLEval-style infilling coherence (001 §3.2.1): segmentation, NISF weights, the fill-in-the-blank
prompt on real sentences with the real SmolLM2, and the W1 corpus metric."""

from collections import Counter

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from textmetric_bench.api.context import lm_scorer
from textmetric_bench.api.registry import get_metric
from textmetric_bench.metrics.ctrleval import (
    coherence,
    infill_logprobs,
    infill_prompts,
    masked_parts,
    nisf_weights,
    sentences,
)


def test_sentences_and_masked_parts():
    text = "It rained. We stayed in! Did you? Fine."
    assert sentences(text) == ["It rained.", "We stayed in!", "Did you?", "Fine."]
    assert masked_parts(text, spans=3, max_masks=4, max_words=128) == sentences(text)
    # More sentences than max_masks: contiguous groups.
    assert masked_parts(text, spans=3, max_masks=2, max_words=128) == ["It rained. We stayed in!", "Did you? Fine."]
    # One sentence: contiguous word spans.
    assert masked_parts("how do i top up my card", spans=3, max_masks=4, max_words=128) == [
        "how do i",
        "top up",
        "my card",
    ]
    assert masked_parts("hello", spans=3, max_masks=4, max_words=128) == ["hello"]
    assert masked_parts("a b c d e f", spans=3, max_masks=4, max_words=4) == ["a b", "c", "d"]


def test_prompts_blank_one_part_each():
    prompts = infill_prompts(["It rained.", "We stayed in."])
    head = "Text with a gap: {}\nThe same text with the gap filled in:"
    assert prompts[0] == (head.format("___ We stayed in."), " It rained.")
    assert prompts[1] == (head.format("It rained. ___") + " It rained.", " We stayed in.")


def test_nisf_weights_by_hand():
    # C has 4 sentences; "rare" is in 1 of them, "common" in 4, "mid" in 2.
    freq = Counter({"rare": 1, "common": 4, "mid": 2})
    w = nisf_weights(["rare common", "mid common", "common"], freq, 4)
    iwf = np.log1p(4) / np.array([1.0, 2.0, 4.0])  # ISF = max IWF of the part's words
    np.testing.assert_allclose(w, iwf / iwf.sum())
    assert w.sum() == pytest.approx(1.0)


@pytest.mark.slow  # ~30-60 s: in `make test-slow`, keeping the default suite under 15 min
def test_true_span_is_more_likely_than_a_random_one(lm_context, intent_texts):
    """The prompt works: on real banking77 sentences the LM prefers the blanked-out middle span to a
    span with as many words taken from the other corpus (clinc150)."""
    options = dict(spans=3, max_masks=4, max_words=128)
    donors: dict[int, list[str]] = {}
    for text in intent_texts["a"][:400]:
        for part in masked_parts(text, **options):
            donors.setdefault(len(part.split()), []).append(part)
    rng = np.random.default_rng(0)
    prompts, true, other = [], [], []
    for text in [t for t in intent_texts["b"] if len(t.split()) >= 6][:24]:
        parts = masked_parts(text, **options)
        if len(parts) < 3 or len(parts[1].split()) not in donors:
            continue
        prompt, span = infill_prompts(parts)[1]
        same_length = donors[len(parts[1].split())]
        prompts.append(prompt)
        true.append(span)
        other.append(" " + same_length[rng.integers(len(same_length))])
    assert len(prompts) >= 16
    lm = lm_scorer()
    right = lm.continuation_logprobs(prompts, true)
    wrong = lm.continuation_logprobs(prompts, other)
    assert np.mean(right > wrong) >= 0.75
    assert right.mean() > wrong.mean() + 1.0


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_coherence_metric_is_w1_of_per_text_scores(lm_context, intent_texts):
    a, b = intent_texts["a"][:12], intent_texts["b"][:12]
    m = get_metric("ctrleval_coherence")
    assert m.opt_in and set(m.params) == {"spans", "max_masks", "max_words"}
    pool = a + b
    expected = wasserstein_distance(coherence(a, pool=pool), coherence(b, pool=pool))
    assert m(a, b, seed=0) == pytest.approx(expected, rel=1e-12)
    assert m(b, a, seed=0) == pytest.approx(expected, rel=1e-12)
    assert m(a, a, seed=0) == 0.0
    before = lm_scorer().scored
    infill_logprobs(a + b, spans=3, max_masks=4, max_words=128)
    assert lm_scorer().scored == before  # every masked part was scored once and cached
