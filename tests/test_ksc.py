"""KSC collections (004 §3): proportions, disjointness, seeds, and size errors."""

import re

import pytest

from textmetric_bench.collections.ksc import corpus_pairs, known_similarity_corpora, mixture_counts, texts_needed
from textmetric_bench.errors import ConfigError, DataError

A = [f"a{i}" for i in range(2000)]
B = [f"b{i}" for i in range(2000)]


@pytest.mark.parametrize("k,n", [(7, 100), (12, 100), (3, 2), (5, 50)])
def test_proportions_follow_the_formula(k, n):
    corpora = known_similarity_corpora(A, B, k=k, n=n, seed=1)
    assert len(corpora) == k
    for i, c in enumerate(corpora, start=1):
        from_a = sum(t.startswith("a") for t in c.texts)
        assert len(c.texts) == n
        assert from_a == c.from_a
        assert abs(from_a - n * (k - i) / (k - 1)) <= 0.5
    assert corpora[0].from_a == n and corpora[-1].from_a == 0


def test_counts_for_the_paper_setting():
    assert mixture_counts(7, 100) == [(100, 0), (83, 17), (67, 33), (50, 50), (33, 67), (17, 83), (0, 100)]
    assert texts_needed(7, 100) == (350, 350)


def test_corpora_of_a_collection_are_disjoint():
    corpora = known_similarity_corpora(A, B, k=12, n=100, seed=3)
    seen = [t for c in corpora for t in c.texts]
    assert len(seen) == len(set(seen)) == 1200


def test_same_seed_same_collection_other_seed_other_collection():
    one = known_similarity_corpora(A, B, k=5, n=40, seed=7)
    two = known_similarity_corpora(A, B, k=5, n=40, seed=7)
    three = known_similarity_corpora(A, B, k=5, n=40, seed=8)
    assert [c.texts for c in one] == [c.texts for c in two]
    assert [set(c.texts) for c in one] != [set(c.texts) for c in three]


def test_too_small_source_says_how_many_texts_are_needed():
    with pytest.raises(DataError, match=r"'small' has 100 texts.*needs 350"):
        known_similarity_corpora(A[:100], B, k=7, n=100, seed=0, names=("small", "B"))


def test_two_sources_too_small_are_both_named_one_line_each():
    with pytest.raises(DataError) as short:
        known_similarity_corpora(A[:100], B[:90], k=7, n=100, seed=0, names=("mine", "theirs"))
    assert str(short.value).splitlines() == [
        "source 'mine' has 100 texts but a KSC collection with k=7, n=100 needs 350 distinct texts from it; lower n "
        "or k (at k=7, n=25 fits both sources), or use a larger corpus",
        "source 'theirs' has 90 texts but a KSC collection with k=7, n=100 needs 350 distinct texts from it; lower n "
        "or k (at k=7, n=25 fits both sources), or use a larger corpus",
    ]
    assert texts_needed(7, 25) == (88, 87) and max(texts_needed(7, 26)) > 90  # 25 is the largest n that fits


@pytest.mark.parametrize(
    ("k", "n", "sizes", "says"),
    [
        (7, 100, (400, 40), "at k=7, n=11 fits both sources"),
        (12, 100, (6, 6), "lower k and n (k=3, n=4 fits both sources)"),
        (7, 100, (1, 500), "use a larger corpus (even k=3 with n=2 needs more)"),
    ],
)
def test_a_short_source_is_told_the_largest_setting_that_fits(k, n, sizes, says):
    with pytest.raises(DataError, match=re.escape(says)):
        known_similarity_corpora(A[: sizes[0]], B[: sizes[1]], k=k, n=n, seed=0)
    suggested = [int(x) for x in re.findall(r"n=(\d+) fits", says)]
    for m in suggested:  # the suggestion draws, and one more text per corpus would not
        kk = k if "at k=" in says else 3
        known_similarity_corpora(A[: sizes[0]], B[: sizes[1]], k=kk, n=m, seed=0)
        with pytest.raises(DataError):
            known_similarity_corpora(A[: sizes[0]], B[: sizes[1]], k=kk, n=m + 1, seed=0)


@pytest.mark.parametrize("k,n", [(2, 10), (7, 5), (0, 100)])
def test_impossible_parameters_are_rejected(k, n):
    with pytest.raises(ConfigError, match="KSC needs"):
        known_similarity_corpora(A, B, k=k, n=n, seed=0)


def test_pairs_cover_every_i_below_j():
    assert len(corpus_pairs(7)) == 21
    assert all(i < j for i, j in corpus_pairs(12))
