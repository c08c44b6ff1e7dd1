"""Source corpora: fetch each card's files once into a local cache, verify their sha256, parse, normalise.

Files come from a mirror directory laid out `<corpus>/<file>` when one is set, else from the card's URL;
cards whose origin is an installed package are read in place. Everything is driven by `bench.data.cards`.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from bench.data import fetch
from bench.data.cards import Normalisation, corpus_card, pair_card
from bench.data.parsing import parse_file
from bench.errors import DataError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Source:
    """One side of a pair: a corpus name and its normalised unique texts."""

    name: str
    texts: tuple[str, ...]


def load_corpus(name: str, *, cache_dir: str | Path | None = None, mirror: str | Path | None = None) -> list[str]:
    """The normalised unique texts of corpus `name`, in file order with first occurrences kept."""
    card = corpus_card(name)
    cache, mirror_dir = fetch.resolve_cache_dir(cache_dir), (fetch.resolve_mirror(mirror) if card.package is None else None)
    raw: list[str] = []
    for spec in card.files:
        data = fetch.verified_bytes(card, spec, cache, mirror_dir)
        raw.extend(parse_file(card, spec, data, fetch.file_location(card, spec, cache)))
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
