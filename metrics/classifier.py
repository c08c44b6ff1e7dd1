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

Speed (issues 10 and 20): libsvm would compute every kernel value itself, dot product by dot
product, in training and again in prediction, and five folds would compute most of them five
times. Instead the pair's squared distances |a|^2 + |b|^2 - 2 a.b are computed once, from one
Gram matrix of all its texts (one BLAS product), and every fold takes its training block
(train x train) and its test block (test x train) from them, exponentiated with its own gamma,
computed exactly as gamma = "scale" does on the fold's training matrix, 1 / (dims * var), for
``SVC(kernel="precomputed")``. The values are libsvm's up to the last bits of the dot products,
and each text's distance to itself is exactly 0, as in libsvm; the predictions equal libsvm's own
kernel's on real corpora (tests/test_classifier.py, tests/test_speedups.py). The pair's distances
hold n x n doubles and a fold's training block 0.64 n x n (450 MiB together at n = 6000, the size
experiment's largest pair); the test block is built once training has freed the training block.
A pair whose two would exceed ``max_kernel_mb`` MiB falls back to libsvm's own kernel, fold by fold.
"""

from __future__ import annotations

import numpy as np

from bench.api.inputs import as_embeddings, canonical_pair, same_dims, unit_rows
from bench.api.registry import metric
from bench.errors import MetricError


def held_out_predictions(x: np.ndarray, labels: np.ndarray, *, folds: int, C: float,
                         seed: int, max_kernel_mb: float = 512.0) -> np.ndarray:
    """Each text's predicted corpus from an RBF SVM trained on the other folds."""
    from sklearn.model_selection import StratifiedKFold

    predicted = np.empty_like(labels)
    splits = list(StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed % 2**32).split(x, labels))
    largest_train = max(len(train) for train, _ in splits)
    if (len(x) ** 2 + largest_train ** 2) * 8 > max_kernel_mb * 2**20:  # bytes: distances + a training block
        from sklearn.svm import SVC

        for train, test in splits:
            svm = SVC(kernel="rbf", C=C, gamma="scale", class_weight="balanced").fit(x[train], labels[train])
            predicted[test] = svm.predict(x[test])
        return predicted
    distances = squared_distances(x)
    for train, _ in splits:
        in_train = np.zeros(len(x), dtype=bool)
        in_train[train] = True  # rows in ascending order, as the splitter's (sorted) indices give them
        predicted[~in_train] = _fold_predictions(distances, in_train, labels[in_train], gamma=scale_gamma(x[train]),
                                                 C=C)
    return predicted


def _fold_predictions(distances: np.ndarray, in_train: np.ndarray, labels: np.ndarray, *,
                      gamma: float, C: float) -> np.ndarray:
    """One fold's SVM on its blocks of the precomputed kernel (the training block freed before the test block)."""
    from sklearn import config_context
    from sklearn.svm import SVC

    with config_context(assume_finite=True):  # exp of finite distances: skip the n x n finiteness scans
        svm = SVC(kernel="precomputed", C=C, class_weight="balanced")
        svm.fit(rbf_from_distances(block(distances, in_train, in_train), gamma), labels)
        return svm.predict(rbf_from_distances(block(distances, ~in_train, in_train), gamma))


def block(matrix: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``matrix[np.ix_(rows, columns)]`` for boolean masks, by ``np.compress`` (1.5x faster than
    ``np.ix_``) 512 rows at a time (no temporary beyond the result)."""
    picked = np.flatnonzero(rows)
    out = np.empty((len(picked), int(columns.sum())), dtype=matrix.dtype)
    for start in range(0, len(picked), 512):
        out[start:start + 512] = np.compress(columns, matrix[picked[start:start + 512]], axis=1)
    return out


def scale_gamma(train: np.ndarray) -> float:
    """gamma = "scale" of scikit-learn's SVC fitted on ``train``: 1 / (dims * var), 1 if the variance is 0."""
    variance = train.var()
    return 1.0 / (train.shape[1] * variance) if variance != 0 else 1.0


def squared_distances(x: np.ndarray) -> np.ndarray:
    """|a|^2 + |b|^2 - 2 a.b between all rows of ``x``, as libsvm's RBF kernel computes it.

    The squared norms are read off the Gram matrix's diagonal, so a text's distance to itself
    cancels to exactly 0 (kernel value exactly 1), as in libsvm; with norms summed another way
    (einsum) the solver took another path in 1-3% of folds of same-source corpora, moving
    decision values by up to 5e-4.
    """
    gram = x @ x.T
    sq = np.diagonal(gram).copy()
    gram *= -2.0
    for start in range(0, len(gram), 512):  # in row blocks: no n x n temporary
        rows = slice(start, start + 512)
        gram[rows] += sq[rows, None] + sq[None, :]
    return gram


def rbf_from_distances(distances: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma * distances), overwriting ``distances``."""
    distances *= -gamma
    return np.exp(distances, out=distances)


def rbf_kernel_blocks(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The RBF kernel of ``SVC(gamma="scale")`` fitted on ``train``: (train x train, test x train)."""
    n, gamma = len(train), scale_gamma(train)
    distances = squared_distances(np.vstack([train, test]))
    return rbf_from_distances(distances[:n, :n].copy(), gamma), rbf_from_distances(distances[n:, :n].copy(), gamma)


@metric("classifier", inputs="embeddings", symmetric=True, stochastic=True,
        source="Lopez-Paz & Oquab 2016; 004 §2", value_range=(0.0, 1.0),
        failure_modes=("small n: accuracy moves in steps of 1/(2n) and can fall below .5 by chance",
                       "texts found in both corpora push it below .5", "fold assignment depends on the seed"),
        description="Held-out (balanced) accuracy of an RBF SVM telling the two corpora apart")
def classifier(p, q, *, seed: int = 0, folds: int = 5, C: float = 1.0,
               max_kernel_mb: float = 512.0) -> float:
    """Cross-validated balanced accuracy of an SVM separating ``p`` from ``q`` (0.5 = same).

    ``folds``: stratified folds; every text is held out once (5 folds = 80/20 splits). ``C``: the SVM's
    regularisation (1.0 is scikit-learn's default). ``max_kernel_mb``: MiB; a pair whose precomputed
    distances (n x n doubles) and largest training block exceed it uses libsvm's own kernel (slower);
    0 = always.
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
