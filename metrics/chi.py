"""CHI: Kilgarriff's chi-square corpus distance over the most frequent tokens (Kilgarriff 2001; 004 §2).

Take the ``top`` most frequent tokens of the joint corpus; build the 2 x top table of
their counts in each corpus; expected counts come from the table's margins, as if both
corpora shared one token distribution. The statistic sums (o - e)^2 / e over the table.
It is zero for identical relative frequencies and grows with difference, so it is a
distance as it stands; 004's authors' code returned a p-value instead, whose direction
changed between releases.

``normalise`` rescales it: "dof" (default) divides by the degrees of freedom, the table's
number of tokens - 1: Kilgarriff's "chi-by-degrees-of-freedom" (CBDF), which makes pairs
with different joint vocabularies comparable. "tokens" divides by the table's total count
(phi^2); it looks size-independent but is not for small corpora: under equal distributions
chi^2 is about dof, so phi^2 carries a bias of dof / N that changes with every pair (on
clinc150/banking77, k = 7, n = 100: rho .64 against .91 for "dof" and .86 for "none").
"none" keeps the raw statistic (closest to 004's reported CHI), which equals scipy's ``chi2_contingency`` without continuity correction and
the sum of the two goodness-of-fit tests of 004's authors' code
(tests/test_reference_metrics.py).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from textmetric_bench.api.inputs import as_texts
from textmetric_bench.api.registry import metric
from textmetric_bench.api.tokens import token_counts, top_tokens
from textmetric_bench.errors import MetricError


def chi_square_statistic(counts_p, counts_q, *, top: int) -> tuple[float, int, int]:
    """Kilgarriff's chi-square, the table's total count and its number of tokens."""
    joint = counts_p + counts_q
    vocab = top_tokens(joint, top)
    if not vocab:
        raise MetricError("CHI: neither corpus contains a word token")
    observed = np.array([[counts_p[t] for t in vocab], [counts_q[t] for t in vocab]], dtype=float)
    total = observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(expected > 0, (observed - expected) ** 2 / expected, 0.0)
    return float(cells.sum()), int(total), len(vocab)


@metric(
    "chi",
    inputs="texts",
    symmetric=True,
    version="2",
    needs=("tokens",),
    source="Kilgarriff 2001; 004 §2",
    value_range=(0.0, float("inf")),
    failure_modes=(
        "short texts: few tokens leave the top-token table sparse, the statistic noisy",
        "normalise='tokens' carries a dof/N bias that changes with every pair",
    ),
    description="Kilgarriff's chi-square over the top tokens of the joint vocabulary",
)
def chi(
    p,
    q,
    *,
    seed: int = 0,
    top: int = 5000,
    normalise: Literal["dof", "tokens", "none"] = "dof",
) -> float:
    """Chi-square distance between the token frequencies of two corpora (``seed`` unused).

    ``top``: how many of the joint corpus's most frequent tokens make the table. ``normalise``: "dof"
    divides by the table's tokens - 1 (Kilgarriff's CBDF), "tokens" by its total count N (chi^2 / N),
    "none" keeps the raw statistic (module note).
    """
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise MetricError(f"CHI: top must be an integer >= 1 (how many of the most frequent tokens), not {top!r}")
    counts_p = token_counts(as_texts(p, role="first corpus"))
    counts_q = token_counts(as_texts(q, role="second corpus"))
    if not counts_p or not counts_q:
        raise MetricError("CHI: a corpus has no word tokens")
    stat, total, n_tokens = chi_square_statistic(counts_p, counts_q, top=top)
    if normalise == "tokens":
        return stat / total
    if normalise == "dof":
        return stat / max(n_tokens - 1, 1)
    if normalise == "none":
        return stat
    raise MetricError(f"CHI: normalise must be 'tokens', 'dof' or 'none', not {normalise!r}")
