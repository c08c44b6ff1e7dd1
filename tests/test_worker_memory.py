"""What an evaluation worker keeps in memory (a 2-worker robustness run once peaked at
11.8 GB when the memo kept distance matrices alive).

The per-corpus memo bounds what its values keep alive, not what they show; cached helpers
return arrays that own their memory; mauve-text is loaded without torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.api.registry import get_metric
from textmetric_bench.api.sharing import per_corpus, sharing


def test_memo_counts_the_matrix_that_a_view_keeps_alive():
    @per_corpus
    def first_column(x):
        return (x @ x.T)[:, 0]  # a view: its 8 * n values keep the n x n product alive

    rng = np.random.default_rng(0)
    matrix_bytes = 300 * 300 * 8
    records = 2**11  # each entry's cost record (textmetric_bench.api.sharing), counted too
    with sharing(max_bytes=2 * (matrix_bytes + records)) as memo:
        for _ in range(4):
            first_column(rng.normal(size=(300, 8)))
        assert len(memo.store) == 2 and 2 * matrix_bytes < memo.bytes <= 2 * (matrix_bytes + records)


@pytest.mark.parametrize("name", ["ngram_js", "pr", "fid"])
def test_memo_bytes_are_what_the_memo_holds(name, intent_texts, embedder):
    """The memo's count of its bytes matches tracemalloc's count of what stays allocated (up to
    the memo's keys and first-call allocations: 64 KiB)."""
    info = get_metric(name)
    size = 1500 if info.inputs == "texts" else 500  # embedding 3,000 texts took 13 s of the default suite
    texts = intent_texts["a"][:size], intent_texts["b"][:size]
    p, q = texts if info.inputs == "texts" else (embedder.embed(t).astype(np.float64) for t in texts)
    info(p, q, seed=0)  # first-call allocations (lazy imports, compiled patterns) before counting
    tracemalloc.start()
    try:
        with sharing() as memo:
            before = tracemalloc.get_traced_memory()[0]
            info(p, q, seed=0)
            held = tracemalloc.get_traced_memory()[0] - before
            counted = memo.bytes
    finally:
        tracemalloc.stop()
    assert held > 0 and abs(counted - held) <= 0.2 * held + 2**16, (counted, held)


def test_knn_radii_keep_only_their_own_values(real_samples):
    from sklearn.metrics.pairwise import euclidean_distances

    from textmetric_bench.metrics.prdc import kth_neighbour_radii

    x = np.asarray(real_samples.draws[0][1]["a1"], dtype=np.float64)
    radii = kth_neighbour_radii(x, k=5)
    assert radii.base is None and radii.nbytes == 8 * len(x)
    # scikit-learn's distances up to the last bits (ours read the squared norms off the Gram diagonal)
    np.testing.assert_allclose(radii, np.sort(euclidean_distances(x), axis=1)[:, 5], rtol=0, atol=1e-12)


def test_mauve_metrics_run_without_loading_torch(real_samples, tmp_path):
    """In a fresh process (an evaluation worker) MAUVE and the cluster divergences do not import
    torch, and give the values they give where torch is loaded (this process: the embedder)."""
    vectors = real_samples.draws[0][1]
    np.savez(tmp_path / "pair.npz", p=vectors["a1"], q=vectors["b1"])
    code = (
        "import json, sys, numpy as np\n"
        "from textmetric_bench.api.registry import get_metric\n"
        f"pair = np.load({str(tmp_path / 'pair.npz')!r})\n"
        "values = [get_metric(m)(pair['p'], pair['q'], seed=3) for m in ('mauve', 'cluster_js')]\n"
        "print(json.dumps({'values': values, 'torch': 'torch' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    fresh = json.loads(done.stdout.strip().splitlines()[-1])
    assert "torch" in sys.modules and fresh["torch"] is False
    here = [get_metric(m)(vectors["a1"], vectors["b1"], seed=3) for m in ("mauve", "cluster_js")]
    assert fresh["values"] == here
