"""`python -m textmetric_bench.data.card_counts CARD... [--write]`: the `counts:` block of corpus cards (texts,
median and p90 of words a text, after normalisation) and the manifest of each directory entry, computed from the
files, so the numbers in a card are generated, never typed. CARD is a card's name or its file."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from textmetric_bench.data import file_sets
from textmetric_bench.data.card_schema import CorpusCard
from textmetric_bench.data.cards import corpus_card, read_corpus_card
from textmetric_bench.data.corpora import read_source
from textmetric_bench.data.lengths import length_counts, length_regime
from textmetric_bench.errors import BenchError

#: The keys of a card's `counts:` block that this command writes and the tests recompute.
COUNT_KEYS = ("texts", "words_median", "words_p90")


def card_counts(card: CorpusCard, *, mirror: str | Path | None = None) -> dict[str, int]:
    """The counts of ``card``'s normalised texts (read, verified and parsed as a run does)."""
    return length_counts(read_source(card, mirror=mirror).texts)


def directory_manifests(card: CorpusCard) -> list[str]:
    """One line per directory entry of ``card``: its path, glob, file_count and manifest sha256 as found now."""
    lines = []
    for spec in card.files:
        if spec.glob is not None:
            directory = file_sets.directory_path(card, spec)
            found = [(name, path.read_bytes()) for name, path in file_sets.matching_files(directory, spec.glob)]
            lines.append(
                f"  path: {spec.path}  glob: {spec.glob!r}  file_count: {len(found)}  "
                f"sha256: {file_sets.manifest_sha256(found)}"
            )
    return lines


def counts_block(counts: dict[str, int]) -> str:
    """The YAML of a `counts:` block, with the regime its median puts the corpus in."""
    return (
        f"counts:                  # written by {file_sets.COUNTS_COMMAND} --write; regime: "
        f"{length_regime(counts['words_median'])}\n" + "".join(f"  {key}: {counts[key]}\n" for key in COUNT_KEYS)
    )


def write_counts(path: Path, counts: dict[str, int]) -> None:
    """Replace the `counts:` block of the card file ``path`` (its indented lines with it), or append one."""
    text = path.read_text(encoding="utf-8")
    block = re.compile(r"^counts:.*\n(?:(?:[ \t].*|[ \t]*)(?:\n|$))*", re.MULTILINE)
    if block.search(text):
        text = block.sub(lambda _: counts_block(counts), text, count=1)
    else:
        text = text.rstrip("\n") + "\n" + counts_block(counts)
    path.write_text(text, encoding="utf-8")
    read_corpus_card.cache_clear()
    read_corpus_card(path)  # what was written reads back as a valid card


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=file_sets.COUNTS_COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("cards", nargs="+", metavar="CARD", help="a corpus card's name or its .yaml file")
    parser.add_argument("--write", action="store_true", help="write the counts block into each card file")
    parser.add_argument("--mirror", help="the corpus mirror for cards whose files are downloaded")
    args = parser.parse_args(argv)
    try:
        for given in args.cards:
            card = read_corpus_card(Path(given).absolute()) if given.endswith(".yaml") else corpus_card(given)
            print(f"{card.name} ({card.path}):")
            for line in directory_manifests(card):
                print(line)
            counts = card_counts(card, mirror=args.mirror)
            print("  " + counts_block(counts).replace("\n", "\n  ").rstrip())
            if args.write:
                assert card.path is not None
                write_counts(card.path, counts)
    except BenchError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
