"""Declarative data cards: read and validate `datasets/corpora/*.yaml` and `datasets/pairs/*.yaml`.

A card describes a source corpus (origin, checksum, licence, how to parse and normalise it) or a
pair of corpora; the generic loader in `bench.data.corpora` does the rest (the MTEB `TaskMetadata` idea).
"""

from __future__ import annotations

import codecs
import difflib
import functools
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from bench import shipped_path
from bench.errors import ConfigError

DATASETS_DIR = shipped_path("datasets")

#: Parser formats the loader knows: required options, and optional ones with their defaults.
PARSER_OPTIONS: dict[str, tuple[frozenset[str], dict[str, Any]]] = {
    "json_splits": (frozenset({"splits"}), {"text_index": None, "text_field": None, "encoding": "utf-8"}),
    "jsonl": (frozenset({"text_field"}), {"encoding": "utf-8"}),
    "csv": (
        frozenset({"text_column"}),
        {"header": True, "delimiter": ",", "skip_initial_space": False, "encoding": "utf-8"},
    ),
    "fortune": (frozenset(), {"separator": "%", "encoding": "utf-8", "fallback_encoding": None}),
}


@dataclass(frozen=True)
class CardFile:
    """One file of a corpus: its name in the mirror/cache, origin URL and sha256.

    `lines`, when set, scopes the checksum (and what is parsed) to the first `lines` lines.
    """

    path: str
    sha256: str
    url: str | None = None
    lines: int | None = None


class PackageOrigin(NamedTuple):
    """Files shipped inside an installed Python distribution rather than downloaded."""

    name: str
    version: str
    directory: str


@dataclass(frozen=True)
class Normalisation:
    """How raw texts become corpus texts; applied in this order by `bench.data.corpora.normalise_text`."""

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
    """One source corpus: where its files come from, their checksums, how to parse and normalise them."""

    name: str
    description: str
    licence: str
    homepage: str
    files: tuple[CardFile, ...]
    parser: Parser
    normalise: Normalisation
    package: PackageOrigin | None = None


@dataclass(frozen=True)
class PairCard:
    """Two source corpora (A, B) that a KSC collection mixes (004 §3)."""

    a: str
    b: str
    name: str
    description: str


def corpus_names() -> list[str]:
    return sorted(p.stem for p in (DATASETS_DIR / "corpora").glob("*.yaml"))


def pair_names() -> list[str]:
    return sorted(p.stem for p in (DATASETS_DIR / "pairs").glob("*.yaml"))


def corpus_card(name: str) -> CorpusCard:
    """The validated card of corpus `name`; unknown names raise `ConfigError` with a suggestion."""
    _check_known(name, corpus_names(), "corpus")
    return read_corpus_card(DATASETS_DIR / "corpora" / f"{name}.yaml")


def pair_card(name: str) -> PairCard:
    """The validated card of pair `name`; both sides must name existing corpus cards."""
    _check_known(name, pair_names(), "pair")
    return read_pair_card(DATASETS_DIR / "pairs" / f"{name}.yaml")


def _check_known(name: str, known: list[str], kind: str) -> None:
    if name in known:
        return
    close = difflib.get_close_matches(str(name), known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"unknown {kind} {name!r}.{hint} Available: {', '.join(known) or '(none)'} "
        f"(cards in {DATASETS_DIR / ('corpora' if kind == 'corpus' else 'pairs')})."
    )


class _Reader:
    """Typed access to one card's mapping; every error names the card file and the field."""

    def __init__(self, path: Path, data: Any, where: str = ""):
        if not isinstance(data, dict):
            raise ConfigError(f"card {path}: {where or 'top level'} must be a mapping, got {type(data).__name__}")
        self.path, self.data, self.where = path, data, where

    def _field(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., choices: Any = None) -> Any:
        if key not in self.data:
            if default is ...:
                raise ConfigError(f"card {self.path}: missing field {self._field(key)!r}")
            return default
        value = self.data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"card {self.path}: field {self._field(key)!r} is invalid: {value!r}")
        if choices is not None and value not in choices:
            raise ConfigError(
                f"card {self.path}: field {self._field(key)!r} is invalid: {value!r}; "
                f"expected one of {sorted(choices)}"
            )
        return value

    def sub(self, key: str, data: Any) -> _Reader:
        return _Reader(self.path, data, self._field(key))

    def reject_unknown(self, allowed: set[str]) -> None:
        extra = sorted(set(self.data) - allowed)
        if extra:
            raise ConfigError(f"card {self.path}: unknown field {self._field(extra[0])!r}; allowed: {sorted(allowed)}")


def _load_yaml(path: Path) -> _Reader:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"card {path} cannot be read: {err}") from err
    reader = _Reader(path, data)
    if reader.get("name", str) != path.stem:
        raise ConfigError(f"card {path}: field 'name' is invalid: {data['name']!r} "
                          f"must equal the file name {path.stem!r}")
    return reader


@functools.lru_cache(maxsize=None)
def read_corpus_card(path: Path) -> CorpusCard:
    """Parse and validate one corpus card file."""
    top = _load_yaml(path)
    top.reject_unknown({"name", "description", "licence", "homepage", "origin", "files", "parser", "normalise"})
    origin = top.sub("origin", top.get("origin", dict, {"kind": "download"}))
    kind = origin.get("kind", str, choices={"download", "package"})
    package = None
    if kind == "package":
        origin.reject_unknown({"kind", "package", "version", "directory"})
        package = PackageOrigin(origin.get("package", str), str(origin.get("version", (str, int, float))),
                                origin.get("directory", str))
    else:
        origin.reject_unknown({"kind"})

    files_raw = top.get("files", list)
    if not files_raw:
        raise ConfigError(f"card {path}: field 'files' is invalid: it lists no file")
    files = []
    for i, raw in enumerate(files_raw):
        f = top.sub(f"files[{i}]", raw)
        f.reject_unknown({"path", "url", "sha256", "checksum_scope"})
        sha = f.get("sha256", str)
        if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
            raise ConfigError(f"card {path}: field 'files[{i}].sha256' is invalid: {sha!r} (64 lower-case hex digits)")
        url = f.get("url", str, None)
        if package is None and url is None:
            raise ConfigError(f"card {path}: missing field 'files[{i}].url' (needed for origin kind 'download')")
        scope = f.sub("checksum_scope", f.get("checksum_scope", dict, {}))
        scope.reject_unknown({"lines"})
        lines = scope.get("lines", int, None)
        if lines is not None and lines < 1:
            raise ConfigError(f"card {path}: field 'files[{i}].checksum_scope.lines' is invalid: {lines!r}")
        files.append(CardFile(path=f.get("path", str), sha256=sha, url=url, lines=lines))

    p = top.sub("parser", top.get("parser", dict))
    fmt = p.get("format", str, choices=set(PARSER_OPTIONS))
    required, optional = PARSER_OPTIONS[fmt]
    p.reject_unknown({"format"} | required | set(optional))
    for key in sorted(required):
        p.get(key, object)
    options = {**optional, **{k: v for k, v in p.data.items() if k != "format"}}
    _check_parser_options(p, fmt, options)

    n = top.sub("normalise", top.get("normalise", dict, {}))
    n.reject_unknown({f.name for f in fields(Normalisation)})
    normalise = Normalisation(**{
        f.name: n.get(f.name, int if f.name.endswith("_words") else bool, f.default) for f in fields(Normalisation)
    })
    return CorpusCard(
        name=top.get("name", str),
        description=top.get("description", str).strip(),
        licence=top.get("licence", str),
        homepage=top.get("homepage", str),
        files=tuple(files),
        parser=Parser(fmt, options),
        normalise=normalise,
        package=package,
    )


#: The type each parser option must have (None allowed where its default is None).
OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "splits": list, "text_index": int, "text_field": str, "encoding": str, "fallback_encoding": str,
    "text_column": (str, int), "header": bool, "delimiter": str, "skip_initial_space": bool, "separator": str,
}


def _check_parser_options(p: _Reader, fmt: str, options: dict[str, Any]) -> None:
    """Option types, encodings and combinations, so a wrong card fails when read, not when its file is parsed."""
    for key, value in options.items():
        if not (value is None and key in PARSER_OPTIONS[fmt][1] and PARSER_OPTIONS[fmt][1][key] is None):
            p.get(key, OPTION_TYPES[key], value)
    for key in ("encoding", "fallback_encoding"):
        if options.get(key) is not None:
            try:
                codecs.lookup(options[key])
            except LookupError:
                raise ConfigError(f"card {p.path}: field 'parser.{key}' is invalid: {options[key]!r} is not a "
                                  f"known encoding (e.g. utf-8, latin-1)") from None
    if fmt == "csv":
        if len(options["delimiter"]) != 1:
            raise ConfigError(f"card {p.path}: field 'parser.delimiter' is invalid: {options['delimiter']!r} "
                              f"(one character, e.g. ',' or '\\t')")
        if not options["header"] and not isinstance(options["text_column"], int):
            raise ConfigError(f"card {p.path}: field 'parser.text_column' is invalid: {options['text_column']!r} "
                              f"is a column name but 'header' is false; give a 0-based index, or header: true")
    if fmt == "json_splits" and options["text_index"] is None and options["text_field"] is None:
        raise ConfigError(f"card {p.path}: missing field 'parser.text_index' or 'parser.text_field' "
                          f"(where the text is in each record)")


@functools.lru_cache(maxsize=None)
def read_pair_card(path: Path) -> PairCard:
    """Parse and validate one pair card file; its sides must be known corpora."""
    top = _load_yaml(path)
    top.reject_unknown({"name", "description", "a", "b"})
    a, b = top.get("a", str), top.get("b", str)
    for side, corpus in (("a", a), ("b", b)):
        if corpus not in corpus_names():
            raise ConfigError(
                f"card {path}: field {side!r} is invalid: {corpus!r} is not a corpus card "
                f"(available: {', '.join(corpus_names())})"
            )
    if a == b:
        raise ConfigError(f"card {path}: field 'b' is invalid: both sides are {a!r}")
    return PairCard(a=a, b=b, name=top.get("name", str), description=top.get("description", str).strip())
