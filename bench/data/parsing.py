"""Parsers: the bytes of one verified corpus file -> its raw texts, as the card's parser section says.

Formats: ``json_splits``, ``jsonl``, ``csv`` and ``fortune``. Errors name the file, the line or field, and what to do.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from bench.data.cards import CardFile, CorpusCard
from bench.errors import DataError


class ParseError(ValueError):
    """A file does not hold what its card's parser expects; the message says where (line, field) and what to do."""


def parse_file(card: CorpusCard, spec: CardFile, data: bytes, where: Path) -> list[str]:
    """The raw texts of one verified file (found at ``where``); an empty or malformed file is a `DataError`
    naming it and the line."""
    fmt = card.parser.format
    if not data.strip():
        raise DataError(f"corpus {card.name!r}: file {where} is empty; put texts in it (format {fmt!r}) "
                        f"or remove it from the card's files.")
    try:
        texts = PARSERS[fmt](data, **card.parser.options)
    except ParseError as err:
        raise DataError(f"corpus {card.name!r}: file {where}: {err}.") from err
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise DataError(
            f"corpus {card.name!r}: file {spec.path!r} ({where}) cannot be parsed as {fmt!r} "
            f"with {card.parser.options}: {type(err).__name__}: {err}. Check the parser section of its card."
        ) from err
    if not texts:
        raise DataError(f"corpus {card.name!r}: file {where} holds no record for parser {fmt!r} "
                        f"(only a header, blank lines or separators); put texts in it or remove it from the card.")
    return texts


def _decode(data: bytes, encoding: str, fallback_encoding: str | None = None) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        if fallback_encoding is None:
            line = data[:err.start].count(b"\n") + 1
            raise ParseError(f"line {line} is not valid {encoding} (byte {err.start}: {err.reason}); set "
                             f"parser.encoding in the card (e.g. latin-1) or save the file as {encoding}") from err
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
        raise ParseError(f"holds a JSON {type(doc).__name__}, not an object of splits; check parser.format in the card")
    missing = [split for split in splits if split not in doc]
    if missing:
        raise ParseError(f"has no split {missing[0]!r} (it has {sorted(doc)[:10]}); list existing ones in the "
                         f"card's parser.splits")
    return [_text(record[key], f"split {split!r} record {i} [{key!r}]")
            for split in splits for i, record in enumerate(doc[split])]


def parse_jsonl(data: bytes, *, text_field: str, encoding: str) -> list[str]:
    """One JSON object a line; the text is `object[text_field]`."""
    texts = []
    for n, line in enumerate(_decode(data, encoding).splitlines(), 1):
        if not line.strip():
            continue
        record = _json(line, f"line {n}")
        if not isinstance(record, dict):
            raise ParseError(f"line {n} holds a JSON {type(record).__name__}, not an object; each line must be "
                             f"one object with a {text_field!r} field")
        if text_field not in record:
            raise ParseError(f"line {n} has no field {text_field!r} (its fields: {sorted(record)[:10]}); name the "
                             f"text field in the card's parser.text_field")
        texts.append(_text(record[text_field], f"line {n} [{text_field!r}]"))
    return texts


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ParseError(f"{where} is not valid JSON ({err.msg} at column {err.colno}); fix the file, "
                         f"or check parser.format in the card") from err


def _text(value: Any, where: str) -> str:
    """A parsed text, which must be a JSON string: numbers or null there mean the card names the wrong field."""
    if not isinstance(value, str):
        raise TypeError(f"{where} holds {type(value).__name__} {value!r:.40}, not a text "
                        f"(does the card name the text field?)")
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
                raise ParseError(f"line {rows.line_num} (the header) has columns {names[:10]} but no "
                                 f"{text_column!r}; name the text column in the card's parser.text_column, or set "
                                 f"parser.header: false and give its 0-based index if the file has no header")
            text_column = names.index(text_column)
        elif not isinstance(text_column, int):
            raise ParseError(f"parser.text_column {text_column!r} is a name but parser.header is false; "
                             f"give the column's 0-based index, or set parser.header: true")
        for row in rows:
            if not row:
                continue
            if text_column >= len(row):
                raise ParseError(f"line {rows.line_num} has {len(row)} column(s), no column {text_column} "
                                 f"(0-based); check parser.text_column and parser.delimiter {delimiter!r} in the card")
            texts.append(row[text_column])
    except csv.Error as err:
        raise ParseError(f"line {rows.line_num} is not valid CSV ({err}); fix the file") from err
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


#: Card `parser.format` -> parser; their options are declared in `bench.data.cards.PARSER_OPTIONS`.
PARSERS: dict[str, Any] = {
    "json_splits": parse_json_splits, "jsonl": parse_jsonl, "csv": parse_csv, "fortune": parse_fortune,
}


# --- files: cache, mirror, network, checksum ----------------------------------------------------
