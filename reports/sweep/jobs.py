"""The jobs of a sweep as their directories record them: the exit status every run writes (``exit_status.json``:
status, reason, overrides) and Hydra's ``.hydra/`` files. Read by the sweep's last lines
(``textmetric_bench.running.exit_status``), its table (``aggregate``) and its report, so each names the same jobs
the same way: by the overrides that set a job apart from the sweep's other jobs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml

STATUS_FILE = "exit_status.json"
K = TypeVar("K")
#: The status of a job that left none: Python's own exit status for an unexpected error.
NO_STATUS = 1


@dataclass(frozen=True)
class JobStatus:
    """One job: its directory, exit status and reason, and the overrides it ran with."""

    directory: Path
    code: int
    reason: str
    overrides: list[str]


def read_jobs(
    root: Path, fresh: Callable[[Path], bool] = lambda path: True, known: Mapping[Path, JobStatus] | None = None
) -> list[JobStatus]:
    """Every job directory at or below ``root`` (one with Hydra's config or an exit status; ``fresh`` picks the files
    that count, e.g. those written since a sweep began), in job order; a job that left no status counts as failed.
    ``known``: statuses by directory that its files do not say (a job refused in a directory that kept an earlier
    job's record), each taking its directory's place."""
    root = Path(root)
    known = known or {}
    directories = {c.parent.parent for c in root.glob("**/.hydra/config.yaml") if fresh(c)}
    directories |= {s.parent for s in root.glob(f"**/{STATUS_FILE}") if fresh(s)}
    jobs = [job for directory, job in known.items() if directory.is_relative_to(root)]
    for directory in directories - set(known):
        status = directory / STATUS_FILE
        try:
            if not fresh(status):
                raise FileNotFoundError(status)
            data = json.loads(status.read_text())
            jobs.append(
                JobStatus(
                    directory, int(data["exit_status"]), str(data.get("reason", "")), list(data.get("overrides") or [])
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            jobs.append(
                JobStatus(
                    directory,
                    NO_STATUS,
                    f"no exit status recorded (it crashed, was stopped, or is still running; see its log in {directory})",
                    _overrides_of(directory),
                )
            )
    return sorted(jobs, key=lambda job: _job_order(root, job.directory))


def _overrides_of(directory: Path) -> list[str]:
    try:
        return list(yaml.safe_load((directory / ".hydra" / "overrides.yaml").read_text()) or [])
    except Exception:  # noqa: BLE001 - only for the message
        return []


def _job_order(root: Path, directory: Path) -> tuple:
    parts = directory.relative_to(root).parts
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def set_apart(jobs: list[JobStatus]) -> dict[Path, str]:
    """Each job's overrides that not every job of ``jobs`` shares (all of them for a single job), as one string."""
    return apart({job.directory: job.overrides for job in jobs})


def apart(overrides: Mapping[K, Sequence[str]]) -> dict[K, str]:
    """Per key, its overrides that not every key's share, as one string: what sets a job (a run) apart from the
    others. A single key, or one that shares all its overrides, gets them all ("(no overrides)" for none)."""
    shared = set.intersection(*(set(o) for o in overrides.values())) if len(overrides) > 1 else set()
    return {
        key: " ".join(o for o in mine if o not in shared) or " ".join(mine) or "(no overrides)"
        for key, mine in overrides.items()
    }


def left_out_lines(root: Path, jobs: list[JobStatus] | None = None) -> list[str]:
    """One line per job under ``root`` (``jobs``: as ``read_jobs`` read them already) that left no measures (refused,
    failed or stopped): which job, its directory, exit status and reason. [] when every job has measures."""
    jobs = read_jobs(root) if jobs is None else jobs
    apart = set_apart(jobs)
    return [
        f"job {job_name(root, job.directory)} ({apart[job.directory]}): exit status {job.code}, {job.reason}"
        for job in jobs
        if not (job.directory / "measures.csv").is_file()
    ]


def job_name(root: Path, directory: Path) -> str:
    """A job's directory as the sweep names it: relative to the sweep (``3``), or the run's own path."""
    relative = Path(directory).relative_to(root)
    return str(relative) if relative.parts else str(directory)
