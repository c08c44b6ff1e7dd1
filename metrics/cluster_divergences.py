"""Cluster-based divergences (000 §4-§5): five divergences between cluster histograms.

Both corpora's embeddings are quantised as MAUVE does it (``textmetric_bench.metrics.mauve.quantise``, which forms
the clusters of mauve-text's ``cluster_feats``, the routine 000's authors called): rows
L2-normalised (mauve-text's convention; the authors' fork passed no normalisation), PCA of the
joint set keeping ``kmeans_explained_var`` (0.9) of the variance, faiss k-means on the joint set
into ``num_buckets`` clusters (``kmeans_num_redo`` restarts, ``kmeans_max_iter`` iterations,
seeded by ``seed``). Each corpus's
assignments are counted and Laplace-smoothed with ``laplace_alpha`` (000 §5: α = 1, so no
divergence is infinite), then compared with one of the divergences of ``textmetric_bench.metrics.divergences``
(000 eqs. 5-9; the AUC one with s = 5 as in 000 §5).

Number of clusters: "auto" = max(2, round(min(|p|, |q|) / 10)), MAUVE's rule, which is also
000's setting (K = 500 for 5,000 texts a side): about 10 texts of each corpus per cluster, so
the histograms stay estimable as corpora grow (10 clusters at 100 texts, 50 at 500).

The clustering is computed once per pair and shared by the five metrics (``per_pair``, within
the engine's ``sharing()`` scope). It runs on ``canonical_pair``, so every metric is a function
of the two corpora as sets; JS and AUC are symmetric, the KLs and the exponentiated KL are not
(the backward KL of (p, q) is the forward KL of (q, p)). With ``laplace_alpha`` = 0, cluster_auc
is 1 - MAUVE exactly (tests/test_cluster_divergences.py).
"""

from __future__ import annotations

import inspect

import numpy as np

from textmetric_bench.api.inputs import as_embeddings, canonical_pair, lexicographic_order, same_dims
from textmetric_bench.api.registry import metric
from textmetric_bench.api.sharing import per_pair
from textmetric_bench.metrics.divergences import (
    Frontier,
    auc,
    histogram_frontier,
    laplace_histogram,
    register_divergences,
)
from textmetric_bench.metrics.mauve import bucket_count, quantise


@per_pair
def cluster_counts(
    x: np.ndarray,
    y: np.ndarray,
    *,
    num_buckets: int,
    kmeans_explained_var: float,
    kmeans_num_redo: int,
    kmeans_max_iter: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Texts of ``x`` and of ``y`` in each of the ``num_buckets`` joint k-means clusters (MAUVE's quantisation)."""
    return quantise(
        x,
        y,
        num_buckets=num_buckets,
        explained_var=kmeans_explained_var,
        num_redo=kmeans_num_redo,
        max_iter=kmeans_max_iter,
        seed=seed,
    )


def cluster_frontier(
    p,
    q,
    *,
    seed: int = 0,
    num_buckets: int | str = "auto",
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    laplace_alpha: float = 1.0,
) -> Frontier:
    """The divergence frontier of the smoothed cluster histograms of p and q (in that order)."""
    x = as_embeddings(p, role="first corpus", min_rows=2)
    y = as_embeddings(q, role="second corpus", min_rows=2)
    same_dims(x, y)
    buckets = bucket_count(num_buckets, kmeans_explained_var, len(x), len(y), owner="cluster divergences")
    first, second = canonical_pair(x, y)
    swapped = not np.array_equal(first, x[lexicographic_order(x)])  # canonical_pair put y first
    counts = cluster_counts(
        first,
        second,
        num_buckets=buckets,
        kmeans_explained_var=kmeans_explained_var,
        kmeans_num_redo=kmeans_num_redo,
        kmeans_max_iter=kmeans_max_iter,
        seed=seed,
    )
    counts_p, counts_q = counts[::-1] if swapped else counts
    return histogram_frontier(laplace_histogram(counts_p, laplace_alpha), laplace_histogram(counts_q, laplace_alpha))


CLUSTERING_PARAMETERS = """

``num_buckets``: k-means clusters; "auto" = max(2, round(min(|p|, |q|) / 10)) (MAUVE's rule; 000: 500 for
5k texts). ``kmeans_explained_var``: share of variance the PCA keeps before k-means (000 §5).
``kmeans_num_redo``: k-means restarts (best objective kept); ``kmeans_max_iter``: iterations of each.
``laplace_alpha``: additive smoothing of the cluster histograms (000 §5: alpha = 1); 0 = none.
The five cluster_* metrics share one clustering per pair (MAUVE's): keep their clustering
parameters equal, or each pair is clustered once per distinct setting.
"""


CLUSTER_FACTS = {
    "stochastic": True,
    "failure_modes": (
        "few clusters at small n (num_buckets = n/10): coarse histograms",
        "Laplace smoothing dominates the histograms of small corpora",
        "k-means seed: the value moves with the seed",
    ),
}

register_divergences(
    "cluster",
    cluster_frontier,
    inputs="embeddings",
    notes=CLUSTERING_PARAMETERS,
    **CLUSTER_FACTS,
    sources={
        suffix: f"000 eq. {eq}, §4" for suffix, eq in (("kl_forward", 5), ("kl_backward", 6), ("exp_kl", 7), ("js", 8))
    },
    descriptions={
        "kl_forward": "KL(p ‖ q) of the smoothed k-means cluster histograms (000 eq. 5, §4)",
        "kl_backward": "KL(q ‖ p) of the smoothed k-means cluster histograms (000 eq. 6, §4)",
        "exp_kl": "e^KL(p ‖ q) - 1 of the smoothed cluster histograms (000 eq. 7, §4)",
        "js": "Jensen-Shannon divergence of the smoothed cluster histograms (000 eq. 8, §4)",
    },
)


@metric(
    "cluster_auc",
    inputs="embeddings",
    symmetric=True,
    source="000 eq. 9, §4",
    value_range=(0.0, 1.0),
    **CLUSTER_FACTS,
    description="1 - AUC of the divergence frontier of the smoothed cluster histograms (000 eq. 9, §4)",
)
def cluster_auc(
    p,
    q,
    *,
    seed: int = 0,
    num_buckets: int | str = "auto",
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    laplace_alpha: float = 1.0,
    scaling: float = 5.0,
    curve_points: int = 25,
) -> float:
    """1 - AUC of the frontier with scaling s (000 eq. 9; s = 5 for clusters, 000 §5).

    ``scaling``: s in exp(-s KL) (000 §5: 5 for clusters). ``curve_points``: mixture weights lambda on
    the frontier (MAUVE's discretisation).
    """
    frontier = cluster_frontier(
        p,
        q,
        seed=seed,
        num_buckets=num_buckets,
        kmeans_explained_var=kmeans_explained_var,
        kmeans_num_redo=kmeans_num_redo,
        kmeans_max_iter=kmeans_max_iter,
        laplace_alpha=laplace_alpha,
    )
    return auc(frontier, scaling=scaling, points=curve_points)


cluster_auc.__doc__ = inspect.cleandoc(cluster_auc.__doc__) + CLUSTERING_PARAMETERS
