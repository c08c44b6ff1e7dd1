"""IRPR: information-retrieval precision and recall between two embedded corpora (004 §2).

Inspired by Zhao et al. (2017): every text of one corpus retrieves its nearest text of the
other by cosine distance d(a, b) = 1 - cos(a, b).

    precision = 1 - mean over a in P of min over b in Q of d(a, b)   (P -> Q)
    recall    = 1 - mean over b in Q of min over a in P of d(a, b)   (Q -> P)

i.e. the mean nearest-neighbour cosine similarity in each direction, a similarity in [-1, 1]
that is clipped at 0 (it is positive for any sensible sentence embedding). The two are
combined by their F1 (harmonic mean; 0 when both are 0), and the distance is 1 - F1
(004 §2, "we take 1 - v"). Swapping P and Q swaps precision and recall, so IRPR is symmetric.

004's text reads like this; the compcor code behind its repository instead used the angular
distance arccos(cos)/pi, zeroed below .005, and returned the F1 of the two mean *distances*
(not 1 - F1 of similarities), which weights the closer direction more.
"""

from __future__ import annotations

import numpy as np

from textmetric_bench.api.inputs import as_embeddings, require_directions, same_dims
from textmetric_bench.api.registry import metric
from textmetric_bench.metrics.euclidean import pair_products
from textmetric_bench.metrics.prdc import f1_distance


def nearest_neighbour_similarities(p, q) -> tuple[float, float]:
    """(precision, recall): mean cosine similarity of each text to its nearest in the other corpus.

    The cosines come from the pair's inner products, which PR and DC compute too (``pair_products``, one
    BLAS product per pair in a run), divided by the two norms: exact to 1e-15."""
    x = as_embeddings(p, role="first corpus")
    y = as_embeddings(q, role="second corpus")
    same_dims(x, y)
    sq_x, sq_y = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", y, y)
    require_directions(sq_x, "first corpus")
    require_directions(sq_y, "second corpus")
    inv_x, inv_y = 1.0 / np.sqrt(sq_x), 1.0 / np.sqrt(sq_y)
    products = pair_products(x, y)
    row_max, column_max = np.empty(len(x)), np.full(len(y), -np.inf)
    for start in range(0, len(x), 512):  # the cosines of 512 rows at a time, never all n x m
        rows = slice(start, start + 512)
        cosine = products[rows] * inv_y[None, :]
        cosine *= inv_x[rows, None]
        row_max[rows] = cosine.max(axis=1)
        np.maximum(column_max, cosine.max(axis=0), out=column_max)
    # clipping to [-1, 1] is monotone, so it commutes with max: clip the 2 maxima vectors, not n x m values
    precision = max(float(np.clip(row_max, -1.0, 1.0).mean()), 0.0)
    recall = max(float(np.clip(column_max, -1.0, 1.0).mean()), 0.0)
    return precision, recall


@metric(
    "irpr",
    inputs="embeddings",
    symmetric=True,
    source="Zhao et al. 2017; 004 §2",
    value_range=(0.0, 1.0),
    failure_modes=(
        "near-duplicate texts dominate the nearest-neighbour means",
        "saturates near 0 for corpora of one register",
    ),
    description="1 - F1 of the mean nearest-neighbour cosine similarities in both directions",
)
def irpr(p, q, *, seed: int = 0) -> float:
    """1 - F1(precision, recall) of nearest-neighbour retrieval between the corpora (deterministic)."""
    return f1_distance(*nearest_neighbour_similarities(p, q))
