"""ZIPF: gap between the Zipf coefficients of two corpora (Holtzman et al. 2019; 004 §2).

Zipf's law says a token's frequency falls as a power of its frequency rank, f(r) ~ r^(-z).
Each corpus's z is the negated least-squares slope of log frequency on log rank over its
``top`` most frequent tokens (ranks 1..top, ties in frequency ranked alphabetically, which
does not change the fitted points). The distance is |z_P - z_Q|: zero when both corpora
follow the same power law, larger the more their rank-frequency curves differ. Tokens come
from ``textmetric_bench.api.tokens.tokenize``, shared with CHI.

``log_rank_resolution`` = 0 (default) fits every rank, as 004 §2 states. A positive value
keeps one point per 1/resolution step of log rank, as the Zipf code of Holtzman et al.
(reused by 004's authors, with resolution 15) does: it stops the many tail ranks, which
crowd together on a log scale, from dominating the fit.
"""

from __future__ import annotations

import numpy as np

from textmetric_bench.api.inputs import as_texts
from textmetric_bench.api.registry import metric
from textmetric_bench.api.tokens import token_counts
from textmetric_bench.errors import MetricError


def zipf_coefficient(texts, *, top: int = 5000, log_rank_resolution: int = 0) -> float:
    """z of one corpus: minus the least-squares slope of log frequency on log rank."""
    if top < 2:
        raise MetricError(f"ZIPF: top must be at least 2 to fit a slope, got {top}")
    if log_rank_resolution < 0:
        raise MetricError(f"ZIPF: log_rank_resolution must be 0 (every rank) or positive, got {log_rank_resolution}")
    freqs = np.array(sorted(token_counts(texts).values(), reverse=True)[:top], dtype=float)
    if len(freqs) < 2:
        raise MetricError(
            f"ZIPF: a corpus has {len(freqs)} distinct word token(s); fitting a Zipf slope needs at least 2"
        )
    log_rank = np.log(np.arange(1, len(freqs) + 1, dtype=float))
    log_freq = np.log(freqs)
    if log_rank_resolution > 0:
        _, keep = np.unique(np.round(log_rank * log_rank_resolution), return_index=True)
        log_rank, log_freq = log_rank[keep], log_freq[keep]
    slope = np.polyfit(log_rank, log_freq, 1)[0]
    return float(-slope)


@metric(
    "zipf",
    inputs="texts",
    symmetric=True,
    version="2",
    needs=("tokens",),
    source="Holtzman et al. 2019; 004 §2",
    value_range=(0.0, float("inf")),
    failure_modes=(
        "small n or short texts: too few distinct tokens to fit a slope (error below 2)",
        "blind to topic: a mix's Zipf slope can sit near one source's",
    ),
    description="Gap between the Zipf coefficients of the two corpora's top tokens",
)
def zipf(p, q, *, seed: int = 0, top: int = 5000, log_rank_resolution: int = 0) -> float:
    """|z_P - z_Q| over each corpus's ``top`` tokens (deterministic; ``seed`` unused).

    ``log_rank_resolution``: 0 fits every rank (004 §2); 15 keeps one rank per 1/15 of log rank, thinning
    the tail as Holtzman et al.'s code does.
    """
    z_p = zipf_coefficient(as_texts(p, role="first corpus"), top=top, log_rank_resolution=log_rank_resolution)
    z_q = zipf_coefficient(as_texts(q, role="second corpus"), top=top, log_rank_resolution=log_rank_resolution)
    return abs(z_p - z_q)
