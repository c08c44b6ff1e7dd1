"""The exit status of a run (``textmetric_bench.errors``: ``EXIT_*``), and of a sweep: its worst job's.

Every run writes its status into ``<run dir>/exit_status.json``. A sweep's jobs may run in other processes
(joblib, submitit, Ray), so the process that launched them learns their outcomes from those files:
:class:`SweepExitStatus`, a Hydra callback (``hydra.callbacks`` in ``conf/config.yaml``), notes the sweep
directory and the time the sweep started, and :func:`sweep_exit_status` reads the job directories written
since then. A job that left no status (it crashed, or was killed) counts as failed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from hydra.experimental.callback import Callback

from textmetric_bench.console import log_file
from textmetric_bench.errors import EXIT_METRIC_FAILED, EXIT_OK, EXIT_REGRESSION, worst_exit_status
from textmetric_bench.measures.failures import failure_counts
from textmetric_bench.reports.sweep.jobs import STATUS_FILE, JobStatus, read_jobs, set_apart

#: A job directory counts as this sweep's when Hydra wrote its config at most this long before the sweep began
#: (file times on another machine of a cluster may lag a little).
CLOCK_SLACK_SECONDS = 2.0
_sweep: dict[str, object] = {}


def run_exit_status(result, allow_metric_failures: bool) -> tuple[int, str]:
    """(status, reason) of a finished task: the gate's verdict first, then any metric of this run that failed, or
    metric plugin that failed to import (its metrics could not run)."""
    this_run = set(result.info.get("metrics_this_run") or result.failures)
    failed = [name for name in result.failures if name in this_run]
    if getattr(result, "passed", True) is False:
        return EXIT_REGRESSION, "the regression gate failed (check.md)"
    plugins = [record.get("plugin", module) for module, record in (result.info.get("plugin_failures") or {}).items()]
    said = "; ".join(
        ([f"metric{'s' if len(failed) > 1 else ''} {', '.join(failed)} failed"] if failed else [])
        + ([f"metric plugin{'s' if len(plugins) > 1 else ''} {', '.join(plugins)} failed to import"] if plugins else [])
    )
    if said and not allow_metric_failures:
        return EXIT_METRIC_FAILED, said
    return EXIT_OK, f"{said} (allowed by allow_metric_failures)" if said else ""


def plugin_failure_line(module: str, record: Mapping, log: Path | None = None) -> str:
    """The console line of a metric plugin that failed to import (``record``: its entry of ``plugin_failures``)."""
    return (
        f"metric plugin {record['plugin']}{'' if record['plugin'] == module else f' ({module})'} FAILED to "
        f"import: {record['error']}"
        + (f"; left out: {', '.join(record['withdrawn'])}" if record["withdrawn"] else "")
        + (f"; traceback in {log}" if log else "")
    )


def failure_lines(result, out_dir: Path) -> list[str]:
    """One console line per failing metric: how many of its evaluations failed, the first reason, and where
    the details are (``failures.csv``, with tracebacks, and the run's log)."""
    counts, log = failure_counts(result.distances), log_file()
    details = [str(p) for p in (result.files.get("failures"), log) if p is not None]
    where = f"; details: {' and '.join(details)}" if details else ""
    lines = [
        plugin_failure_line(module, record, log)
        for module, record in (result.info.get("plugin_failures") or {}).items()
    ]
    for name, failure in result.failures.items():
        if name in counts:
            failed, total, reason = counts[name]
            failure = f"{failed} of {total} evaluations failed, first: {reason}"
        lines.append(f"metric {name} FAILED: {failure}{where}")
    return lines


def write_run_status(out_dir: Path, code: int, reason: str, overrides: list[str]) -> None:
    """``<out_dir>/exit_status.json``; best effort (a directory that cannot be written was reported already)."""
    path = out_dir / STATUS_FILE
    tmp = path.with_name(f".{STATUS_FILE}.{os.getpid()}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"exit_status": code, "reason": reason, "overrides": overrides}) + "\n")
        tmp.replace(path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)  # a disk that filled up leaves no half-written status
        except OSError:
            pass


class SweepExitStatus(Callback):
    """Notes, in the process that launches a sweep, its directory and when it started."""

    def on_multirun_start(self, config, **kwargs) -> None:
        _sweep.update(dir=Path(str(config.hydra.sweep.dir)).absolute(), start=time.time())


def sweep_directory() -> Path | None:
    """The directory of the sweep this process launched, or None when it launched none."""
    return Path(_sweep["dir"]) if "dir" in _sweep else None


#: Jobs of the sweep this process launched that were refused in a directory holding an earlier job's results, which
#: keeps its record (``textmetric_bench.running.run_record``): their status is known here only.
_refused: dict[Path, JobStatus] = {}


def refused_job(directory: Path, code: int, reason: str, overrides: list[str]) -> None:
    """Note a job refused in a directory that keeps an earlier job's record, for the sweep's last lines."""
    directory = Path(directory).absolute()
    _refused[directory] = JobStatus(directory, code, reason, overrides)


def sweep_jobs() -> list[JobStatus] | None:
    """The status of every job of the sweep this process launched, by job directory; None when it launched none."""
    if "dir" not in _sweep:
        return None
    since = float(_sweep["start"]) - CLOCK_SLACK_SECONDS
    # not an earlier sweep's job, but this sweep's refused ones whose directories kept an earlier job's record
    return read_jobs(Path(_sweep["dir"]), lambda path: path.stat().st_mtime >= since, known=_refused)


def sweep_exit_status(launcher_status: int) -> tuple[int, list[str]]:
    """(exit status, last lines) of the sweep this process launched, given the status Hydra ended it with."""
    jobs = sweep_jobs() or []
    code = worst_exit_status([launcher_status, *(job.code for job in jobs)])
    failed = [job for job in jobs if job.code != EXIT_OK]
    if not failed:
        said = "its one job" if len(jobs) == 1 else f"all {len(jobs)} jobs"
        return code, ([f"sweep: {said} succeeded ({_sweep['dir']})"] if jobs else [])
    lines = [f"sweep: {len(failed)} of {len(jobs)} jobs failed (exit status {code}; {_sweep['dir']}):"]
    apart = set_apart(jobs)
    for job in failed:  # named by the overrides that set it apart from the sweep's other jobs
        lines.append(f"  job {apart[job.directory]} -> {job.directory}: exit status {job.code}, {job.reason}")
    return code, lines
