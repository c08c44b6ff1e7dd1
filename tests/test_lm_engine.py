"""lm.engine=ctranslate2, the default (textmetric_bench.features.lm.ct2): the same per-token log-probabilities as torch
within the stated tolerance on real texts (plain, with EOS, truncated, continuations), in worker processes too; its
scores are cached apart from torch's; no shipped number depends on the engine; a missing package, a GPU it cannot
use or a wrong engine is a clear error."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import sys

import numpy as np
import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.api.context import RunContext, use_context
from textmetric_bench.errors import ConfigError
from textmetric_bench.features.lm import scores as lm_scores
from textmetric_bench.features.lm.model import continuation_sequences, sequence_logprobs, token_logprobs
from textmetric_bench.features.lm import ct2 as lm_ct2
from textmetric_bench.features.lm.ct2 import (
    SUM_TOLERANCE,
    TOKEN_TOLERANCE,
    engine_id,
    lm_engine,
    load_ctranslate2_lm,
    load_scoring_lm,
    scoring_device,
)
from textmetric_bench.features.lm.scores import LMScorer


@pytest.fixture(scope="module")
def ct2(smollm2, smollm2_cfg, cache_dir):
    """SmolLM2 converted for CTranslate2 beside the session's torch checkpoint, one thread (model, tokenizer)."""
    return load_ctranslate2_lm({**smollm2_cfg, "device": "cpu", "threads": 1, "engine": "ctranslate2"}, cache_dir)


@pytest.fixture(scope="module")
def texts(intent_texts):
    """24 real texts of both corpora, of 3 to 40 tokens."""
    rng = np.random.default_rng(3)
    return [t for side in ("a", "b") for t in rng.choice(intent_texts[side], 12, replace=False).tolist()]


def assert_matches_torch(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """The stated tolerance: per token absolute, per sequence relative on the sum; returns the largest token gap."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float64 and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=TOKEN_TOLERANCE)
        assert abs(g.sum() - w.sum()) <= SUM_TOLERANCE * abs(w.sum()), (g.sum(), w.sum())
    return max(float(np.max(np.abs(g - w), initial=0)) for g, w in zip(got, want))


@pytest.mark.parametrize("add_eos", [False, True], ids=["plain", "with-eos"])
def test_token_logprobs_match_torch(smollm2, ct2, texts, add_eos):
    want = token_logprobs(*smollm2, texts, batch_size=8, add_eos=add_eos)
    got = token_logprobs(*ct2, texts, batch_size=8, add_eos=add_eos)
    assert sum(len(w) for w in want) > 200  # real work: a few hundred tokens
    gap = assert_matches_torch(got, want)
    assert gap > 0  # another engine: not bit for bit (else the separate cache key would be needless)


def test_a_text_scores_the_same_alone_or_in_any_batch(ct2, texts):
    """With the pinned kernels, CTranslate2's scores of a text do not depend on the batch it is scored in: bit for
    bit where MKL pins its AVX2 branch (Intel CPUs); elsewhere (our AMD EPYC: 4e-6 relative seen) to float32
    rounding. Batches depend only on the texts and ``lm.batch_size`` (not on the workers), so a run's scores are
    reproducible either way."""
    from textmetric_bench.numerics import mkl_branch_pinned

    alone = token_logprobs(*ct2, texts[:10], batch_size=1)
    for batched in (
        token_logprobs(*ct2, texts[:10], batch_size=10),
        token_logprobs(*ct2, texts[:10][::-1], batch_size=4)[::-1],
    ):
        for a, b in zip(alone, batched):
            if mkl_branch_pinned():
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_truncated_texts_match_torch(smollm2, ct2, texts):
    want = token_logprobs(*smollm2, texts, batch_size=8, max_tokens=5)
    got = token_logprobs(*ct2, texts, batch_size=8, max_tokens=5)
    assert {len(w) for w in want} <= {1, 2, 3, 4, 5} and max(len(w) for w in want) == 5
    assert_matches_torch(got, want)


def test_continuations_match_torch(smollm2, ct2, texts):
    """CTRLEval's scoring: only the continuation's tokens, after a prompt of varying length; and an empty text."""
    prompts = [f"Text: {t}\nRewrite:" for t in texts[:12]] + [""]
    continuations = [" " + t for t in texts[12:]] + [""]
    seqs, starts = continuation_sequences(smollm2[1], prompts, continuations)
    want = sequence_logprobs(*smollm2, seqs, starts, batch_size=5)
    got = sequence_logprobs(*ct2, seqs, starts, batch_size=5)
    assert [len(w) for w in want] == [len(s) - st for s, st in zip(seqs, starts)] and len(want[-1]) == 0
    assert_matches_torch(got, want)


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_scores_from_ctranslate2_workers_equal_its_serial_scores_and_torch(
    tmp_path, smollm2, smollm2_cfg, cache_dir, ct2, texts
):
    """Two worker processes load the engine themselves; their scores are those of this process, bit for bit."""
    (tmp_path / "lm").symlink_to(cache_dir / "lm", target_is_directory=True)
    lm = LMScorer(
        RunContext(
            str(tmp_path),
            {**smollm2_cfg, "device": "cpu", "workers": 2, "progress": False, "engine": "ctranslate2", "batch_size": 4},
        )
    )
    try:
        with use_context(lm.context):
            lm_scores._scorers[lm_scores.scorer_key(lm.context)] = lm
            parallel = lm.token_logprobs(texts[:16], max_tokens=256)
            assert lm._model is None and lm.scored == 16  # scored in the workers
    finally:
        lm.close()
        lm_scores._scorers.pop(lm_scores.scorer_key(lm.context), None)
    serial = token_logprobs(*ct2, texts[:16], batch_size=4)
    for s, p in zip(serial, parallel):
        np.testing.assert_array_equal(s, p)
    assert_matches_torch(parallel, token_logprobs(*smollm2, texts[:16], batch_size=4))


def test_the_engines_have_their_own_cache_keys_and_scorers(tmp_path, smollm2_cfg):
    import ctranslate2

    contexts = {
        engine: RunContext(str(tmp_path), {**smollm2_cfg, "device": "cpu", "engine": engine})
        for engine in ("torch", "ctranslate2")
    }
    ids = {engine: LMScorer(c)._scores_id() for engine, c in contexts.items()}
    assert ids["torch"] != ids["ctranslate2"]
    assert ids["ctranslate2"].endswith(f"|ctranslate2=={ctranslate2.__version__}")
    assert "ctranslate2" not in ids["torch"]  # torch's key is the one caches were written under before
    assert LMScorer(contexts["torch"]).cache("k").dir != LMScorer(contexts["ctranslate2"]).cache("k").dir
    assert lm_scores.scorer_key(contexts["torch"]) != lm_scores.scorer_key(contexts["ctranslate2"])


def test_the_default_engine_is_ctranslate2_where_installed_and_a_wrong_one_is_named(smollm2_cfg):
    """The measured faster engine is the default where its extra is installed (make venv installs it), in the
    config and for a config that does not say; ``auto`` never reaches the cache key."""
    import ctranslate2

    from textmetric_bench.running.registry import compose_config

    assert smollm2_cfg["engine"] == "auto" == compose_config([]).lm.engine
    assert lm_engine({}) == lm_engine(smollm2_cfg) == "ctranslate2"
    assert engine_id({}) == f"ctranslate2=={ctranslate2.__version__}"
    with pytest.raises(ConfigError, match=r"lm\.engine='onnx' is not valid: give auto, torch or ctranslate2"):
        lm_engine({"engine": "onnx"})


def test_without_the_package_the_error_says_what_to_install(monkeypatch, smollm2_cfg, tmp_path):
    """A fake uninstall: the distribution's metadata and the module both hidden."""
    real_version = importlib.metadata.version

    def fake_version_without_ctranslate2(name):
        if name == "ctranslate2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", fake_version_without_ctranslate2)
    monkeypatch.setitem(sys.modules, "ctranslate2", None)
    cfg = {**smollm2_cfg, "device": "cpu", "engine": "ctranslate2"}
    for attempt in (
        lambda: load_scoring_lm(cfg, tmp_path),
        lambda: LMScorer(RunContext(str(tmp_path), cfg)).cache("k"),
    ):
        with pytest.raises(ConfigError, match=r"needs the ctranslate2 package.*pip install 'textmetric-bench\[ct2\]'"):
            attempt()
    # without the extra, the default falls back to torch, and the scores' cache key says so
    assert lm_engine({**smollm2_cfg, "engine": "auto"}) == lm_engine({}) == "torch" == engine_id({})


def test_cuda_without_a_ctranslate2_gpu_is_refused(monkeypatch, smollm2_cfg, tmp_path):
    import ctranslate2

    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 0)  # a fake: no GPU visible to it
    with pytest.raises(ConfigError, match="lm.device=cuda, but this CTranslate2 sees no CUDA device"):
        load_ctranslate2_lm({**smollm2_cfg, "device": "cuda", "engine": "ctranslate2"}, tmp_path)


def test_auto_scores_on_the_cpu_when_ctranslate2_sees_no_gpu(monkeypatch, smollm2_cfg, caplog):
    """A fake GPU machine (torch would use cuda) whose CTranslate2 sees none: the default device falls back to the CPU
    and says so, and the scores' cache key names the CPU; torch keeps the GPU."""
    import ctranslate2

    monkeypatch.setattr(lm_ct2, "resolve_device", lambda device: "cuda" if device == "auto" else device)
    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 0)
    with caplog.at_level(logging.WARNING, logger=lm_ct2.__name__):
        assert scoring_device({**smollm2_cfg, "device": "auto"}) == "cpu"
    assert "CTranslate2 does not" in caplog.text and "lm.engine=torch" in caplog.text
    assert scoring_device({**smollm2_cfg, "device": "auto", "engine": "torch"}) == "cuda"
    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 1)
    assert scoring_device({**smollm2_cfg, "device": "auto"}) == "cuda"
    with pytest.raises(ConfigError, match="runs on cpu or cuda, not 'mps'"):
        scoring_device({**smollm2_cfg, "device": "mps"})


def test_no_shipped_number_depends_on_the_engine():
    """The docs say the switch of engine moved no shipped number: the baselines and reference rows hold no metric
    that needs the language model."""
    from textmetric_bench.api.registry import available_metrics, get_metric, load_builtin_metrics

    load_builtin_metrics()
    lm_metrics = {m for m in available_metrics() if "lm" in get_metric(m).needs}
    assert {"face_so", "ctrleval_coherence"} <= lm_metrics
    shipped = [
        *(PROJECT_ROOT / "reports" / "baselines").glob("*.json"),
        *(PROJECT_ROOT / "reports" / "reference").glob("*.json"),
    ]
    assert len(shipped) >= 2
    for path in shipped:
        record = json.loads(path.read_text(encoding="utf-8"))
        held = set(record.get("measures") or {}) | set(record.get("metrics") or {})
        assert held and not held & lm_metrics, path
    assert "No shipped number depends on the choice" in (PROJECT_ROOT / "docs" / "performance.md").read_text()


def test_the_docs_state_the_tolerance():
    page = (PROJECT_ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert f"{TOKEN_TOLERANCE:.0e}".replace("e-0", "e-") in page and f"{SUM_TOLERANCE:.0e}".replace("e-0", "e-") in page
    assert "lm.engine=auto" in page and "the default" in page and "textmetric-bench[ct2]" in page
