"""Source corpora: fetch each card's files once into a local cache, verify their sha256, parse, normalise.

Files come from a mirror directory laid out `<corpus>/<file>` when one is set, else from the card's URL;
cards whose origin is an installed package, and local cards, are read in place. Everything is driven by
`textmetric_bench.data.cards`; a file given without a card gets one made in memory (`textmetric_bench.data.local_files`).
Every source records what it was read from (file, sha256, counts), for the run's `run.json`.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from textmetric_bench.data import fetch, file_sets
from textmetric_bench.data.card_schema import TEXT_OPTION
from textmetric_bench.data.card_schema import CardFile, CorpusCard, Normalisation
from textmetric_bench.data.card_schema import Selection
from textmetric_bench.data.cards import corpus_card, pair_card
from textmetric_bench.data.generated_origin import in_part
from textmetric_bench.data.parsing import parse_file
from textmetric_bench.errors import ConfigError, DataError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceFile:
    """One file a source was read from: where, its sha256 (over the bytes read), and how many raw texts it held."""

    path: str
    sha256: str
    raw_texts: int
    url: str | None = None
    file_count: int | None = None


@dataclass(frozen=True)
class Source:
    """One side of a pair: a corpus name, its normalised unique texts, and what they were read from."""

    name: str
    texts: tuple[str, ...]
    files: tuple[SourceFile, ...] = ()
    card: str | None = None
    normalise: Normalisation = field(default_factory=Normalisation)
    select: Selection | None = None
    generated: Mapping[str, Any] | None = None

    def record(self) -> dict:
        """What `run.json` keeps of this source: texts used, the card, and every file with its sha256; the part
        selected (``select``) and, for machine-written text, what wrote it (``generated``)."""
        record = {
            "texts": len(self.texts),
            "raw_texts": sum(f.raw_texts for f in self.files),
            "card": self.card,
            "files": [{k: v for k, v in asdict(f).items() if v is not None} for f in self.files],
        }
        if self.select is not None:
            record["select"] = asdict(self.select)
        if self.generated is not None:
            record["generated"] = dict(self.generated)
        return record


class GeneratedTexts(NamedTuple):
    """What a generator hands the data layer: the texts, the file they are kept in, and what made them."""

    texts: tuple[str, ...]
    file: SourceFile
    record: dict


#: Writes a generated corpus: (its card, the human source it continues, the cache directory) -> its texts. Made
#: above the data layer (`textmetric_bench.collections.generated.corpus_generator`) and handed to the loaders.
Generate = Callable[[CorpusCard, Source, Path], GeneratedTexts]


def raw_texts(
    card: CorpusCard, *, cache_dir: str | Path | None = None, mirror: str | Path | None = None
) -> tuple[list[str], tuple[SourceFile, ...]]:
    """Every raw text of ``card``'s files in file order, and the files they came from."""
    cache = fetch.resolve_cache_dir(cache_dir)
    mirror_dir = fetch.resolve_mirror(mirror) if card.origin == "download" else None
    raw: list[str] = []
    files = []
    for spec in card.files:
        if spec.glob is not None:
            files.append(_directory_texts(card, spec, raw))
            continue
        data = fetch.verified_bytes(card, spec, cache, mirror_dir)
        location = fetch.file_location(card, spec, cache)
        texts = parse_file(card, spec, data, location)
        raw.extend(texts)
        files.append(SourceFile(str(location), spec.sha256 or fetch.sha256_hex(data), len(texts), spec.url))
    return raw, tuple(files)


def _directory_texts(card: CorpusCard, spec: CardFile, raw: list[str]) -> SourceFile:
    """Parse every file of a directory entry into ``raw`` (in sorted order), once all of them are verified."""
    directory, members = file_sets.verified_directory(card, spec)
    before = len(raw)
    for name, data in members:
        raw.extend(parse_file(card, spec, data, directory / name))
    return SourceFile(
        str(directory), spec.sha256 or file_sets.manifest_sha256(members), len(raw) - before, file_count=len(members)
    )


def read_source(
    card: CorpusCard,
    *,
    cache_dir: str | Path | None = None,
    mirror: str | Path | None = None,
    cards: Sequence[Path] | None = None,
    generate: Generate | None = None,
) -> Source:
    """The normalised unique texts of ``card``, in file order with first occurrences kept; a generated card's
    texts come from ``generate``, its human corpus looked up in ``cards``."""
    if card.generated is not None:
        return generated_source(card, cache_dir=cache_dir, mirror=mirror, cards=cards, generate=generate)
    raw, files = raw_texts(card, cache_dir=cache_dir, mirror=mirror)
    texts = normalise_texts(raw, card.normalise)
    section = "the normalise section of its card" if card.path is not None else "the file"
    if not texts:
        raise DataError(
            f"corpus {card.name!r} has no text left after normalisation ({len(raw)} raw texts); check {section}."
        )
    if len(texts) == 1:
        option = TEXT_OPTION.get(card.parser.format)
        check = f", and that {card.setting(option)} names the field or column of the texts" if option else ""
        raise DataError(
            f"corpus {card.name!r}: its {len(raw)} raw texts are all duplicates of one text "
            f"({texts[0][:60]!r}) after normalisation; a corpus needs distinct texts. Check its "
            f"files{check}."
        )
    log.info("corpus %s: %d texts (%d raw)", card.name, len(texts), len(raw))
    return Source(card.name, tuple(texts), files, str(card.path) if card.path else None, card.normalise)


def load_source(
    name: str,
    *,
    cache_dir: str | Path | None = None,
    mirror: str | Path | None = None,
    cards: Sequence[Path] | None = None,
    generate: Generate | None = None,
) -> Source:
    """Corpus `name`, its card looked up in ``cards`` (default: `textmetric_bench.data.cards.card_dirs()`)."""
    return read_source(corpus_card(name, cards), cache_dir=cache_dir, mirror=mirror, cards=cards, generate=generate)


def human_card_of(card: CorpusCard, cards: Sequence[Path] | None = None) -> CorpusCard:
    """The card of the human corpus a generated ``card`` continues; ConfigError if it is unknown or generated."""
    assert card.generated is not None
    try:
        human = corpus_card(card.generated.source, cards)
    except ConfigError as err:
        raise ConfigError(f"card {card.path}: origin.source: {err}") from None
    if human.generated is not None:
        raise ConfigError(
            f"card {card.path}: origin.source {human.name!r} is itself generated by a language "
            f"model; name the card of a human corpus (its origin.source: {human.generated.source!r})"
        )
    return human


def generated_source(
    card: CorpusCard,
    *,
    cache_dir: str | Path | None = None,
    mirror: str | Path | None = None,
    cards: Sequence[Path] | None = None,
    generate: Generate | None = None,
) -> Source:
    """The texts a language model wrote from the human corpus of ``card`` (docs/data.md, "Machine-written text")."""
    human_card = human_card_of(card, cards)
    if generate is None:
        raise ConfigError(
            f"corpus {card.name!r} is written by a language model (origin kind 'generated') and no "
            f"generator was given: load it in a run (or textmetric_bench.evaluate), or pass "
            f"generate=textmetric_bench.collections.generated.corpus_generator(lm_config)"
        )
    human = read_source(human_card, cache_dir=cache_dir, mirror=mirror)
    made = generate(card, human, fetch.resolve_cache_dir(cache_dir))
    return Source(
        card.name,
        made.texts,
        (made.file,),
        str(card.path) if card.path else None,
        human.normalise,
        generated=made.record,
    )


def select_part(source: Source, selection: Selection | None, what: str) -> Source:
    """The texts of ``source`` in part ``selection`` (all of them for None); ``what`` names it in the error."""
    if selection is None:
        return source
    texts = tuple(t for t in source.texts if in_part(t, selection))
    if not texts:
        raise DataError(
            f"{what}: part {selection.part} of {selection.parts} of corpus {source.name!r} holds no "
            f"text ({len(source.texts)} texts in all); choose fewer parts"
        )
    log.info(
        "%s: part %d of %d of %s, %d of %d texts",
        what,
        selection.part,
        selection.parts,
        source.name,
        len(texts),
        len(source.texts),
    )
    return replace(source, texts=texts, select=selection)


def load_corpus(
    name: str,
    *,
    cache_dir: str | Path | None = None,
    mirror: str | Path | None = None,
    cards: Sequence[Path] | None = None,
) -> list[str]:
    """The normalised unique texts of corpus `name`, in file order with first occurrences kept."""
    return list(load_source(name, cache_dir=cache_dir, mirror=mirror, cards=cards).texts)


def load_pair(
    name: str,
    *,
    cache_dir: str | Path | None = None,
    mirror: str | Path | None = None,
    cards: Sequence[Path] | None = None,
    generate: Generate | None = None,
) -> tuple[Source, Source]:
    """Both corpora of pair `name` (each the part its side selects), with texts found in both removed from both so
    KSC corpora stay disjoint; ``generate`` writes a side whose card is generated."""
    card = pair_card(name, cards)
    a, b = (
        select_part(
            load_source(corpus, cache_dir=cache_dir, mirror=mirror, cards=cards, generate=generate),
            selection,
            f"pair {card.name!r} side {side}",
        )
        for side, corpus, selection in (("a", card.a, card.a_select), ("b", card.b, card.b_select))
    )
    return disjoint_pair(a, b, f"pair {card.name!r}")


def disjoint_pair(a: Source, b: Source, what: str) -> tuple[Source, Source]:
    """``a`` and ``b`` without the texts found in both; ``what`` names the pair in messages."""
    shared = set(a.texts) & set(b.texts)
    say = log.info if shared else log.debug  # none removed is nothing to say on the console
    say("%s: removed %d texts found in both %s and %s", what, len(shared), a.name, b.name)
    kept = [replace(s, texts=tuple(t for t in s.texts if t not in shared)) for s in (a, b)]
    for source in kept:
        if not source.texts:
            raise DataError(
                f"{what}: corpus {source.name!r} is empty once the texts it shares with the other side are removed."
            )
    return kept[0], kept[1]


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
