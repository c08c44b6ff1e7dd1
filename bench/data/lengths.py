"""Text lengths in words, the `counts:` block of a corpus card (texts, median and p90 of words a text), and the
length regime a corpus or a pair belongs to: sentence, paragraph or document."""

from __future__ import annotations

import math
from typing import Sequence

#: Length regimes by the median words a text: (name, largest median in it); the last has no bound.
REGIMES: tuple[tuple[str, float], ...] = (("sentence", 30), ("paragraph", 200), ("document", math.inf))


def word_count(text: str) -> int:
    """Words of a text: runs of non-whitespace, as `normalise.min_words` counts them."""
    return len(text.split())


def nearest_rank(values: Sequence[int], q: float) -> int:
    """The q-th percentile by nearest rank: the smallest value with at least q% of the values at or below it
    (an integer of the data, unlike an interpolated percentile)."""
    if not values:
        raise ValueError("no values to take a percentile of")
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)), 1) - 1]


def length_counts(texts: Sequence[str]) -> dict[str, int]:
    """What a card's `counts:` block states about a corpus's normalised texts."""
    words = [word_count(t) for t in texts]
    return {"texts": len(texts), "words_median": nearest_rank(words, 50), "words_p90": nearest_rank(words, 90)}


def length_regime(median_words: float) -> str:
    """The regime of a corpus whose median text has ``median_words`` words: sentence (<= 30), paragraph
    (31-200) or document (> 200)."""
    return next(name for name, bound in REGIMES if median_words <= bound)


def pair_regime(a: Sequence[str], b: Sequence[str]) -> str:
    """The regime of a pair of corpora from the texts a run uses: both sides' regime when they agree, else both
    names joined (``sentence+paragraph``), shorter first, so a mixed pair is never filed under one regime."""
    sides = {length_regime(nearest_rank([word_count(t) for t in texts], 50)) for texts in (a, b)}
    order = [name for name, _ in REGIMES]
    return "+".join(sorted(sides, key=order.index))
