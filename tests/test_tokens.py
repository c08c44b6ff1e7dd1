"""The shared tokeniser (bench/api/tokens.py): apostrophes, Unicode normalisation, scripts."""

import sys

import pytest

from textmetric_bench.api.registry import get_metric
from textmetric_bench.api.tokens import APOSTROPHES, MARK_PLANES, _marks, token_counts, tokenize
from textmetric_bench.data.corpora import load_pair


@pytest.mark.parametrize("apostrophe", list(APOSTROPHES), ids=[f"U+{ord(c):04X}" for c in APOSTROPHES])
def test_every_apostrophe_is_the_same_inner_apostrophe(apostrophe):
    text = f"I don{apostrophe}t know, it{apostrophe}s Bob{apostrophe}s"
    assert tokenize(text) == ["i", "don't", "know", "it's", "bob's"]


def test_curly_and_straight_contractions_are_counted_as_one_word():
    counts = token_counts(["I don’t", "I don't", "I DON'T", "I donʼt"])
    assert counts["don't"] == 4 and "don" not in counts and "t" not in counts


def test_nfkc_and_casefolding():
    assert tokenize("ｆｏｏ ＦＯＯ") == ["foo", "foo"]  # full-width letters
    assert tokenize("ﬁle ﬂow") == ["file", "flow"]  # ligatures
    assert tokenize("Straße STRASSE strasse") == ["strasse"] * 3
    assert tokenize("Ⅻ x²") == ["xii", "x2"]
    assert tokenize("café") == tokenize("cafe\u0301") == ["café"]  # composed and decomposed é


def test_quotes_and_other_punctuation_are_not_kept():
    assert tokenize("'hello' ‘hello’ \"hello\" «hello» „hello“ `hello´") == ["hello"] * 6
    assert tokenize("the users' files") == ["the", "users", "files"]
    assert tokenize("state-of-the-art, e.g. snake_case (x) a/b #tag ... l'été") == [
        "state",
        "of",
        "the",
        "art",
        "e",
        "g",
        "snake",
        "case",
        "x",
        "a",
        "b",
        "tag",
        "l'été",
    ]


def test_other_scripts_are_words():
    assert tokenize("Привет, МИР!") == ["привет", "мир"]
    assert tokenize("ΟΔΟΣ οδος") == ["οδοσ", "οδοσ"]  # casefolding also folds the final sigma
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # vowel signs and virama are marks inside the word
    assert tokenize("مرحبا بالعالم") == ["مرحبا", "بالعالم"]
    assert tokenize("می\u200cخواهم") == ["می\u200cخواهم"]  # a zero-width non-joiner inside a Persian word
    assert tokenize("東京都 に 行く") == ["東京都", "に", "行く"]  # not segmented: a run is one token


def test_combining_marks_are_only_in_the_planes_scanned():
    assert _marks(MARK_PLANES) == _marks([range(sys.maxunicode + 1)])


@pytest.mark.parametrize("name", ["chi", "zipf", "ngram_js"])
def test_lexical_metrics_see_a_corpus_and_its_typographic_variant_as_one(name, cache_dir):
    """Fortune computing quotes, and the same quotes with curly apostrophes and full-width capitals."""
    a, _ = load_pair("fortune_computing_people", cache_dir=cache_dir)
    texts = [t for t in a.texts if "'" in t][:100]
    variant = [t.replace("'", "’").translate({c: c + 0xFEE0 for c in range(ord("A"), ord("Z") + 1)}) for t in texts]
    assert get_metric(name)(texts, variant) == pytest.approx(0.0, abs=1e-12)
    assert get_metric(name)(texts, a.texts[-100:]) > 1e-6  # and a different sample is not
