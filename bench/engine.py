"""The evaluation engine: many (metric, corpus pair) evaluations, resumable, isolated and parallel.

Every task reduces to a list of ``Job``s over corpora held in one ``CorpusStore``.
- Resume: each outcome is appended to a JSON-lines log in the run directory (flushed and
  fsynced) as soon as it exists; a rerun in the same directory skips every logged job,
  so a run killed mid-way (even by SIGKILL) recomputes only what is missing.
- Isolation: a metric that raises, returns NaN/inf or a non-number becomes an error
  outcome. With a time limit, evaluations run in worker processes and one that exceeds
  it is killed and recorded; a crashed worker is replaced.
- Parallelism: ``workers`` spawned processes evaluate jobs concurrently. Every job carries
  its own seed, so results do not depend on the number of workers or their order.
- Shared work: per-corpus statistics (``bench.corpus_cache``) are reused across pairs, and a
  metric's ``prepare`` hook sees every text of the run once, before any pair (an LM pass).
- Context: the run context (``bench.context``: cache directory, LM) reaches worker processes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import multiprocessing as mp
import os
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from bench.context import current_context, use_context
from bench.corpus_cache import sharing
from bench.errors import ConfigError
from bench.registry import MetricInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """Evaluate ``metric`` on corpora ``p`` and ``q`` (ids in the store) with ``seed``."""

    key: tuple
    metric: str
    p: str
    q: str
    seed: int


@dataclass(frozen=True)
class Outcome:
    distance: float
    seconds: float
    error: str = ""


class CorpusStore:
    """All texts of a run once (with their embeddings), and each corpus as rows of them."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray | None, members: Mapping[str, Sequence[int]]):
        self.all_texts = list(texts)
        self.all_vectors = vectors
        self.members = {cid: np.asarray(rows, dtype=np.int64) for cid, rows in members.items()}

    @classmethod
    def from_corpora(cls, corpora: Mapping[str, Sequence[str]], embed=None) -> "CorpusStore":
        """Index named text corpora; ``embed(texts) -> array`` is called once on the distinct texts."""
        index: dict[str, int] = {}
        members = {cid: [index.setdefault(t, len(index)) for t in texts] for cid, texts in corpora.items()}
        texts = list(index)
        return cls(texts, embed(texts) if embed is not None else None, members)

    def inputs(self, metric: MetricInfo, cid: str):
        rows = self.members[cid]
        if metric.inputs == "embeddings":
            if self.all_vectors is None:
                raise ConfigError(f"metric {metric.name!r} needs embeddings but none were computed")
            return self.all_vectors[rows]
        return [self.all_texts[r] for r in rows]


def params_digest(params: Mapping) -> str:
    """A short stable id of a metric's parameters, part of each job key."""
    return hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:10]


def evaluate(metric: MetricInfo, params: dict, p, q, *, seed: int) -> tuple[float, float, str]:
    """(distance, seconds, error) of one evaluation; a failure is returned, never raised."""
    start = time.perf_counter()
    try:
        value = metric(p, q, seed=seed, **params)
        seconds = time.perf_counter() - start
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            return math.nan, seconds, f"returned {type(value).__name__}, not a number"
        value = float(value)
        if not math.isfinite(value):
            return math.nan, seconds, f"returned {value}"
        return value, seconds, ""
    except Exception as exc:  # isolate the plugin: record and go on
        return math.nan, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"


def _run_one(job: Job, store: CorpusStore, metrics: Mapping[str, tuple[MetricInfo, dict]]) -> Outcome:
    info, params = metrics[job.metric]
    try:
        p, q = store.inputs(info, job.p), store.inputs(info, job.q)
    except Exception as exc:
        return Outcome(math.nan, 0.0, f"{type(exc).__name__}: {exc}")
    return Outcome(*evaluate(info, params, p, q, seed=job.seed))


def _warm_up(jobs: Sequence[Job], store: CorpusStore, metrics) -> None:
    """One untimed call per metric, so first-call costs (lazy imports) do not count in T."""
    seen = set()
    for job in jobs:
        if job.metric not in seen:
            seen.add(job.metric)
            _run_one(job, store, metrics)


class ResultLog:
    """Append-only JSON-lines log of outcomes; its first line fingerprints the run's corpora."""

    def __init__(self, path: Path | str, fingerprint: Mapping):
        self.path = Path(path)
        self.fingerprint = json.loads(json.dumps(fingerprint, default=str))

    def load(self) -> dict[tuple, Outcome]:
        if not self.path.exists():
            return {}
        done: dict[tuple, Outcome] = {}
        with self.path.open() as fh:
            lines = fh.read().splitlines()
        if not lines:
            return {}
        header = json.loads(lines[0]).get("fingerprint")
        if header != self.fingerprint:
            changed = {k: (header.get(k) if header else None, v) for k, v in self.fingerprint.items()
                       if not header or header.get(k) != v}
            raise ConfigError(
                f"{self.path} holds evaluations of another configuration ({changed}); resume only "
                "with the same settings, or use a new run directory (hydra.run.dir=...)")
        for line in lines[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a kill: recompute it
                continue
            done[tuple(row["key"])] = Outcome(row["distance"] if row["distance"] is not None else math.nan,
                                              row["seconds"], row["error"])
        return done

    def open(self):
        if self.path.exists():  # drop a last line cut short by a kill, so appends start clean
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                with self.path.open("r+b") as fh:
                    fh.truncate(data.rfind(b"\n") + 1)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._fh = self.path.open("a")
        if new:
            self._write({"fingerprint": self.fingerprint})
        return self

    def append(self, key: tuple, outcome: Outcome) -> None:
        distance = outcome.distance if math.isfinite(outcome.distance) else None
        self._write({"key": list(key), "distance": distance, "seconds": outcome.seconds, "error": outcome.error})

    def _write(self, row: dict) -> None:
        self._fh.write(json.dumps(row) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def _worker_main(conn, store, metrics, blas_threads, context):  # pragma: no cover - runs in a child process
    with use_context(context), threadpool_limits(blas_threads, user_api="blas"), sharing():
        _warm_up(conn.recv(), store, metrics)
        conn.send("ready")
        while True:
            job = conn.recv()
            if job is None:
                return
            conn.send(_run_one(job, store, metrics))


class _Pool:
    """Spawned worker processes, each evaluating one job at a time under a deadline."""

    def __init__(self, size, store, metrics, blas_threads, warm_jobs, timeout):
        self.ctx = mp.get_context("spawn")
        self.args = (store, metrics, blas_threads, current_context())
        self.warm_jobs = warm_jobs
        self.ready_limit = 120.0 + (timeout or 0.0) * len(warm_jobs)
        self.idle = [self._start() for _ in range(size)]

    def _start(self, warm: bool = True):
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_main, args=(child, *self.args), daemon=True)
        proc.start()
        child.close()
        parent.send(self.warm_jobs if warm else [])
        try:
            if parent.poll(self.ready_limit) and parent.recv() == "ready":
                return proc, parent
        except (EOFError, OSError):
            pass
        proc.kill()  # a warm-up call hung or crashed the worker: start one that skips it
        proc.join()
        if not warm:
            raise RuntimeError("could not start an evaluation worker process")
        log.warning("a metric's warm-up call hung or crashed a worker; starting workers without warm-up")
        self.warm_jobs = []
        return self._start(warm=False)

    def replace(self, worker) -> None:
        proc, conn = worker
        proc.kill()
        proc.join()
        conn.close()
        self.idle.append(self._start())

    def close(self) -> None:
        for proc, conn in self.idle:
            try:
                conn.send(None)
            except OSError:
                pass
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def engine_options(cfg) -> dict:
    """run_jobs keyword arguments from the ``engine`` config block (and ``progress``)."""
    engine = cfg.get("engine") or {}
    workers = engine.get("workers", 1)
    workers = os.cpu_count() or 1 if workers == "auto" else int(workers)
    timeout = engine.get("timeout")
    return {"workers": workers, "timeout": float(timeout) if timeout else None,
            "blas_threads": int(engine.get("blas_threads", 1)), "progress": bool(cfg.get("progress", True))}


def result_log_for(cfg, out_dir: Path | str, fingerprint: Mapping) -> "ResultLog | None":
    """The run directory's evaluation log, unless ``engine.resume`` is false."""
    engine = cfg.get("engine") or {}
    if not engine.get("resume", True):
        return None
    return ResultLog(Path(out_dir) / "evaluations.jsonl", fingerprint)


def run_jobs(
    jobs: Iterable[Job],
    store: CorpusStore,
    metrics: Mapping[str, tuple[MetricInfo, dict]],
    *,
    result_log: ResultLog | None = None,
    workers: int = 1,
    timeout: float | None = None,
    blas_threads: int = 1,
    progress: bool = True,
    desc: str = "pair evaluations",
) -> dict[tuple, Outcome]:
    """Evaluate every job not already in ``result_log``; return all outcomes by key."""
    jobs = list(jobs)
    done = result_log.load() if result_log is not None else {}
    todo = [j for j in jobs if j.key not in done]
    if done:
        log.info("resuming: %d of %d evaluations already done", len(jobs) - len(todo), len(jobs))
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc=desc, unit="pair", disable=not progress)
    if result_log is not None:
        result_log.open()

    def record(job: Job, outcome: Outcome) -> None:
        done[job.key] = outcome
        if result_log is not None:
            result_log.append(job.key, outcome)
        if outcome.error:
            log.warning("metric %s failed on %s: %s", job.metric, job.key, outcome.error)
        bar.update()

    try:
        prepare_metrics(todo, store, metrics)
        if todo and workers <= 1 and not timeout:
            with threadpool_limits(blas_threads, user_api="blas"), sharing():
                _warm_up(todo, store, metrics)
                for job in todo:
                    record(job, _run_one(job, store, metrics))
        elif todo:
            _run_pool(todo, store, metrics, record, max(1, workers), timeout, blas_threads)
    finally:
        bar.close()
        if result_log is not None:
            result_log.close()
    return {j.key: done[j.key] for j in jobs}


def prepare_metric(info: MetricInfo, params: dict, texts: Sequence[str]) -> float:
    """Call ``info.prepare`` once on every text the metric will see; seconds taken (0 without a hook).

    A failing hook is logged and skipped: the metric's own evaluations then meet the same
    problem and record it, so one broken metric never stops the run.
    """
    if info.prepare is None:
        return 0.0
    start = time.perf_counter()
    try:
        info.prepare(list(texts), **params)
    except Exception as exc:
        log.warning("metric %s: preparing its %d texts failed (%s: %s); its evaluations will report it",
                    info.name, len(texts), type(exc).__name__, exc)
    seconds = time.perf_counter() - start
    log.info("metric %s: prepared %d texts in %.1f s", info.name, len(texts), seconds)
    return seconds


def prepare_metrics(jobs: Sequence[Job], store: CorpusStore, metrics) -> dict[str, float]:
    """``prepare_metric`` for each metric of ``jobs`` with the texts of its corpora; seconds per metric."""
    seconds = {}
    for name in dict.fromkeys(job.metric for job in jobs):
        info, params = metrics[name]
        if info.prepare is not None:
            rows = {int(r) for job in jobs if job.metric == name for cid in (job.p, job.q)
                    for r in store.members[cid]}
            seconds[name] = prepare_metric(info, params, [store.all_texts[r] for r in sorted(rows)])
    return seconds


def _run_pool(todo, store, metrics, record, workers, timeout, blas_threads) -> None:
    warm = []
    for job in todo:  # the first job of each metric warms up every worker
        if job.metric not in {w.metric for w in warm}:
            warm.append(job)
    pool = _Pool(min(workers, len(todo)), store, metrics, blas_threads, warm, timeout)
    pending = deque(todo)
    busy: dict = {}  # conn -> (worker, job, start)
    try:
        while pending or busy:
            while pending and pool.idle:
                worker = pool.idle.pop()
                job = pending.popleft()
                worker[1].send(job)
                busy[worker[1]] = (worker, job, time.monotonic())
            limit = None
            if timeout:
                limit = max(0.0, min(start + timeout for _, _, start in busy.values()) - time.monotonic())
            for conn in wait(list(busy), timeout=limit):
                worker, job, start = busy.pop(conn)
                try:
                    outcome = conn.recv()
                    pool.idle.append(worker)
                except (EOFError, OSError):
                    worker[0].join(5)
                    code = worker[0].exitcode
                    outcome = Outcome(math.nan, time.monotonic() - start, f"worker process died (exit code {code})")
                    pool.replace(worker)
                record(job, outcome)
            if timeout:
                now = time.monotonic()
                for conn, (worker, job, start) in list(busy.items()):
                    if now - start > timeout:
                        del busy[conn]
                        pool.replace(worker)
                        record(job, Outcome(math.nan, now - start, f"timed out after {timeout:g} s"))
    finally:
        for worker, _, _ in busy.values():
            worker[0].kill()
        pool.close()
