"""`textmetric-bench-card FILE...` (or `python -m textmetric_bench.data.make_card`): write a corpus card for files on disk.

The card records the file's path and sha256, the parser its extension implies, the counts (raw texts, texts
after normalisation, duplicates and empty texts dropped) and a guess at the language (`textmetric_bench.data.language`);
the licence is left for the author to fill in. With `--out DIR` the cards go to DIR/corpora/<name>.yaml (and,
given `--pair NAME` and two files, a pair card to DIR/pairs/NAME.yaml); `data.cards=[DIR]` then finds them.
`--field` is given once for every file or once per file; the cards are written all or none.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

from textmetric_bench.data.card_schema import LICENCE_PLACEHOLDER, CorpusCard, Normalisation
from textmetric_bench.data.cards import read_corpus_card, read_pair_card
from textmetric_bench.data.corpora import normalise_texts, raw_texts
from textmetric_bench.data.language import guess_language
from textmetric_bench.data.local_files import file_card
from textmetric_bench.console import command
from textmetric_bench.errors import BenchError, ConfigError
from textmetric_bench.files import temporary_name

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def card_name(path: Path) -> str:
    """A card name from a file name: its stem, with every run of other characters than letters, digits, `_`,
    `-` and `.` made one `_`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem).strip("_.-") or "corpus"


def card_text(
    path: Path, *, name: str, field: str | None, card_dir: Path | None, field_setting: str = "--field"
) -> tuple[str, int]:
    """The YAML of a local card for ``path`` (its path relative to ``card_dir`` when given, else absolute),
    and the number of texts it yields."""
    card = file_card(path, name=name, field=field, field_setting=field_setting, what="FILE")
    raw, files = raw_texts(card)
    undeduplicated = normalise_texts(raw, Normalisation(deduplicate=False))
    texts = list(dict.fromkeys(undeduplicated))
    language, why = guess_language(texts)
    location = Path(os.path.relpath(path, card_dir)) if card_dir is not None else path
    lines = [
        f"# Written by textmetric-bench-card from {path}. Check the description and fill in the licence.",
        f"name: {json.dumps(name)}",
        f"description: {json.dumps(f'Texts of {path.name}, one corpus of textmetric-bench.')}",
        f"licence: {json.dumps(LICENCE_PLACEHOLDER)}",
        'homepage: ""',
        f"language: {language}   # a guess: {why}; correct it if it is wrong",
        "counts:                # when this card was written",
        f"  raw_texts: {len(raw)}",
        f"  texts: {len(texts)}            # after normalisation and de-duplication",
        f"  duplicates: {len(undeduplicated) - len(texts)}       # dropped: same text after normalisation",
        f"  empty: {len(raw) - len(undeduplicated)}            # dropped: empty after normalisation",
        "origin:",
        "  kind: local          # read in place; the path is relative to this card's directory unless absolute",
        "files:",
        f"  - path: {json.dumps(str(location))}",
        f"    sha256: {files[0].sha256}",
        "parser:",
        *(f"  {key}: {json.dumps(value)}" for key, value in _parser_section(card).items()),
        "normalise:",
        *(f"  {f.name}: {json.dumps(f.default)}" for f in fields(Normalisation) if f.default is not None),
        "  # min_words: 3       # drop texts of fewer words; max_words likewise",
    ]
    return "\n".join(lines) + "\n", len(texts)


def _parser_section(card: CorpusCard) -> dict:
    return {"format": card.parser.format, **card.parser.options}


def write_cards(
    files: list[Path],
    *,
    name: str | None,
    field: str | list[str] | None,
    out: Path | None,
    pair: str | None,
    force: bool,
) -> list[str]:
    """Write (or, without ``out``, return for printing) the cards; returns what to print.

    ``field``: one field for every file, or a list of one per file (a pair of files that name their texts
    differently). All or nothing: every card is made and checked before any is written, and then each is moved
    into place from a temporary file, so a failing file leaves no half-written card set."""
    if name is not None and len(files) != 1:
        raise ConfigError("--name names one card; give one FILE, or leave --name out (cards are named after files)")
    if pair is not None and (len(files) != 2 or out is None):
        raise ConfigError("--pair writes a pair card of two corpora into a cards directory: give two FILEs, --out DIR")
    fields_ = per_file_fields(files, field)
    names = [name or card_name(f) for f in files]
    for given in names + ([pair] if pair else []):
        if not _NAME.fullmatch(given):
            raise ConfigError(
                f"card name {given!r} is not valid: use letters, digits, '_', '-' and '.', "
                f"starting with a letter or digit"
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"two files give the card name {names[0]!r}; name one with --name (one FILE at a time)")
    setting = "--field" if len(files) == 1 else "--field (once per FILE, in their order, if the files differ)"
    cards = []  # (target or None, text, count): every file read and its card made before anything is written
    for path, card, text_field in zip(files, names, fields_):
        target = out / "corpora" / f"{card}.yaml" if out is not None else None
        cards.append(
            (
                target,
                *card_text(
                    path, name=card, field=text_field, card_dir=target.parent if target else None, field_setting=setting
                ),
            )
        )
    if out is None:
        return [text for _, text, _ in cards]
    writes = [(target, text) for target, text, _ in cards]
    if pair is not None:
        writes.append(
            (
                out / "pairs" / f"{pair}.yaml",
                f"name: {pair}\ndescription: {json.dumps(f'{names[0]} vs {names[1]}')}\na: {names[0]}\nb: {names[1]}\n",
            )
        )
    _write_all(writes, force)
    output = [f"wrote {target}: {count} texts" for target, _, count in cards]
    run = command("textmetric-bench")
    if pair is not None:
        read_pair_card(out / "pairs" / f"{pair}.yaml", (out.absolute(),))
        output.append(f"wrote {out / 'pairs' / f'{pair}.yaml'}\nrun it: {run} data.cards=[{out}] pair.name={pair}")
    else:
        output.append(
            f"use them: {run} data.cards=[{out}] with a pair card in {out / 'pairs'}, or ifc.source={names[0]}"
        )
    return output


def per_file_fields(files: list[Path], field: str | list[str] | None) -> list[str | None]:
    """The text field of each file: one given for all, or one per file in the files' order."""
    if field is None or isinstance(field, str):
        return [field] * len(files)
    if len(field) == 1:
        return list(field) * len(files)
    if len(field) != len(files):
        example = " ".join(f"--field {f}" for f in ("text", "body", "content")[: len(files)] or ["text"])
        raise ConfigError(
            f"--field is given {len(field)} times for {len(files)} FILEs: give it once (every file) or "
            f"once per FILE in their order, e.g. {' '.join(p.name for p in files)} {example}"
        )
    return list(field)


def _write_all(writes: list[tuple[Path, str]], force: bool) -> None:
    """Write every (target, text) under ``out``, or none: existing targets are refused first (unless ``force``),
    every card is written into a hidden staging directory beside ``corpora/`` and ``pairs/`` (same names, so the
    card reader checks each corpus card there), and only then are they all renamed into place."""
    existing = [str(target) for target, _ in writes if target.exists()]
    if existing and not force:
        one = len(existing) == 1
        raise ConfigError(
            f"{', '.join(existing)} exist{'s' if one else ''}; remove {'it' if one else 'them'}, or pass "
            f"--force to replace {'it' if one else 'them'} (nothing was written)"
        )
    out = writes[0][0].parent.parent
    out.mkdir(parents=True, exist_ok=True)
    staging = temporary_name(out / "cards")
    try:
        for target, text in writes:
            staged = staging / target.parent.name / target.name
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_text(text, encoding="utf-8")
            if target.parent.name == "corpora":
                with _quiet(read_corpus_card.__module__):  # its licence warning is given below, for the real path
                    read_corpus_card(staged)  # what is written reads back with the normal card reader
        for target, _ in writes:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / target.parent.name / target.name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for target, _ in writes:
        if target.parent.name == "corpora":
            read_corpus_card(target)  # warns, naming the card, that its licence is to be filled in


@contextmanager
def _quiet(logger: str):
    """The logger ``logger`` says nothing below an error while the block runs."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=command("textmetric-bench-card"), description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help=".jsonl, .csv, .tsv, .txt (one text a line) or .parquet"
    )
    parser.add_argument("--name", help="the card's name (default: the file's name without extension)")
    parser.add_argument(
        "--field",
        action="append",
        help="the JSON field or CSV/TSV/Parquet column of the texts (default: text); once for every "
        "FILE, or once per FILE in their order (a.jsonl b.csv --field text --field body)",
    )
    parser.add_argument("--out", type=Path, help="a cards directory: writes OUT/corpora/NAME.yaml (default: print)")
    parser.add_argument("--pair", help="with two FILEs and --out: also write the pair card OUT/pairs/PAIR.yaml")
    parser.add_argument("--force", action="store_true", help="replace cards that exist")
    args = parser.parse_args(argv)
    try:
        output = write_cards(
            [f.expanduser().absolute() for f in args.files],
            name=args.name,
            field=args.field,
            out=args.out,
            pair=args.pair,
            force=args.force,
        )
    except BenchError as exc:
        raise SystemExit(f"error: {exc}") from None
    print("---\n".join(output) if args.out is None else "\n".join(output))


if __name__ == "__main__":
    main()
