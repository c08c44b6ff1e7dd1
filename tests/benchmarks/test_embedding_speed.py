"""Embedding throughput: the embedder as the harness runs it (pinned kernels, exact products, batches of one token
length: reproducible on every machine) against the libraries' own kernels and padded batches (machine- and
batch-dependent), on the same texts, each in a fresh process with both cores and an empty cache. Printed, and kept
in outputs/benchmark/embedding_speed.json. tests/benchmarks/embedding_speed.py measures intents and paragraphs in
alternated rounds and quotes them per CPU in docs/reproducibility.md."""

from __future__ import annotations

import json

import pytest
from embedding_speed import harness, library

from textmetric_bench import PROJECT_ROOT

pytestmark = pytest.mark.benchmark


def test_embedding_throughput_of_the_reproducible_path(intent_texts):
    texts = intent_texts["a"][:1500] + intent_texts["b"][:1500]
    before = library(texts)
    after = harness(texts)
    record = {
        "texts": len(texts),
        "padded_native_texts_per_s": round(before, 1),
        "reproducible_texts_per_s": round(after, 1),
        "ratio": round(after / before, 3),
    }
    out = PROJECT_ROOT / "outputs" / "benchmark" / "embedding_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(record)
    assert after >= 0.5 * before, record  # the cost of reproducibility stays small
