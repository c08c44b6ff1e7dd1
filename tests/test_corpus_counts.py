"""The shipped cards' `counts:` blocks are what their files give (texts, median and p90 of words a text), every
shipped pair's declared length regime is what its sides' medians say, the three regimes stay covered, and the
tables of docs/data.md state the cards' numbers.

Cards read from an installed package are recomputed in the fast tier (no mirror is read); the downloaded ones
from the team mirror, in the default tier.
"""

from __future__ import annotations

from collections import Counter

import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.collections.ksc import texts_needed
from textmetric_bench.data.card_counts import COUNT_KEYS, card_counts, counts_block, write_counts
from textmetric_bench.data.cards import corpus_card, corpus_names, pair_card, pair_names, read_corpus_card
from textmetric_bench.data.corpora import read_source
from textmetric_bench.data.lengths import length_counts, length_regime, nearest_rank

SHIPPED = corpus_names([PROJECT_ROOT / "datasets"])
PAIRS = pair_names([PROJECT_ROOT / "datasets"])
IN_PLACE = [n for n in SHIPPED if corpus_card(n).origin in ("package", "local")]
DOWNLOADED = [n for n in SHIPPED if corpus_card(n).origin == "download"]


def stated(name: str) -> dict[str, int]:
    return {key: corpus_card(name).counts[key] for key in COUNT_KEYS}


def test_every_shipped_corpus_card_states_its_counts():
    missing = [n for n in SHIPPED if not set(COUNT_KEYS) <= set(corpus_card(n).counts)]
    assert not missing, (
        f"cards without {COUNT_KEYS} in counts: {missing}; python -m textmetric_bench.data.card_counts --write"
    )


@pytest.mark.parametrize("name", IN_PLACE)
def test_counts_of_a_card_read_in_place_are_what_its_files_give(name):
    assert card_counts(corpus_card(name)) == stated(name)


@pytest.mark.parametrize("name", DOWNLOADED)
def test_counts_of_a_downloaded_card_are_what_its_files_give(name, mirror_dir, cache_dir):
    assert length_counts(read_source(corpus_card(name), cache_dir=cache_dir, mirror=mirror_dir).texts) == stated(name)


@pytest.mark.parametrize("name", PAIRS)
def test_a_pairs_declared_regime_is_that_of_both_sides_medians(name):
    pair = pair_card(name)
    sides = {side: length_regime(corpus_card(side).counts["words_median"]) for side in (pair.a, pair.b)}
    assert pair.regime is not None, f"pair {name} declares no regime; its sides are {sides}"
    assert set(sides.values()) == {pair.regime}, f"pair {name} says {pair.regime}, its sides' medians say {sides}"


@pytest.mark.parametrize("name", PAIRS)
def test_both_sides_of_a_pair_are_large_enough_for_ksc_at_k7(name):
    pair = pair_card(name)
    for side in (pair.a, pair.b):
        assert corpus_card(side).counts["texts"] >= texts_needed(7, 100)[0], side


def test_the_shipped_pairs_cover_the_three_length_regimes():
    regimes = Counter(pair_card(n).regime for n in PAIRS)
    assert regimes["sentence"] >= 1 and regimes["paragraph"] >= 2 and regimes["document"] >= 2, regimes


def test_regimes_are_bounded_at_30_and_200_words():
    assert [length_regime(m) for m in (1, 30, 31, 200, 201)] == [
        "sentence",
        "sentence",
        "paragraph",
        "paragraph",
        "document",
    ]


def test_percentiles_are_by_nearest_rank():
    assert nearest_rank([5, 1, 3, 2, 4], 50) == 3 and nearest_rank([1, 2, 3, 4], 50) == 2
    assert nearest_rank(list(range(1, 11)), 90) == 9 and nearest_rank([7], 90) == 7
    assert length_counts(["a b", "a b c d", "a"]) == {"texts": 3, "words_median": 2, "words_p90": 4}


def test_write_counts_replaces_the_block_and_keeps_the_rest(tmp_path):
    card = tmp_path / "mine.yaml"
    card.write_text(
        "name: mine\ndescription: d\nlicence: l\ncounts:\n  texts: 1\n  words_median: 9\n"
        "files:\n  - path: a.txt\nparser:\n  format: txt\n"
    )
    (tmp_path / "a.txt").write_text("one two three\nfour five\n")
    write_counts(card, {"texts": 2, "words_median": 2, "words_p90": 3})
    text = card.read_text()
    assert counts_block({"texts": 2, "words_median": 2, "words_p90": 3}) in text
    assert "words_median: 9" not in text and "parser:\n  format: txt" in text
    read_corpus_card.cache_clear()
    assert read_corpus_card(card).counts == card_counts(read_corpus_card(card))


def _table_rows(heading: str) -> dict[str, list[str]]:
    """The rows of the markdown table under ``heading`` in docs/data.md, by their first cell (backticks dropped)."""
    text = (PROJECT_ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    rows = {}
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_docs_corpus_table_states_each_cards_counts_and_regime():
    rows = _table_rows("### Corpus lengths")
    assert set(rows) == set(SHIPPED), "docs/data.md's table of corpus lengths lists every shipped corpus card"
    for name, (texts, median, p90, regime, *_) in rows.items():
        counts = corpus_card(name).counts
        assert [int(texts.replace(",", "")), int(median), int(p90)] == [counts[k] for k in COUNT_KEYS], name
        assert regime == length_regime(counts["words_median"]), name


def test_the_docs_pair_table_states_each_pairs_regime_and_ksc_fit():
    text = (PROJECT_ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    assert f"({texts_needed(7, 100)[0]} at k = 7,\n{texts_needed(12, 100)[0]} at k = 12, with n = 100)" in text
    rows = _table_rows("### Pairs and their regimes")
    assert set(rows) == set(PAIRS)
    for name, (regime, a, b, ks, *_) in rows.items():
        pair = pair_card(name)
        assert (regime, a.strip("`"), b.strip("`")) == (pair.regime, pair.a, pair.b), name
        smaller = min(corpus_card(pair.a).counts["texts"], corpus_card(pair.b).counts["texts"])
        assert ks == ", ".join(str(k) for k in (7, 12) if smaller >= texts_needed(k, 100)[0]), name


def test_the_docs_table_of_texts_a_setting_needs_is_what_ksc_draws():
    text = (PROJECT_ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    section = text.split("### How many texts a setting needs", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) >= 4
    for row in rows:
        k, *cells = [c.strip() for c in row.strip("|").split("|")]
        for n, cell in zip((30, 50, 100), cells, strict=True):
            assert tuple(int(v) for v in cell.split(",")) == texts_needed(int(k), n), (k, n)
