"""PR and DC: manifold precision/recall and density/coverage in the embedding space (004 §2).

Both estimate each corpus's support by the union of balls around its embeddings whose
radius is the distance to the k-th nearest neighbour within the same corpus (Euclidean,
k = ``nearest_k`` = 5). ``p`` is the reference ("real") corpus and ``q`` the target
("generated") one; in a KSC pair (c_i, c_j), i < j, the reference is c_i, the corpus with
more of source A.

- PR (Kynkäänniemi et al. 2019): precision = share of q inside p's support, recall = share
  of p inside q's support.
- DC (Naeem et al. 2020): density = mean number of p-balls holding a q point, divided by k
  (can exceed 1, so it is clipped to [0, 1] before the F1, as 004's authors did);
  coverage = share of p points whose own ball holds at least one q point.

Each pair becomes one similarity by the F1 (harmonic mean) and a distance by 1 - F1
(004 §2, "we take 1 - v"). When both parts are 0 the F1 is 0, so the distance is 1.

Swapping p and q swaps precision and recall exactly (each is "the share of one corpus inside
the other's support"), so PR's F1 is symmetric although its parts are not. Density and
coverage both use only the reference's balls, so DC is asymmetric. (004's imbalance study
calls both "asymmetric"; that holds for PR's parts, not for its F1.)

``precision_recall_density_coverage`` computes the radii and cross distances once and
returns all four numbers; in a run, once per pair (``per_pair``: DC after PR on the same pair
reuses them, each charged the full cost). The distances are scikit-learn's formula from one
BLAS product (``textmetric_bench.metrics.euclidean``), clipped at 0, without its input checks, which took a third
of PR/DC's time at n = 100. It equals ``prdc.compute_prdc`` (Naeem et al.'s
package, which 004 used) to 1e-9 (tests/test_reference_metrics.py), without its printing and
its 8-worker distance computation, which dominates the run time at n = 100.

Speed, the same decisions: the pair's product matrix is shared with IRPR
(``pair_products``); the squared distances are formed 512 rows at a time and compared with
``root_threshold`` of the radii, which decides exactly as comparing their roots; coverage is "some
fake point inside the real point's ball", the same as "the nearest one is"; each radius is
``kth_nearest_squared_distances`` (block minima instead of a full partition, float32 screening
from 2,048 texts).
"""

from __future__ import annotations

import numpy as np

from textmetric_bench.api.inputs import as_embeddings, same_dims
from textmetric_bench.api.registry import metric
from textmetric_bench.api.sharing import per_corpus, per_pair
from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.euclidean import (
    kth_nearest_squared_distances,
    pair_products,
    root_threshold,
    squared_distance_rows,
)


@per_corpus
def kth_neighbour_radii(x: np.ndarray, *, k: int) -> np.ndarray:
    """Distance from each row of ``x`` to its k-th nearest other row (the row itself is 0th).

    The k-th smallest squared distance is taken before the square root, which is monotone, so n roots
    are computed instead of n x n; it is selected from float32 distances and settled in float64
    (``kth_nearest_squared_distances``: the float64 value, up to summation order)."""
    return np.sqrt(np.maximum(kth_nearest_squared_distances(x, k), 0.0))


@per_pair
def precision_recall_density_coverage(real, fake, *, nearest_k: int = 5) -> dict[str, float]:
    """Precision, recall (Kynkäänniemi et al.), density, coverage (Naeem et al.) of fake vs real:
    computed once per pair in a run, shared by PR and DC (each charged its full cost)."""
    x = as_embeddings(real, role="reference corpus (p)")
    y = as_embeddings(fake, role="target corpus (q)")
    same_dims(x, y)
    if nearest_k < 1:
        raise MetricError(f"nearest_k must be at least 1, got {nearest_k}")
    smallest = min(len(x), len(y))
    if smallest <= nearest_k:
        raise MetricError(
            f"PR/DC with nearest_k={nearest_k} needs more than {nearest_k} texts "
            f"in each corpus, got {len(x)} and {len(y)}; lower nearest_k"
        )
    real_radii = kth_neighbour_radii(x, k=nearest_k)  # shared by PR and DC and across pairs
    fake_radii = kth_neighbour_radii(y, k=nearest_k)
    products = pair_products(x, y)  # rows: real, columns: fake; shared with IRPR, read-only
    sq_x, sq_y = np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", y, y)
    # a distance sqrt(max(c, 0)) lies inside a radius r exactly when c < root_threshold(r): no n x m roots
    inside_real, inside_fake = root_threshold(real_radii), root_threshold(fake_radii)
    covered = np.zeros(len(y), dtype=bool)  # fake points inside some real ball
    balls = np.zeros(len(y), dtype=np.int64)  # real balls holding each fake point
    coverage, recall = np.empty(len(x), dtype=bool), np.empty(len(x), dtype=bool)
    for start in range(0, len(x), 512):  # the squared distances 512 real points at a time, never all n x m
        rows = slice(start, start + 512)
        cross = squared_distance_rows(products, sq_x, sq_y, rows)
        in_real_ball = cross < inside_real[rows, None]
        covered |= in_real_ball.any(axis=0)
        balls += in_real_ball.sum(axis=0)
        coverage[rows] = in_real_ball.any(axis=1)  # the nearest fake point inside the real point's own ball
        recall[rows] = (cross < inside_fake[None, :]).any(axis=1)
    return {
        "precision": float(covered.mean()),
        "recall": float(recall.mean()),
        "density": float(balls.mean() / nearest_k),
        "coverage": float(coverage.mean()),
    }


def f1_distance(a: float, b: float) -> float:
    """1 - F1(a, b), with F1 = 0 when a + b = 0 (004 §2)."""
    return 1.0 - (2.0 * a * b / (a + b) if a + b > 0 else 0.0)


@metric(
    "pr",
    inputs="embeddings",
    symmetric=True,
    source="Kynkäänniemi et al. 2019; 004 §2",
    value_range=(0.0, 1.0),
    failure_modes=("small n: k-NN radii are noisy and the supports coarse", "duplicate texts give zero radii"),
    description="1 - F1 of Kynkäänniemi et al.'s precision and recall (k-NN manifolds)",
)
def pr(p, q, *, seed: int = 0, nearest_k: int = 5) -> float:
    """1 - F1(precision, recall) of target ``q`` against reference ``p`` (deterministic, symmetric)."""
    m = precision_recall_density_coverage(p, q, nearest_k=nearest_k)
    return f1_distance(m["precision"], m["recall"])


@metric(
    "dc",
    inputs="embeddings",
    symmetric=False,
    source="Naeem et al. 2020; 004 §2",
    value_range=(0.0, 1.0),
    failure_modes=(
        "small n: k-NN radii are noisy and the supports coarse",
        "density above 1 is clipped, hiding differences among close corpora",
    ),
    description="1 - F1 of Naeem et al.'s density (clipped to 1) and coverage",
)
def dc(p, q, *, seed: int = 0, nearest_k: int = 5) -> float:
    """1 - F1(min(density, 1), coverage) of target ``q`` against reference ``p`` (deterministic)."""
    m = precision_recall_density_coverage(p, q, nearest_k=nearest_k)
    return f1_distance(min(m["density"], 1.0), m["coverage"])
