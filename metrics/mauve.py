"""MAUVE: area under the divergence frontier of quantised embeddings (Pillutla et al. 2021; 004 §2).

Computed by ``mauve.compute_mauve`` from the ``mauve-text`` package (as 004 did) on the
precomputed embeddings, so nothing is featurised or downloaded: both corpora are
L2-normalised, reduced by PCA to ``kmeans_explained_var`` of their variance, clustered
jointly by k-means into ``num_buckets`` buckets ("auto" = max(2, round(min(|p|, |q|) / 10))),
and MAUVE is the area under the curve of exp(-c KL) between each corpus's bucket histogram
and their mixtures, c = ``mauve_scaling_factor``. MAUVE is a similarity in (0, 1]; the
distance is 1 - MAUVE (004 §2), floored at 0. Every parameter defaults to mauve-text
0.4.0's own default; ``seed`` goes to its k-means and PCA. Only the k-means runs in faiss,
held to one OpenMP thread; faiss warns on stderr when a bucket has fewer than 39 texts
(always at n = 100), which is harmless.

MAUVE is symmetric in P and Q given the buckets (swapping them mirrors the divergence curve,
and both areas under it are averaged), but k-means starts from rows drawn at random, so
mauve-text's value depends on the order of the rows and of the two corpora. ``canonical_pair``
fixes both orders, which makes the value a function of the two corpora as sets and exactly
symmetric; ``seed`` then fixes the clustering.

Speed (issue 20): mauve-text gets the embeddings as float32, the encoder's own precision (as 004's
authors passed them), so its normalisation and PCA run in single precision, 20% less CPU time;
it casts the PCA's output to float32 for faiss's k-means anyway. The distances equal those of
float64 inputs on each of the 31 pairs of one repetition of the size and imbalance grid (50 to
3,000 texts a side; measured once) and on the real pairs of tests/test_speedups.py and
tests/test_reference_metrics.py.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import numpy as np

from bench.api.inputs import as_embeddings, canonical_pair, same_dims
from bench.api.registry import metric
from bench.errors import MetricError


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


def mauve_text():
    """mauve-text's ``compute_mauve`` module, imported without torch and transformers when they are
    not loaded yet: it imports both only to featurise raw texts, which we never ask of it, and they
    cost an evaluation worker 200 MB of memory (RSS) and seconds of start-up. Python's import
    system treats a ``None`` entry in ``sys.modules`` as "not installed", which mauve-text allows."""
    if "mauve.compute_mauve" not in sys.modules:
        blocked = [name for name in ("torch", "transformers") if name not in sys.modules]
        sys.modules.update(dict.fromkeys(blocked))
        try:
            import mauve.compute_mauve  # noqa: F401
        finally:
            for name in blocked:
                if sys.modules.get(name, 0) is None:
                    del sys.modules[name]
    return sys.modules["mauve.compute_mauve"]


@metric("mauve", inputs="embeddings", symmetric=True, stochastic=True, source="Pillutla et al. 2021; 004 §2",
        value_range=(0.0, 1.0),
        failure_modes=("few clusters at small n (num_buckets = n/10): coarse histograms",
                       "k-means seed: the value moves with the metric's own seed"),
        description="1 - MAUVE (mauve-text) on the precomputed embeddings")
def mauve(
    p,
    q,
    *,
    seed: int = 0,
    num_buckets: int | str = "auto",
    pca_max_data: int = -1,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    divergence_curve_discretization_size: int = 25,
    mauve_scaling_factor: float = 5.0,
) -> float:
    """1 - MAUVE between two embedded corpora (order-free and symmetric, see the module note).

    Every default is mauve-text 0.4.0's. ``num_buckets``: k-means buckets; "auto" = max(2, round(min(|p|,
    |q|) / 10)). ``pca_max_data``: texts used to fit the PCA; -1 = all. ``kmeans_explained_var``: share of
    variance the PCA keeps before k-means. ``kmeans_num_redo``: k-means restarts (best objective kept).
    ``divergence_curve_discretization_size``: points on the divergence curve. ``mauve_scaling_factor``: c
    in exp(-c KL).
    """
    x = as_embeddings(p, role="first corpus", min_rows=2)
    y = as_embeddings(q, role="second corpus", min_rows=2)
    same_dims(x, y)
    x, y = canonical_pair(x, y)
    if num_buckets != "auto" and not (isinstance(num_buckets, int) and num_buckets >= 2):
        raise MetricError(f"MAUVE: num_buckets must be 'auto' or an integer >= 2, not {num_buckets!r}")
    buckets = num_buckets if num_buckets != "auto" else max(2, round(min(len(x), len(y)) / 10))
    if buckets > len(x) + len(y):
        raise MetricError(f"MAUVE: {buckets} buckets need at least as many texts, "
                          f"got {len(x) + len(y)}; lower num_buckets")
    kmeans_seed = int(seed) % (2**31 - 8)  # faiss adds 2 and takes a C int
    with one_faiss_thread():
        out = mauve_text().compute_mauve(
            p_features=x.astype(np.float32), q_features=y.astype(np.float32),  # see the module note
            num_buckets=num_buckets, pca_max_data=pca_max_data,
            kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
            kmeans_max_iter=kmeans_max_iter,
            divergence_curve_discretization_size=divergence_curve_discretization_size,
            mauve_scaling_factor=mauve_scaling_factor, verbose=False, seed=kmeans_seed,
        )
    return float(max(1.0 - out.mauve, 0.0))  # MAUVE of identical corpora can exceed 1 by 1e-16
