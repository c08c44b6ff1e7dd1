"""What a data card holds (the dataclasses), the parser formats and their options, and the typed reader
that validates a card's mapping; `textmetric_bench.data.cards` finds and reads card files with them."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from textmetric_bench.errors import ConfigError

#: Parser formats the loader knows: required options, and optional ones with their defaults.
PARSER_OPTIONS: dict[str, tuple[frozenset[str], dict[str, Any]]] = {
    "json_splits": (frozenset({"splits"}), {"text_index": None, "text_field": None, "encoding": "utf-8"}),
    "jsonl": (frozenset({"text_field"}), {"encoding": "utf-8"}),
    "csv": (
        frozenset({"text_column"}),
        {"header": True, "delimiter": ",", "skip_initial_space": False, "encoding": "utf-8"},
    ),
    "fortune": (frozenset(), {"separator": "%", "encoding": "utf-8", "fallback_encoding": None}),
    "txt": (frozenset(), {"encoding": "utf-8"}),
    "parquet": (frozenset({"text_column"}), {}),
    # One document a file (split: document), or its paragraphs (split: paragraphs, on blank lines).
    "document": (frozenset(), {"split": "document", "join_words": None, "encoding": "utf-8",
                               "fallback_encoding": None}),
    # A play in markdown (`**SPEAKER**` lines, `_stage directions_`): one text a speech, or speeches joined.
    "play_speeches": (frozenset(), {"join_words": None, "encoding": "utf-8"}),
}

#: The values parser option `split` of format `document` takes.
DOCUMENT_SPLITS = ("document", "paragraphs")

#: The option naming where a record's text is, per format that has one.
TEXT_OPTION = {"json_splits": "text_field", "jsonl": "text_field", "csv": "text_column", "parquet": "text_column"}

#: The type each parser option must have (None allowed where its default is None).
OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "splits": list, "text_index": int, "text_field": str, "encoding": str, "fallback_encoding": str,
    "text_column": (str, int), "header": bool, "delimiter": str, "skip_initial_space": bool, "separator": str,
    "split": str, "join_words": int,
}

#: Where a card's files come from: downloaded (url, sha256), an installed package, or the user's disk.
ORIGINS = ("download", "package", "local")

#: The licence a written card leaves for its author to fill in (`textmetric_bench.data.make_card`).
LICENCE_PLACEHOLDER = "TO FILL IN: the licence under which these texts may be used"


@dataclass(frozen=True)
class CardFile:
    """One file of a corpus: its name in the mirror/cache (or, for a local card, its path), origin URL and sha256.

    `lines`, when set, scopes the checksum (and what is parsed) to the first `lines` lines. A local file may
    leave out the sha256; the loader then computes it and records it in the run. With `glob` the entry is a
    directory: every file in it matching `glob`, `file_count` of them, and `sha256` is that of their manifest
    (`textmetric_bench.data.file_sets`).
    """

    path: str
    sha256: str | None
    url: str | None = None
    lines: int | None = None
    glob: str | None = None
    file_count: int | None = None


class PackageOrigin(NamedTuple):
    """Files shipped inside an installed Python distribution rather than downloaded."""

    name: str
    version: str
    directory: str


@dataclass(frozen=True)
class Normalisation:
    """How raw texts become corpus texts; applied in this order by `textmetric_bench.data.corpora.normalise_text`."""

    remove_overstrike: bool = False
    remove_control: bool = True
    strip: bool = True
    collapse_whitespace: bool = True
    drop_empty: bool = True
    deduplicate: bool = True
    min_words: int | None = None
    max_words: int | None = None


@dataclass(frozen=True)
class Parser:
    """A generic parser (`format`, a key of `PARSER_OPTIONS`) and its options, defaults filled in."""

    format: str
    options: dict[str, Any]


@dataclass(frozen=True)
class CorpusCard:
    """One source corpus: where its files come from, their checksums, how to parse and normalise them.

    ``path`` is the card file (None for a card made in memory for a file given on the command line);
    ``settings`` says how a user sets a parser option where it is not in a card (``text_field`` ->
    ``pair.a_field``), so errors name what to change.
    """

    name: str
    description: str
    licence: str
    homepage: str
    files: tuple[CardFile, ...]
    parser: Parser
    normalise: Normalisation
    package: PackageOrigin | None = None
    origin: str = "download"
    path: Path | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)

    def local_path(self, spec: CardFile) -> Path:
        """Where a local card's file is: its path if absolute, else relative to the card's directory."""
        path = Path(spec.path).expanduser()
        if path.is_absolute() or self.path is None:
            return path
        return Path(os.path.normpath(self.path.parent / path))

    def setting(self, option: str) -> str:
        """How the user changes parser option ``option`` of this corpus, for error messages."""
        return self.settings.get(option) or f"the card's parser.{option}"


@dataclass(frozen=True)
class PairCard:
    """Two source corpora (A, B) that a KSC collection mixes (004 §3)."""

    a: str
    b: str
    name: str
    description: str
    regime: str | None = None


class CardReader:
    """Typed access to one card's mapping; every error names the card file and the field."""

    def __init__(self, path: Path, data: Any, where: str = ""):
        if not isinstance(data, dict):
            raise ConfigError(f"card {path}: {where or 'top level'} must be a mapping, got {type(data).__name__}")
        self.path, self.data, self.where = path, data, where

    def _field(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"card {self.path}: field {self._field(key)!r} is invalid: {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., choices: Any = None) -> Any:
        if key not in self.data:
            if default is ...:
                raise ConfigError(f"card {self.path}: missing field {self._field(key)!r}")
            return default
        value = self.data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(key, repr(value))
        if choices is not None and value not in choices:
            raise self.fail(key, f"{value!r}; expected one of {sorted(choices)}")
        return value

    def sub(self, key: str, data: Any) -> CardReader:
        return CardReader(self.path, data, self._field(key))

    def reject_unknown(self, allowed: set[str]) -> None:
        extra = sorted(set(self.data) - allowed)
        if extra:
            raise ConfigError(f"card {self.path}: unknown field {self._field(extra[0])!r}; allowed: {sorted(allowed)}")


def read_parser(p: CardReader) -> Parser:
    """The parser section: a known format, its required options, option types, encodings and combinations,
    so a wrong card fails when read, not when its file is parsed."""
    fmt = p.get("format", str, choices=set(PARSER_OPTIONS))
    required, optional = PARSER_OPTIONS[fmt]
    p.reject_unknown({"format"} | required | set(optional))
    for key in sorted(required):
        p.get(key, object)
    options = {**optional, **{k: v for k, v in p.data.items() if k != "format"}}
    for key, value in options.items():
        if not (value is None and key in optional and optional[key] is None):
            p.get(key, OPTION_TYPES[key], value)
    for key in ("encoding", "fallback_encoding"):
        if options.get(key) is not None:
            try:
                codecs.lookup(options[key])
            except LookupError:
                raise p.fail(key, f"{options[key]!r} is not a known encoding (e.g. utf-8, latin-1)") from None
    if fmt == "csv":
        if len(options["delimiter"]) != 1:
            raise p.fail("delimiter", f"{options['delimiter']!r} (one character, e.g. ',' or '\\t')")
        if not options["header"] and not isinstance(options["text_column"], int):
            raise p.fail("text_column", f"{options['text_column']!r} is a column name but 'header' is false; "
                                        f"give a 0-based index, or header: true")
    if fmt == "document" and options["split"] not in DOCUMENT_SPLITS:
        raise p.fail("split", f"{options['split']!r}; expected one of {list(DOCUMENT_SPLITS)}")
    if options.get("join_words") is not None:
        if options["join_words"] < 1:
            raise p.fail("join_words", f"{options['join_words']!r} (a number of words, at least 1)")
        if fmt == "document" and options["split"] == "document":
            raise p.fail("join_words", "joins paragraphs, so it needs split: paragraphs (a file is one text "
                                       "with split: document)")
    if fmt == "json_splits" and options["text_index"] is None and options["text_field"] is None:
        raise ConfigError(f"card {p.path}: missing field 'parser.text_index' or 'parser.text_field' "
                          f"(where the text is in each record)")
    return Parser(fmt, options)
