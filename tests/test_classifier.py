"""CLASSIFIER's precomputed RBF kernel gives libsvm's own-kernel predictions, so the
speed-up changes no distance.

The reference is the plain scikit-learn computation the metric used before: per stratified
split (the default one 80/20 split, and 5 folds), ``SVC(kernel="rbf", gamma="scale")`` on the
L2-normalised embeddings, libsvm computing every kernel value itself. Ours computes the kernel by BLAS matrix products, which differ from
libsvm's dot products in the last bits, so a prediction could in principle flip where a
decision value is within ~1e-12 of 0 (the two paths' decision values differed by at most
2.2e-13 on real corpora of up to 3000 + 3000 texts, and no held-out text of those 21,000 had a
decision value within 1e-6 of 0). None flips: the predictions are compared for exact equality
over 30 seeds on each real pair below, so the metric's value is the reference's.
"""

import numpy as np
import pytest

from textmetric_bench.api.inputs import canonical_pair
from textmetric_bench.metrics.classifier import (
    classifier,
    held_out_predictions,
    rbf_kernel_blocks,
    squared_distances,
)

SEEDS = range(30)


def reference_predictions(x: np.ndarray, labels: np.ndarray, seed: int, folds: int) -> tuple[np.ndarray, np.ndarray]:
    """The pre-issue-10 path: libsvm's RBF kernel, gamma = "scale", on scikit-learn's stratified split
    (80/20, ``folds`` = 0) or folds; (held-out rows, their predictions)."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit
    from sklearn.svm import SVC

    splitter = (
        StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        if folds
        else StratifiedShuffleSplit(n_splits=1, test_size=0.2, random_state=seed)
    )
    predicted = np.full_like(labels, -1)
    for train, test in splitter.split(x, labels):
        train = np.sort(train)
        svm = SVC(kernel="rbf", C=1.0, gamma="scale", class_weight="balanced").fit(x[train], labels[train])
        predicted[test] = svm.predict(x[test])
    tested = np.flatnonzero(predicted >= 0)
    return tested, predicted[tested]


@pytest.fixture(scope="module")
def pairs(real_samples):
    """Real fortune pairs: across sources, within a source, 50 vs 400, and a corpus against itself."""
    first, second = (draw[1] for draw in real_samples.draws[:2])
    return {
        "across-100v100": (first["a1"], first["b1"]),
        "same-source-100v100": (first["a1"], first["a2"]),
        "unbalanced-50v400": (first["a1"][:50], np.vstack([first["b1"], first["b2"], second["b1"], second["b2"]])),
        "itself-100v100": (first["mix"], first["mix"]),  # every text has an exact twin in the other corpus
    }


@pytest.mark.parametrize("folds", [0, 5])
@pytest.mark.parametrize("name", ["across-100v100", "same-source-100v100", "unbalanced-50v400", "itself-100v100"])
def test_predictions_equal_libsvm_own_kernel(pairs, name, folds):
    from sklearn.metrics import balanced_accuracy_score

    p, q = (np.asarray(v, dtype=np.float64) for v in pairs[name])
    x, y = canonical_pair(*(v / np.linalg.norm(v, axis=1, keepdims=True) for v in (p, q)))
    data, labels = np.vstack([x, y]), np.r_[np.zeros(len(x), dtype=int), np.ones(len(y), dtype=int)]
    for seed in SEEDS:
        rows, expected = reference_predictions(data, labels, seed, folds)
        assert len(rows) == (len(data) if folds else int(np.ceil(0.2 * len(data))))
        tested, ours = held_out_predictions(data, labels, folds=folds, C=1.0, seed=seed)
        assert np.array_equal(tested, rows)
        assert np.array_equal(ours, expected), f"{name}, seed {seed}: {np.sum(ours != expected)} predictions differ"
        value = classifier(p, q, seed=seed, folds=folds, kernel_precision="float64")
        assert value == pytest.approx(balanced_accuracy_score(labels[rows], expected), abs=1e-12)
        assert value == classifier(p, q, seed=seed, folds=folds, max_kernel_mb=0)  # the fallback: libsvm's kernel
        assert classifier(p, q, seed=seed, folds=folds) == value  # the default's float32 dot products decide alike


def test_one_split_holds_out_a_fifth_of_each_corpus_and_the_seed_moves_it(pairs):
    from textmetric_bench.metrics.classifier import held_out_splits

    labels = np.r_[np.zeros(50, dtype=int), np.ones(400, dtype=int)]
    ((train, test),) = held_out_splits(labels, folds=0, test_size=0.2, seed=3)
    assert len(test) == 90 and np.sum(labels[test] == 0) == 10 and not set(train) & set(test)
    ((_, other),) = held_out_splits(labels, folds=0, test_size=0.2, seed=4)
    assert not np.array_equal(test, other)
    values = {classifier(*pairs["same-source-100v100"], seed=s) for s in range(6)}
    assert len(values) > 1 and all(0.0 <= v <= 1.0 for v in values)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"folds": 1}, "folds must be 0"), ({"test_size": 1.0}, "test_size"), ({"test_size": 0.0}, "test_size")],
)
def test_bad_split_settings_are_named(pairs, kwargs, message):
    from textmetric_bench.errors import MetricError

    with pytest.raises(MetricError, match=message):
        classifier(*pairs["across-100v100"], **kwargs)


def test_too_few_texts_for_the_split_are_named(pairs):
    from textmetric_bench.errors import MetricError

    p, q = pairs["across-100v100"]
    with pytest.raises(MetricError, match="needs at least 5 texts in each corpus, got 4 and 100"):
        classifier(p[:4], q)


def test_kernel_blocks_are_sklearn_rbf_kernel_with_scale_gamma(pairs):
    from sklearn.metrics.pairwise import rbf_kernel

    x, y = (
        v / np.linalg.norm(v, axis=1, keepdims=True)
        for v in (np.asarray(v, dtype=np.float64) for v in pairs["unbalanced-50v400"])
    )
    train, test = np.vstack([x, y[:200]]), y[200:]
    gamma = 1.0 / (train.shape[1] * train.var())  # scikit-learn's documented gamma = "scale"
    k_train, k_test = rbf_kernel_blocks(train, test)
    np.testing.assert_allclose(k_train, rbf_kernel(train, gamma=gamma), rtol=1e-12, atol=0)
    np.testing.assert_allclose(k_test, rbf_kernel(test, train, gamma=gamma), rtol=1e-12, atol=0)
    assert (np.diagonal(k_train) == 1.0).all()  # exactly, as libsvm's own kernel: see rbf_kernel_blocks
    assert np.array_equal(k_train, k_train.T)


@pytest.mark.parametrize(
    "folds, fits, fails, sizes",
    [
        (0, 0.293, 0.292, [160]),  # one split: its 160 x 160 float32 training kernel and its float64 copy: 0.293 MiB
        (5, 0.446, 0.445, [200]),  # folds: 200 x 200 float32 distances + a 160 x 160 training block and copy: 0.446 MiB
    ],
)
def test_fallback_size_is_the_kernel_memory(pairs, monkeypatch, folds, fits, fails, sizes):
    import textmetric_bench.metrics.classifier as module

    p, q = pairs["across-100v100"]
    calls = []
    monkeypatch.setattr(module, "squared_distances", lambda a, **kw: calls.append(len(a)) or squared_distances(a, **kw))
    precomputed = classifier(p, q, folds=folds, max_kernel_mb=fits)
    assert calls == sizes  # one distance matrix per pair (folds) or the split's training block
    calls.clear()
    assert classifier(p, q, folds=folds, max_kernel_mb=fails) == precomputed  # libsvm's own kernel, same predictions
    assert calls == []


def test_negative_kernel_memory_is_rejected(pairs):
    from textmetric_bench.errors import MetricError

    with pytest.raises(MetricError, match="max_kernel_mb must be >= 0"):
        classifier(*pairs["across-100v100"], max_kernel_mb=-1)
