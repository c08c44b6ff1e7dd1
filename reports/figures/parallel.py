"""A run's figures drawn in worker processes while the caller writes its tables.

matplotlib draws on one core, and the figures of a run do not depend on each other: a KSC run's scatter per metric,
its grid and its radar, the report's heatmap, radars and box plots. ``FigureDrawer`` runs each as a job in up to
``PROCESSES`` processes (no more than the CPUs this process may use, nor than its jobs), started by the
multiprocessing ``context`` its caller gives: a run gives the evaluation workers' forkserver
(``textmetric_bench.engine.pool.worker_context``), which it started once its corpora were built, with ``PRELOAD``
imported, so they start at once. Without a context every figure is drawn in the caller's process, as for a report
built on its own: a process started by multiprocessing imports the caller's script again, which a script without
a main guard does not survive, and a run's workers need that guard anyway. A job is a module-level function and
its arguments (picklable: frames, paths, strings); its return value, or what it raised, comes back through its
future. With one process, or if the pool cannot run a job (it could not start, a process died), the job runs here
instead: the files are the same either way. A run gives its context with a setup (``DrawingProcesses``) that sends
what the processes log or print into the run's log, as the evaluation workers' does: matplotlib's warnings (a font
not found) never reach the console.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Callable, NamedTuple

log = logging.getLogger(__name__)

#: At most this many drawing processes (the machines here have 2 cores); 1 draws everything in this process.
PROCESSES = 2
#: What a forkserver that forks drawing processes should import first: the modules of the jobs, and matplotlib.
PRELOAD = ["textmetric_bench.reports.figures.preload"]


def saved(make: Callable[..., Any], path: Path, *args: Any, **kwargs: Any) -> Path:
    """``save_figure(make(*args, **kwargs), path)``: a job that draws one figure and writes it."""
    from textmetric_bench.reports.figures.drawing import save_figure

    return save_figure(make(*args, **kwargs), path)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _done(fn: Callable[..., Any], args: tuple, kwargs: dict) -> cf.Future:
    """A future holding what ``fn(*args, **kwargs)`` returned or raised, run in this process."""
    future: cf.Future = cf.Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the caller's result() raises it, as a pool's future would
        future.set_exception(exc)
    return future


class DrawingProcesses(NamedTuple):
    """How drawing processes start: ``context`` (a multiprocessing context; None: no process, all drawn in the
    caller's) and ``setup``, a picklable callable each process runs first (a run's sends the process's logging and
    output into the run's log, ``textmetric_bench.console.output_to_run_log``)."""

    context: BaseContext | None
    setup: Callable[[], None] | None = None


class FigureDrawer:
    """``submit`` figure jobs (``jobs``: how many the caller will submit, for the number of processes), drawn in
    processes that ``context`` starts (None: in this process; ``DrawingProcesses``: with a setup run in each);
    each future's ``result()`` is the job's. Use as a context manager: leaving it waits for every job."""

    def __init__(self, jobs: int, context: BaseContext | DrawingProcesses | None = None):
        processes = context if isinstance(context, DrawingProcesses) else DrawingProcesses(context)
        self.processes = min(PROCESSES, _cpus(), jobs) if processes.context is not None else 1
        self.pool: cf.ProcessPoolExecutor | None = None
        self.usable = False  # the pool takes jobs; once it refuses one, later jobs are drawn here
        self.jobs: dict[cf.Future, tuple[Callable[..., Any], tuple, dict]] = {}
        if self.processes > 1:
            try:
                self.pool = cf.ProcessPoolExecutor(
                    self.processes, mp_context=processes.context, initializer=processes.setup
                )
                self.usable = True
            except Exception as exc:  # noqa: BLE001 - drawn here instead
                log.debug("figures drawn in this process: %s", exc)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> cf.Future:
        """Start ``fn(*args, **kwargs)``, in the page's metric order if one is set
        (``textmetric_bench.reports.figures.palette.metric_order``)."""
        from textmetric_bench.reports.figures.palette import PAGE_METRICS, drawn_in_order

        if order := PAGE_METRICS.get():
            fn, args = drawn_in_order, (order, fn, *args)
        if self.usable and self.pool is not None:
            try:
                future = self.pool.submit(fn, *args, **kwargs)
                self.jobs[future] = (fn, args, kwargs)
                return future
            except Exception as exc:  # noqa: BLE001 - a broken pool: this and later jobs are drawn here
                log.debug("figures drawn in this process: %s", exc)
                self.usable = False  # still shut down on leaving, with whatever it started
        return _done(fn, args, kwargs)

    def result(self, future: cf.Future) -> Any:
        """The job's return value (raises what it raised); a job the pool lost is drawn here."""
        try:
            return future.result()
        except BrokenProcessPool as exc:
            log.debug("a figure is drawn in this process: %s", exc)
            fn, args, kwargs = self.jobs[future]
            return _done(fn, args, kwargs).result()

    def __enter__(self) -> FigureDrawer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=exc_info[0] is not None)
