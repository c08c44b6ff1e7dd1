"""The evaluation engine: resume, isolation (errors, time limits, crashes), parallel = serial."""

import json
import logging
import os
import platform

import numpy as np
import pytest
from fake_metrics import registered

from textmetric_bench.api.registry import get_metric
from textmetric_bench.api.sharing import per_corpus, sharing
from textmetric_bench.engine import CorpusStore, Job, ResultLog, run_jobs
from textmetric_bench.errors import ConfigError


@pytest.fixture(scope="module")
def store(real_samples):
    texts = real_samples.draws[0][0]
    corpora = {name: texts[name][:40] for name in ("a1", "a2", "b1", "b2")}
    corpora["short"] = texts["mix"][:7]
    vectors = {name: real_samples.draws[0][1][name] for name in texts}
    lookup = {t: v for name in texts for t, v in zip(texts[name], vectors[name])}
    return CorpusStore.from_corpora(corpora, embed=lambda ts: np.stack([lookup[t] for t in ts]))


def jobs_for(names, corpora=("a1", "a2", "b1", "b2")):
    return [Job(key=(m, p, q), metric=m, p=p, q=q, seed=3) for m in names for p in corpora for q in corpora if p < q]


def real_metrics(*names):
    return {n: (get_metric(n), {}) for n in names}


def test_results_equal_direct_calls(store):
    metrics = real_metrics("chi", "fid", "pr")
    out = run_jobs(jobs_for(metrics), store, metrics, progress=False)
    for (name, p, q), outcome in out.items():
        info = get_metric(name)
        assert outcome.error == ""
        assert outcome.distance == info(store.inputs(info, p), store.inputs(info, q), seed=3)


def test_parallel_workers_give_the_serial_results(store):
    metrics = real_metrics("chi", "fid", "mauve", "classifier")
    serial = run_jobs(jobs_for(metrics), store, metrics, progress=False)
    parallel = run_jobs(jobs_for(metrics), store, metrics, workers=2, progress=False)
    assert {k: o.distance for k, o in serial.items()} == {k: o.distance for k, o in parallel.items()}


def test_resume_recomputes_only_missing_and_skips_a_torn_line(store, tmp_path):
    metrics = real_metrics("chi")
    jobs = jobs_for(metrics)
    log = ResultLog(tmp_path / "evaluations.jsonl", {"pair": "x", "k": 4})
    full = run_jobs(jobs, store, metrics, result_log=log, progress=False)
    lines = (tmp_path / "evaluations.jsonl").read_text().splitlines()
    assert len(lines) == 1 + len(jobs)
    # keep the header and two results, then a line cut short as by SIGKILL
    (tmp_path / "evaluations.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:15])
    resumed = run_jobs(jobs, store, metrics, result_log=log, progress=False)
    assert {k: (o.distance, o.error) for k, o in resumed.items()} == {k: (o.distance, o.error) for k, o in full.items()}
    rows = [
        json.loads(x)
        for x in (tmp_path / "evaluations.jsonl").read_text().splitlines()[1:]
        if x.startswith('{"key"') and x.endswith("}")
    ]
    assert len(rows) == len(jobs)  # 2 kept + the rest recomputed, none twice


def test_resuming_another_configuration_is_refused(store, tmp_path):
    metrics = real_metrics("chi")
    run_jobs(
        jobs_for(metrics),
        store,
        metrics,
        progress=False,
        result_log=ResultLog(tmp_path / "e.jsonl", {"pair": "x", "k": 4}),
    )
    with pytest.raises(ConfigError, match="another configuration"):
        run_jobs(
            jobs_for(metrics),
            store,
            metrics,
            progress=False,
            result_log=ResultLog(tmp_path / "e.jsonl", {"pair": "x", "k": 5}),
        )


def test_time_limit_kills_a_hanging_evaluation_and_the_rest_finish(store):
    with registered("fake_sleeps") as infos:
        metrics = {**real_metrics("chi"), "fake_sleeps": (infos["fake_sleeps"], {})}
        jobs = jobs_for(metrics, corpora=("a1", "b1", "short"))
        out = run_jobs(jobs, store, metrics, timeout=3, workers=2, progress=False)
    hung = {k: o for k, o in out.items() if k[0] == "fake_sleeps" and k[2] == "short"}
    assert hung and all("timed out after 3 s" in o.error for o in hung.values())
    others = {k: o for k, o in out.items() if k not in hung}
    assert all(o.error == "" and np.isfinite(o.distance) for o in others.values())


def test_a_crashing_worker_is_recorded_and_replaced(store):
    with registered("fake_crashes", "fake_raises") as infos:
        metrics = {**real_metrics("chi"), **{n: (i, {}) for n, i in infos.items()}}
        out = run_jobs(
            jobs_for(metrics, corpora=("a1", "b1", "short")), store, metrics, workers=1, timeout=60, progress=False
        )
    crashed = [o for k, o in out.items() if k[0] == "fake_crashes" and k[2] == "short"]
    assert crashed and all("worker process died (exit code 3)" in o.error for o in crashed)
    assert all("fake plugin exploded" in o.error for k, o in out.items() if k[0] == "fake_raises")
    assert all(o.error == "" for k, o in out.items() if k[0] == "chi")


def test_per_corpus_results_are_shared_only_inside_a_scope():
    calls = []

    @per_corpus
    def column_means(x):
        calls.append(1)
        return x.mean(axis=0)

    x = np.arange(12.0).reshape(4, 3)
    column_means(x)
    column_means(x)
    assert len(calls) == 2
    with sharing() as memo:
        first = column_means(x)
        second = column_means(x.copy())  # same content, other object: shared
        column_means(x[::-1])  # other order: computed
    assert len(calls) == 4 and memo.hits == 1 and np.array_equal(first, second)


def test_prepare_hooks_see_every_text_of_the_run_once(store, tmp_path, monkeypatch):
    from fake_metrics import PREPARED_FILE, prepared_calls

    monkeypatch.setenv(PREPARED_FILE, str(tmp_path / "prepared.jsonl"))
    with registered("fake_prepared") as infos:
        metrics = {"fake_prepared": (infos["fake_prepared"], {"scale": 2.0})}
        out = run_jobs(jobs_for(metrics, corpora=("a1", "b1", "b2")), store, metrics, workers=2, progress=False)
    calls = prepared_calls(tmp_path / "prepared.jsonl")
    assert len(calls) == 1
    texts, params = calls[0]
    expected = {t for cid in ("a1", "b1", "b2") for t in store.inputs(infos["fake_prepared"], cid)}
    assert set(texts) == expected and len(texts) == len(expected) and params == {"scale": 2.0}
    assert all(o.distance == 2.0 * 80 for o in out.values())


def test_workers_see_the_environment_of_each_run(store, monkeypatch):
    """Workers forked from a forkserver get the parent's environment as it is when their pool starts,
    not as it was when the server started (textmetric_bench.engine.pool.worker_context)."""
    with registered("fake_reads_environment") as infos:
        metrics = {"fake_reads_environment": (infos["fake_reads_environment"], {})}
        seen = []
        for value in ("1", "2"):  # the first run starts the server (if none runs yet), the second reuses it
            monkeypatch.setenv("FAKE_ENV_VALUE", value)
            out = run_jobs(jobs_for(metrics), store, metrics, workers=2, progress=False)
            seen.append({o.distance for o in out.values()})
    assert seen == [{1.0}, {2.0}]


def test_workers_are_forked_from_a_forkserver_where_there_is_one(store):
    import multiprocessing as mp

    with registered("fake_parent_pid") as infos:
        metrics = {"fake_parent_pid": (infos["fake_parent_pid"], {})}
        parents = {o.distance for o in run_jobs(jobs_for(metrics), store, metrics, workers=2, progress=False).values()}
    assert len(parents) == 1
    if "forkserver" in mp.get_all_start_methods():
        assert parents != {float(os.getpid())}  # the server's children, not ours: no import per worker
    else:
        assert parents == {float(os.getpid())}


def test_worker_processes_see_the_run_context(store, tmp_path):
    from textmetric_bench.api.context import RunContext, use_context

    context = RunContext(str(tmp_path / "a-cache-dir-of-some-length"), {})
    with registered("fake_reads_context") as infos, use_context(context):
        metrics = {"fake_reads_context": (infos["fake_reads_context"], {})}
        serial = run_jobs(jobs_for(metrics), store, metrics, progress=False)
        pooled = run_jobs(jobs_for(metrics), store, metrics, workers=2, progress=False)
    assert (
        {o.distance for o in serial.values()}
        == {o.distance for o in pooled.values()}
        == {float(len(context.cache_dir))}
    )


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the workers' malloc settings are glibc's")
@pytest.mark.parametrize("rows, rounds", [(300, 50), (2_500, 8)])  # 0.7 MB and 50 MB products
def test_workers_keep_freed_memory_for_the_next_evaluation(store, rows, rounds):
    """A fresh process under glibc's defaults gives freed arrays back and faults them in again on the
    next evaluation (measured: about 550 page faults per round of 300 rows, 1,400 per round of 2,500 rows,
    whose 50 MB arrays glibc maps afresh above its 32 MiB limit); a worker keeps them."""
    with registered("fake_page_faults") as infos:
        metrics = {"fake_page_faults": (infos["fake_page_faults"], {"rows": rows, "rounds": rounds})}
        out = run_jobs(jobs_for(metrics, corpora=("a1", "b1", "b2")), store, metrics, progress=False)
    faults = [o.distance for o in out.values()]
    assert len(faults) == 3 and all(o.error == "" for o in out.values())
    assert max(faults) < rounds * 20, faults


def fast_jobs(metric, count, *, q="b1", first_seed=0):
    return [
        Job(key=(metric, "a1", q, seed), metric=metric, p="a1", q=q, seed=seed)
        for seed in range(first_seed, first_seed + count)
    ]


def test_quick_evaluations_travel_in_chunks_and_give_the_same_results(store, caplog):
    metrics = real_metrics("chi", "zipf")
    jobs = [
        Job(key=(m, p, q, s), metric=m, p=p, q=q, seed=s)
        for s in range(8)
        for p, q in (("a1", "b1"), ("a2", "b2"))
        for m in metrics
    ]
    with caplog.at_level(logging.DEBUG, logger="textmetric_bench.engine.run"):
        out = run_jobs(jobs, store, metrics, progress=False)
    sent = [r.getMessage() for r in caplog.records if "tasks" in r.getMessage()]
    assert sent and int(sent[-1].split(" in ")[1].split()[0]) < len(jobs) / 2, sent
    for (name, p, q, seed), outcome in out.items():
        info = get_metric(name)
        assert outcome.distance == info(store.inputs(info, p), store.inputs(info, q), seed=seed)


@pytest.mark.parametrize(
    "fake, error",
    [("fake_sleeps", "timed out after 3 s"), ("fake_kills_itself", "worker process died (killed by SIGKILL")],
)
def test_a_chunk_with_a_failing_evaluation_is_rerun_one_job_at_a_time(store, caplog, fake, error):
    """The bad job sits among quick jobs of its metric, so it travels inside a chunk: only it fails,
    with the message it gets alone, and every other job of the chunk keeps its result."""
    with registered(fake) as infos, caplog.at_level(logging.INFO, logger="textmetric_bench.engine.run"):
        metrics = {fake: (infos[fake], {})}
        jobs = fast_jobs(fake, 10) + fast_jobs(fake, 1, q="short", first_seed=10) + fast_jobs(fake, 5, first_seed=11)
        out = run_jobs(jobs, store, metrics, workers=1, timeout=3, progress=False)
    assert any("chunk of" in r.getMessage() and "one at a time" in r.getMessage() for r in caplog.records)
    bad = {k: o for k, o in out.items() if k[2] == "short"}
    assert len(bad) == 1 and error in next(iter(bad.values())).error
    assert all(o.error == "" and o.distance == 80.0 for k, o in out.items() if k[2] != "short")
