"""The per-text LM score cache (textmetric_bench.features.lm.scores, textmetric_bench.features.shard_cache): ragged shards, chunked writes, resume."""

import numpy as np
import pytest

import textmetric_bench.features.lm.scores as lm_scores
from textmetric_bench.api.context import RunContext, default_lm
from textmetric_bench.features.shard_cache import RaggedCache, text_key


def test_ragged_cache_round_trip_and_a_corrupt_shard_is_set_aside(tmp_path):
    cache = RaggedCache(tmp_path / "scores")
    values = [np.array([1.0, -2.5]), np.array([]), np.array([3.0])]
    cache.put([text_key(t) for t in "abc"], values)
    again = RaggedCache(tmp_path / "scores").get([text_key(t) for t in "cab"])
    for t, v in zip("abc", values):
        np.testing.assert_array_equal(again[text_key(t)], v)
    (tmp_path / "scores" / "broken.npz").write_bytes(b"not a shard")
    assert len(RaggedCache(tmp_path / "scores")) == 3
    assert (tmp_path / "scores" / "broken.corrupt").exists()


def test_an_interrupted_pass_keeps_the_chunks_it_finished(tmp_path, monkeypatch):
    monkeypatch.setattr(lm_scores, "CHUNK", 2)
    scorer = lm_scores.LMScorer(RunContext(str(tmp_path), default_lm()))  # the model is never loaded here
    texts = ["aa", "b", "cccc", "ddd", "eeeee"]
    calls = []

    def fake_compute_that_dies(batch):
        calls.append(list(batch))
        if len(calls) == 2:
            raise KeyboardInterrupt  # e.g. the job is cancelled mid-way
        return [np.array([float(len(t))]) for t in batch]

    with pytest.raises(KeyboardInterrupt):
        scorer.cached("length", texts, fake_compute_that_dies)
    assert calls[0] == ["b", "aa"]  # shortest first, so batches pad little
    calls.clear()
    out = scorer.cached(
        "length", texts, lambda batch: calls.append(list(batch)) or [np.array([float(len(t))]) for t in batch]
    )
    assert sorted(t for c in calls for t in c) == ["cccc", "ddd", "eeeee"]  # the first chunk was kept
    assert [float(v[0]) for v in out] == [2.0, 1.0, 4.0, 3.0, 5.0]
