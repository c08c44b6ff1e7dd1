"""Per-corpus work shared across pairs gives the plain computation's values (004 KSC layout)."""

import itertools

import numpy as np
import pytest

from bench.api.registry import builtin_metrics, get_metric
from bench.api.sharing import sharing
from bench.collections.ksc import known_similarity_corpora
from bench.engine import CorpusStore, Job, run_jobs


@pytest.fixture(scope="module")
def collection(real_samples, embedder):
    texts = real_samples.draws[1][0]
    corpora = known_similarity_corpora(texts["a1"] + texts["a2"], texts["b1"] + texts["b2"], k=5, n=30, seed=4)
    return CorpusStore.from_corpora({f"c{c.index}": c.texts for c in corpora}, embed=embedder.embed)


# The infilling score (several LM passes per text) runs this check in the slow suite only.
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n == "ctrleval_coherence" else [])
                                  for n in builtin_metrics() if n != "oracle"])  # oracle: tests/test_bounds.py
def test_shared_equals_plain(name, collection):
    info = get_metric(name)
    pairs = list(itertools.combinations(sorted(collection.members), 2))
    jobs = [Job(key=(p, q), metric=name, p=p, q=q, seed=9) for p, q in pairs]
    shared = run_jobs(jobs, collection, {name: (info, {})}, progress=False)
    for p, q in pairs:
        plain = info(collection.inputs(info, p), collection.inputs(info, q), seed=9)
        assert shared[(p, q)].distance == pytest.approx(plain, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("names,helpers", [(["fid"], 5), (["pr", "dc"], 5), (["chi", "zipf"], 5)])
def test_each_corpus_statistic_is_computed_once(names, helpers, collection):
    pairs = list(itertools.combinations(sorted(collection.members), 2))
    with sharing() as memo:
        for name in names:
            info = get_metric(name)
            for p, q in pairs:
                info(collection.inputs(info, p), collection.inputs(info, q), seed=0)
    assert memo.misses == helpers  # one per corpus, shared by every pair and by both metrics
    assert memo.hits == 2 * len(pairs) * len(names) - helpers


def test_memory_bound_evicts_least_recently_used():
    from bench.api.sharing import per_corpus

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
