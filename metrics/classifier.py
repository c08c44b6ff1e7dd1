"""CLASSIFIER: the classifier two-sample test of Lopez-Paz & Oquab (2016; 004 §2).

If an SVM can tell which corpus a held-out text came from, the corpora differ; the distance
is its held-out accuracy, 0.5 for indistinguishable corpora and 1 for separable ones (it can
fall slightly below 0.5 by chance). As 004's authors did, the SVM is scikit-learn's ``SVC``
with an RBF kernel (gamma = "scale", C = ``C``), here on L2-normalised embeddings so that
the kernel sees cosine geometry.

As in 004 §2 ("trained on samples of both source corpora to predict corpus membership in a
test set of unseen samples") and in Lopez-Paz & Oquab's test, the SVM is trained once: a
stratified, seeded split holds out ``test_size`` (default 20%, the 80/20 of 004's code) of each
corpus, and the distance is the accuracy on those held-out texts. At n = 100 that is 40 texts,
so the value moves in steps of .025; ``folds`` >= 2 instead holds every text out once
(stratified ``folds``-fold cross-validation, pooled over all held-out predictions), a less noisy
estimate that costs ``folds`` SVM fits instead of one. (Version 1 pooled 5 folds; one
split is the paper's definition and 3-5x cheaper, see docs/departures.md.)
Accuracy is *balanced* (the mean of the per-corpus accuracies), and classes are weighted
inversely to their size in training, so 0.5 stays the chance level when the corpora differ in
size; for equal sizes, as in KSC, it is the plain accuracy. (The compcor code behind 004's
repository returned the F1 of one unseeded 80/20 split instead of the accuracy the paper
describes.)

A text found in both corpora is predicted as the other corpus by its twin in the training
folds, which pushes the accuracy below 0.5 (0.085 for a corpus against itself); KSC corpora
are disjoint, so this does not arise there.

Rows and corpora are put in a canonical order first (``textmetric_bench.api.inputs.canonical_pair``), so
the value depends only on the two corpora as sets and the seed, and is symmetric.

Speed (issues 10 and 20): libsvm would compute every kernel value itself, dot product by dot
product, in training and again in prediction (and with ``folds``, most of them once per fold).
Instead the squared distances |a|^2 + |b|^2 - 2 a.b come from BLAS products: one split computes
its training block (train x train, one Gram matrix) and its test block (test x train); with
``folds`` the pair's distances are computed once, from one Gram matrix of all its texts, and
every fold takes its two blocks from them. Each block is exponentiated with the split's own
gamma, computed exactly as gamma = "scale" does on its training matrix, 1 / (dims * var), for
``SVC(kernel="precomputed")``. With ``kernel_precision="float64"`` the values are libsvm's up to
the last bits of the dot products, and each text's distance to itself is exactly 0, as in libsvm;
the predictions equal libsvm's own kernel's on real corpora (tests/test_classifier.py,
tests/test_speedups.py). The default "float32" computes the kernel (dot products, distances, exp) in
float32, the precision the embedder delivers, and hands it to libsvm as float64 (twice
BLAS's float64 speed and half the memory traffic): the kernel moves by about 1e-7, and the distance
equalled the float64 kernel's on all 870 evaluations of the KSC study and all 310 of the full size
and imbalance grid (it is not guaranteed: a test text within 1e-7 of the decision boundary can
flip). A prediction reads a test text's kernel only in the support vectors' columns, so only those
are computed (under a third of the training texts at the grid's sizes). One split holds its training kernel, 0.64 n x n values, in float32 and, for libsvm, float64 (264 MiB at n = 6000, the size
experiment's largest pair; 176 MiB with float64 alone), and builds the test block once training has
freed it; with ``folds`` the pair's distances (n x n) and a fold's training block are held together
(401 MiB at n = 6000; 450 MiB in float64). A pair whose kernel
memory would exceed ``max_kernel_mb`` MiB falls back to libsvm's own kernel, split by split.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from textmetric_bench.api.inputs import as_embeddings, canonical_pair, same_dims, unit_rows
from textmetric_bench.api.registry import metric
from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.euclidean import cross_squared_distances, squared_distances


def held_out_splits(labels: np.ndarray, *, folds: int, test_size: float, seed: int) -> list:
    """(train, test) index pairs: one stratified split holding out ``test_size`` (``folds`` = 0),
    or stratified ``folds``-fold cross-validation; both shuffled by ``seed``."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    if folds:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed % 2**32)
    else:
        splitter = StratifiedShuffleSplit(n_splits=1, test_size=test_size, random_state=seed % 2**32)
    # sorted rows: libsvm's solver sees the training texts in the same order on both kernel paths
    return [(np.sort(train), np.sort(test)) for train, test in splitter.split(np.zeros((len(labels), 1)), labels)]


def held_out_predictions(
    x: np.ndarray,
    labels: np.ndarray,
    *,
    folds: int,
    C: float,
    seed: int,
    max_kernel_mb: float = 512.0,
    test_size: float = 0.2,
    kernel_precision: str = "float64",
) -> tuple[np.ndarray, np.ndarray]:
    """(held-out rows, their predicted corpus) from an RBF SVM trained on the other rows:
    one split (``folds`` = 0) or every row once (``folds`` >= 2)."""
    splits = held_out_splits(labels, folds=folds, test_size=test_size, seed=seed)
    dtype = np.float32 if kernel_precision == "float32" else np.float64
    tested = np.sort(np.concatenate([test for _, test in splits]))
    predicted = np.full(len(labels), -1, dtype=labels.dtype)
    largest_train = max(len(train) for train, _ in splits)
    # bytes held at once: one split, its training kernel (the test block comes once it is freed); folds, the
    # pair's distances and a fold's training kernel; float32 distances are held beside the float64 kernel libsvm takes
    item, copy = (4, 8) if dtype == np.float32 else (8, 0)
    held = largest_train**2 * (item + copy) + (len(x) ** 2 * item if len(splits) > 1 else 0)
    if held > max_kernel_mb * 2**20:
        from sklearn.svm import SVC

        for train, test in splits:
            svm = SVC(kernel="rbf", C=C, gamma="scale", class_weight="balanced").fit(x[train], labels[train])
            predicted[test] = svm.predict(x[test])
        return tested, predicted[tested]
    if len(splits) == 1:  # one split: only its two blocks, never the pair's full matrix
        ((train, test),) = splits
        gamma = scale_gamma(x[train])
        predicted[test] = svm_predictions(
            lambda: rbf_from_distances(squared_distances(x[train], dtype=dtype), gamma, out_dtype=np.float64),
            labels[train],
            lambda support: rbf_from_distances(cross_squared_distances(x[test], x[train[support]], dtype=dtype), gamma),
            C=C,
        )
        return tested, predicted[tested]
    distances = squared_distances(x, dtype=dtype)
    for train, test in splits:
        in_train, in_test = np.zeros(len(x), dtype=bool), np.zeros(len(x), dtype=bool)
        in_train[train] = True  # rows in ascending order, as the splitter's (sorted) indices give them
        in_test[test] = True
        predicted[in_test] = _fold_predictions(
            distances, in_train, in_test, labels[in_train], gamma=scale_gamma(x[train]), C=C
        )
    return tested, predicted[tested]


def _fold_predictions(
    distances: np.ndarray, in_train: np.ndarray, in_test: np.ndarray, labels: np.ndarray, *, gamma: float, C: float
) -> np.ndarray:
    """One fold's SVM on its blocks of the precomputed kernel (the training block freed before the test block)."""
    train_rows = np.flatnonzero(in_train)

    def test_kernel(support: np.ndarray) -> np.ndarray:
        columns = np.zeros(len(in_train), dtype=bool)
        columns[train_rows[support]] = True
        return rbf_from_distances(block(distances, in_test, columns), gamma)

    return svm_predictions(
        lambda: rbf_from_distances(block(distances, in_train, in_train), gamma, out_dtype=np.float64),
        labels,
        test_kernel,
        C=C,
    )


def svm_predictions(train_kernel, labels: np.ndarray, test_kernel, *, C: float) -> np.ndarray:
    """Predictions of ``SVC(kernel="precomputed")`` fitted on ``train_kernel()`` (train x train) for the
    test rows; ``test_kernel(support)`` gives their kernel values against the support vectors only
    (test x len(support), ``support`` = positions in the training rows, ascending).

    A precomputed-kernel SVM reads a test row's values only in its support vectors' columns, so the
    others are left at 0 and never computed: at the robustness grid's sizes under a third of the
    training texts are support vectors. Each kernel is built only when needed, so the
    training kernel is freed before the test kernel exists."""
    from sklearn import config_context
    from sklearn.svm import SVC

    n_train = len(labels)
    # exp of finite distances: skip the n x n finiteness scans; the SVC's fixed, valid parameters: skip their
    # validation (inspect.signature on every fit, a tenth of CLASSIFIER's time at n = 100)
    with config_context(assume_finite=True, skip_parameter_validation=True):
        svm = SVC(kernel="precomputed", C=C, class_weight="balanced").fit(train_kernel(), labels)
        support = np.sort(svm.support_)
        values = test_kernel(support)
        kernel = np.zeros((len(values), n_train))
        kernel[:, support] = values  # float32 values (kernel_precision) become float64 here
        return svm.predict(kernel)


def block(matrix: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``matrix[np.ix_(rows, columns)]`` for boolean masks, by ``np.compress`` (1.5x faster than
    ``np.ix_``) 512 rows at a time (no temporary beyond the result)."""
    picked = np.flatnonzero(rows)
    out = np.empty((len(picked), int(columns.sum())), dtype=matrix.dtype)
    for start in range(0, len(picked), 512):
        out[start : start + 512] = np.compress(columns, matrix[picked[start : start + 512]], axis=1)
    return out


def scale_gamma(train: np.ndarray) -> float:
    """gamma = "scale" of scikit-learn's SVC fitted on ``train``: 1 / (dims * var), 1 if the variance is 0."""
    variance = train.var()
    return 1.0 / (train.shape[1] * variance) if variance != 0 else 1.0


def rbf_from_distances(distances: np.ndarray, gamma: float, *, out_dtype=None) -> np.ndarray:
    """exp(-gamma * distances), overwriting ``distances``, or in a new array of ``out_dtype``: for float32
    distances and a float64 output (libsvm's), numpy's float32 exp with each value cast as it is stored,
    the same values as the float32 kernel's ``astype(float64)``, one pass over the kernel fewer."""
    distances *= -gamma
    if out_dtype is None or np.dtype(out_dtype) == distances.dtype:
        return np.exp(distances, out=distances)
    return np.exp(distances, out=np.empty(distances.shape, dtype=out_dtype))


def rbf_kernel_blocks(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The RBF kernel of ``SVC(gamma="scale")`` fitted on ``train``: (train x train, test x train)."""
    n, gamma = len(train), scale_gamma(train)
    distances = squared_distances(np.vstack([train, test]))
    return rbf_from_distances(distances[:n, :n].copy(), gamma), rbf_from_distances(distances[n:, :n].copy(), gamma)


@metric(
    "classifier",
    inputs="embeddings",
    symmetric=True,
    stochastic=True,
    version="3",
    source="Lopez-Paz & Oquab 2016; 004 §2",
    value_range=(0.0, 1.0),
    failure_modes=(
        "small n: accuracy moves in steps of 1/(2n) and can fall below .5 by chance",
        "texts found in both corpora push it below .5",
        "one held-out split: the value moves with the seed's split (folds >= 2 averages it)",
    ),
    description="Held-out (balanced) accuracy of an RBF SVM telling the two corpora apart",
)
def classifier(
    p,
    q,
    *,
    seed: int = 0,
    test_size: float = 0.2,
    folds: int = 0,
    C: float = 1.0,
    max_kernel_mb: float = 512.0,
    kernel_precision: Literal["float32", "float64"] = "float32",
) -> float:
    """Held-out balanced accuracy of an SVM separating ``p`` from ``q`` (0.5 = same).

    ``test_size``: share of each corpus held out by the one stratified split (004 §2; 0.2 = 80/20).
    ``folds``: 0 = that one split; >= 2 = stratified cross-validation instead, every text held out once
    (``test_size`` is then unused). ``C``: the SVM's regularisation (1.0 is scikit-learn's default).
    ``max_kernel_mb``: MiB; a pair whose precomputed kernel (module note) would exceed it uses libsvm's own
    kernel (slower); 0 = always. ``kernel_precision``: "float32" computes the kernel's dot products in float32,
    the embeddings' own precision, at twice BLAS's float64 speed; "float64" gives libsvm's own kernel values
    (module note).
    """
    x = as_embeddings(p, role="first corpus")
    y = as_embeddings(q, role="second corpus")
    same_dims(x, y)
    if folds == 1 or folds < 0:
        raise MetricError(f"CLASSIFIER: folds must be 0 (one held-out split) or at least 2, got {folds}")
    if not 0.0 < test_size < 1.0:
        raise MetricError(f"CLASSIFIER: test_size must be a share between 0 and 1, got {test_size}")
    if kernel_precision not in ("float32", "float64"):
        raise MetricError(f"CLASSIFIER: kernel_precision must be 'float32' or 'float64', not {kernel_precision!r}")
    if not C > 0:
        raise MetricError(f"CLASSIFIER: C (the SVM's regularisation) must be a positive number, got {C}")
    if not max_kernel_mb >= 0:
        raise MetricError(
            f"CLASSIFIER: max_kernel_mb must be >= 0 (0 = libsvm's own kernel always), got {max_kernel_mb}"
        )
    needed = folds if folds else max(2, int(np.ceil(1.0 / min(test_size, 1.0 - test_size))))
    if min(len(x), len(y)) < needed:
        how = f"{folds} folds" if folds else f"test_size={test_size}"
        raise MetricError(
            f"CLASSIFIER with {how} needs at least {needed} texts in each "
            f"corpus, got {len(x)} and {len(y)}; add texts or change {'folds' if folds else 'test_size'}"
        )
    x, y = canonical_pair(unit_rows(x, "first corpus"), unit_rows(y, "second corpus"))
    labels = np.r_[np.zeros(len(x), dtype=int), np.ones(len(y), dtype=int)]
    tested, predicted = held_out_predictions(
        np.vstack([x, y]),
        labels,
        folds=folds,
        C=C,
        seed=int(seed),
        max_kernel_mb=max_kernel_mb,
        test_size=test_size,
        kernel_precision=kernel_precision,
    )
    truth = labels[tested]
    if len(np.unique(truth)) < 2:  # guarded above; kept so that a change of splitter cannot return NaN
        raise MetricError("CLASSIFIER: the held-out texts miss one corpus; raise test_size or add texts")
    per_corpus = [np.mean(predicted[truth == c] == c) for c in (0, 1)]
    return float(np.mean(per_corpus))
