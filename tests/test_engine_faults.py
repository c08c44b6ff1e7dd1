"""The engine under faults: hangs, metrics that keep hanging, self-kills, transient errors, retries, changed
metrics, stuck worker start."""

import dataclasses
import json
import logging
import time
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from fake_metrics import SlowToUnpickle, registered
from omegaconf import OmegaConf

from textmetric_bench.api.registry import get_metric
from textmetric_bench.engine import (
    DEFAULT_MAX_TIMEOUTS,
    CorpusStore,
    EngineSettings,
    Job,
    ResultLog,
    engine_options,
    run_jobs,
)
from textmetric_bench.engine.pool import EvaluationPool, WorkerStartError
from textmetric_bench.measures.failures import failure_summary, write_failures_csv
from textmetric_bench.reports.tables.files import write_tables
from textmetric_bench.tasks.skeleton import distance_table


@pytest.fixture(scope="module")
def store():
    """Fake-metric corpora: only their sizes matter (7 texts trigger the fakes' faults)."""
    words = [f"text number {i}" for i in range(60)]
    return CorpusStore.from_corpora({"a": words[:20], "b": words[20:40], "short": words[40:47]})


def jobs_for(names, corpora=("a", "b", "short")):
    return [Job(key=(m, p, q), metric=m, p=p, q=q, seed=1) for m in names for p in corpora for q in corpora if p < q]


def logged_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_a_plugin_that_sigkills_its_worker_is_recorded_and_the_run_finishes(store):
    with registered("fake_kills_itself") as infos:
        metrics = {"fake_kills_itself": (infos["fake_kills_itself"], {})}
        out = run_jobs(jobs_for(metrics), store, metrics, workers=1, progress=False)
    killed = {k: o for k, o in out.items() if k[2] == "short"}
    assert killed and all(o.status == "crash" and "killed by SIGKILL" in o.error for o in killed.values())
    assert out[("fake_kills_itself", "a", "b")].distance == 40.0


def test_a_timed_out_evaluation_is_retried_on_rerun_and_its_attempts_kept(store, tmp_path, monkeypatch):
    log = ResultLog(tmp_path / "evaluations.jsonl", {"run": "faults"})
    with registered("fake_sleeps") as infos:
        metrics = {"fake_sleeps": (infos["fake_sleeps"], {})}
        monkeypatch.setenv("FAKE_SLEEP_SECONDS", "60")
        first = run_jobs(jobs_for(metrics), store, metrics, result_log=log, timeout=2, progress=False)
        monkeypatch.setenv("FAKE_SLEEP_SECONDS", "0")
        second = run_jobs(jobs_for(metrics), store, metrics, result_log=log, timeout=2, progress=False)
    hung = ("fake_sleeps", "a", "short")
    assert first[hung].status == "timeout" and "timed out after 2 s" in first[hung].error
    assert second[hung].status == "ok" and second[hung].distance == 27.0 and second[hung].attempts == 2
    assert second[("fake_sleeps", "a", "b")].attempts == 1  # done the first time: not evaluated again
    statuses = [r["status"] for r in logged_rows(tmp_path / "evaluations.jsonl") if tuple(r["key"]) == hung]
    assert statuses == ["timeout", "ok"]


def test_raised_errors_are_retried_unless_retry_failed_is_false(store, tmp_path, monkeypatch):
    log = ResultLog(tmp_path / "evaluations.jsonl", {"run": "faults"})
    with registered("fake_raises_when_told") as infos:
        metrics = {"fake_raises_when_told": (infos["fake_raises_when_told"], {})}
        monkeypatch.setenv("FAKE_RAISE", "1")
        first = run_jobs(jobs_for(metrics), store, metrics, result_log=log, progress=False)
        monkeypatch.setenv("FAKE_RAISE", "0")
        kept = run_jobs(jobs_for(metrics), store, metrics, result_log=log, retry_failed=False, progress=False)
        retried = run_jobs(jobs_for(metrics), store, metrics, result_log=log, progress=False)
    assert all(o.status == "error" and "fake transient fault" in o.error for o in first.values())
    assert {(o.status, o.attempts) for o in kept.values()} == {("error", 1)}
    assert {(o.status, o.attempts) for o in retried.values()} == {("ok", 2)}
    assert len(logged_rows(tmp_path / "evaluations.jsonl")) == 2 * len(first)


def test_a_changed_metric_version_is_recomputed_with_a_message(store, tmp_path, caplog):
    log = ResultLog(tmp_path / "evaluations.jsonl", {"run": "faults"})
    chi = get_metric("chi")
    jobs = jobs_for(["chi"], corpora=("a", "b"))
    run_jobs(jobs, store, {"chi": (chi, {})}, result_log=log, progress=False)
    changed = dataclasses.replace(chi, version=chi.version + "-edited")
    with caplog.at_level(logging.WARNING):
        out = run_jobs(jobs, store, {"chi": (changed, {})}, result_log=log, progress=False)
    assert "metric chi changed" in caplog.text and "recomputed" in caplog.text
    rows = logged_rows(tmp_path / "evaluations.jsonl")
    assert [r["metric_version"] for r in rows] == [chi.version, changed.version]
    assert out[jobs[0].key].attempts == 1  # the old version's attempt does not count


def test_a_result_log_of_another_project_version_is_refused(store, tmp_path, monkeypatch):
    from textmetric_bench.errors import ConfigError

    path = tmp_path / "evaluations.jsonl"
    run_jobs(
        jobs_for(["chi"], ("a", "b")),
        store,
        {"chi": (get_metric("chi"), {})},
        result_log=ResultLog(path, {"run": 1}),
        progress=False,
    )
    monkeypatch.setattr("textmetric_bench.engine.result_log.__version__", "99.0")
    with pytest.raises(ConfigError, match="version"):
        ResultLog(path, {"run": 1}).load()


def test_workers_that_cannot_start_in_time_give_a_clear_error(store, tmp_path):
    with registered("fake_sleeps") as infos:
        metrics = {"fake_sleeps": (infos["fake_sleeps"], {"seconds": SlowToUnpickle()})}
        with pytest.raises(WorkerStartError, match=r"did not start within 3 s \(engine.start_timeout\)"):
            EvaluationPool(1, None, metrics, blas_threads=1, timeout=10, start_timeout=3)


def test_the_store_reaches_workers_from_disk_memory_mapped(store, tmp_path):
    texts = store.all_texts + [f"extra {i}" for i in range(3)]
    vectors = np.random.default_rng(0).normal(size=(len(texts), 8)).astype(np.float32)
    big = CorpusStore(texts, vectors, {"x": [0, 5, len(texts) - 1], "y": [1, 2]})
    opened = CorpusStore.open(big.save(tmp_path / "store"))
    assert isinstance(opened.all_vectors, np.memmap)
    fid = get_metric("fid")
    for cid in ("x", "y"):
        assert np.array_equal(opened.inputs(fid, cid), big.inputs(fid, cid))
        assert opened.inputs(get_metric("chi"), cid) == big.inputs(get_metric("chi"), cid)


def test_every_failing_repetition_is_named_and_tables_say_k_of_n(tmp_path):
    evaluations = pd.DataFrame(
        {
            "metric": ["m"] * 6 + ["ok"] * 6,
            "repetition": [0, 0, 1, 1, 2, 2] * 2,
            "error": ["", "timed out after 600 s", "", "", "ValueError: bad", "ValueError: bad"] + [""] * 6,
            "attempts": [1, 2, 1, 1, 1, 1] + [1] * 6,
        }
    )
    text = failure_summary(evaluations)["m"]
    assert text.startswith("3 of 6 evaluations failed (latest of up to 2 attempts) in 2 repetitions")
    assert "repetition 0: timed out after 600 s" in text and "repetition 2: 2 × ValueError: bad" in text
    assert "ok" not in failure_summary(evaluations)
    measures = pd.DataFrame({"metric": ["m", "ok", "ok", "ok"], "repetition": [1, 0, 1, 2], "A": [0.9, 0.8, 0.7, 0.6]})
    md = write_tables(measures, tmp_path, failures=failure_summary(evaluations), repetitions=3)["table3_md"]
    body = md.read_text()
    assert "| m | 1 of 3; 3 of 6 evaluations failed |" in body and "| ok | 3 of 3 |" in body
    assert "repetition 2: 2 × ValueError" in body


def hang_jobs(count, name="fake_hangs"):
    """``count`` evaluations of ``name`` on corpora a and b, one per seed; keys shaped as a task's."""
    return [
        Job(key=(name, "params", "a", "b", seed, "corpora"), metric=name, p="a", q="b", seed=seed)
        for seed in range(count)
    ]


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_metric_that_keeps_timing_out_is_skipped_then_retried_on_rerun(store, tmp_path, monkeypatch):
    """8 evaluations that hang, a 2 s limit, engine.max_timeouts=2: the run costs about 2 limits (3 at
    most: the one already sent when the second timed out runs on), not 8; CHI is unaffected."""
    log = ResultLog(tmp_path / "evaluations.jsonl", {"run": "breaker"})
    jobs = hang_jobs(8) + [
        Job(key=("chi", "params", p, q, 0, "corpora"), metric="chi", p=p, q=q, seed=0)
        for p, q in (("a", "b"), ("a", "short"), ("b", "short"))
    ]
    with registered("fake_hangs") as infos:
        metrics = {"fake_hangs": (infos["fake_hangs"], {}), "chi": (get_metric("chi"), {})}
        monkeypatch.setenv("FAKE_HANG", "1")
        start = time.monotonic()
        first = run_jobs(jobs, store, metrics, result_log=log, workers=1, timeout=2, max_timeouts=2, progress=False)
        seconds = time.monotonic() - start
        monkeypatch.setenv("FAKE_HANG", "0")
        second = run_jobs(
            jobs,
            store,
            metrics,
            result_log=log,
            workers=1,
            timeout=2,
            max_timeouts=2,
            retry_failed=False,
            progress=False,
        )
    hung = {k: o for k, o in first.items() if k[0] == "fake_hangs"}
    statuses = Counter(o.status for o in hung.values())
    assert statuses["timeout"] in (2, 3) and statuses["skipped"] == 8 - statuses["timeout"], statuses
    assert seconds < 6 * 2, f"{seconds:.1f} s: the breaker did not stop the hanging metric"
    skipped = [o for o in hung.values() if o.status == "skipped"]
    assert all(
        o.error.startswith("skipped: metric fake_hangs timed out 2 times in this run at engine.timeout=2 s")
        and "engine.max_timeouts" in o.error
        and o.attempts == 0
        for o in skipped
    )
    assert all(o.status == "ok" and o.distance > 0 for k, o in first.items() if k[0] == "chi")

    distances = distance_table(["p", "q", "seed"], list(first.items()))
    failures = pd.read_csv(write_failures_csv(distances, tmp_path), keep_default_na=False)
    assert len(failures) == 8 and set(failures["metric"]) == {"fake_hangs"}
    assert (failures["error"].str.contains("timed out 2 times")).sum() == len(skipped)

    # the rerun tries the skipped evaluations (never tried: this is their first attempt) and the timed-out ones
    assert {k for k, o in second.items() if o.status != "ok"} == set()
    assert all(second[k].attempts == (1 if o.status == "skipped" else 2) for k, o in hung.items())
    assert all(o.attempts == 1 for k, o in second.items() if k[0] == "chi")  # done the first time: kept
    key = next(k for k, o in hung.items() if o.status == "skipped")
    assert [r["status"] for r in logged_rows(tmp_path / "evaluations.jsonl") if tuple(r["key"]) == key] == [
        "skipped",
        "ok",
    ]


@pytest.mark.parametrize("max_timeouts", [0, None])
def test_a_disabled_breaker_lets_every_evaluation_time_out(store, monkeypatch, max_timeouts):
    monkeypatch.setenv("FAKE_HANG", "1")
    with registered("fake_hangs") as infos:
        metrics = {"fake_hangs": (infos["fake_hangs"], {})}
        out = run_jobs(hang_jobs(4), store, metrics, workers=1, timeout=1, max_timeouts=max_timeouts, progress=False)
    assert [o.status for o in out.values()] == ["timeout"] * 4


def test_the_timeout_count_is_configurable(store, monkeypatch):
    assert (
        engine_options(EngineSettings.of(OmegaConf.create({"engine": {}})))["max_timeouts"] == DEFAULT_MAX_TIMEOUTS == 3
    )
    assert [
        engine_options(EngineSettings.of(OmegaConf.create({"engine": {"max_timeouts": v}})))["max_timeouts"]
        for v in (5, 1, 0, None)
    ] == [5, 1, None, None]
    monkeypatch.setenv("FAKE_HANG", "1")
    with registered("fake_hangs") as infos:
        metrics = {"fake_hangs": (infos["fake_hangs"], {})}
        out = run_jobs(hang_jobs(4), store, metrics, workers=1, timeout=1, max_timeouts=1, progress=False)
    statuses = [o.status for o in out.values()]
    assert statuses[0] == "timeout" and statuses.count("skipped") >= 2, statuses
    assert all("timed out once" in o.error for o in out.values() if o.status == "skipped")


def test_a_last_line_without_its_newline_is_recomputed_not_lost(store, tmp_path):
    """A full disk can cut a line just before its newline: the line parses, but appending after it would
    glue the next line on, so it is not counted done and a rerun writes it again."""
    path = tmp_path / "evaluations.jsonl"
    jobs = jobs_for(["chi"])
    metrics = {"chi": (get_metric("chi"), {})}
    run_jobs(jobs, store, metrics, result_log=ResultLog(path, {"run": 1}), progress=False)
    path.write_bytes(path.read_bytes()[:-1])  # the last evaluation's newline never reached the disk
    out = run_jobs(jobs, store, metrics, result_log=ResultLog(path, {"run": 1}), progress=False)
    assert out[jobs[-1].key].attempts == 1
    assert path.read_bytes().endswith(b"\n")
    assert sorted(tuple(r["key"]) for r in logged_rows(path)) == sorted(j.key for j in jobs)


def test_a_line_cut_short_by_a_full_disk_is_taken_back(store, tmp_path, monkeypatch):
    """A fake os.write that writes part of a line and then reports a full disk: the evaluation log ends
    with its last whole line, and the error names the log."""
    import errno
    import os

    from textmetric_bench.engine import result_log as result_log_module
    from textmetric_bench.errors import StorageError

    path = tmp_path / "evaluations.jsonl"
    jobs = jobs_for(["chi"])
    metrics = {"chi": (get_metric("chi"), {})}
    real_write, calls = os.write, Counter()

    def fake_write_fills_the_disk(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:  # the header and one line went through; the next one is cut in two
            return real_write(fd, data[: len(data) // 2])
        if calls["n"] > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    class FakeOsWithAFillingDisk:  # os for the evaluation log only: the pool's own pipes keep the real one
        def __getattr__(self, name):
            return fake_write_fills_the_disk if name == "write" else getattr(os, name)

    monkeypatch.setattr(result_log_module, "os", FakeOsWithAFillingDisk())
    with pytest.raises(StorageError, match="evaluations.jsonl"):
        run_jobs(jobs, store, metrics, result_log=ResultLog(path, {"run": 1}), progress=False)
    assert path.read_bytes().endswith(b"\n") and len(logged_rows(path)) == 1
    monkeypatch.undo()
    out = run_jobs(jobs, store, metrics, result_log=ResultLog(path, {"run": 1}), progress=False)
    assert [o.attempts for o in out.values()] == [1] * len(jobs) and len(logged_rows(path)) == len(jobs)


def test_a_similarity_with_no_complete_repetition_keeps_its_kind_in_its_row(tmp_path):
    """A failed similarity that no measure carries is still named "(similarity, negated)", from the run's
    orientation, in table3.md and table3.csv."""
    evaluations = pd.DataFrame(
        {
            "metric": ["sim"] * 4 + ["ok"] * 4,
            "repetition": [0, 0, 1, 1] * 2,
            "error": ["ValueError: bad", "", "", "ValueError: bad"] + [""] * 4,
            "attempts": [1] * 8,
        }
    )
    measures = pd.DataFrame(
        {"metric": ["ok", "ok"], "repetition": [0, 1], "A": [0.8, 0.7], "orientation": ["distance"] * 2}
    )
    failures = failure_summary(evaluations)
    kinds = {"sim": "similarity", "ok": "distance"}
    paths = write_tables(measures, tmp_path, failures=failures, repetitions=2, orientation=kinds)
    body = paths["table3_md"].read_text()
    assert "| sim (similarity, negated) | 0 of 2; 2 of 4 evaluations failed |" in body
    assert "A metric marked (similarity, negated) is a similarity" in body
    table = pd.read_csv(paths["table3_csv"], index_col="metric")
    assert table.loc["sim", "orientation"] == "similarity" and table.loc["ok", "orientation"] == "distance"
    plain = write_tables(measures, tmp_path / "plain", failures=failures, repetitions=2)["table3_md"].read_text()
    assert "| sim | 0 of 2" in plain  # without the run's orientation, nothing is claimed
    from textmetric_bench.measures.summaries import summarise_measures
    from textmetric_bench.reports.html.tables import table3_html
    from textmetric_bench.reports.tables.table3_markdown import failed_counts

    page = table3_html(summarise_measures(measures), {}, {}, "", failed_counts(failures), kinds)
    assert "<th>sim (similarity, negated) <span class=failed" in page and "<th>ok</th>" in page


def test_a_failed_metric_row_sits_between_the_bounds_and_the_caption_names_only_bounds_drawn(tmp_path):
    """A metric with no complete repetition is added to the tables after the others: it once landed below the floor
    (chance) in table3.md, table3.csv and the report, which promise the bounds as the first and last rows. A table
    without bounds does not speak of them."""
    from textmetric_bench.measures.summaries import summarise_measures
    from textmetric_bench.reports.html.tables import table3_html
    from textmetric_bench.reports.tables.table3_markdown import failed_counts

    evaluations = pd.DataFrame(
        {
            "metric": ["broken"] * 2 + ["chance"] * 2 + ["oracle"] * 2 + ["ok"] * 2,
            "repetition": [0, 1] * 4,
            "error": ["ValueError: bad"] * 2 + [""] * 6,
            "attempts": [1] * 8,
        }
    )
    measures = pd.DataFrame(
        {
            "metric": ["chance", "chance", "oracle", "oracle", "ok", "ok"],
            "repetition": [0, 1] * 3,
            "A": [0.5, 0.5, 1.0, 1.0, 0.8, 0.7],
            "orientation": ["distance"] * 6,
        }
    )
    failures = failure_summary(evaluations)
    paths = write_tables(measures, tmp_path, failures=failures, repetitions=2)
    rows = [line.split("|")[1].strip() for line in paths["table3_md"].read_text().splitlines() if line.startswith("| ")]
    assert rows[2:] == ["ceiling (oracle)", "ok", "broken", "floor (chance)"]  # rows[:2]: the header and its rule
    assert list(pd.read_csv(paths["table3_csv"])["metric"]) == ["oracle", "ok", "broken", "chance"]
    page = table3_html(summarise_measures(measures), {}, {}, "", failed_counts(failures))
    heads = [page.index(f"<th>{name}") for name in ("ceiling (oracle)", "ok", "broken", "floor (chance)")]
    assert heads == sorted(heads) and "are bounds, not ranked" in page
    plain = table3_html(summarise_measures(measures[measures["metric"] == "ok"]), {}, {})
    assert "bound" not in plain and "oracle" not in plain
