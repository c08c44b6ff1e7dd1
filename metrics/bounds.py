"""Reference rows for every study: ``oracle`` (the ceiling) and ``chance`` (the floor).

Neither is a text metric. ``oracle`` knows where each corpus sits in its collection (the mixing
proportion of a KSC corpus, 004 §3; the fine-tuning iteration of an IFC corpus, 004 §5; the source
of a size/imbalance sample, 004 §4.6-4.7) and returns how far apart two corpora are on that axis,
so it scores as well as a metric can: A = 1 and ρ = 1 on KSC, S = I = 1. ``chance`` returns a
random number, seeded by the run's seed and the content of both corpora, so a rerun reproduces it;
it scores what no signal does: A near .5, ρ near 0. Both are opt-in: ``metrics=[...,oracle,chance]``.
"""

from __future__ import annotations

import numpy as np

from textmetric_bench.api.inputs import as_texts
from textmetric_bench.api.positions import corpus_key, known_position
from textmetric_bench.api.registry import metric


@metric(
    "oracle",
    inputs="texts",
    symmetric=True,
    opt_in=True,
    needs=("known_position",),
    source="this project: the known position of each corpus, 004 §3 and §5",
    value_range=(0.0, np.inf),
    failure_modes=(
        (
            "fails (recorded as its failure) where corpora have no known position: "
            "perturbation studies, a user's own pair"
        ),
    ),
    description="Ceiling: |position(p) - position(q)|, the corpora's known distance in their collection",
)
def oracle(p, q, *, seed: int = 0) -> float:
    """|pos(p) - pos(q)|: the known mixing proportions (KSC), iterations (IFC) or sources (size/imbalance)."""
    first = known_position(as_texts(p, role="first corpus"), role="first corpus")
    return abs(first - known_position(as_texts(q, role="second corpus"), role="second corpus"))


@metric(
    "chance",
    inputs="texts",
    symmetric=True,
    opt_in=True,
    stochastic=True,
    source="this project: a seeded uniform random number",
    value_range=(0.0, 1.0),
    failure_modes=("carries no information by design: expected A = .5 and ρ = 0",),
    description="Floor: a uniform random number seeded by the run seed and both corpora's texts",
)
def chance(p, q, *, seed: int = 0) -> float:
    """U(0, 1) drawn from (seed, digest of p, digest of q); the digests sorted, so it is symmetric."""
    keys = sorted(corpus_key(as_texts(c, role=role)) for c, role in ((p, "first corpus"), (q, "second corpus")))
    entropy = [int(seed) % 2**64, *(int(key, 16) for key in keys)]
    return float(np.random.default_rng(np.random.SeedSequence(entropy)).random())
