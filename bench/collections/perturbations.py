"""The text perturbations of 000 §6.2 (002 §6.2), applied to a comparison corpus by ``task=perturb``.

Words. A *word* is a maximal run of non-whitespace characters (``str.split``), so punctuation
stays attached to it: ``"dog."`` and ``"(the"`` are words. A word's *core* is the word without
its leading and trailing characters that are not letters or digits (``"(The,"`` -> ``"The"``);
article and stopword removal compare the lower-cased core with their word list. Truncation
keeps a prefix of the text as it is; the other perturbations join the resulting words by single
spaces (runs of whitespace, newlines included, become one space), except that a text they
leave unchanged is returned exactly as it was.

Empty texts. No perturbation empties a non-empty text: truncation keeps at least one word,
and a removal that would delete every word keeps the text's first word instead (``"Can you do
it?"`` loses all its stopwords and becomes ``"Can"``). A text without words is returned as is.

Stopwords are scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words, the Glasgow IR list), which
ships offline; 000 used NLTK's list (179 words), whose data needs a download. The Glasgow list
also holds a few content words (``bill``, ``interest``, ``amount``, ``system``, ``call``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from textmetric_bench.errors import ConfigError

ARTICLES = frozenset({"a", "an", "the"})
_WORD = re.compile(r"\S+")


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """scikit-learn's ``ENGLISH_STOP_WORDS``, imported on first use: importing scikit-learn costs ~70 MiB, which a
    process that never perturbs (IFC's fine-tuning) should not carry."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def split_core(word: str) -> tuple[str, str, str]:
    """(leading punctuation, core, trailing punctuation) of one word; the core may be empty."""
    start, end = 0, len(word)
    while start < end and not word[start].isalnum():
        start += 1
    while end > start and not word[end - 1].isalnum():
        end -= 1
    return word[:start], word[start:end], word[end:]


def truncate(text: str) -> str:
    """p_short: the first third of the words, n/3 rounded to the nearest (at least one) (000 §6.2)."""
    spans = list(_WORD.finditer(text))
    if not spans:
        return text
    keep = max(1, (len(spans) + 1) // 3)
    return text[spans[0].start() : spans[keep - 1].end()]


def remove_words(text: str, vocabulary: frozenset[str]) -> str:
    """Drop every word whose lower-cased core is in ``vocabulary``.

    Punctuation attached to a dropped word is kept: trailing marks join the previous kept
    word (``"do it?"`` -> ``"do?"``; dropped when there is none), leading marks the next one
    (``"see (the car)"`` -> ``"see (car)"``). If no word would be left, the text keeps its
    first word; if none is dropped, the text is returned as it was.
    """
    words = text.split()
    kept: list[str] = []
    pending = ""  # leading punctuation waiting for the next kept word
    for word in words:
        lead, core, trail = split_core(word)
        if core and core.lower() in vocabulary:
            if kept:
                kept[-1] += trail
            pending += lead
            continue
        kept.append(pending + word)
        pending = ""
    if len(kept) == len(words):
        return text
    if not kept:
        return words[0]
    kept[-1] += pending
    return " ".join(kept)


def remove_articles(text: str) -> str:
    """p_no art: remove the articles a, an and the, in any case (000 §6.2)."""
    return remove_words(text, ARTICLES)


def remove_stopwords(text: str) -> str:
    """p_no stop: remove scikit-learn's English stopwords (000 §6.2 used NLTK's list)."""
    return remove_words(text, stopwords())


def shuffle_words(text: str, rng: np.random.Generator) -> str:
    """p_rand: the words in a uniformly random order other than the original (000 §6.2).

    A permutation that reproduces the text is drawn again, so every text with two distinct
    words changes; a text with fewer is returned unchanged.
    """
    words = text.split()
    if len(set(words)) < 2:
        return text
    original = " ".join(words)
    while True:
        shuffled = " ".join(words[i] for i in rng.permutation(len(words)))
        if shuffled != original:
            return shuffled


def first_half_length(n_words: int) -> int:
    """Words in a text's first half: n/2 rounded up, so a one-word text is all first half."""
    return (n_words + 1) // 2


def swap_first_halves(texts: Sequence[str], rng: np.random.Generator) -> list[str]:
    """p_swap: texts exchange their first halves across the corpus (000 §6.2).

    The texts are paired at random and each pair trades first halves; with an odd count the
    last three rotate (1 takes 2's half, 2 takes 3's, 3 takes 1's), so every text gets a
    stranger's beginning. Halves are by words, not sentences as in 000: most texts here are
    single sentences. A corpus of one text is returned unchanged.
    """
    words = [t.split() for t in texts]
    heads = [w[: first_half_length(len(w))] for w in words]
    donor = list(range(len(texts)))  # donor[i]: whose first half text i receives
    order = [int(i) for i in rng.permutation(len(texts))]
    paired = len(order) - 3 if len(order) % 2 and len(order) >= 3 else len(order) - len(order) % 2
    for k in range(0, paired, 2):
        i, j = order[k], order[k + 1]
        donor[i], donor[j] = j, i
    if len(order) - paired == 3:
        i, j, k = order[paired:]
        donor[i], donor[j], donor[k] = j, k, i
    out = []
    for i, w in enumerate(words):
        merged = heads[donor[i]] + w[first_half_length(len(w)) :]
        out.append(" ".join(merged) if merged else texts[i])
    return out


@dataclass(frozen=True)
class Perturbation:
    """One perturbation of 000 §6.2 as a function of a whole corpus (and a generator)."""

    name: str
    paper: str  # 000's symbol
    description: str
    apply: Callable[[Sequence[str], np.random.Generator], list[str]]
    seeded: bool


def _per_text(fn: Callable[[str], str]):
    return lambda texts, rng: [fn(t) for t in texts]


PERTURBATIONS: dict[str, Perturbation] = {
    p.name: p
    for p in [
        Perturbation("truncate", "p_short", "first third of the words", _per_text(truncate), False),
        Perturbation("remove_articles", "p_no art", "articles a, an, the removed", _per_text(remove_articles), False),
        Perturbation(
            "remove_stopwords",
            "p_no stop",
            "scikit-learn English stopwords removed",
            _per_text(remove_stopwords),
            False,
        ),
        Perturbation(
            "swap_halves", "p_swap", "first halves swapped between random pairs of texts", swap_first_halves, True
        ),
        Perturbation(
            "shuffle_words",
            "p_rand",
            "words of each text in random order",
            lambda texts, rng: [shuffle_words(t, rng) for t in texts],
            True,
        ),
    ]
}


def get_perturbation(name: str) -> Perturbation:
    """The perturbation called ``name``; an unknown name raises with the closest known one."""
    if name not in PERTURBATIONS:
        close = difflib.get_close_matches(str(name), list(PERTURBATIONS), n=1, cutoff=0.4)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown perturbation {name!r}; available: {', '.join(PERTURBATIONS)}.{hint}")
    return PERTURBATIONS[name]


def perturb_corpus(name: str, texts: Sequence[str], rng: np.random.Generator) -> list[str]:
    """``texts`` under the perturbation ``name``; ``rng`` is used only by the seeded ones."""
    return get_perturbation(name).apply(list(texts), rng)
