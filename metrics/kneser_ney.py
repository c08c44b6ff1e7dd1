"""An interpolated Kneser-Ney n-gram model over a closed vocabulary (not a plugin; the n-gram divergences fit it).

Interpolated Kneser-Ney (Kneser & Ney 1995; Chen & Goodman 1998 §3): at the highest order the
discounted count, at lower orders the discounted continuation count (number of distinct left
neighbours), each level interpolated with the next lower one by the mass its discount freed.
``discount`` = "auto" estimates one discount per order as Ney, Essen & Kneser (1994),
D = n1 / (n1 + 2 n2) from that order's counts of counts (0.5 when it has no singletons).

The unigram level is interpolated with the uniform distribution over a closed vocabulary: the
words the model saw, ``</s>`` and ``<unk>``, standing for every other word, unless the caller
names a larger closed vocabulary (``vocabulary_size``; the n-gram divergences pass the pair's
joint vocabulary). A word the model never saw gets its share of the mass the discounts freed.
The probabilities of the closed vocabulary's words sum to 1 in every context; a context never
seen backs off to the next lower order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple, Sequence

import numpy as np

from textmetric_bench.errors import MetricError

START, END, UNK = "<s>", "</s>", "<unk>"


class KneserNey(NamedTuple):
    """An interpolated Kneser-Ney model: ``levels[k - 1]`` maps a context of k - 1 tokens to
    (discounted probability of each word seen after it, interpolation weight of level k - 1)."""

    order: int
    levels: tuple[dict[tuple[str, ...], tuple[dict[str, float], float]], ...]
    vocabulary: frozenset[str]  # words seen in training, and END

    def probability(self, word: str, context: Sequence[str], vocabulary_size: int | None = None) -> float:
        """p(word | the last order - 1 tokens of context) over a closed vocabulary of ``vocabulary_size``
        words (``</s>`` and ``<unk>`` included) that holds the model's own; by default just its own."""
        p = 1.0 / (vocabulary_size or len(self.vocabulary) + (UNK not in self.vocabulary))  # uniform base
        for k, level in enumerate(self.levels, start=1):
            entry = level.get(tuple(context[len(context) - k + 1 :]) if k > 1 else ())
            if entry is not None:  # an unseen context leaves the lower order's estimate
                seen, weight = entry
                p = seen.get(word, 0.0) + weight * p
        return p

    def token_log_probabilities(self, tokens: Sequence[str], vocabulary_size: int | None = None) -> np.ndarray:
        """Natural log-probability of each of a text's tokens, then of END, given its context."""
        padded = [START] * (self.order - 1) + list(tokens) + [END]
        return np.log(
            [
                self.probability(padded[i], padded[i - self.order + 1 : i], vocabulary_size)
                for i in range(self.order - 1, len(padded))
            ]
        )

    def log_probability(self, tokens: Sequence[str], vocabulary_size: int | None = None) -> float:
        """Natural log-probability of a text: its tokens, then END."""
        return float(self.token_log_probabilities(tokens, vocabulary_size).sum())


def _discount(counts, discount: float | str) -> float:
    if discount != "auto":
        return float(discount)
    of_counts = Counter(counts.values())
    n1, n2 = of_counts[1], of_counts[2]
    return n1 / (n1 + 2 * n2) if n1 else 0.5


def fit_kneser_ney(sentences: Sequence[Sequence[str]], *, order: int, discount: float | str = "auto") -> KneserNey:
    """Fit an interpolated Kneser-Ney model of ``order`` on tokenised sentences."""
    if not (isinstance(order, int) and order >= 1):
        raise MetricError(f"n-gram order must be an integer >= 1, not {order!r}")
    if discount != "auto" and not (isinstance(discount, (int, float)) and 0 < discount <= 1):
        raise MetricError(f"Kneser-Ney discount must be 'auto' or a number in (0, 1], not {discount!r}")
    counts = Counter()  # highest order: raw counts
    for tokens in sentences:
        padded = [START] * (order - 1) + list(tokens) + [END]
        counts.update(tuple(padded[i - order + 1 : i + 1]) for i in range(order - 1, len(padded)))
    by_length = {order: counts}
    for k in range(order - 1, 0, -1):  # lower orders: continuation counts
        by_length[k] = Counter(gram[1:] for gram in by_length[k + 1])
    levels = []
    for k in range(1, order + 1):
        d = _discount(by_length[k], discount)
        grouped: dict[tuple, dict[str, int]] = defaultdict(dict)
        for gram, c in by_length[k].items():
            grouped[gram[:-1]][gram[-1]] = c
        level = {}
        for context, followers in grouped.items():
            total = sum(followers.values())
            level[context] = ({w: max(c - d, 0.0) / total for w, c in followers.items()}, d * len(followers) / total)
        levels.append(level)
    return KneserNey(order, tuple(levels), frozenset(w for (w,) in by_length[1]))
