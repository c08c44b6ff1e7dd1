"""CLASSIFIER: the classifier two-sample test of Lopez-Paz & Oquab (2016; 004 §2).

If an SVM can tell which corpus a held-out text came from, the corpora differ; the distance
is its held-out accuracy, 0.5 for indistinguishable corpora and 1 for separable ones (it can
fall slightly below 0.5 by chance). As 004's authors did, the SVM is scikit-learn's ``SVC``
with an RBF kernel (gamma = "scale", C = ``C``), here on L2-normalised embeddings so that
the kernel sees cosine geometry.

One 80/20 split leaves 40 test texts at n = 100, so its accuracy moves in steps of .025 and
is noisy. Instead every text is held out once: stratified ``folds``-fold cross-validation
(seeded shuffle; default 5 folds, i.e. 80/20 splits), and the accuracy is pooled over all
held-out predictions. Accuracy is *balanced* (the mean of the per-corpus accuracies), and
classes are weighted inversely to their size in training, so 0.5 stays the chance level
when the corpora differ in size; for equal sizes, as in KSC, it is the plain accuracy.
(The compcor code behind 004's repository returned the F1 of one unseeded 80/20 split
instead of the accuracy the paper describes.)

A text found in both corpora is predicted as the other corpus by its twin in the training
folds, which pushes the accuracy below 0.5 (0.085 for a corpus against itself); KSC corpora
are disjoint, so this does not arise there.

Rows and corpora are put in a canonical order first (``bench.inputs.canonical_pair``), so
the value depends only on the two corpora as sets and the seed, and is symmetric.
"""

from __future__ import annotations

import numpy as np

from bench.errors import MetricError
from bench.inputs import as_embeddings, canonical_pair, same_dims, unit_rows
from bench.registry import metric


def held_out_predictions(x: np.ndarray, labels: np.ndarray, *, folds: int, C: float,
                         seed: int) -> np.ndarray:
    """Each text's predicted corpus from an RBF SVM trained on the other folds."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    predicted = np.empty_like(labels)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed % 2**32)
    for train, test in splitter.split(x, labels):
        svm = SVC(kernel="rbf", C=C, gamma="scale", class_weight="balanced")
        predicted[test] = svm.fit(x[train], labels[train]).predict(x[test])
    return predicted


@metric("classifier", inputs="embeddings", symmetric=True,
        description="Held-out (balanced) accuracy of an RBF SVM telling the two corpora apart")
def classifier(p, q, *, seed: int = 0, folds: int = 5, C: float = 1.0) -> float:
    """Cross-validated balanced accuracy of an SVM separating ``p`` from ``q`` (0.5 = same)."""
    x = as_embeddings(p, role="first corpus")
    y = as_embeddings(q, role="second corpus")
    same_dims(x, y)
    if folds < 2:
        raise MetricError(f"CLASSIFIER: folds must be at least 2, got {folds}")
    if min(len(x), len(y)) < folds:
        raise MetricError(f"CLASSIFIER with {folds} folds needs at least {folds} texts in each "
                          f"corpus, got {len(x)} and {len(y)}; lower folds or add texts")
    x, y = canonical_pair(unit_rows(x, "first corpus"), unit_rows(y, "second corpus"))
    labels = np.r_[np.zeros(len(x), dtype=int), np.ones(len(y), dtype=int)]
    predicted = held_out_predictions(np.vstack([x, y]), labels, folds=folds, C=C, seed=int(seed))
    per_corpus = [np.mean(predicted[labels == c] == c) for c in (0, 1)]
    return float(np.mean(per_corpus))
