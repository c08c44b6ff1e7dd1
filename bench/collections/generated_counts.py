"""`python -m textmetric_bench.collections.generated_counts CARD... [--write]`: the `counts:` block of generated corpus
cards (texts, median and p90 words a text) and a line on what writing them cost (seconds, tokens a second, the CPU),
computed from the texts the language model writes (or has cached), so a card's numbers are generated, never typed.
The language model is the default `lm` config (conf/lm/smollm2.yaml) with the card's `lm` keys over it."""

from __future__ import annotations

import argparse
import platform
import re
from pathlib import Path

import yaml

from textmetric_bench import shipped_path
from textmetric_bench.collections.generated import corpus_generator
from textmetric_bench.data.card_counts import counts_block, write_counts
from textmetric_bench.data.card_schema import CorpusCard
from textmetric_bench.data.file_sets import COUNTS_COMMAND
from textmetric_bench.data.cards import corpus_card, read_corpus_card
from textmetric_bench.data.corpora import read_source
from textmetric_bench.data.lengths import length_counts
from textmetric_bench.errors import BenchError

COMMAND = "python -m textmetric_bench.collections.generated_counts"
#: The comment line of a generated card that states what writing its texts cost when they were last written here.
COST_LINE = re.compile(r"^# cost: .*$\n?", re.MULTILINE)


def cpu_name() -> str:
    """The CPU's model name (lscpu's 'Model name'), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cost_line(statistics: dict) -> str:
    """``# cost: ...``: seconds, texts, tokens computed a second and threads of the generation recorded."""
    seconds = statistics["seconds"]
    rate = statistics["computed_tokens"] / seconds if seconds else float("nan")
    steps = len(statistics["fine_tuning"])
    tuned = f", {plural(steps, 'fine-tuning step')} included" if steps else ""
    return (
        f"# cost: written in {seconds:.0f} s ({statistics['computed_tokens']:,} tokens through the model, "
        f"{rate:.0f} a second, {plural(statistics['threads'], 'thread')}{tuned}) on {cpu_name()}; "
        f"by {COMMAND} --write\n"
    )


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def cost_numbers(card_text: str) -> tuple[int, int]:
    """(seconds, tokens a second) of a generated card's cost line."""
    found = re.search(
        r"^# cost: written in (\d+) s \(([\d,]+) tokens through the model, (\d+) a second", card_text, re.MULTILINE
    )
    if found is None:
        raise ValueError(f"no cost line; write one with {COMMAND} --write")
    return int(found.group(1)), int(found.group(3))


def docs_row(card: CorpusCard) -> str:
    """The card's row of docs/data.md's table of shipped machine-written corpora, from its counts and cost line."""
    assert card.generated is not None and card.path is not None
    seconds, rate = cost_numbers(card.path.read_text(encoding="utf-8"))
    return (
        f"| `{card.name}` | `{card.generated.source}` | {card.counts['texts']:,} | {card.counts['words_median']} "
        f"| {seconds} | {rate} |"
    )


def write_cost(path: Path, line: str) -> None:
    """Replace the card's cost line (or append one); its counts block names this command as its writer."""
    text = COST_LINE.sub("", path.read_text(encoding="utf-8")).rstrip("\n")
    text = text.replace(f"written by {COUNTS_COMMAND} --write", f"written by {COMMAND} --write")
    path.write_text(text + "\n" + line, encoding="utf-8")
    read_corpus_card.cache_clear()
    read_corpus_card(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("cards", nargs="+", metavar="CARD", help="a generated corpus card's name or its .yaml file")
    parser.add_argument("--write", action="store_true", help="write the counts block and cost line into each card")
    parser.add_argument("--mirror", help="the corpus mirror for human corpora whose files are downloaded")
    parser.add_argument("--cache-dir", help="where the texts are cached (default: $BENCH_CACHE_DIR or ~/.cache)")
    args = parser.parse_args(argv)
    lm = yaml.safe_load((shipped_path("conf") / "lm" / "smollm2.yaml").read_text(encoding="utf-8"))
    generate = corpus_generator({**lm, "progress": True}, progress=True)
    try:
        for given in args.cards:
            card = read_corpus_card(Path(given).absolute()) if given.endswith(".yaml") else corpus_card(given)
            if card.generated is None:
                raise SystemExit(
                    f"error: {card.name} is not a generated card; use python -m textmetric_bench.data.card_counts"
                )
            source = read_source(card, cache_dir=args.cache_dir, mirror=args.mirror, generate=generate)
            counts = length_counts(source.texts)
            assert source.generated is not None
            line = cost_line(source.generated["statistics"])
            block = counts_block(counts).replace(COUNTS_COMMAND, COMMAND)
            print(f"{card.name} ({card.path}):\n  " + block.replace("\n", "\n  ").rstrip() + "\n  " + line.rstrip())
            if args.write:
                assert card.path is not None
                write_counts(card.path, counts)
                write_cost(card.path, line)
                print("  docs/data.md: " + docs_row(read_corpus_card(card.path)))
    except BenchError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
