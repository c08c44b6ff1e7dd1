"""A guess at a corpus's language, for a card written from a file (`textmetric_bench.data.make_card`). Only a guess:

1. letters not of the Latin script in the majority: the script is named (Greek, Hangul, Hebrew, kana, Thai
   map to a language; Cyrillic, Arabic, CJK ideographs and the others are several languages, so `und`);
2. else, the share of the words that are among ~15 very common words of English, German, French, Spanish,
   Italian, Dutch or Portuguese; the language with the largest share wins if it is at least 8% of the words,
   else `und` (ISO 639 "undetermined"). Common words that several of these languages share count for each.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Sequence

COMMON_WORDS = {
    "en": ("English", "the and to of is that it you for with this are was not have be on in"),
    "de": ("German", "der die und das ist nicht ich zu den mit sie es ein auf für dem"),
    "fr": ("French", "le la les et des est un une que pas je du pour qui dans sur"),
    "es": ("Spanish", "el la los las y que en un una es por con para no se del"),
    "it": ("Italian", "il la le di che è un una per non con sono del della gli"),
    "nl": ("Dutch", "de het een en van is dat niet op te ik met zijn voor naar"),
    "pt": ("Portuguese", "o os as e que em um uma é para não com do da dos"),
}
SCRIPT_LANGUAGE = {"GREEK": "el", "HANGUL": "ko", "HEBREW": "he", "HIRAGANA": "ja", "KATAKANA": "ja", "THAI": "th"}
MIN_SHARE = 0.08
_WORD = re.compile(r"\w+")


def guess_language(texts: Sequence[str], *, sample: int = 2000) -> tuple[str, str]:
    """(ISO 639-1 code or `und`, why) from the first ``sample`` texts."""
    texts = list(texts)[:sample]
    scripts = Counter(unicodedata.name(c, "UNKNOWN").split()[0] for text in texts for c in text if c.isalpha())
    letters = sum(scripts.values())
    if not letters:
        return "und", "the texts hold no letters"
    script, count = max(
        ((s, n) for s, n in scripts.items() if s != "LATIN"), key=lambda sn: sn[1], default=("LATIN", 0)
    )
    if scripts["LATIN"] < letters / 2:
        code = SCRIPT_LANGUAGE.get(script, "und")
        return code, f"{count / letters:.0%} of the letters are {script.title()}" + (
            "" if code != "und" else ", written by several languages"
        )
    words = [w.lower() for text in texts for w in _WORD.findall(text)]
    shares = sorted(
        (
            (sum(w in set(common.split()) for w in words) / max(1, len(words)), code)
            for code, (_, common) in COMMON_WORDS.items()
        ),
        reverse=True,
    )
    (best, code), (second, runner_up) = shares[0], shares[1]
    if best < MIN_SHARE:
        return "und", (
            f"mostly Latin letters, but at most {best:.0%} of the words are common words of {', '.join(COMMON_WORDS)}"
        )
    return code, f"{best:.0%} of the words are common {COMMON_WORDS[code][0]} words (next: {runner_up} {second:.0%})"
