"""Known-Similarity Corpora (Kilgarriff 2001; 004 §3, Figure 1).

A collection mixes sources A and B in k steps: corpus c_i (i = 1..k) holds
round(n (k - i) / (k - 1)) texts of A and the rest of B, so c_1 is pure A and c_k
pure B. The k corpora of one collection are disjoint (004 §4.5: otherwise counting
shared texts would judge perfectly). Halves round up, so counts do not depend on
Python's banker's rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from textmetric_bench.errors import ConfigError, DataError


@dataclass(frozen=True)
class KSCCorpus:
    """One corpus c_i of a collection: its texts (shuffled) and how many came from A."""

    index: int
    texts: tuple[str, ...]
    from_a: int

    @property
    def from_b(self) -> int:
        return len(self.texts) - self.from_a

    @property
    def known_position(self) -> float:
        """Its mixing proportion: the share of texts from B (0 for c_1, 1 for c_k), what the oracle knows."""
        return self.from_b / len(self.texts)


def validate_ksc_parameters(k: int, n: int) -> None:
    """k >= 3 corpora, each of n >= k - 1 texts (004 §3), so every step changes the mix."""
    if not isinstance(k, int) or k < 3:
        raise ConfigError(f"KSC needs k >= 3 corpora (ell takes at least two values); got k={k}")
    if not isinstance(n, int) or n < k - 1:
        raise ConfigError(f"KSC needs n >= k - 1 texts per corpus so that consecutive corpora differ; got n={n}, k={k}")


def mixture_counts(k: int, n: int) -> list[tuple[int, int]]:
    """(texts from A, texts from B) for c_1..c_k."""
    validate_ksc_parameters(k, n)
    counts = []
    for i in range(1, k + 1):
        from_a = math.floor(n * (k - i) / (k - 1) + 0.5)
        counts.append((from_a, n - from_a))
    return counts


def texts_needed(k: int, n: int) -> tuple[int, int]:
    """How many distinct texts one collection draws from A and from B."""
    counts = mixture_counts(k, n)
    return sum(a for a, _ in counts), sum(b for _, b in counts)


def largest_n(k: int, size_a: int, size_b: int, below: int) -> int | None:
    """The largest n < ``below`` (and >= k - 1) whose KSC collection at ``k`` fits sources of these sizes."""
    for n in range(below - 1, k - 2, -1):
        need_a, need_b = texts_needed(k, n)
        if need_a <= size_a and need_b <= size_b:
            return n
    return None


def smaller_setting(k: int, n: int, size_a: int, size_b: int) -> str:
    """What to lower, with the largest n that fits at this k (or at k = 3, the fewest corpora)."""
    fits = largest_n(k, size_a, size_b, n)
    if fits is not None:
        return f"lower n or k (at k={k}, n={fits} fits both sources), or use a larger corpus"
    fits = largest_n(3, size_a, size_b, n) if k > 3 else None
    if fits is not None:
        return f"lower k and n (k=3, n={fits} fits both sources), or use a larger corpus"
    return "use a larger corpus (even k=3 with n=2 needs more)"


def known_similarity_corpora(
    a: Sequence[str],
    b: Sequence[str],
    *,
    k: int,
    n: int,
    seed: int | np.random.SeedSequence,
    names: tuple[str, str] = ("A", "B"),
) -> list[KSCCorpus]:
    """Draw one KSC collection of k disjoint corpora of n texts each from sources ``a`` and ``b``."""
    need_a, need_b = texts_needed(k, n)
    short = [
        f"source {name!r} has {len(source)} texts but a KSC collection with k={k}, n={n} "
        f"needs {need} distinct texts from it; {smaller_setting(k, n, len(a), len(b))}"
        for source, need, name in ((a, need_a, names[0]), (b, need_b, names[1]))
        if len(source) < need
    ]
    if short:  # both sides when both are short: one line each
        raise DataError("\n".join(short))
    rng = np.random.default_rng(seed)
    pool_a = rng.permutation(len(a))[:need_a]
    pool_b = rng.permutation(len(b))[:need_b]
    corpora, pos_a, pos_b = [], 0, 0
    for i, (from_a, from_b) in enumerate(mixture_counts(k, n), start=1):
        texts = [a[j] for j in pool_a[pos_a : pos_a + from_a]]
        texts += [b[j] for j in pool_b[pos_b : pos_b + from_b]]
        pos_a, pos_b = pos_a + from_a, pos_b + from_b
        order = rng.permutation(len(texts))
        corpora.append(KSCCorpus(index=i, texts=tuple(texts[o] for o in order), from_a=from_a))
    return corpora


def corpus_pairs(k: int) -> list[tuple[int, int]]:
    """All (i, j) with 1 <= i < j <= k: the pairs whose distances form D (004 eq. 1-3)."""
    return [(i, j) for i in range(1, k + 1) for j in range(i + 1, k + 1)]
