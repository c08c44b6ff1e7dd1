"""The one tokeniser shared by every lexical metric (CHI, ZIPF, the n-gram divergences, CTRLEval, TTR).

A text is first made comparable: every apostrophe-like character (listed in ``APOSTROPHES``: the
typewriter ', the curly ’ and ‘, the modifier letter ʼ, the grave ` and acute ´ accents, primes,
full-width forms) becomes the ASCII apostrophe, then the text is NFKC-normalised (full-width
letters, ligatures, superscripts become their plain forms: 'ｆｏｏ' -> 'foo', 'ﬁ' -> 'fi') and
casefolded ('Straße' -> 'strasse'; stronger than lower-casing), and NFKC-normalised again so the
tokens are in one normal form. Apostrophes go first because NFKC turns ´ into a space and a
combining accent.

A token is then a maximal run of letters and digits of any script, with the combining marks
and zero-width joiners that belong to it (Devanagari vowel signs, Persian ZWNJ), keeping an
apostrophe between two such runs (``don't``, ``don’t`` and ``DON´T`` are all ``don't``). Every
other character separates tokens and is dropped: punctuation, quotes around a word, symbols,
underscores, and apostrophes that do not sit between letters. Scripts written without spaces
(Chinese, Japanese, Thai) are not segmented: a run of them is one token.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter
from typing import Iterable

from textmetric_bench.api.sharing import charge, per_corpus, per_text_cache

#: Characters read as an apostrophe: U+0027, U+2019, U+2018, U+201B, U+02BC, U+FF07, U+0060, U+00B4,
#: U+2032, U+2035, U+02B9, U+FF40.
APOSTROPHES = "'\u2019\u2018\u201b\u02bc\uff07`\u00b4\u2032\u2035\u02b9\uff40"
_AS_APOSTROPHE = str.maketrans({c: "'" for c in APOSTROPHES})


#: The planes holding combining marks (Basic and Supplementary Multilingual, Supplementary Special-purpose):
#: planes 2-3 are CJK ideographs and 15-16 private use.
MARK_PLANES = (range(0x20000), range(0xE0000, 0xF0000))


def _marks(code_points: Iterable[range] = MARK_PLANES) -> str:
    """A regex class body of every combining mark (categories Mn, Mc, Me) and ZWNJ, ZWJ: they continue a word."""
    runs: list[list[int]] = []  # [first, last] of consecutive code points
    for code in (c for block in code_points for c in block):
        if unicodedata.category(chr(code))[0] == "M" or code in (0x200C, 0x200D):
            if runs and runs[-1][1] == code - 1:
                runs[-1][1] = code
            else:
                runs.append([code, code])
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in runs)


_WORD = rf"[^\W_]+(?:[{_marks()}]+[^\W_]*)*"  # a letter or digit, then letters, digits and marks
_TOKEN = re.compile(rf"{_WORD}(?:'{_WORD})*")


def normalise(text: str) -> str:
    """The text as tokens see it: apostrophes unified, NFKC-normalised and casefolded (module note)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text.translate(_AS_APOSTROPHE)).casefold())


def tokenize(text: str) -> list[str]:
    """Split one text into casefolded word tokens."""
    return _TOKEN.findall(normalise(text))


@per_corpus
def token_counts(texts: Iterable[str]) -> Counter[str]:
    """Token frequencies of a whole corpus (shared across pairs in a run: do not modify it).

    In a run, each text is tokenised once (``per_text_cache``: the corpora of the size study share most
    of their texts), and a corpus that reuses texts tokenised for another is charged what tokenising
    them cost, so its time (T) is that of tokenising all its texts."""
    counts: Counter[str] = Counter()
    cache = per_text_cache("tokens")
    if cache is None:
        for text in texts:
            counts.update(tokenize(text))
        return counts
    texts = list(texts)
    new = [text for text in dict.fromkeys(texts) if text not in cache]
    start = time.perf_counter()
    fresh = [tuple(tokenize(text)) for text in new]
    each = (time.perf_counter() - start) / max(len(new), 1)  # timed as a batch: no timer per text
    cache.update(zip(new, ((tokens, each) for tokens in fresh)))
    reused = 0.0
    for text in texts:
        tokens, seconds = cache[text]
        counts.update(tokens)
        reused += seconds
    reused -= each * len(new)  # what this corpus did not tokenise itself
    charge(object(), reused)  # a piece of its own: charged once to every evaluation that uses these counts
    return counts


def top_tokens(counts: Counter[str], top: int) -> list[str]:
    """The ``top`` most frequent tokens, ties broken alphabetically so the result is order-free."""
    return sorted(counts, key=lambda t: (-counts[t], t))[:top]
