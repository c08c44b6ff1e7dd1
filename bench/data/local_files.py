"""A corpus from a file on the user's disk, without a card: the format comes from the file's extension, the text
from a named field or column, and the texts are normalised with a card's defaults (`Normalisation()`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textmetric_bench.data.card_schema import (
    OPTION_TYPES,
    PARSER_OPTIONS,
    TEXT_OPTION,
    CardFile,
    CorpusCard,
    Normalisation,
    Parser,
)
from textmetric_bench.data.corpora import Source, read_source
from textmetric_bench.errors import ConfigError

#: File extension -> (parser format, options besides the defaults of `PARSER_OPTIONS`).
FORMATS: dict[str, tuple[str, dict[str, Any]]] = {
    ".jsonl": ("jsonl", {}),
    ".csv": ("csv", {}),
    ".tsv": ("csv", {"delimiter": "\t"}),
    ".txt": ("txt", {}),
    ".parquet": ("parquet", {}),
}
#: The field or column read when none is named.
DEFAULT_FIELD = "text"
#: The command that writes a card, for advice on options a file given without a card cannot set.
CARD_COMMAND = "textmetric-bench-card"


def is_corpus_file(value: str) -> bool:
    """Whether ``value`` names a file (by its extension) rather than a corpus card."""
    return Path(str(value)).suffix.lower() in FORMATS


def file_parser(path: Path, field: str | None = None, *, what: str = "") -> Parser:
    """The parser of ``path`` by its extension; ``field`` is the JSONL field or CSV/Parquet column of the texts;
    ``what`` says where the path was given (e.g. `pair.a`), for the error about an unknown extension."""
    given = f" ({what})" if what else ""
    if path.is_dir():
        raise ConfigError(f"file {path}{given} is a directory, not a file; give one file of texts")
    if path.suffix.lower() not in FORMATS:
        kind = f"type {path.suffix!r}" if path.suffix else "type (the name has no extension)"
        raise ConfigError(
            f"file {path}{given}: unknown file {kind}; give a file ending in "
            f"{', '.join(FORMATS)} (one text a line for .txt), or write a card for it "
            f"(docs/data.md, 'Your own corpora')"
        )
    fmt, options = FORMATS[path.suffix.lower()]
    options = {**PARSER_OPTIONS[fmt][1], **options}
    if fmt in TEXT_OPTION:
        options[TEXT_OPTION[fmt]] = field or DEFAULT_FIELD
    return Parser(fmt, options)


def file_card(
    path: str | Path, *, name: str, field: str | None = None, field_setting: str = "--field", what: str = ""
) -> CorpusCard:
    """A card made in memory for one file (absolute or relative to the current directory): no url, no sha256,
    default normalisation. ``field_setting`` names how the user sets ``field``, ``what`` where the path was
    given (e.g. `pair.a`), for error messages."""
    path = Path(path).expanduser().absolute()
    card_hint = f"parser.{{}} in a card ({CARD_COMMAND} {path.name} writes one)"
    settings = {option: card_hint.format(option) for option in OPTION_TYPES}
    settings |= {
        "format": "the file's extension",
        "text_field": field_setting,
        "text_column": field_setting,
        "path": what or "the command",
    }
    return CorpusCard(
        name=name,
        description=f"the file {path}",
        licence="unknown (a file without a card)",
        homepage="",
        files=(CardFile(str(path), None),),
        parser=file_parser(path, field, what=what),
        normalise=Normalisation(),
        origin="local",
        settings=settings,
    )


def load_file(
    path: str | Path, *, name: str, field: str | None = None, field_setting: str = "--field", what: str = ""
) -> Source:
    """The normalised unique texts of one file, with its sha256 and counts recorded."""
    return read_source(file_card(path, name=name, field=field, field_setting=field_setting, what=what))
