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

Rows and corpora are put in a canonical order first (``bench.api.inputs.canonical_pair``), so
the value depends only on the two corpora as sets and the seed, and is symmetric.

Speed (issue 10): libsvm would compute every kernel value itself, dot product by dot product,
in training and again in prediction. Instead each fold gets its RBF kernel as two matrix
products (train x train and test x train) and ``SVC(kernel="precomputed")``, with gamma
computed exactly as gamma = "scale" does on that fold's training matrix, 1 / (dims * var).
The values are libsvm's up to the last bits of the dot products (BLAS gemm instead of ddot),
and each training text's distance to itself is exactly 0, as in libsvm; on real corpora the
decision values agree within 3e-13 and the predictions are identical (tests/test_classifier.py).
A fold's two blocks hold 0.8 n x n doubles, 220 MiB at n = 6000 (the size experiment's largest
pair); the test block is built only once training has freed the training block, so at most
0.64 n x n doubles (176 MiB) are held at once. A fold whose blocks would exceed ``max_kernel_mb``
MiB falls back to libsvm's own kernel.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from bench.api.inputs import as_embeddings, canonical_pair, same_dims, unit_rows
from bench.api.registry import metric
from bench.errors import MetricError


def held_out_predictions(x: np.ndarray, labels: np.ndarray, *, folds: int, C: float,
                         seed: int, max_kernel_mb: float = 512.0) -> np.ndarray:
    """Each text's predicted corpus from an RBF SVM trained on the other folds."""
    from sklearn.model_selection import StratifiedKFold

    predicted = np.empty_like(labels)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed % 2**32)
    for train, test in splitter.split(x, labels):
        predicted[test] = _fold_predictions(x[train], labels[train], x[test], C=C,
                                            max_kernel_mb=max_kernel_mb)
    return predicted


def _fold_predictions(train: np.ndarray, labels: np.ndarray, test: np.ndarray, *, C: float,
                      max_kernel_mb: float) -> np.ndarray:
    """One fold: ``SVC(kernel="rbf", gamma="scale")``, its kernel precomputed when it fits in memory.

    A function of its own so that one fold's kernel is freed before the next one is built.
    """
    from sklearn.svm import SVC

    if len(train) * (len(train) + len(test)) * 8 > max_kernel_mb * 2**20:  # both blocks, bytes
        svm = SVC(kernel="rbf", C=C, gamma="scale", class_weight="balanced")
        return svm.fit(train, labels).predict(test)
    k_train, against_train = rbf_train_kernel(train)
    svm = SVC(kernel="precomputed", C=C, class_weight="balanced").fit(k_train, labels)
    del k_train  # the test block is built only now, so the two never take memory at once
    return svm.predict(against_train(test))


def rbf_kernel_blocks(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The RBF kernel of ``SVC(gamma="scale")`` fitted on ``train``: (train x train, test x train)."""
    k_train, against_train = rbf_train_kernel(train)
    return k_train, against_train(test)


def rbf_train_kernel(train: np.ndarray) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """The RBF kernel of ``SVC(gamma="scale")`` on ``train`` (train x train), and a function giving
    the kernel of other rows against ``train`` with the same gamma and training norms.

    gamma = 1 / (dims * var(train)) as scikit-learn computes it (1 if the variance is 0), and
    K = exp(-gamma * (|a|^2 + |b|^2 - 2 a.b)) as libsvm's training kernel computes it. The
    squared norms of the training rows are read off the Gram matrix's diagonal, so a text's
    distance to itself cancels to exactly 0 and its kernel value is exactly 1, as in libsvm;
    with norms summed another way (einsum) the solver took another path in 1-3% of folds of
    same-source corpora, moving decision values by up to 5e-4.
    """
    variance = train.var()
    gamma = 1.0 / (train.shape[1] * variance) if variance != 0 else 1.0
    gram = train @ train.T
    train_sq = np.diagonal(gram).copy()

    def against_train(rows: np.ndarray) -> np.ndarray:
        return _rbf_in_place(rows @ train.T, np.einsum("ij,ij->i", rows, rows), train_sq, gamma)

    return _rbf_in_place(gram, train_sq, train_sq, gamma), against_train


def _rbf_in_place(dots: np.ndarray, a_sq: np.ndarray, b_sq: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma * ((a_sq_i + b_sq_j) - 2 dots_ij)), overwriting ``dots`` (no n x m temporary)."""
    dots *= -2.0
    for start in range(0, len(dots), 512):
        rows = slice(start, start + 512)
        dots[rows] += a_sq[rows, None] + b_sq[None, :]
    dots *= -gamma
    return np.exp(dots, out=dots)


@metric("classifier", inputs="embeddings", symmetric=True, stochastic=True,
        source="Lopez-Paz & Oquab 2016; 004 §2", value_range=(0.0, 1.0),
        failure_modes=("small n: accuracy moves in steps of 1/(2n) and can fall below .5 by chance",
                       "texts found in both corpora push it below .5", "fold assignment depends on the seed"),
        description="Held-out (balanced) accuracy of an RBF SVM telling the two corpora apart")
def classifier(p, q, *, seed: int = 0, folds: int = 5, C: float = 1.0,
               max_kernel_mb: float = 512.0) -> float:
    """Cross-validated balanced accuracy of an SVM separating ``p`` from ``q`` (0.5 = same).

    ``folds``: stratified folds; every text is held out once (5 folds = 80/20 splits). ``C``: the SVM's
    regularisation (1.0 is scikit-learn's default). ``max_kernel_mb``: MiB; a fold whose precomputed
    kernel (train x all texts, doubles) is larger uses libsvm's own kernel (slower); 0 = always.
    """
    x = as_embeddings(p, role="first corpus")
    y = as_embeddings(q, role="second corpus")
    same_dims(x, y)
    if folds < 2:
        raise MetricError(f"CLASSIFIER: folds must be at least 2, got {folds}")
    if not max_kernel_mb >= 0:
        raise MetricError(f"CLASSIFIER: max_kernel_mb must be >= 0 (0 = libsvm's own kernel "
                          f"always), got {max_kernel_mb}")
    if min(len(x), len(y)) < folds:
        raise MetricError(f"CLASSIFIER with {folds} folds needs at least {folds} texts in each "
                          f"corpus, got {len(x)} and {len(y)}; lower folds or add texts")
    x, y = canonical_pair(unit_rows(x, "first corpus"), unit_rows(y, "second corpus"))
    labels = np.r_[np.zeros(len(x), dtype=int), np.ones(len(y), dtype=int)]
    predicted = held_out_predictions(np.vstack([x, y]), labels, folds=folds, C=C, seed=int(seed),
                                     max_kernel_mb=max_kernel_mb)
    per_corpus = [np.mean(predicted[labels == c] == c) for c in (0, 1)]
    return float(np.mean(per_corpus))
