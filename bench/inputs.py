"""Validation of the two corpus kinds a metric receives, with errors that name the problem."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from bench.errors import MetricError


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
