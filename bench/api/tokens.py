"""The one tokeniser shared by every lexical metric (CHI, ZIPF, ...).

Lower-cases, then takes maximal runs of letters or digits, keeping an inner
apostrophe (``don't``, ``user's``) so contractions stay one token. Punctuation is
dropped. Deliberately simple and language-agnostic for Latin-script text, so that
lexical metrics are comparable with each other and stable across library versions.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from bench.api.sharing import per_corpus

_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def tokenize(text: str) -> list[str]:
    """Split one text into lower-case word tokens."""
    return _TOKEN.findall(text.lower())


@per_corpus
def token_counts(texts: Iterable[str]) -> Counter[str]:
    """Token frequencies of a whole corpus (shared across pairs in a run: do not modify it)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokenize(text))
    return counts


def top_tokens(counts: Counter[str], top: int) -> list[str]:
    """The ``top`` most frequent tokens, ties broken alphabetically so the result is order-free."""
    return sorted(counts, key=lambda t: (-counts[t], t))[:top]
