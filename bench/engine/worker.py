"""What runs inside an evaluation worker process (started by ``textmetric_bench.engine.pool``).

The initializer opens the run's corpus store from disk and unpickles each metric on its own,
so a plugin that cannot be imported in a worker fails its own evaluations, not the pool.
The first evaluation of each metric in a worker is repeated when it was quick, so one-time
costs (lazy imports, thread pools) do not count in the metric's time (T); a slow first
call (over ``WARM_UP_SECONDS``, or a quarter of the time limit) is kept as it is, since a
repetition would cost too much and one-time costs are small beside it. Before the repetition the
shared preparations that the first call computed are dropped from the worker's memo, so they are
computed again warm: their recorded cost, charged to every later evaluation that reuses them
(``textmetric_bench.api.sharing``), holds no one-time costs either. The repetition's seconds are its own
compute plus the full cost of the preparations it used, as for any evaluation.
A worker of a run that has a log file writes everything it prints there (``textmetric_bench.console``).

A worker keeps the memory its evaluations free for the next ones (``keep_freed_memory``): with
glibc's defaults, a fresh process returns freed arrays to the system after nearly every evaluation
and takes page faults to get them back, which made a KSC study's metrics 15-30% slower in a worker
than the same calls in a long-lived process (0.9 million page faults against 62,000).
The price: a worker's resident size stays near its peak until the run ends.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import time
from contextlib import ExitStack

from textmetric_bench.engine.jobs import ERROR, Job, Outcome, evaluate, failure, raised
from textmetric_bench.engine.store import CorpusStore

WARM_UP_SECONDS = 2.0
#: glibc malloc: blocks below MMAP_THRESHOLD_MB come from the heap instead of a fresh mapping each (glibc's
#: default: 128 KiB, raised up to 32 MiB as large blocks are freed), and up to TRIM_THRESHOLD_MB of free
#: memory at the top of the heap stays with the process. Above 32 MiB matters: the robustness grid's
#: CLASSIFIER kernels (up to 184 MiB) and PR/DC products (72 MiB) were faulted in afresh at every
#: evaluation, a fifth of CLASSIFIER's time there.
MMAP_THRESHOLD_MB = 512
TRIM_THRESHOLD_MB = 1024

_state: dict = {}


def initialize(
    store_dir,
    pickled_metrics: dict,
    blas_threads: int,
    context,
    timeout,
    log_path=None,
    environment: dict | None = None,
) -> None:
    """Pool initializer: never raises (a raising initializer would make the pool respawn forever).

    With ``log_path`` (the run's log file), the worker's output and warnings go there, not to the console.
    ``environment``: the parent's environment variables, which a worker forked from a forkserver would
    otherwise take from the server's start (``textmetric_bench.engine.pool.worker_context``).
    """
    from threadpoolctl import threadpool_limits

    from textmetric_bench.api.context import use_context
    from textmetric_bench.api.sharing import sharing
    from textmetric_bench.console import send_process_output_to

    _state.clear()
    _state.update(metrics={}, broken={}, warm=set(), timeout=timeout)
    keep_freed_memory()
    if environment is not None and environment != os.environ:
        os.environ.clear()
        os.environ.update(environment)
    try:
        if log_path is not None:
            send_process_output_to(log_path)
        scope = ExitStack()
        scope.enter_context(use_context(context))
        scope.enter_context(threadpool_limits(blas_threads, user_api="blas"))
        _state["memo"] = scope.enter_context(sharing())
        _state["scope"] = scope  # lives as long as the worker
        _state["store"] = CorpusStore.open(store_dir) if store_dir is not None else None
    except BaseException as exc:  # reported by ping(), which the parent calls first
        _state["init_error"] = f"{type(exc).__name__}: {exc}"
        return
    for name, blob in pickled_metrics.items():
        try:
            _state["metrics"][name] = pickle.loads(blob)
        except BaseException as exc:
            _state["broken"][name] = f"cannot load metric {name!r} in a worker process: {type(exc).__name__}: {exc}"


def keep_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory (module note); False where the C library has no
    ``mallopt`` (macOS, and musl, whose ``mallopt`` does nothing) and nothing was changed."""
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MB << 20)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_MB << 20)
    )


def ping() -> tuple[int, str]:
    """(pid, start error or ""): the parent's check that workers started."""
    return os.getpid(), _state.get("init_error", "")


def run_evaluation(job: Job) -> Outcome:
    """Evaluate one job on the worker's store (see the module docstring for the warm-up)."""
    if job.metric in _state["broken"]:
        return failure(ERROR, _state["broken"][job.metric])
    info, params = _state["metrics"][job.metric]
    try:
        p, q = _state["store"].inputs(info, job.p), _state["store"].inputs(info, job.q)
    except Exception as exc:
        return raised(exc)
    first = job.metric not in _state["warm"]
    memo = _state["memo"]
    before = set(memo.store) if first else set()
    outcome = evaluate(info, params, p, q, seed=job.seed)
    if first:
        _state["warm"].add(job.metric)
        timeout = _state["timeout"]
        limit = min(WARM_UP_SECONDS, timeout / 4) if timeout else WARM_UP_SECONDS
        if not outcome.failed and outcome.seconds < limit:
            memo.forget(set(memo.store) - before)  # computed cold: computed again below
            outcome = evaluate(info, params, p, q, seed=job.seed)
    return outcome


def run_chunk(jobs: list[Job]) -> list[Outcome]:
    """Evaluate consecutive jobs in one task (``textmetric_bench.engine.run.CHUNK_SECONDS``), each as ``run_evaluation``."""
    return [run_evaluation(job) for job in jobs]


def run_prepare(metric_name: str, cids: list[str]) -> Outcome:
    """Call the metric's ``prepare`` hook on every distinct text of corpora ``cids`` (distance 0 when done)."""
    if metric_name in _state["broken"]:
        return failure(ERROR, _state["broken"][metric_name])
    info, params = _state["metrics"][metric_name]
    start = time.perf_counter()
    try:
        info.prepare(_state["store"].texts_of(cids), **params)
    except Exception as exc:
        return raised(exc, time.perf_counter() - start)
    return Outcome(0.0, time.perf_counter() - start)
