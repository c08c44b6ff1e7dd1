"""Declarative data cards: find and read corpus cards (`corpora/<name>.yaml`) and pair cards (`pairs/<name>.yaml`).

A card describes a source corpus (origin, checksum, licence, how to parse and normalise it) or a
pair of corpora; the generic loader in `textmetric_bench.data.corpora` does the rest (the MTEB `TaskMetadata` idea).
Cards are looked up in the user's card directories first (`data.cards`, then $BENCH_CARDS_PATH), then in
the built-in `datasets/`; each directory is laid out like `datasets/`: `corpora/` and `pairs/`.
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
from dataclasses import fields
from pathlib import Path
from typing import Sequence

import yaml

from textmetric_bench import shipped_path
from textmetric_bench.data.card_schema import (
    LICENCE_PLACEHOLDER,
    ORIGINS,
    CardFile,
    CardReader,
    CorpusCard,
    Normalisation,
    PackageOrigin,
    PairCard,
    read_parser,
)
from textmetric_bench.data.generated_origin import prompts_held_out, read_generated_card, read_pair_side
from textmetric_bench.data.lengths import REGIMES
from textmetric_bench.errors import ConfigError

log = logging.getLogger(__name__)

DATASETS_DIR = shipped_path("datasets")

#: Directories of the user's own cards, os.pathsep-separated, searched before the built-in ones.
CARDS_ENV = "BENCH_CARDS_PATH"

KINDS = {"corpus": "corpora", "pair": "pairs"}


def card_dirs(extra: Sequence[str | Path] = ()) -> tuple[Path, ...]:
    """Where cards are looked up, first match wins: ``extra`` (the config's `data.cards`), then the directories
    of $BENCH_CARDS_PATH, then the built-in `datasets/`. A user directory must exist and hold `corpora/` or `pairs/`."""
    env = [(d, f"${CARDS_ENV}") for d in os.environ.get(CARDS_ENV, "").split(os.pathsep) if d.strip()]
    dirs = []
    for value, origin in [(d, "data.cards") for d in extra] + env:
        path = Path(value).expanduser().absolute()
        if not path.is_dir():
            raise ConfigError(
                f"cards directory {path} (from {origin}) does not exist; give a directory holding "
                f"corpora/<name>.yaml and pairs/<name>.yaml, or remove it from {origin}"
            )
        if not any((path / sub).is_dir() for sub in KINDS.values()):
            raise ConfigError(
                f"cards directory {path} (from {origin}) has no corpora/ or pairs/ folder; put corpus "
                f"cards in {path}/corpora/<name>.yaml and pair cards in {path}/pairs/<name>.yaml"
            )
        dirs.append(path)
    return (*dict.fromkeys(dirs), DATASETS_DIR)


def _found(kind: str, cards: Sequence[Path] | None) -> dict[str, Path]:
    """Card name -> its file, the first directory holding it winning."""
    found: dict[str, Path] = {}
    for directory in card_dirs() if cards is None else cards:
        for path in sorted((Path(directory) / KINDS[kind]).glob("*.yaml")):
            found.setdefault(path.stem, path)
    return found


def corpus_names(cards: Sequence[Path] | None = None) -> list[str]:
    """Names of every corpus card in ``cards`` (default: `card_dirs()`)."""
    return sorted(_found("corpus", cards))


def pair_names(cards: Sequence[Path] | None = None) -> list[str]:
    return sorted(_found("pair", cards))


def corpus_card(name: str, cards: Sequence[Path] | None = None) -> CorpusCard:
    """The validated card of corpus `name`, looked up in ``cards`` (default: `card_dirs()`); unknown names raise
    `ConfigError` with a suggestion."""
    return read_corpus_card(_card_file(name, "corpus", cards))


def pair_card(name: str, cards: Sequence[Path] | None = None) -> PairCard:
    """The validated card of pair `name`; both sides must name corpus cards found in the same directories."""
    cards = card_dirs() if cards is None else tuple(cards)
    return read_pair_card(_card_file(name, "pair", cards), cards)


def _card_file(name: str, kind: str, cards: Sequence[Path] | None) -> Path:
    cards = card_dirs() if cards is None else tuple(cards)
    found = _found(kind, cards)
    if name in found:
        return found[name]
    close = difflib.get_close_matches(str(name), list(found), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    searched = ", ".join(str(Path(d) / KINDS[kind]) for d in cards)
    raise ConfigError(
        f"unknown {kind} {name!r}.{hint} Available: {', '.join(sorted(found)) or '(none)'} (cards in {searched}; "
        f"add a directory of your own with data.cards=[DIR] or ${CARDS_ENV})."
    )


def _load_yaml(path: Path) -> CardReader:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"card {path} cannot be read: {err}") from err
    reader = CardReader(path, data)
    if reader.get("name", str) != path.stem:
        raise reader.fail("name", f"{data['name']!r} must equal the file name {path.stem!r}")
    return reader


@functools.lru_cache(maxsize=None)
def read_corpus_card(path: Path) -> CorpusCard:
    """Parse and validate one corpus card file.

    Its origin is `download` (every file has a url and a sha256), `package` (files of an installed distribution)
    or `local` (files on disk, absolute or relative to the card's directory; sha256 optional). Without an
    `origin` section a card whose files have no url is local. A `generated` card has no files
    (`textmetric_bench.data.generated_origin`).
    """
    top = _load_yaml(path)
    if isinstance(top.data.get("origin"), dict) and top.data["origin"].get("kind") == "generated":
        return read_generated_card(top)
    top.reject_unknown(
        {"name", "description", "licence", "homepage", "origin", "files", "parser", "normalise", "language", "counts"}
    )
    files_raw = top.get("files", list)
    if not files_raw:
        raise top.fail("files", "it lists no file")
    has_url = any(isinstance(raw, dict) and "url" in raw for raw in files_raw)
    origin = top.sub("origin", top.get("origin", dict, {"kind": "download" if has_url else "local"}))
    kind = origin.get("kind", str, choices=set(ORIGINS))
    package = None
    if kind == "package":
        origin.reject_unknown({"kind", "package", "version", "directory"})
        package = PackageOrigin(
            origin.get("package", str), str(origin.get("version", (str, int, float))), origin.get("directory", str)
        )
    else:
        origin.reject_unknown({"kind"})
    files = tuple(_card_file_entry(top.sub(f"files[{i}]", raw), kind) for i, raw in enumerate(files_raw))

    n = top.sub("normalise", top.get("normalise", dict, {}))
    n.reject_unknown({f.name for f in fields(Normalisation)})
    normalise = Normalisation(
        **{f.name: n.get(f.name, int if f.name.endswith("_words") else bool, f.default) for f in fields(Normalisation)}
    )
    top.get("language", str, None)
    counts = top.sub("counts", top.get("counts", dict, {}))
    for key in counts.data:
        counts.get(key, int)
    card = CorpusCard(
        name=top.get("name", str),
        description=top.get("description", str).strip(),
        licence=top.get("licence", str),
        homepage=top.get("homepage", str, ""),
        files=files,
        parser=read_parser(top.sub("parser", top.get("parser", dict))),
        normalise=normalise,
        package=package,
        origin=kind,
        path=path,
        counts=dict(counts.data),
    )
    if card.licence.strip() == LICENCE_PLACEHOLDER and Path(path).absolute() not in _LICENCE_WARNED:
        _LICENCE_WARNED.add(Path(path).absolute())  # once a process, however often the card is read
        log.warning("card %s: its licence is still to be filled in", path)
    return card


#: The cards whose missing licence this process has warned of.
_LICENCE_WARNED: set[Path] = set()


def _card_file_entry(f: CardReader, origin: str) -> CardFile:
    """One entry of a card's `files`: a url and a sha256 unless the file is local; or, with `glob`, a directory
    of an installed package or of the user's disk, its `file_count` files checked by their manifest's sha256."""
    f.reject_unknown(
        {"path", "url", "sha256", "checksum_scope", "glob", "file_count"} - ({"url"} if origin == "local" else set())
    )
    pattern = f.get("glob", str, None)
    if pattern is not None:
        return _directory_entry(f, origin, pattern)
    sha = f.get("sha256", str, None if origin == "local" else ...)
    if sha is not None and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise f.fail("sha256", f"{sha!r} (64 lower-case hex digits)")
    url = f.get("url", str, None)
    if origin == "download" and url is None:
        raise ConfigError(
            f"card {f.path}: missing field '{f.where}.url' (needed for origin kind 'download'; "
            f"a file on your disk needs origin kind 'local' and no url)"
        )
    scope = f.sub("checksum_scope", f.get("checksum_scope", dict, {}))
    scope.reject_unknown({"lines"})
    lines = scope.get("lines", int, None)
    if lines is not None and lines < 1:
        raise scope.fail("lines", repr(lines))
    return CardFile(path=f.get("path", str), sha256=sha, url=url, lines=lines)


def _directory_entry(f: CardReader, origin: str, pattern: str) -> CardFile:
    """A `files` entry naming a directory: files matching `glob` (`*.txt`, `**/*.md`), their count and the
    sha256 of their manifest, so hundreds of files need three lines, not one checksum each."""
    if origin not in ("package", "local"):
        raise f.fail(
            "glob",
            f"a directory of files is read in place, from an installed package (origin kind "
            f"'package') or your disk ('local'), not with origin kind {origin!r}; list its files "
            f"one by one with a url and sha256 each",
        )
    extra = sorted({"url", "checksum_scope"} & set(f.data))
    if extra:
        raise f.fail(extra[0], "does not apply to a directory entry (one with 'glob')")
    if not pattern.strip() or pattern.startswith("/") or ".." in pattern.split("/"):
        raise f.fail("glob", f"{pattern!r} (a pattern inside the directory, e.g. '*.txt' or '**/*.md')")
    count = f.get("file_count", int, None if origin == "local" else ...)
    if count is not None and count < 1:
        raise f.fail("file_count", f"{count!r} (the number of files matching the glob, at least 1)")
    sha = f.get("sha256", str, None if origin == "local" else ...)
    if sha is not None and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise f.fail("sha256", f"{sha!r} (64 lower-case hex digits: the sha256 of the directory's manifest)")
    return CardFile(path=f.get("path", str), sha256=sha, glob=pattern, file_count=count)


def read_pair_card(path: Path, cards: Sequence[Path] | None = None) -> PairCard:
    """Parse and validate one pair card file; its sides must be corpus cards found in ``cards``."""
    return _read_pair_card(path, tuple(card_dirs() if cards is None else cards))


@functools.lru_cache(maxsize=None)
def _read_pair_card(path: Path, cards: tuple[Path, ...]) -> PairCard:
    top = _load_yaml(path)
    top.reject_unknown({"name", "description", "a", "b", "regime"})
    (a, a_select), (b, b_select) = read_pair_side(top, "a"), read_pair_side(top, "b")
    known = corpus_names(cards)
    for side, corpus in (("a", a), ("b", b)):
        if corpus not in known:
            raise top.fail(side, f"{corpus!r} is not a corpus card (available: {', '.join(known)})")
    if a == b and (a_select is None or b_select is None or a_select == b_select):
        raise top.fail("b", f"both sides are {a!r}")
    prompts_held_out(top, {"a": (a, a_select), "b": (b, b_select)}, lambda name: corpus_card(name, cards))
    regime = top.get("regime", str, None, choices={name for name, _ in REGIMES})
    return PairCard(
        a=a,
        b=b,
        name=top.get("name", str),
        description=top.get("description", str).strip(),
        regime=regime,
        a_select=a_select,
        b_select=b_select,
    )
