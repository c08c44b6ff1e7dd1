"""Each metric against its reference implementations on the same pair (one call, no sharing).

Inputs are real: corpora c_1 (pure clinc150) and c_7 (pure banking77) of the first KSC
collection (n = 100), and the size-curve pair s = 1450 of the robustness grid (s = 450 on the
quick grid), with their cached MiniLM embeddings, so embedding is excluded (as 004's T). Ours runs outside a
``sharing()`` scope, so it does the whole per-pair work; what sharing saves shows in the
experiments (test_experiments.py). Both sides run with one BLAS thread (tests/conftest.py).
Memory is tracemalloc's peak of one call: numpy and Python allocations, not libsvm's or faiss's.
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc

import pytest
from reference_impls import METRICS, compcor_functions, library_functions

pytestmark = pytest.mark.benchmark

_S = 450 if os.environ.get("BENCH_ROBUSTNESS_GRID") == "quick" else 1450  # the quick grid stops at s = 450
SIZES = {"n100": ("ksc", "r0c1", "r0c7", 5), f"n{_S}": ("robustness", f"size/{_S}/0/a", f"size/{_S}/0/b", 2)}
LIBRARIES = {metric: lib for metric, lib in library_functions()}
CASES = [
    (m, size, impl)
    for m in METRICS
    for size in SIZES
    for impl in ["ours", "compcor"] + ([LIBRARIES[m]] if m in LIBRARIES else [])
]


@pytest.fixture(scope="session")
def pair_inputs(prepared_inputs):
    """size -> (texts p, texts q, embeddings p, embeddings q)."""
    from timed_experiments import capture, experiment_configs

    out = {}
    for size, (experiment, cp, cq, _) in SIZES.items():
        run = capture(experiment_configs(experiment)[0])
        infos = {info.inputs: info for info, _ in run["metrics"].values()}
        store = run["store"]
        out[size] = tuple(store.inputs(infos[kind], c) for kind in ("texts", "embeddings") for c in (cp, cq))
    return out


def _function(metric: str, impl: str):
    if impl == "ours":
        from textmetric_bench.api.registry import get_metric

        return lambda p, q, seed: get_metric(metric)(p, q, seed=seed)
    if impl == "compcor":
        return compcor_functions()[metric]
    return library_functions()[(metric, impl)]


@pytest.mark.parametrize("metric,size,impl", CASES, ids=["-".join(c) for c in CASES])
def test_metric_speed(benchmark, pair_inputs, metric_records, metric, size, impl):
    from textmetric_bench.api.registry import get_metric

    text_p, text_q, emb_p, emb_q = pair_inputs[size]
    p, q = (text_p, text_q) if get_metric(metric).inputs == "texts" else (emb_p, emb_q)
    fn, rounds, durations = _function(metric, impl), SIZES[size][3], []

    def timed():
        start = time.perf_counter()
        value = fn(p, q, 0)
        durations.append(time.perf_counter() - start)
        return value

    benchmark.group = f"{metric}-{size}"
    value = benchmark.pedantic(timed, rounds=rounds, iterations=1, warmup_rounds=1)
    seconds, memory, keep = metric_records
    seconds[(metric, size, impl)] = statistics.median(durations[-rounds:])
    tracemalloc.start()
    fn(p, q, 0)
    memory[(metric, size, impl)] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    benchmark.extra_info.update(
        median_seconds=seconds[(metric, size, impl)], tracemalloc_peak_mb=memory[(metric, size, impl)]
    )
    keep(
        f"{metric}/{size}/{impl}",
        {"median_seconds": seconds[(metric, size, impl)], "tracemalloc_peak_mb": memory[(metric, size, impl)]},
    )
    assert value is not None
