"""The cluster divergences (metrics/cluster_divergences.py) on the real embedded fortune samples."""

import time

import numpy as np
import pytest

from textmetric_bench.api.inputs import canonical_pair
from textmetric_bench.api.registry import get_metric
from textmetric_bench.api.sharing import sharing
from textmetric_bench.errors import MetricError
from textmetric_bench.metrics.cluster_divergences import cluster_counts
from textmetric_bench.metrics.divergences import DIVERGENCES, histogram_frontier, laplace_histogram
from textmetric_bench.metrics.mauve import mauve

NAMES = ["cluster_kl_forward", "cluster_kl_backward", "cluster_exp_kl", "cluster_js", "cluster_auc"]
CLUSTERING = dict(num_buckets=10, kmeans_explained_var=0.9, kmeans_num_redo=5, kmeans_max_iter=500)


@pytest.fixture(scope="module")
def vec(real_samples):
    return {name: np.asarray(v, dtype=np.float64) for name, v in real_samples.draws[0][1].items()}


def test_the_five_divergences_share_one_clustering_per_pair(vec):
    with sharing() as memo:
        start = time.perf_counter()
        for name in NAMES:
            get_metric(name)(vec["a1"], vec["b1"], seed=4)
        get_metric("cluster_js")(vec["b1"], vec["a1"], seed=4)  # the swapped pair: same canonical key
        seconds = time.perf_counter() - start
    assert [key[1] for key in memo.store] == [cluster_counts.__qualname__]
    assert (memo.misses, memo.hits) == (1, 5)
    print(f"five cluster divergences of one 100-text pair: {seconds * 1000:.0f} ms")


def test_each_metric_is_its_divergence_of_the_smoothed_histograms(vec):
    x, y = canonical_pair(vec["a1"], vec["b1"])
    counts_x, counts_y = cluster_counts(x, y, seed=4, **CLUSTERING)
    assert counts_x.sum() == len(x) and counts_y.sum() == len(y) and len(counts_x) == 10  # auto: 100 / 10
    # p = a1 is whichever canonical side holds a1's rows
    a1_first = np.array_equal(x, vec["a1"][np.lexsort(vec["a1"].T[::-1])])
    counts_p, counts_q = (counts_x, counts_y) if a1_first else (counts_y, counts_x)
    frontier = histogram_frontier(laplace_histogram(counts_p, 1.0), laplace_histogram(counts_q, 1.0))
    for name in NAMES:
        value = get_metric(name)(vec["a1"], vec["b1"], seed=4)
        assert value == pytest.approx(DIVERGENCES[name.removeprefix("cluster_")](frontier), rel=1e-12), name


def test_the_clusters_are_mauve_texts(vec):
    from mauve.compute_mauve import cluster_feats

    x, y = canonical_pair(vec["a1"], vec["b1"])
    for seed in (0, 4):
        hist_x, hist_y, _, _ = cluster_feats(x, y, num_clusters=10, norm="l2", whiten=False, seed=seed)
        counts_x, counts_y = cluster_counts(x, y, seed=seed, **CLUSTERING)
        assert np.array_equal(counts_x, np.rint(hist_x * len(x))) and np.array_equal(counts_y, np.rint(hist_y * len(y)))


def test_without_smoothing_cluster_auc_is_one_minus_mauve(vec):
    for seed in (0, 7):
        for pair in (("a1", "b1"), ("a1", "a2")):
            p, q = vec[pair[0]], vec[pair[1]]
            expected = mauve(p, q, seed=seed)
            assert get_metric("cluster_auc")(p, q, seed=seed, laplace_alpha=0.0) == pytest.approx(expected, abs=1e-9)


def test_backward_kl_is_the_forward_kl_of_the_swapped_pair(vec):
    forward, backward = get_metric("cluster_kl_forward"), get_metric("cluster_kl_backward")
    assert backward(vec["a1"], vec["b1"], seed=1) == pytest.approx(forward(vec["b1"], vec["a1"], seed=1), rel=1e-12)
    assert forward(vec["a1"], vec["b1"], seed=1) != pytest.approx(forward(vec["b1"], vec["a1"], seed=1), rel=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_a_corpus_against_itself_is_at_distance_zero(name, vec):
    assert get_metric(name)(vec["a1"], vec["a1"]) == pytest.approx(0.0, abs=1e-12)


def test_bad_parameters_name_the_problem(vec):
    js = get_metric("cluster_js")
    with pytest.raises(MetricError, match="num_buckets"):
        js(vec["a1"], vec["b1"], num_buckets=1)
    with pytest.raises(MetricError, match="lower num_buckets"):
        js(vec["a1"][:5], vec["b1"][:5], num_buckets=20)
    with pytest.raises(MetricError, match="kmeans_explained_var"):
        js(vec["a1"], vec["b1"], kmeans_explained_var=1.0)
    with pytest.raises(MetricError, match="alpha"):
        js(vec["a1"], vec["b1"], laplace_alpha=-1.0)
