"""The per-text score -> corpus distance adapter (textmetric_bench.api.per_text): registration, W1, pool and seed, errors."""

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from textmetric_bench.api.per_text import per_text_metric
from textmetric_bench.api.registry import get_metric, unregister
from textmetric_bench.errors import MetricError


@pytest.fixture
def toy():
    names = []

    def register(name, **kw):
        names.append(name)
        return per_text_metric(name, **kw)

    yield register
    for name in names:
        unregister(name)


def test_a_toy_scorer_becomes_a_corpus_metric(toy):
    @toy("toy_length_w1", description="W1 between text lengths")
    def length(texts, *, unit: str = "words"):
        return [len(t.split()) if unit == "words" else len(t) for t in texts]

    m = get_metric("toy_length_w1")
    assert m.params == {"unit": "words"} and m.symmetric and m.inputs == "texts"
    p, q = ["a b", "a b c", "a"], ["a b c d", "x y z w v"]
    assert m(p, q, seed=0) == pytest.approx(wasserstein_distance([2, 3, 1], [4, 5]))
    assert m(p, q, seed=0, unit="chars") == pytest.approx(wasserstein_distance([3, 5, 1], [7, 9]))
    assert m(p, list(reversed(p)), seed=0) == 0.0
    assert length(["one two"]) == [2]  # the scorer itself is returned unchanged


def test_pool_and_seed_reach_the_scorer(toy):
    seen = {}

    @toy("toy_rarity_w1")
    def rarity(texts, *, pool, seed: int = 0, smoothing: float = 1.0):
        seen["pool"], seen["seed"] = list(pool), seed
        counts = {t: pool.count(t) for t in pool}
        return [1.0 / (counts[t] + smoothing) for t in texts]

    m = get_metric("toy_rarity_w1")
    assert m.params == {"smoothing": 1.0}
    m(["x", "y"], ["y", "z"], seed=7)
    assert sorted(seen["pool"]) == ["x", "y", "y", "z"] and seen["seed"] == 7


def test_bad_scores_raise_naming_the_metric(toy):
    @toy("toy_broken_w1")
    def broken(texts, *, mode: str = "nan"):
        return [float("nan")] * len(texts) if mode == "nan" else [1.0]

    m = get_metric("toy_broken_w1")
    with pytest.raises(MetricError, match="toy_broken_w1.*NaN"):
        m(["a"], ["b"], seed=0)
    with pytest.raises(MetricError, match="one number per text"):
        m(["a", "b"], ["c"], seed=0, mode="short")
    with pytest.raises(MetricError, match="empty"):
        m([], ["c"], seed=0)


def test_embedding_scorers_work_too(toy):
    @toy("toy_norm_w1", inputs="embeddings")
    def norm(x):
        return np.linalg.norm(x, axis=1)

    m = get_metric("toy_norm_w1")
    assert m(np.ones((3, 2)), 2 * np.ones((2, 2)), seed=0) == pytest.approx(np.sqrt(2))
