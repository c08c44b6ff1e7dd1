"""CLASSIFIER's precomputed RBF kernel gives libsvm's own-kernel predictions (issue 10).

The reference is the plain scikit-learn computation the metric used before: per stratified
fold, ``SVC(kernel="rbf", gamma="scale")`` on the L2-normalised embeddings, libsvm computing
every kernel value itself. Ours computes the kernel by BLAS matrix products, which differ from
libsvm's dot products in the last bits, so a prediction could in principle flip where a
decision value is within ~1e-12 of 0 (the two paths' decision values differed by at most
2.2e-13 on real corpora of up to 3000 + 3000 texts, and no held-out text of those 21,000 had a
decision value within 1e-6 of 0). None flips: the predictions are compared for exact equality
over 30 seeds on each real pair below, so the metric's value is the reference's.
"""

import numpy as np
import pytest

from bench.api.inputs import canonical_pair
from metrics.classifier import (
    classifier,
    held_out_predictions,
    rbf_kernel_blocks,
    squared_distances,
)

SEEDS = range(30)


def reference_predictions(x: np.ndarray, labels: np.ndarray, seed: int) -> np.ndarray:
    """The pre-issue-10 path: libsvm's RBF kernel, gamma = "scale", per stratified fold."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    predicted = np.empty_like(labels)
    for train, test in StratifiedKFold(n_splits=5, shuffle=True, random_state=seed).split(x, labels):
        svm = SVC(kernel="rbf", C=1.0, gamma="scale", class_weight="balanced").fit(x[train], labels[train])
        predicted[test] = svm.predict(x[test])
    return predicted


@pytest.fixture(scope="module")
def pairs(real_samples):
    """Real fortune pairs: across sources, within a source, 50 vs 400, and a corpus against itself."""
    first, second = (draw[1] for draw in real_samples.draws[:2])
    return {
        "across-100v100": (first["a1"], first["b1"]),
        "same-source-100v100": (first["a1"], first["a2"]),
        "unbalanced-50v400": (first["a1"][:50],
                              np.vstack([first["b1"], first["b2"], second["b1"], second["b2"]])),
        "itself-100v100": (first["mix"], first["mix"]),  # every text has an exact twin in the other corpus
    }


@pytest.mark.parametrize("name", ["across-100v100", "same-source-100v100", "unbalanced-50v400",
                                  "itself-100v100"])
def test_predictions_equal_libsvm_own_kernel(pairs, name):
    from sklearn.metrics import balanced_accuracy_score

    p, q = (np.asarray(v, dtype=np.float64) for v in pairs[name])
    x, y = canonical_pair(*(v / np.linalg.norm(v, axis=1, keepdims=True) for v in (p, q)))
    data, labels = np.vstack([x, y]), np.r_[np.zeros(len(x), dtype=int), np.ones(len(y), dtype=int)]
    for seed in SEEDS:
        expected = reference_predictions(data, labels, seed)
        ours = held_out_predictions(data, labels, folds=5, C=1.0, seed=seed)
        assert np.array_equal(ours, expected), \
            f"{name}, seed {seed}: {np.sum(ours != expected)} predictions differ"
        value = classifier(p, q, seed=seed)
        assert value == pytest.approx(balanced_accuracy_score(labels, expected), abs=1e-12)
        assert value == classifier(p, q, seed=seed, max_kernel_mb=0)  # the fallback: libsvm's kernel


def test_kernel_blocks_are_sklearn_rbf_kernel_with_scale_gamma(pairs):
    from sklearn.metrics.pairwise import rbf_kernel

    x, y = (v / np.linalg.norm(v, axis=1, keepdims=True)
            for v in (np.asarray(v, dtype=np.float64) for v in pairs["unbalanced-50v400"]))
    train, test = np.vstack([x, y[:200]]), y[200:]
    gamma = 1.0 / (train.shape[1] * train.var())  # scikit-learn's documented gamma = "scale"
    k_train, k_test = rbf_kernel_blocks(train, test)
    np.testing.assert_allclose(k_train, rbf_kernel(train, gamma=gamma), rtol=1e-12, atol=0)
    np.testing.assert_allclose(k_test, rbf_kernel(test, train, gamma=gamma), rtol=1e-12, atol=0)
    assert (np.diagonal(k_train) == 1.0).all()  # exactly, as libsvm's own kernel: see rbf_kernel_blocks
    assert np.array_equal(k_train, k_train.T)


def test_fallback_size_is_the_kernel_memory(pairs, monkeypatch):
    import metrics.classifier as module

    p, q = pairs["across-100v100"]  # (200 x 200 distances + 160 x 160 training block) x 8 bytes = 0.50 MiB
    calls = []
    monkeypatch.setattr(module, "squared_distances", lambda a: calls.append(len(a)) or squared_distances(a))
    precomputed = classifier(p, q, max_kernel_mb=0.51)
    assert calls == [200]  # one distance matrix per pair, shared by the five folds
    calls.clear()
    assert classifier(p, q, max_kernel_mb=0.50) == precomputed  # libsvm's own kernel, same predictions
    assert calls == []


def test_negative_kernel_memory_is_rejected(pairs):
    from bench.errors import MetricError

    with pytest.raises(MetricError, match="max_kernel_mb must be >= 0"):
        classifier(*pairs["across-100v100"], max_kernel_mb=-1)
