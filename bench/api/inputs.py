"""Validation of the two corpus kinds a metric receives, with errors that name the problem."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from textmetric_bench.errors import MetricError


def as_texts(corpus: Sequence[str], *, role: str = "corpus") -> list[str]:
    """Return ``corpus`` as a list of str; raise on an empty corpus or non-string items."""
    if isinstance(corpus, str):
        raise MetricError(f"{role} must be a sequence of texts, got a single str")
    texts = list(corpus)
    if not texts:
        raise MetricError(f"{role} is empty: a metric needs at least one text on each side")
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise MetricError(f"{role} holds a {type(bad).__name__}, not a str: {bad!r:.60}")
    return texts


def as_embeddings(corpus, *, role: str = "corpus", min_rows: int = 1) -> np.ndarray:
    """Return ``corpus`` as a finite 2-D float64 array with at least ``min_rows`` rows."""
    x = np.asarray(corpus, dtype=np.float64)
    if x.ndim != 2:
        raise MetricError(f"{role} embeddings must be 2-D (texts x dims), got shape {x.shape}")
    if x.shape[0] == 0:
        raise MetricError(f"{role} is empty: a metric needs at least one text on each side")
    if x.shape[0] < min_rows:
        raise MetricError(f"{role} has {x.shape[0]} texts; this metric needs at least {min_rows}")
    if not np.isfinite(x).all():
        raise MetricError(f"{role} embeddings contain NaN or inf values")
    return x


def same_dims(p: np.ndarray, q: np.ndarray) -> None:
    """Raise when two embedding matrices do not share their dimension."""
    if p.shape[1] != q.shape[1]:
        raise MetricError(f"embedding dimensions differ: {p.shape[1]} vs {q.shape[1]}")


def canonical_pair(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both corpora with rows in lexicographic order, the lexicographically smaller one first.

    The result is the same for any permutation of the rows and for (x, y) or (y, x), so a
    seeded procedure run on it is order-invariant and symmetric.
    """
    x, y = x[lexicographic_order(x)], y[lexicographic_order(y)]
    return (y, x) if bytes_before(y, x) else (x, y)


def bytes_before(a: np.ndarray, b: np.ndarray, *, chunk: int = 4096) -> bool:
    """``a.tobytes() < b.tobytes()`` (bytewise, a prefix first) without copying either array: chunk by chunk
    up to the first differing byte, which two corpora of embeddings reach within their first row."""
    a8 = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    b8 = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    common = min(len(a8), len(b8))
    for start in range(0, common, chunk):
        stop = min(start + chunk, common)
        differ = np.flatnonzero(a8[start:stop] != b8[start:stop])
        if len(differ):
            return bool(a8[start + differ[0]] < b8[start + differ[0]])
    return len(a8) < len(b8)


def lexicographic_order(x: np.ndarray) -> np.ndarray:
    """The row order of ``np.lexsort`` over all columns (first column first). Sorting by the first column
    alone gives it when that column has no ties, the usual case for embeddings, at a fraction of the cost
    of a 384-key lexsort; with a tie the full lexsort decides."""
    order = np.argsort(x[:, 0], kind="stable")
    first = x[order, 0]
    if len(first) > 1 and not (first[1:] != first[:-1]).all():  # a tie (or a NaN) in the first column
        return np.lexsort(x.T[::-1])
    return order


def unit_rows(x: np.ndarray, role: str) -> np.ndarray:
    """``x`` with every row scaled to length 1; a zero row has no direction and raises."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    require_directions(norms, role)
    return x / norms


def require_directions(norms: np.ndarray, role: str) -> None:
    """Raise if a row's norm (or squared norm) is 0: an all-zero embedding has no direction."""
    if not (norms > 0).all():
        raise MetricError(f"{role} holds an all-zero embedding, which has no direction; check the embedder")
