"""MAUVE: area under the divergence frontier of quantised embeddings (Pillutla et al. 2021; 004 §2).

Computed as ``mauve.compute_mauve`` of the ``mauve-text`` package (the one 004 used) computes
it, on the precomputed embeddings: both corpora are L2-normalised, reduced by PCA to
``kmeans_explained_var`` of their variance, clustered jointly by faiss's k-means into
``num_buckets`` buckets ("auto" = max(2, round(min(|p|, |q|) / 10))), and MAUVE is the area
under the curve of exp(-c KL) between each corpus's bucket histogram and their mixtures,
c = ``mauve_scaling_factor``. MAUVE is a similarity in (0, 1]; the distance is 1 - MAUVE (004
§2), floored at 0. Every parameter defaults to mauve-text 0.4.0's own default; ``seed`` goes to
the k-means as mauve-text passes it (faiss seed = seed + 2). faiss runs on one OpenMP thread and
warns on stderr when a bucket has fewer than 39 texts (always at n = 100), which is harmless.

MAUVE is symmetric in P and Q given the buckets (swapping them mirrors the divergence curve,
and both areas under it are averaged), but k-means starts from rows drawn at random, so
mauve-text's value depends on the order of the rows and of the two corpora. ``canonical_pair``
fixes both orders, which makes the value a function of the two corpora as sets and exactly
symmetric; ``seed`` then fixes the clustering.

Speed: mauve-text's own function is no longer called. Half its time at KSC sizes went
to sklearn's full SVD of the joint (2n x 384) matrix, the rest to input checks and to smoothed
variants (MAUVE*, frontier integrals) we never read. ``quantise`` computes the same principal
components from the eigendecomposition of the smaller of the Gram matrix and the covariance
matrix, in float64, with sklearn's sign convention, and hands faiss the same float32 scores with
the same seed; the area is ``textmetric_bench.metrics.divergences.auc`` of the exact frontier, which equals
mauve-text's area to 1e-12. Measured against ``compute_mauve`` on float32 embeddings, with one BLAS
thread as in the engine's workers (tests/test_speedups.py, slow): equal to 1e-12 on all 870 MAUVE
evaluations of the KSC study and on 309 of the 310 of the full size and imbalance grid; the other one (450 texts a side) differs by 9e-6, a k-means tie
that the last bits of the scores broke the other way. The tests compare with mauve-text on real
pairs of 100 to 1,000 texts a side (tests/test_reference_metrics.py, tests/test_speedups.py). The
KSC study's MAUVE time halves (9.6 s to 5.2 s); at the grid's larger sizes k-means dominates and
the saving is 8%.

Restarts: mauve-text runs k-means 5 times and keeps the best objective. From 50 buckets
on (the smaller corpus has about 500 texts or more with the "auto" bucket count) the default
``kmeans_num_redo="auto"`` runs it once. Measured on the 310 evaluations of the full size and
imbalance grid: at 50 buckets and more (220 evaluations) one run moves MAUVE by .0021 rms from
five restarts, as much as changing the seed of five restarts does (.0023); S and I stay inside
the 95% intervals of five restarts (.9780 and .9462 against .9779 [.9741, .9815] and .9463
[.9407, .9517]); the grid's MAUVE time falls from 70 s to 29 s. Below 50 buckets restarts
matter (one run at every size moved S outside its interval), and cost little, so mauve-text's
five stay. ``kmeans_num_redo=5`` gives mauve-text's value at every size (tests/test_speedups.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import scipy.linalg

from textmetric_bench.api.inputs import as_embeddings, canonical_pair, same_dims
from textmetric_bench.api.registry import metric
from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.divergences import auc, histogram_frontier


@contextlib.contextmanager
def one_faiss_thread() -> Iterator[None]:
    """Run faiss (OpenMP) on one thread: after embedding, torch's spinning OpenMP workers made its
    k-means 20-40x slower on 2 cores (0.05 s -> 1-2.5 s per pair at n = 100), as with BLAS in the runner."""
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


def principal_scores(data: np.ndarray, explained_var: float, fit_rows: np.ndarray | None = None) -> np.ndarray:
    """The rows of ``data`` on the fewest principal components of ``data[fit_rows]`` (all rows: None) that
    keep ``explained_var`` of its variance: what sklearn's ``PCA(n_components=None)`` fitted on those rows
    gives from ``transform(data)[:, :m]`` (mauve-text's step).

    The components come from the eigendecomposition of the centred Gram matrix (fewer rows than
    dimensions) or covariance matrix (more), in float64; each keeps sklearn's sign (its largest
    entry positive), so the scores match sklearn's SVD route to rounding.
    """
    data = np.asarray(data, dtype=np.float64)
    fit = data if fit_rows is None else data[fit_rows]
    mean = fit.mean(axis=0)
    x = fit - mean
    tall = x.shape[0] > x.shape[1]
    # scipy's LAPACK dsyevd call: numpy's eigh runs the same routine (identical scores on all 1,180 MAUVE
    # inputs of the benchmark studies) at a quarter more time on KSC's 200 x 200 Gram matrices
    values, vectors = scipy.linalg.eigh(x.T @ x if tall else x @ x.T, driver="evd")
    values, vectors = np.clip(values[::-1], 0.0, None), vectors[:, ::-1]
    total = values.sum()
    # sklearn's ratio is 0/0 = NaN for data without variance, and argmax then keeps one component
    keep = int(np.argmax(np.cumsum(values / total) >= explained_var)) + 1 if total > 0 else 1
    if tall:
        components = vectors[:, :keep]
    else:  # right singular vectors from the left ones: v = X^T u / |X^T u|
        components = x.T @ vectors[:, :keep]
        norms = np.linalg.norm(components, axis=0)
        components /= np.where(norms > 0, norms, 1.0)
    components *= np.where(components[np.argmax(np.abs(components), axis=0), np.arange(keep)] < 0, -1.0, 1.0)
    return (data - mean) @ components


def bucket_count(num_buckets: int | str, explained_var: float, n_x: int, n_y: int, *, owner: str) -> int:
    """The k-means buckets for corpora of ``n_x`` and ``n_y`` texts ("auto" = max(2, round(min(n_x, n_y) / 10)),
    MAUVE's rule), after checking ``num_buckets`` and ``explained_var``; ``owner`` starts each error message."""
    if num_buckets != "auto" and not (isinstance(num_buckets, int) and num_buckets >= 2):
        raise MetricError(f"{owner}: num_buckets must be 'auto' or an integer >= 2, not {num_buckets!r}")
    buckets = num_buckets if num_buckets != "auto" else max(2, round(min(n_x, n_y) / 10))
    if buckets > n_x + n_y:
        raise MetricError(f"{owner}: {buckets} buckets need at least as many texts, got {n_x + n_y}; lower num_buckets")
    if not 0 < explained_var < 1:
        raise MetricError(f"{owner}: kmeans_explained_var must lie in (0, 1), not {explained_var!r}")
    return buckets


def quantise(
    x: np.ndarray,
    y: np.ndarray,
    *,
    num_buckets: int,
    explained_var: float,
    num_redo: int,
    max_iter: int,
    seed: int,
    pca_max_data: int = -1,
) -> tuple[np.ndarray, np.ndarray]:
    """Texts of ``x`` and of ``y`` in each of ``num_buckets`` joint k-means buckets, as mauve-text's
    ``cluster_feats(x, y, norm="l2", whiten=False)`` forms them: rows stacked y then x, L2-normalised
    (an all-zero row stays zero), projected on the principal components keeping ``explained_var`` of
    the variance (fitted on ``pca_max_data`` rows drawn with seed + 5, or all rows: -1), clustered by
    faiss (``num_redo`` restarts of at most ``max_iter`` iterations, seed + 2)."""
    import faiss

    for name, value in (("kmeans_num_redo", num_redo), ("kmeans_max_iter", max_iter)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise MetricError(f"k-means: {name} must be an integer >= 1, not {value!r}")
    seed = int(seed) % (2**31 - 8)  # faiss adds 2 and takes a C int
    data = np.vstack([y, x]).astype(np.float64)
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    data /= np.where(norms > 0, norms, 1.0)
    if pca_max_data == 0 or pca_max_data < -1:
        raise MetricError(f"MAUVE: pca_max_data must be -1 (all texts) or a positive number, not {pca_max_data!r}")
    fit_rows = None
    if 0 < pca_max_data < len(data):
        fit_rows = np.random.RandomState(seed + 5).choice(len(data), size=pca_max_data, replace=False)
    scores = np.ascontiguousarray(principal_scores(data, explained_var, fit_rows), dtype=np.float32)
    with one_faiss_thread():
        # min_points_per_centroid=1: faiss uses it only to print "please provide at least N training points" to
        # stderr, a line per evaluation that flooded the run log; the clustering is the same bit for bit
        # (tests/test_cluster_divergences.py). Too few texts per bucket is a failure mode in the catalogue instead.
        kmeans = faiss.Kmeans(
            scores.shape[1],
            num_buckets,
            niter=max_iter,
            verbose=False,
            nredo=num_redo,
            update_index=True,
            seed=seed + 2,
            min_points_per_centroid=1,
        )
        kmeans.train(scores)
        _, labels = kmeans.index.search(scores, 1)
    labels = labels.reshape(-1)
    return (np.bincount(labels[len(y) :], minlength=num_buckets), np.bincount(labels[: len(y)], minlength=num_buckets))


#: kmeans_num_redo="auto": from this many buckets on (the smaller corpus has ~500 texts or more with
#: num_buckets="auto") one k-means run, below it mauve-text's 5 restarts (module note).
ONE_RUN_FROM_BUCKETS = 50


def restart_count(num_redo: int | str, buckets: int) -> int:
    """The k-means restarts for ``num_redo`` ("auto" or a count >= 1) at ``buckets`` buckets."""
    if num_redo == "auto":
        return 1 if buckets >= ONE_RUN_FROM_BUCKETS else 5
    if isinstance(num_redo, bool) or not isinstance(num_redo, (int, np.integer)) or num_redo < 1:
        raise MetricError(f"MAUVE: kmeans_num_redo must be 'auto' or an integer >= 1, not {num_redo!r}")
    return int(num_redo)


@metric(
    "mauve",
    inputs="embeddings",
    symmetric=True,
    stochastic=True,
    version="2",
    source="Pillutla et al. 2021; 004 §2",
    value_range=(0.0, 1.0),
    failure_modes=(
        "few clusters at small n (num_buckets = n/10): coarse histograms",
        "k-means seed: the value moves with the metric's own seed",
    ),
    description="1 - MAUVE (as mauve-text computes it; one k-means run from 50 buckets) on the precomputed embeddings",
)
def mauve(
    p,
    q,
    *,
    seed: int = 0,
    num_buckets: int | str = "auto",
    pca_max_data: int = -1,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int | str = "auto",
    kmeans_max_iter: int = 500,
    divergence_curve_discretization_size: int = 25,
    mauve_scaling_factor: float = 5.0,
) -> float:
    """1 - MAUVE between two embedded corpora (order-free and symmetric, see the module note).

    Every default is mauve-text 0.4.0's but one. ``num_buckets``: k-means buckets; "auto" = max(2,
    round(min(|p|, |q|) / 10)). ``pca_max_data``: texts used to fit the PCA; -1 = all.
    ``kmeans_explained_var``: share of variance the PCA keeps before k-means. ``kmeans_num_redo``: k-means
    restarts (best objective kept); "auto" = mauve-text's 5 below 50 buckets and 1 from there on (module
    note), 5 = mauve-text at every size. ``divergence_curve_discretization_size``: points on the divergence
    curve. ``mauve_scaling_factor``: c in exp(-c KL).
    """
    x = as_embeddings(p, role="first corpus", min_rows=2)
    y = as_embeddings(q, role="second corpus", min_rows=2)
    same_dims(x, y)
    x, y = canonical_pair(x, y)
    buckets = bucket_count(num_buckets, kmeans_explained_var, len(x), len(y), owner="MAUVE")
    counts_x, counts_y = quantise(
        x,
        y,
        num_buckets=buckets,
        explained_var=kmeans_explained_var,
        num_redo=restart_count(kmeans_num_redo, buckets),
        max_iter=kmeans_max_iter,
        seed=seed,
        pca_max_data=pca_max_data,
    )
    return auc(
        histogram_frontier(counts_x / counts_x.sum(), counts_y / counts_y.sum()),
        scaling=mauve_scaling_factor,
        points=divergence_curve_discretization_size,
    )
