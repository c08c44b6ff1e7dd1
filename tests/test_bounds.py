"""The reference metrics ``oracle`` (ceiling) and ``chance`` (floor) on real KSC collections, and the
known-position mechanism they rely on (textmetric_bench.api.positions)."""

import math

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.api.positions import corpus_key, known_position, known_positions
from textmetric_bench.api.registry import default_metrics, get_metric, metric, unregister
from textmetric_bench.collections.ksc import corpus_pairs, known_similarity_corpora
from textmetric_bench.engine import evaluate
from textmetric_bench.errors import MetricError
from textmetric_bench.measures.ksc import judgement_accuracy, judgement_set, monotonicity


@pytest.fixture(scope="module")
def fortune(cache_dir, mirror_dir):
    from textmetric_bench.data.corpora import load_pair

    a, b = load_pair("fortune_computing_people", cache_dir=cache_dir, mirror=mirror_dir)
    return list(a.texts), list(b.texts)


def collection_distances(fortune, name, *, k, n, seed, metric_seed=0):
    """(i, j, distance) of metric ``name`` on one real KSC collection, positions known as in a run."""
    corpora = known_similarity_corpora(*fortune, k=k, n=n, seed=seed)
    info = get_metric(name)
    with known_positions({corpus_key(c.texts): c.known_position for c in corpora}):
        d = [info(corpora[i - 1].texts, corpora[j - 1].texts, seed=metric_seed) for i, j in corpus_pairs(k)]
    i, j = np.array(corpus_pairs(k)).T
    return i, j, np.array(d)


def test_bounds_are_opt_in():
    assert "oracle" not in default_metrics() and "chance" not in default_metrics()


@pytest.mark.parametrize("k,n", [(7, 20), (12, 12)])
def test_oracle_is_the_ceiling(fortune, k, n):
    for seed in range(3):
        i, j, d = collection_distances(fortune, "oracle", k=k, n=n, seed=seed)
        assert judgement_accuracy(i, j, d, k) == 1.0
        assert judgement_accuracy(i, j, d, k, weighted=True) == 1.0
        assert monotonicity(j - i, d) >= 0.95
        assert d[(i == 1) & (j == k)] == 1.0  # pure A to pure B: the whole axis


# Chance: R repetitions of k = 7. Each repetition's A is a mean of |J| = 105 judgements that share
# 21 distances, so it varies at most like a binomial proportion over the 21 distances (sd .5/sqrt(21));
# its null ρ (Spearman, 21 pairs) has sd 1/sqrt(21 - 1). The means over R repetitions get 4 of
# their standard deviations as tolerance.
REPETITIONS, K = 40, 7


def test_chance_is_the_floor(fortune):
    runs = [collection_distances(fortune, "chance", k=K, n=12, seed=100 + r, metric_seed=r) for r in range(REPETITIONS)]
    pairs = len(corpus_pairs(K))
    a_tol = 4 * 0.5 / math.sqrt(pairs) / math.sqrt(REPETITIONS)
    rho_tol = 4 / math.sqrt(pairs - 1) / math.sqrt(REPETITIONS)
    assert a_tol <= 0.1 and rho_tol <= 0.2  # the bounds are within the spread
    accuracy = np.mean([judgement_accuracy(i, j, d, K) for i, j, d in runs])
    rho = np.mean([monotonicity(j - i, d) for i, j, d in runs])
    assert abs(accuracy - 0.5) < a_tol, (accuracy, a_tol)
    assert abs(rho) < rho_tol, (rho, rho_tol)
    assert len(judgement_set(K)[0]) == 105


def test_both_reproduce_under_the_same_seed(fortune):
    for name in ("oracle", "chance"):
        one = collection_distances(fortune, name, k=5, n=12, seed=4, metric_seed=9)[2]
        two = collection_distances(fortune, name, k=5, n=12, seed=4, metric_seed=9)[2]
        np.testing.assert_array_equal(one, two)
    other = collection_distances(fortune, "chance", k=5, n=12, seed=4, metric_seed=10)[2]
    assert not np.array_equal(one, other)


def test_chance_is_symmetric_and_ignores_text_order(fortune):
    chance = get_metric("chance")
    p, q = fortune[0][:30], fortune[1][:30]
    assert chance(p, q, seed=3) == chance(q, p, seed=3) == chance(p[::-1], q, seed=3)
    assert 0.0 <= chance(p, q, seed=3) < 1.0


def test_oracle_without_known_positions_is_that_metrics_failure(fortune):
    outcome = evaluate(get_metric("oracle"), {}, fortune[0][:20], fortune[1][:20], seed=0)
    assert outcome.failed and "no known position" in outcome.error
    with pytest.raises(MetricError, match="empty"):
        get_metric("oracle")([], fortune[1][:20], seed=0)


@pytest.fixture
def fake_peeking_metric():
    @metric("fake_peeks_at_positions", inputs="texts", symmetric=True)
    def fake_peeks_at_positions(p, q, *, seed: int = 0) -> float:
        return known_position(p)

    yield get_metric("fake_peeks_at_positions")
    unregister("fake_peeks_at_positions")


def test_a_metric_that_did_not_declare_the_need_cannot_read_positions(fake_peeking_metric):
    p = ["one text", "another"]
    with known_positions({corpus_key(p): 0.5}):
        outcome = evaluate(fake_peeking_metric, {}, p, p, seed=0)
        assert outcome.failed and "needs=('known_position',)" in outcome.error
    with pytest.raises(MetricError, match="only for a metric"):
        known_position(p)


def test_unknown_needs_are_rejected():
    def fake_needs_magic(p, q, *, seed: int = 0) -> float:
        return 0.0

    with pytest.raises(TypeError, match=r"argument needs=\('magic',\) is not valid"):
        metric("fake_needs_magic", inputs="texts", symmetric=True, needs=("magic",))(fake_needs_magic)


def test_ksc_run_scores_oracle_at_the_ceiling(tmp_path, cache_dir):
    from textmetric_bench.running.registry import compose_config
    from textmetric_bench.tasks.ksc import run_ksc

    cfg = compose_config(
        [
            "k=5",
            "n=12",
            "repetitions=2",
            "progress=false",
            f"data.cache_dir={cache_dir}",
            "metrics=[oracle,chance]",
            "reference=false",
        ]
    )
    result = run_ksc(cfg, tmp_path)
    assert not result.failures
    measures = result.measures.set_index(["metric", "repetition"])
    assert (measures.loc["oracle", "A"] == 1.0).all() and (measures.loc["oracle", "rho"] >= 0.95).all()
    again = run_ksc(cfg, tmp_path / "again")
    pd.testing.assert_series_equal(result.distances["distance"], again.distances["distance"])


def test_oracle_is_the_ceiling_of_ifc(fortune):
    from textmetric_bench.collections.ifc import ifc_pairs, ifc_positions, reference_samples
    from textmetric_bench.measures.ifc import gap_closed, ifc_score

    texts = fortune[0]
    generated = {i: texts[20 * i : 20 * i + 20] for i in range(4)}  # stand-ins for g_0..g_3: real texts
    reference_pool = texts[100:200]
    corpora, plan = ifc_pairs(generated, reference_pool, reference_samples(len(reference_pool), 20, 2, seed=0))
    oracle = get_metric("oracle")
    with known_positions({corpus_key(corpora[c]): pos for c, pos in ifc_positions(corpora).items()}):
        d = {(kind, i, r): oracle(corpora[p], corpora[q], seed=0) for kind, i, r, p, q in plan}
    for r in range(2):
        iterations = sorted(i for kind, i, rep in d if kind == "generated" and rep == r)
        curve = [d[("generated", i, r)] for i in iterations]
        assert ifc_score(iterations, curve) == 1.0
        assert gap_closed(curve[0], curve[-1], d[("self", -1, r)]) == 1.0


def test_oracle_is_the_ceiling_of_size_and_imbalance(fortune):
    from textmetric_bench.collections.size_imbalance import (
        SOURCE_POSITIONS,
        draw_sample_pair,
        sample_seed,
    )
    from textmetric_bench.measures.robustness import imbalance_robustness, size_robustness

    oracle, (a, b) = get_metric("oracle"), fortune

    def distance(curve, s, size_a, size_b):
        ia, ib = draw_sample_pair(len(a), len(b), size_a, size_b, sample_seed(0, 0, curve, s))
        pa, pb = [a[i] for i in ia], [b[i] for i in ib]
        with known_positions({corpus_key(pa): SOURCE_POSITIONS["a"], corpus_key(pb): SOURCE_POSITIONS["b"]}):
            return oracle(pa, pb, seed=0)

    asymptotic = distance("asymptotic", 60, 60, 60)
    assert size_robustness([distance("size", s, s, s) for s in (10, 30, 50)], asymptotic) == 1.0
    assert imbalance_robustness([distance("imbalance", s, s, 80 - s) for s in (10, 30, 50)], asymptotic) == 1.0
