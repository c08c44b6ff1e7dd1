"""Evaluation worker processes: pebble's ProcessPool, with a time limit per task and a
replacement for every worker that hangs, crashes or is killed.

pebble is made for exactly this (per-task timeouts that kill and replace the worker,
``ProcessExpired`` for a worker that died); loky's executor replaces workers too but has no
per-task time limit, and the standard library's pool breaks as a whole when a worker dies.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import multiprocessing as mp
import os
import pickle
import signal
from typing import Callable, Iterator, Mapping, Sequence

from pebble import ProcessExpired, ProcessPool

from textmetric_bench.api.context import current_context
from textmetric_bench.console import log_file
from textmetric_bench.engine import worker
from textmetric_bench.engine.jobs import CRASH, ERROR, TIMEOUT, Outcome, failure
from textmetric_bench.errors import BenchError

log = logging.getLogger(__name__)


class WorkerStartError(BenchError):
    """The evaluation worker processes could not start."""


def _pickled(metrics: Mapping) -> dict[str, bytes]:
    """Each (MetricInfo, params) pickled on its own; cloudpickle sends functions defined in a
    notebook, a script's ``__main__`` or inside another function by value."""
    import cloudpickle

    out = {}
    for name, pair in metrics.items():
        try:
            out[name] = cloudpickle.dumps(pair)
        except Exception as exc:  # e.g. a metric defined inside a function: the worker reports it per job
            out[name] = pickle.dumps(_Unpicklable(name, f"{type(exc).__name__}: {exc}"))
    return out


class _Unpicklable:
    """Stands for a metric that could not be sent to workers; loading it raises that error."""

    def __init__(self, name: str, error: str):
        self.name, self.error = name, error

    def __reduce__(self):
        return (_raise_unpicklable, (self.name, self.error))


def _raise_unpicklable(name, error):
    raise TypeError(f"metric {name!r} cannot be sent to a worker process ({error}); define it at module level")


#: What a forkserver imports once, before it forks any worker: the engine's worker module and the built-in metrics
#: (textmetric_bench.engine.preload), and the libraries they import lazily (faiss, sklearn's SVM).
PRELOAD = ["textmetric_bench.engine.preload", "faiss", "sklearn.svm", "sklearn.model_selection"]


def worker_context(preload: Sequence[str] = ()) -> mp.context.BaseContext:
    """How workers start: forked from a forkserver where the platform has one, else spawned.

    A spawned worker imports numpy, scipy, sklearn and the metrics itself, 1.3 s before its first
    evaluation, and a KSC study starts one pool per run. The forkserver is started once per parent
    process with ``PRELOAD`` imported (a module that fails to import is skipped), and forks each
    worker from that state in milliseconds, also the replacement of a worker that timed out. Like a
    spawned one, a forked worker gets the parent's ``sys.path`` and working directory at its start,
    and the initializer gives it the parent's environment variables (the server keeps those of its
    own start). Fork is not used: it would copy the parent's threads' locks (torch, tqdm) mid-state.
    """
    if "forkserver" in mp.get_all_start_methods():
        context = mp.get_context("forkserver")
        context.set_forkserver_preload([*PRELOAD, *preload])  # read when the server starts; later calls change nothing
        return context
    return mp.get_context("spawn")


def start_worker_server(preload: Sequence[str] = ()) -> None:
    """Start the forkserver now, if workers fork from one (``worker_context``): its ``PRELOAD`` imports, and the
    modules ``preload`` names (1.4 s on our AMD EPYC), then overlap what the caller does before its first pool, such
    as embedding, instead of delaying the first evaluation. Returns at once; best effort (the first pool starts it
    otherwise)."""
    context = worker_context(preload)
    if context.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    try:
        with sigint_ignored():  # inherited: a Ctrl-C while the server imports multiprocessing gives no traceback
            forkserver.ensure_running()
    except Exception as exc:  # noqa: BLE001 - the pool starts it again and says what is wrong
        log.debug("the worker server was not started ahead: %s", exc)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process, and so in a process it starts meanwhile (an ignored signal stays ignored
    across exec), until its own handler takes over (``textmetric_bench.engine.preload``). Outside the main thread,
    where a handler cannot be set, nothing changes."""
    try:
        before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


class EvaluationPool:
    """``size`` worker processes holding the store at ``store_dir`` and the run's metrics."""

    def __init__(
        self, size: int, store_dir, metrics: Mapping, *, blas_threads: int, timeout: float | None, start_timeout: float
    ):
        self.timeout = timeout
        self._restore_start_method = _standard_start_method()
        self.pool = ProcessPool(
            max_workers=size,
            initializer=worker.initialize,
            context=worker_context(),
            initargs=(
                str(store_dir) if store_dir else None,
                _pickled(metrics),
                blas_threads,
                current_context(),
                timeout,
                _log_path(),
                dict(os.environ),
            ),
        )
        pings = [self.pool.schedule(worker.ping) for _ in range(size)]
        done, waiting = cf.wait(pings, timeout=start_timeout)
        if waiting:
            self.stop()
            raise WorkerStartError(
                f"{len(waiting)} of {size} evaluation worker processes did not start within {start_timeout:g} s "
                "(engine.start_timeout); a metric plugin that hangs on import, or a machine out of memory, "
                "can cause this: raise engine.start_timeout or check the plugins"
            )
        for future in done:
            try:
                _, error = future.result()
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            if error:
                self.stop()
                raise WorkerStartError(f"an evaluation worker process could not start: {error}")

    def submit(self, fn: Callable, *args, timeout: float | None = None) -> cf.Future:
        return self.pool.schedule(fn, args=args, timeout=timeout)

    def outcomes(self, futures: Mapping[cf.Future, object]) -> Iterator[tuple[object, Outcome]]:
        """(tag, outcome) of each future as it completes; a timeout or a dead worker becomes an outcome."""
        for future in cf.as_completed(futures):
            yield futures[future], outcome_of(future, self.timeout)

    def close(self) -> None:
        self.pool.close()
        self.pool.join()
        self._restore_start_method()

    def stop(self) -> None:
        self.pool.stop()
        self.pool.join()
        self._restore_start_method()


def _log_path() -> str | None:
    """The run's log file, where the workers write what they print (None: they keep the parent's stderr)."""
    path = log_file()
    return str(path) if path is not None else None


def _standard_start_method() -> Callable[[], None]:
    """Inside a joblib/loky worker the default start method is 'loky', which a spawned child
    cannot set up ("cannot find context for 'loky'"); use 'spawn' while the pool lives.
    Returns the function that restores the previous method."""
    method = mp.get_start_method(allow_none=True)
    if method in (None, "fork", "spawn", "forkserver"):
        return lambda: None
    mp.set_start_method("spawn", force=True)
    return lambda: mp.set_start_method(method, force=True)


def outcome_of(future: cf.Future, timeout: float | None):
    """The future's result (an Outcome, or a chunk's list of them), or the failure Outcome that ended
    it (time limit, dead worker, pool error)."""
    try:
        result = future.result()
    except TimeoutError:
        return failure(
            TIMEOUT, f"timed out after {timeout:g} s; its worker process was killed and replaced", float(timeout or 0.0)
        )
    except ProcessExpired as exc:
        return failure(CRASH, f"worker process died ({describe_exit(exc.exitcode)}); it was replaced")
    except Exception as exc:
        return failure(ERROR, f"{type(exc).__name__}: {exc}")
    return result


def describe_exit(code: int | None) -> str:
    """'exit code 3', or 'killed by SIGKILL (out of memory?)' for a negative exit code."""
    if code is None or code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    hint = ", perhaps by the out-of-memory killer" if name == "SIGKILL" else ""
    return f"killed by {name}{hint}"
