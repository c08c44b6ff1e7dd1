"""A fair T (004 §4.4): an evaluation's seconds are its own compute plus the full cost of the shared
preparations it used (``textmetric_bench.api.sharing``), whichever metric ran first and however many workers."""

from __future__ import annotations

import pickle
import time
from statistics import median

import numpy as np
import pytest

from textmetric_bench.api.context import RunContext, default_lm
from textmetric_bench.api.registry import MetricInfo, get_metric
from textmetric_bench.api.sharing import charged_time, per_corpus, sharing
from textmetric_bench.engine import CorpusStore, Job, evaluate, run_jobs, worker
from textmetric_bench.features.lm.scores import LMScorer
from textmetric_bench.features.shard_cache import text_key

FAIR = 1.5  # T of a metric alone and after the metric it shares work with: within this factor


@pytest.fixture(scope="module")
def fortune_vectors(real_samples):
    """1,000 real MiniLM embeddings of each side of the fortune pair (the session's embedded draws)."""
    draws = [vectors for _, vectors in real_samples.draws]
    return (
        np.vstack([v[s] for v in draws for s in ("a1", "a2")]),
        np.vstack([v[s] for v in draws for s in ("b1", "b2")]),
    )


@pytest.fixture(scope="module")
def fortune_texts(cache_dir, mirror_dir):
    """Every text of both sides of the fortune pair (about 2,000 each)."""
    from textmetric_bench.data.corpora import load_pair

    a, b = load_pair("fortune_computing_people", cache_dir=cache_dir, mirror=mirror_dir)
    return list(a.texts), list(b.texts)


def alone_and_after(first: str, then: str, p, q, repeats: int = 5) -> tuple[float, float, float]:
    """Median T of ``then`` in a fresh sharing scope, of ``then`` right after ``first`` in one scope,
    and the median wall time of the latter; the orders alternate, against drift on a loaded machine."""
    one, other = get_metric(first), get_metric(then)
    evaluate(one, {}, p, q, seed=0), evaluate(other, {}, p, q, seed=0)  # imports, thread pools
    alone, after, walls = [], [], []

    def measure_alone():
        with sharing():
            alone.append(evaluate(other, {}, p, q, seed=0).seconds)

    def measure_after():
        with sharing() as memo:
            evaluate(one, {}, p, q, seed=0)
            hits = memo.hits
            start = time.perf_counter()
            after.append(evaluate(other, {}, p, q, seed=0).seconds)
            walls.append(time.perf_counter() - start)
            assert memo.hits > hits, f"{then} reused nothing of {first}"

    for r in range(repeats):
        for step in (measure_alone, measure_after) if r % 2 == 0 else (measure_after, measure_alone):
            step()
    return median(alone), median(after), median(walls)


@pytest.mark.parametrize(
    "first,then,data,n",
    [("pr", "dc", "vectors", 1000), ("chi", "zipf", "texts", 2000), ("cluster_auc", "cluster_js", "vectors", 500)],
)
def test_time_does_not_depend_on_which_metric_ran_first(first, then, data, n, fortune_vectors, fortune_texts):
    p, q = fortune_vectors if data == "vectors" else fortune_texts
    alone, after, wall = alone_and_after(first, then, p[:n], q[:n])
    assert 1 / FAIR < alone / after < FAIR, (alone, after)
    assert wall < 0.8 * after, (wall, after)  # sharing saved wall time; T still holds the reused work


@pytest.mark.parametrize("workers", [1, 2])
def test_time_does_not_depend_on_the_workers(workers):
    """DC after PR on the same corpora, or alone, in one or two workers: the same T (median over pairs)."""
    rng = np.random.default_rng(5)
    ids = [f"g{i}" for i in range(20)]  # five pairs each way, 800 texts a side: medians that load barely moves
    corpora = {cid: [f"{cid}-{j}" for j in range(800)] for cid in ids}
    store = CorpusStore.from_corpora(corpora, embed=lambda texts: rng.normal(size=(len(texts), 384)))
    after_pr, alone = list(zip(ids[0:10:2], ids[1:10:2])), list(zip(ids[10::2], ids[11::2]))
    jobs = [Job((m, p, q), m, p, q, seed=0) for m in ("pr", "dc") for p, q in after_pr]
    jobs += [Job(("dc", p, q), "dc", p, q, seed=0) for p, q in alone]
    metrics = {m: (get_metric(m), {}) for m in ("pr", "dc")}
    ratios = []
    for _ in range(3):  # wall-time ratios: another job on the machine can skew one run; a bias skews every run
        out = run_jobs(jobs, store, metrics, workers=workers, progress=False)
        dc_after = median(out[("dc", p, q)].seconds for p, q in after_pr)
        dc_alone = median(out[("dc", p, q)].seconds for p, q in alone)
        ratios.append(dc_alone / dc_after)
        if 1 / FAIR < ratios[-1] < FAIR:
            break
    assert 1 / FAIR < ratios[-1] < FAIR, ratios


# --- the accounting, on fake preparations that sleep ------------------------------------------------

PAUSE = 0.1


@per_corpus
def fake_slow_counts(texts, *, pause: float) -> int:
    time.sleep(2 * pause)
    return len(texts)


@per_corpus
def fake_slow_summary(texts, *, pause: float) -> int:
    """A preparation that uses another: its cost is its own plus the other's."""
    time.sleep(pause)
    return fake_slow_counts(texts, pause=pause) + 1


def fake_metric(name: str, fn) -> MetricInfo:
    return MetricInfo(name, fn, inputs="texts", symmetric=False)


fake_uses_summary = fake_metric("fake_uses_summary", lambda p, q, *, seed=0: fake_slow_summary(p, pause=PAUSE))
fake_uses_counts_twice = fake_metric(
    "fake_uses_counts_twice",
    lambda p, q, *, seed=0: fake_slow_counts(p, pause=PAUSE) + fake_slow_counts(list(p), pause=PAUSE),
)
fake_uses_both = fake_metric(
    "fake_uses_both", lambda p, q, *, seed=0: fake_slow_summary(p, pause=PAUSE) + fake_slow_counts(p, pause=PAUSE)
)


def seconds(info: MetricInfo, texts) -> float:
    return evaluate(info, {}, texts, texts, seed=0).seconds


def test_a_reused_preparation_is_charged_in_full_once_per_evaluation():
    texts = ["a b", "c d e"]
    close = dict(abs=0.6 * PAUSE)  # sleeps overrun on a loaded machine
    with sharing() as memo:
        assert seconds(fake_uses_summary, texts) == pytest.approx(3 * PAUSE, **close)  # computes both
        assert seconds(fake_uses_summary, texts) == pytest.approx(3 * PAUSE, **close)  # reuses both: charged
        assert seconds(fake_uses_summary, texts) == pytest.approx(3 * PAUSE, **close)  # and again
        # The summary's cost holds the counts', so using both charges the counts once, not twice.
        assert seconds(fake_uses_both, texts) == pytest.approx(3 * PAUSE, **close)
        assert seconds(fake_uses_counts_twice, texts) == pytest.approx(2 * PAUSE, **close)
        assert memo.misses == 2
    with sharing() as memo:
        # Counts first, then a summary that reuses them: its cost still includes theirs.
        assert seconds(fake_uses_counts_twice, texts) == pytest.approx(2 * PAUSE, **close)
        assert seconds(fake_uses_summary, texts) == pytest.approx(3 * PAUSE, **close)
        summary = next(k for k in memo.store if k[1] == "fake_slow_summary")
        assert memo.cost(summary) == pytest.approx(3 * PAUSE, **close)
        assert seconds(fake_uses_both, texts) == pytest.approx(3 * PAUSE, **close)
    # Without sharing each call computes: the same times, the slow way.
    assert seconds(fake_uses_counts_twice, texts) == pytest.approx(4 * PAUSE, **close)


_first_calls: list[int] = []


@per_corpus
def fake_slow_at_first(texts) -> int:
    """Slow on its first call in the process, as a lazy import or a thread pool's start would make it."""
    time.sleep(4 * PAUSE if not _first_calls else PAUSE / 2)
    _first_calls.append(1)
    return len(texts)


def fake_first_user(p, q, *, seed: int = 0) -> float:
    return float(fake_slow_at_first(p))


def fake_second_user(p, q, *, seed: int = 0) -> float:
    return float(fake_slow_at_first(p)) + 1


def test_the_warm_up_keeps_one_time_costs_out_of_shared_preparations(tmp_path):
    """A worker repeats a metric's quick first evaluation; the preparations it computed cold are
    computed again, so a later metric that reuses them is not charged the one-time cost."""
    _first_calls.clear()
    CorpusStore.from_corpora({"a": ["x y", "z"], "b": ["w"]}).save(tmp_path / "store")
    infos = {f.__name__: fake_metric(f.__name__, f) for f in (fake_first_user, fake_second_user)}
    worker.initialize(tmp_path / "store", {n: pickle.dumps((i, {})) for n, i in infos.items()}, 1, None, None)
    try:
        assert worker.ping()[1] == ""
        first, second = (worker.run_evaluation(Job((n,), n, "a", "b", seed=0)) for n in infos)
    finally:
        worker._state["scope"].close()
        worker._state.clear()
    assert len(_first_calls) == 2  # the cold call and its warm repetition; the second metric reuses it
    assert first.seconds == pytest.approx(PAUSE / 2, abs=PAUSE)
    assert second.seconds == pytest.approx(PAUSE / 2, abs=PAUSE)  # charged the warm cost, not 4 x PAUSE


def test_charging_does_not_change_distances(real_samples):
    """Bitwise the same distances alone without sharing and inside one scope after every other metric."""
    texts, vectors = real_samples.draws[0]
    names = ["pr", "dc", "fid", "chi", "zipf", "cluster_auc", "cluster_js", "ngram_js", "ngram_kl_forward"]
    pair = {"texts": (texts["a1"], texts["b1"]), "embeddings": (vectors["a1"], vectors["b1"])}
    plain = {n: evaluate(get_metric(n), {}, *pair[get_metric(n).inputs], seed=3).distance for n in names}
    with sharing() as memo:
        for _ in range(2):
            shared = {n: evaluate(get_metric(n), {}, *pair[get_metric(n).inputs], seed=3).distance for n in names}
            assert shared == plain
    assert memo.hits > 0


# --- LM scores: charged per text served from the cache ---------------------------------------------


def fake_slow_scores(batch: list[str]) -> list[np.ndarray]:
    time.sleep(0.02 * len(batch))
    return [np.array([float(len(t))]) for t in batch]


def test_cached_lm_scores_are_charged_their_recorded_cost(tmp_path):
    scorer = LMScorer(RunContext(str(tmp_path), default_lm()))  # the model is never loaded here
    texts = [f"text number {i}" for i in range(10)]
    with charged_time() as first:
        scorer.cached("fake", texts, fake_slow_scores)
    assert first.seconds == pytest.approx(0.0, abs=1e-9)  # scored here: in the wall time, not charged
    per_text = scorer.cache("fake").seconds_per_value()
    assert 0.02 <= per_text < 0.05
    with charged_time() as again:
        scorer.cached("fake", texts[:5], fake_slow_scores)
        scorer.cached("fake", texts[:5], fake_slow_scores)  # the same texts again: charged once
    assert again.seconds == pytest.approx(5 * per_text, rel=1e-6)
    elsewhere = LMScorer(RunContext(str(tmp_path), default_lm()))  # as another job: the cost is in the shards
    with charged_time() as other:
        elsewhere.cached("fake", texts[5:], fake_slow_scores)
    assert other.seconds == pytest.approx(5 * per_text, rel=1e-6) and elsewhere.scored == 0


def test_an_old_cache_without_recorded_costs_charges_nothing(tmp_path):
    scorer = LMScorer(RunContext(str(tmp_path), default_lm()))
    texts = ["one", "two", "three"]
    scorer.cache("old").put([text_key(t) for t in texts], fake_slow_scores(texts))  # no seconds recorded
    with charged_time() as account:
        scorer.cached("old", texts, lambda batch: pytest.fail("served from the cache"))
    assert account.seconds == 0.0 and scorer.cache("old").seconds_per_value() is None


def test_face_time_includes_the_lm_pass_it_reuses(lm_context, intent_texts):
    """FACE after its prepare hook (the run's LM pass) is charged that pass, whichever FACE metric first."""
    from textmetric_bench.api.context import lm_scorer
    from textmetric_bench.metrics.face import score_texts

    p, q = intent_texts["a"][1000:1016], intent_texts["b"][1000:1016]
    lm = lm_scorer()
    lm.token_logprobs(intent_texts["a"][:48])  # the model loaded (here or in each LM worker): never charged
    before, start = lm.scored, time.perf_counter()
    score_texts(p + q)
    prepared = time.perf_counter() - start
    per_text = lm.cache("token_logprobs|max_tokens=256").seconds_per_value()
    assert per_text and per_text > 0
    if lm.scored - before == len(set(p + q)):  # scored just now, not by an earlier test
        assert 1 / 3 < per_text * len(set(p + q)) / prepared < 3
    with sharing():
        so = evaluate(get_metric("face_so"), {}, p, q, seed=0)
        sam = evaluate(get_metric("face_sam"), {}, p, q, seed=0)  # reuses face_so's spectra
    assert so.seconds >= per_text * len(set(p + q)) and sam.seconds >= per_text * len(set(p + q))
    assert 1 / FAIR < so.seconds / sam.seconds < FAIR
