"""``run_jobs``: evaluate every job of a run that is not already done, in isolated workers."""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import shutil
import tempfile
from collections import Counter, deque
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from textmetric_bench.api.registry import MetricInfo
from textmetric_bench.console import FILE_ONLY, progress_bar
from textmetric_bench.engine import worker
from textmetric_bench.engine.jobs import CRASH, SKIPPED, TIMEOUT, Job, Outcome, failure
from textmetric_bench.engine.pool import EvaluationPool, outcome_of
from textmetric_bench.engine.result_log import ResultLog, retry_wanted
from textmetric_bench.engine.settings import EngineSettings
from textmetric_bench.engine.store import CorpusStore

log = logging.getLogger(__name__)

#: Defaults of the ``engine`` config block (``EngineSettings``), also used by direct callers.
DEFAULT_TIMEOUT: float = EngineSettings().timeout
DEFAULT_START_TIMEOUT = EngineSettings().start_timeout
DEFAULT_PREPARE_TIMEOUT: float = EngineSettings().prepare_timeout
#: After this many of a metric's evaluations timed out in a run, its remaining ones are skipped.
DEFAULT_MAX_TIMEOUTS: int = EngineSettings().max_timeouts
#: Jobs go to a worker in chunks predicted to take at most CHUNK_SECONDS (each job at the largest
#: T its metric has shown in this run), and at most MAX_CHUNK of them: one message per job cost a
#: KSC study (6,960 evaluations of 1-8 ms each) 1.5-2 s on one core. A metric with no finished
#: evaluation yet, or one whose job timed out or crashed on its own, is sent one job at a time.
CHUNK_SECONDS = 0.25
MAX_CHUNK = 64


def engine_options(engine: EngineSettings, *, progress: bool = True) -> dict:
    """run_jobs keyword arguments from the ``engine`` settings (and the run's ``progress``)."""
    return {
        "workers": engine.worker_count,
        "timeout": engine.seconds(engine.timeout),
        "start_timeout": float(engine.start_timeout),
        "prepare_timeout": engine.seconds(engine.prepare_timeout),
        "max_timeouts": int(engine.max_timeouts) if engine.max_timeouts else None,
        "retry_failed": engine.retry_failed,
        "blas_threads": engine.blas_threads,
        "progress": progress,
    }


def result_log_for(engine: EngineSettings, out_dir: Path | str, fingerprint: Mapping) -> "ResultLog | None":
    """The run directory's evaluation log, unless ``engine.resume`` is false."""
    if not engine.resume:
        return None
    return ResultLog(Path(out_dir) / "evaluations.jsonl", fingerprint)


def run_jobs(
    jobs: Iterable[Job],
    store: CorpusStore,
    metrics: Mapping[str, tuple[MetricInfo, dict]],
    *,
    result_log: ResultLog | None = None,
    workers: int = 1,
    timeout: float | None = DEFAULT_TIMEOUT,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    prepare_timeout: float | None = DEFAULT_PREPARE_TIMEOUT,
    max_timeouts: int | None = DEFAULT_MAX_TIMEOUTS,
    retry_failed: bool = True,
    blas_threads: int = 1,
    progress: bool = True,
    desc: str = "pair evaluations",
    embedder_id: str | None = None,
) -> dict[tuple, Outcome]:
    """Evaluate every job not already done in ``result_log``; return the latest outcome per key.

    Each evaluation runs in one of ``workers`` worker processes and is killed after ``timeout``
    seconds (None: no limit). Once ``max_timeouts`` evaluations of a metric have timed out, its
    remaining ones are not started but recorded as skipped (0 or None: never). A logged evaluation
    that timed out, crashed or was skipped is tried again, one that raised too unless
    ``retry_failed`` is false. A metric's logged attempts count only for its current version (``MetricInfo.version``, plus ``embedder_id`` for metrics of embeddings).
    """
    jobs = list(jobs)
    versions = {
        name: info.version + (f"|{embedder_id}" if info.inputs == "embeddings" and embedder_id else "")
        for name, (info, _) in metrics.items()
    }
    done = result_log.load(versions) if result_log is not None else {}
    todo = [j for j in jobs if j.key not in done or retry_wanted(done[j.key], retry_failed)]
    retried = sum(j.key in done for j in todo)
    if len(jobs) > len(todo) or retried:
        log.info(
            "resuming: %d of %d evaluations already done%s",
            len(jobs) - len(todo),
            len(jobs),
            f"; retrying {retried} that failed" if retried else "",
        )
    bar = progress_bar(len(jobs), initial=len(jobs) - len(todo), desc=desc, unit="evaluation", enabled=progress)
    if result_log is not None and todo:
        result_log.open()
    traced: set[tuple[str, str]] = set()  # (metric, error) whose traceback the log file has

    def record(job: Job, outcome: Outcome) -> None:
        previous = done[job.key].attempts if job.key in done else 0
        outcome = outcome.attempt(previous + (outcome.status != SKIPPED))  # a skipped job was not tried
        done[job.key] = outcome
        if result_log is not None:
            result_log.append(job.key, outcome, versions[job.metric])
        if outcome.failed and outcome.status != SKIPPED:  # the log file only; skips are announced once per metric
            where = ""
            if outcome.traceback:
                where = " (traceback above)" if (job.metric, outcome.error) in traced else f"\n{outcome.traceback}"
                traced.add((job.metric, outcome.error))
            log.warning(
                "metric %s failed on %s (attempt %d): %s%s",
                job.metric,
                job.key,
                outcome.attempts,
                outcome.error,
                where,
                extra=FILE_ONLY,
            )
        bar.update()

    try:
        if todo:
            _evaluate(
                todo,
                store,
                metrics,
                record,
                workers=workers,
                timeout=timeout,
                start_timeout=start_timeout,
                prepare_timeout=prepare_timeout,
                max_timeouts=max_timeouts,
                blas_threads=blas_threads,
            )
    finally:
        bar.close()
        if result_log is not None:
            result_log.close()
    return {j.key: done[j.key] for j in jobs}


def _evaluate(
    todo: Sequence[Job],
    store,
    metrics,
    record,
    *,
    workers,
    timeout,
    start_timeout,
    prepare_timeout,
    max_timeouts,
    blas_threads,
) -> None:
    """Save the store for the workers, run the metrics' prepare steps, then every job."""
    used = {name: metrics[name] for name in dict.fromkeys(j.metric for j in todo)}
    store_dir = Path(tempfile.mkdtemp(prefix="textmetric-store-"))
    pool = None
    try:
        store.save(store_dir)
        pool = EvaluationPool(
            max(1, min(workers, len(todo))),
            store_dir,
            used,
            blas_threads=blas_threads,
            timeout=timeout,
            start_timeout=start_timeout,
        )
        unprepared = _prepare(pool, todo, used, prepare_timeout)
        ready = []
        for job in todo:
            if job.metric in unprepared:
                record(job, unprepared[job.metric])
            else:
                ready.append(job)
        _dispatch(pool, ready, record, timeout=timeout, in_flight=2 * max(1, workers), max_timeouts=max_timeouts)
        pool.close()
        pool = None
    finally:
        if pool is not None:
            pool.stop()
        shutil.rmtree(store_dir, ignore_errors=True)


def _dispatch(
    pool: EvaluationPool,
    jobs: Sequence[Job],
    record,
    *,
    timeout: float | None,
    in_flight: int,
    max_timeouts: int | None = None,
) -> None:
    """Evaluate ``jobs`` in the pool's workers, in their order, ``in_flight`` tasks at a time, each
    task a chunk of consecutive jobs (``CHUNK_SECONDS``); ``record(job, outcome)`` as each chunk ends.

    The time limit holds per evaluation: a chunk has the limit of one evaluation, and a chunk that
    times out, crashes its worker or fails as a whole is run again one job per task, so each of its
    jobs gets its own limit and its own outcome (a job that hangs costs up to twice the limit).
    A metric whose job then times out or crashes on its own is not chunked again in this run.
    Once ``max_timeouts`` of a metric's jobs have timed out on their own (a chunk's timeout is not
    counted: its jobs are rerun alone), its jobs not yet sent are recorded as skipped; those already
    sent run to their end.
    """
    pending = deque((job, False) for job in jobs)  # (job, alone): alone = rerun of a failed chunk
    longest: dict[str, float] = {}  # metric -> its largest T so far (none yet, or inf: sent alone)
    budget = min(CHUNK_SECONDS, timeout / 4) if timeout else CHUNK_SECONDS
    running: dict[cf.Future, list[Job]] = {}
    timeouts: Counter = Counter()  # metric -> its jobs that timed out on their own
    tasks = 0

    def given_up(metric: str) -> bool:
        return max_timeouts is not None and max_timeouts > 0 and timeouts[metric] >= max_timeouts

    def next_chunk() -> list[Job]:
        job, alone = pending.popleft()
        chunk, total = [job], longest.get(job.metric, math.inf)
        while not alone and pending and len(chunk) < MAX_CHUNK and not pending[0][1]:
            total += longest.get(pending[0][0].metric, math.inf)
            if total > budget:
                break
            chunk.append(pending.popleft()[0])
        return chunk

    while pending or running:
        while pending and len(running) < in_flight:
            if given_up(pending[0][0].metric):  # never inside a chunk: its metric's longest T is inf
                job = pending.popleft()[0]
                record(job, skipped_after_timeouts(job.metric, max_timeouts, timeout))
                continue
            chunk = next_chunk()
            running[pool.submit(worker.run_chunk, chunk, timeout=timeout)] = chunk
            tasks += 1
        done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
        for future in done:
            chunk = running.pop(future)
            outcomes = outcome_of(future, timeout)
            if isinstance(outcomes, Outcome):  # the task as a whole failed (time limit, dead worker)
                if len(chunk) > 1:
                    log.info(
                        "a chunk of %d evaluations failed (%s); running them one at a time", len(chunk), outcomes.error
                    )
                    pending.extendleft((job, True) for job in reversed(chunk))
                    continue
                if outcomes.status in (TIMEOUT, CRASH):  # failed on its own: never chunked again
                    longest[chunk[0].metric] = math.inf
                outcomes = [outcomes]
            for job, outcome in zip(chunk, outcomes):
                if not outcome.failed:
                    longest[job.metric] = max(longest.get(job.metric, 0.0), outcome.seconds)
                record(job, outcome)
                if outcome.status == TIMEOUT:  # only a task of one job times out here, never a chunk
                    timeouts[job.metric] += 1
                    if timeouts[job.metric] == max_timeouts:
                        log.warning(
                            "metric %s timed out %d times (engine.max_timeouts): its evaluations not "
                            "yet started are skipped",
                            job.metric,
                            max_timeouts,
                        )
    log.debug("%d evaluations sent to workers in %d tasks", len(jobs), tasks)


def skipped_after_timeouts(metric: str, count: int | None, timeout: float | None) -> Outcome:
    """The outcome of a job not started because its metric timed out ``count`` times (``_dispatch``)."""
    limit = f" at engine.timeout={timeout:g} s" if timeout else ""
    times = "once" if count == 1 else f"{count} times"
    return failure(
        SKIPPED,
        f"skipped: metric {metric} timed out {times} in this run{limit} "
        f"(engine.max_timeouts={count}); rerun in the same run directory to try it again, "
        "after raising engine.timeout or engine.max_timeouts (0 or null: never skip)",
    )


def _prepare(pool: EvaluationPool, todo: Sequence[Job], metrics, prepare_timeout) -> dict[str, Outcome]:
    """Run each ``prepare`` hook in a worker; the failure outcome of each metric whose hook failed."""
    hooked = [name for name, (info, _) in metrics.items() if info.prepare is not None]
    futures = {}
    for name in hooked:
        cids = sorted({cid for j in todo if j.metric == name for cid in (j.p, j.q)})
        futures[pool.submit(worker.run_prepare, name, cids, timeout=prepare_timeout)] = name
    failed = {}
    for name, outcome in pool.outcomes(futures):
        if outcome.failed:
            log.warning(
                "metric %s: its prepare step failed (%s); its evaluations are recorded as failed",
                name,
                outcome.error,
                extra=FILE_ONLY,
            )
            failed[name] = Outcome(
                outcome.distance,
                0.0,
                f"prepare step failed: {outcome.error}",
                outcome.status,
                traceback=outcome.traceback,
            )
        else:
            log.info("metric %s: prepared its texts in %.1f s", name, outcome.seconds)
    return failed
