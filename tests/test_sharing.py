"""Per-corpus work shared across pairs gives the plain computation's values (004 KSC layout)."""

import itertools

import numpy as np
import pytest

from textmetric_bench.api.registry import builtin_metrics, get_metric
from textmetric_bench.api.sharing import sharing
from textmetric_bench.collections.ksc import known_similarity_corpora
from textmetric_bench.engine import CorpusStore, Job, run_jobs


@pytest.fixture(scope="module")
def collection(real_samples, embedder):
    texts = real_samples.draws[1][0]
    corpora = known_similarity_corpora(texts["a1"] + texts["a2"], texts["b1"] + texts["b2"], k=5, n=30, seed=4)
    return CorpusStore.from_corpora({f"c{c.index}": c.texts for c in corpora}, embed=embedder.embed)


# The metrics that need the language model (one LM pass over every text, several for CTRLEval's infilling) run this
# check in the slow suite only, as their contract checks on real texts do (tests/test_metric_contract.py): the FACE
# texts' scores took 20-35 s of the default suite, whichever FACE metric's case came first.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.slow] if "lm" in get_metric(n).needs else [])
        for n in builtin_metrics()
        if n != "oracle"
    ],
)  # oracle: tests/test_bounds.py
def test_shared_equals_plain(name, collection):
    info = get_metric(name)
    pairs = list(itertools.combinations(sorted(collection.members), 2))
    jobs = [Job(key=(p, q), metric=name, p=p, q=q, seed=9) for p, q in pairs]
    shared = run_jobs(jobs, collection, {name: (info, {})}, progress=False)
    for p, q in pairs:
        plain = info(collection.inputs(info, p), collection.inputs(info, q), seed=9)
        assert shared[(p, q)].distance == pytest.approx(plain, rel=1e-6, abs=1e-9)


# pr and dc: one radius per corpus (5), and per pair (10) one PR/DC computation that dc reuses, holding the pair's
# one product matrix (``pair_products``, another per-pair entry)
@pytest.mark.parametrize(
    "names,per_pair,pair_entries", [(["fid"], 0, 0), (["pr", "dc"], 1, 2), (["chi", "zipf"], 0, 0)]
)
def test_each_corpus_statistic_is_computed_once(names, per_pair, pair_entries, collection):
    pairs = list(itertools.combinations(sorted(collection.members), 2))
    with sharing() as memo:
        for name in names:
            info = get_metric(name)
            for p, q in pairs:
                info(collection.inputs(info, p), collection.inputs(info, q), seed=0)
    corpora = len(collection.members)
    assert memo.misses == corpora + pair_entries * len(pairs)  # once per corpus (and pair), shared by both metrics
    per_corpus_lookups = 2 * len(pairs) * (1 if per_pair else len(names))  # a shared pair looks its corpora up once
    assert memo.hits == per_corpus_lookups - corpora + per_pair * len(pairs) * (len(names) - 1)


def test_memory_bound_evicts_least_recently_used():
    from textmetric_bench.api.sharing import per_corpus

    @per_corpus
    def double(x):
        return x * 2

    bound = int(3.5 * 8000)  # three arrays of 8000 bytes and their cost records, not four
    with sharing(max_bytes=bound) as memo:
        arrays = [np.full(1000, float(i)) for i in range(5)]
        for a in arrays:
            double(a)
        assert memo.bytes <= bound and len(memo.store) == 3
        double(arrays[-1])
        assert memo.hits == 1


def test_token_counts_tokenise_each_text_once_in_a_run_and_charge_what_they_reuse(monkeypatch):
    """The size study's corpora share most texts: in a sharing scope each text is tokenised once, the counts
    are those of a plain call, and a corpus made of texts tokenised for another is charged their cost."""
    import time
    from collections import Counter

    import textmetric_bench.api.tokens as tokens
    from textmetric_bench.api.sharing import charged_time

    calls = Counter()
    real = tokens.tokenize

    def slow_tokenize(text):
        calls[text] += 1
        time.sleep(0.002)
        return real(text)

    first = [f"text number {i} of the first corpus" for i in range(40)]
    second = first[:30] + [f"another text {i}" for i in range(10)]
    plain = [Counter(t for text in corpus for t in real(text)) for corpus in (first, second)]
    monkeypatch.setattr(tokens, "tokenize", slow_tokenize)
    with sharing():
        assert tokens.token_counts(first) == plain[0]
        with charged_time() as account:
            start = time.perf_counter()
            assert tokens.token_counts(second) == plain[1]
            wall = time.perf_counter() - start
    assert all(n == 1 for n in calls.values()) and len(calls) == 50
    assert wall < 0.04 + 0.015  # 10 new texts tokenised, 30 reused
    assert wall + account.seconds >= 40 * 0.002  # charged as if all 40 were tokenised
