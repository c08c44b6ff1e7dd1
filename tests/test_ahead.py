"""The command line's guess of a first run (textmetric_bench.running.ahead), which starts the embedding helper's
imports before the config is composed: only a plain run, with the pinned numerics, whose cache holds no vector."""

from __future__ import annotations

import pytest

from textmetric_bench.numerics import PINNED
from textmetric_bench.running.ahead import cache_root, likely_to_embed_everything, no_vector_cached


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MKL_CBWR", PINNED["MKL_CBWR"])
    return tmp_path / "cache"


def shard_in(root):
    model = root / "embeddings" / "some-model"
    model.mkdir(parents=True)
    (model / "0123.npz").write_bytes(b"")


def test_a_plain_run_on_an_empty_cache_is_guessed_to_embed_everything(empty_cache):
    assert likely_to_embed_everything([])
    assert likely_to_embed_everything(["pair=clinc150_atis", "k=5"])
    (empty_cache / "embeddings").mkdir(parents=True)  # a directory without shards holds no vector either
    assert likely_to_embed_everything([])
    shard_in(empty_cache)
    assert not likely_to_embed_everything([])


@pytest.mark.parametrize(
    "args",
    [["--help"], ["-m", "k=5,7"], ["--cfg", "job"], ["suite=paper"], ["hydra/launcher=joblib", "k=5"], ["+suite=x"]],
)
def test_no_guess_for_help_or_a_sweep(empty_cache, args):
    assert not likely_to_embed_everything(args)


def test_the_cache_is_the_command_line_s_else_the_environment_s(empty_cache, tmp_path, monkeypatch):
    other = tmp_path / "other"
    shard_in(other)
    assert cache_root([f"data.cache_dir={other}"]) == other and cache_root([]) == empty_cache
    assert not likely_to_embed_everything([f"data.cache_dir={other}"])
    monkeypatch.delenv("BENCH_CACHE_DIR")
    assert cache_root([]).name == "textmetric-bench"
    assert no_vector_cached(tmp_path / "nowhere")


def test_no_guess_where_the_embedding_computes_in_this_process(empty_cache, monkeypatch):
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")  # BENCH_CPU_NUMERICS=native, or a branch the user chose
    assert not likely_to_embed_everything([])
