"""LM scoring on every core (textmetric_bench.features.lm.workers): worker processes give the serial scores, the
worker count is honoured, a killed worker is an error and not a hang, two jobs share one score cache."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from textmetric_bench.api.context import RunContext, use_context
from textmetric_bench.console import set_progress
from textmetric_bench.errors import ConfigError
from textmetric_bench.features.lm import scores as lm_scores
from textmetric_bench.features.lm.scores import LMScorer
from textmetric_bench.features.lm.workers import LMWorkerError, resolve_workers
from textmetric_bench.metrics.ctrleval import infill_logprobs

INFILL = {"spans": 3, "max_masks": 4, "max_words": 128}


@pytest.fixture
def scores_dir(tmp_path, smollm2, cache_dir) -> Path:
    """An empty LM score cache beside the session's converted model (linked, so it is not converted again)."""
    (tmp_path / "lm").symlink_to(cache_dir / "lm", target_is_directory=True)
    return tmp_path


def scorer_with(scores_dir: Path, smollm2_cfg: dict, workers: int, **lm) -> LMScorer:
    return LMScorer(
        RunContext(str(scores_dir), {**smollm2_cfg, "device": "cpu", "workers": workers, "progress": False, **lm})
    )


def pebble_workers() -> list:
    return [p for p in mp.active_children() if p.name.startswith("pebble_pool_worker")]


def test_the_worker_count_is_read_from_lm_workers():
    assert resolve_workers({"workers": 3}) == 3
    assert resolve_workers({"workers": "auto", "device": "cpu"}) == len(os.sched_getaffinity(0))
    # an LM config of one's own without the option: the shipped default, auto (LMSettings)
    assert resolve_workers({"device": "cpu"}) == len(os.sched_getaffinity(0))
    for wrong in (0, -2, "two", 1.5, True):
        with pytest.raises(ConfigError, match=r"lm\.workers=.* is not valid: give a whole number >= 1 or 'auto'"):
            resolve_workers({"workers": wrong})


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_scores_from_two_workers_equal_serial_scores(scores_dir, smollm2_cfg, intent_texts):
    """Infilling and plain log-likelihood: equal to the last bit, as both score the same padded batches
    (textmetric_bench.features.lm.model.length_batches) with one torch thread; only which process runs a batch differs."""
    texts = intent_texts["a"][:10] + intent_texts["b"][:10]
    results, before = {}, set(pebble_workers())  # pools of earlier tests may still be winding down
    for workers in (1, 2):
        (scores_dir / f"w{workers}").mkdir()
        (scores_dir / f"w{workers}" / "lm").symlink_to(scores_dir / "lm", target_is_directory=True)
        lm = scorer_with(scores_dir / f"w{workers}", smollm2_cfg, workers, batch_size=4)
        try:
            with use_context(lm.context):
                lm_scores._scorers[lm_scores.scorer_key(lm.context)] = lm
                infill = infill_logprobs(texts, **INFILL)
                plain = lm.token_logprobs(texts)
                if workers == 2:
                    assert (
                        len(set(pebble_workers()) - before) == 2 and lm._model is None
                    )  # the model ran in the workers only
                results[workers] = (infill, plain, lm.scored)
        finally:
            lm.close()
            lm_scores._scorers.pop(lm_scores.scorer_key(lm.context), None)
    (infill_1, plain_1, n_1), (infill_2, plain_2, n_2) = results[1], results[2]
    assert n_1 == n_2 == 2 * len(set(texts))  # every text scored once per pass in both runs
    assert sum(len(v) for v in infill_1) > 2 * len(texts)  # most intents: three masked spans each
    for serial, parallel in zip(infill_1 + plain_1, infill_2 + plain_2):
        np.testing.assert_array_equal(serial, parallel)
    assert not set(pebble_workers()) - before  # close() stopped them


def test_a_killed_worker_is_reported_not_waited_for(scores_dir, smollm2_cfg, intent_texts):
    lm = scorer_with(scores_dir, smollm2_cfg, 2, batch_size=1)
    texts = intent_texts["a"][200:260]  # 60 one-text batches: workers are busy (loading, then scoring)
    before = set(pebble_workers())  # pools of earlier tests (their scorers live until exit): not ours to kill
    with ThreadPoolExecutor(1) as run:
        scoring = run.submit(lm.token_logprobs, texts)
        deadline = time.monotonic() + 120
        while not scoring.done() and time.monotonic() < deadline:
            time.sleep(1.0)  # a worker loads the model inside its first task, so it is busy from the start
            for worker in [w for w in pebble_workers() if w not in before][:1]:
                os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(LMWorkerError, match=r"worker process .*died.*lm.workers=1"):
            scoring.result(timeout=60)
    assert not set(pebble_workers()) - before  # the pool was stopped, nothing left holding a model


def _scoring_job(root: str, cfg: dict, texts: list[str], out: str, barrier) -> None:
    """One job of the shared-cache test: score ``texts`` (plain pass) into the cache at ``root``."""
    lm_scores.CHUNK = 3  # several shards, so the two jobs take turns at the lock
    lm = LMScorer(RunContext(root, cfg))
    barrier.wait(120)
    values = lm.token_logprobs(texts)
    Path(out).write_text(json.dumps({"scored": lm.scored, "values": [v.tolist() for v in values]}))


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_two_jobs_share_one_score_cache(scores_dir, smollm2_cfg, intent_texts):
    """Two processes scoring overlapping texts at once: each text scored once between them, identical
    scores, a consistent cache that a third run reads without scoring anything."""
    texts = intent_texts["b"][300:318]
    parts = (texts[:12], texts[6:])  # 6 texts in common
    cfg = {**smollm2_cfg, "device": "cpu", "workers": 1, "threads": 1, "progress": False}
    spawn = mp.get_context("spawn")
    barrier = spawn.Barrier(2)
    jobs = [
        spawn.Process(target=_scoring_job, args=(str(scores_dir), cfg, part, str(scores_dir / f"job{i}.json"), barrier))
        for i, part in enumerate(parts)
    ]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(300)
        assert job.exitcode == 0
    done = [json.loads((scores_dir / f"job{i}.json").read_text()) for i in range(2)]
    assert done[0]["scored"] + done[1]["scored"] == len(texts)  # none scored twice
    first = dict(zip(parts[0], done[0]["values"]))
    for text, values in zip(parts[1], done[1]["values"]):
        if text in first:
            assert values == first[text]
    third = scorer_with(scores_dir, smollm2_cfg, 2)
    again = third.token_logprobs(texts)
    assert third.scored == 0 and third._pool is None and third._model is None
    assert len(third.cache("token_logprobs|max_tokens=256")) == len(texts)
    for text, values in zip(texts, again):
        expected = first.get(text) or dict(zip(parts[1], done[1]["values"]))[text]
        np.testing.assert_array_equal(values, expected)


def test_the_progress_bar_counts_texts(scores_dir, smollm2_cfg, intent_texts, capsys):
    lm = scorer_with(scores_dir, smollm2_cfg, 1, progress=True)
    set_progress(True)  # what `progress=true` does in a run: bars even though capsys's stderr is no terminal
    try:
        lm.token_logprobs(intent_texts["a"][400:405])
    finally:
        set_progress("auto")
    err = capsys.readouterr().err
    assert "LM scores token_logprobs" in err and "5/5" in err and "text/s" in err
    lm.token_logprobs(intent_texts["a"][400:405])  # all cached: no bar
    assert "LM scores" not in capsys.readouterr().err
