"""A run directory speaks for the run whose results it holds: one run writes into it at a time, and a run refused
there leaves it as it was.

Hydra writes the composed config into ``<run dir>/.hydra/`` as a run starts, before the harness can look at what
the directory holds; a run then refused there (its settings are not those of the evaluations already logged, or
another run is writing into the directory now) would leave its own config and exit status beside another run's
results, and ``failed_corpora`` would rebuild the wrong corpora from them. So the command line reads the
directory's record before Hydra starts (:meth:`RunRecord.read`) and puts it back on a refusal
(:meth:`RunRecord.restore`); the Python API reads it before writing its own config, which it does only once it
holds the directory's lock, and puts it back the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from textmetric_bench.errors import ConfigError
from textmetric_bench.reports.sweep.jobs import STATUS_FILE

#: The files that say which run a directory's results are from: Hydra's record of the config, and the exit status.
RECORD_FILES = (".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml", STATUS_FILE)
#: The log file of a run the Python API starts (textmetric_bench.session).
API_LOG_FILE = "session.log"
#: The log files of a run directory (the command line's, conf/hydra/job_logging/bench.yaml, and the API's): one a
#: refused run started is removed with it.
LOG_FILES = ("__main__.log", API_LOG_FILE)
#: Held by the run writing into the directory, for as long as it runs (the operating system frees it when the
#: process ends, however it ends).
LOCK_FILE = ".run.lock"


@dataclass(frozen=True)
class RunRecord:
    """The record files of an existing run directory, as they were (None: absent)."""

    directory: Path
    files: Mapping[str, bytes | None]
    absent_logs: tuple[str, ...] = ()

    @classmethod
    def read(cls, directory: Path | str) -> "RunRecord | None":
        """The record of ``directory``; None when it is not a directory (a run there makes it new)."""
        directory = Path(directory).absolute()
        if not directory.is_dir():
            return None
        files: dict[str, bytes | None] = {}
        for name in RECORD_FILES:
            try:
                files[name] = (directory / name).read_bytes()
            except FileNotFoundError:
                files[name] = None
            except OSError:
                return None  # unreadable: nothing could be put back, so nothing is taken
        absent_logs = tuple(name for name in LOG_FILES if not (directory / name).exists())
        return cls(directory, files, absent_logs)

    @classmethod
    def read_jobs(cls, sweep_dir: Path | str) -> list["RunRecord"]:
        """The records of the job directories under ``sweep_dir`` (those with Hydra's config or an exit status), for
        a sweep started again there: a job refused in one (another job's settings) puts its record back."""
        root = Path(sweep_dir).absolute()
        if not root.is_dir():
            return []
        found = {c.parent.parent for c in root.glob("**/.hydra/config.yaml")}
        found |= {s.parent for s in root.glob(f"**/{STATUS_FILE}")}
        return [record for directory in sorted(found) if (record := cls.read(directory)) is not None]

    def restore(self) -> None:
        """Put the record back as it was read: files rewritten, files that were absent removed, and a log file that
        was absent removed (a log that was there keeps the refused run's lines: they record the attempt). Best
        effort (a disk that refuses it was reported already)."""
        for name in self.absent_logs:
            try:
                (self.directory / name).unlink(missing_ok=True)
            except OSError:
                pass
        for name, content in self.files.items():
            path = self.directory / name
            try:
                if content is None:
                    path.unlink(missing_ok=True)
                elif not path.is_file() or path.read_bytes() != content:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(content)
            except OSError:
                pass


class DirectoryBusy(ConfigError):
    """Another run is writing into the run directory now."""


@contextmanager
def run_lock(directory: Path | str, key: str = "hydra.run.dir") -> Iterator[None]:
    """Hold ``<directory>/.run.lock`` for the block; ConfigError at once when another run holds it (two runs writing
    into one directory would log every evaluation twice and leave one run's config beside the other's results):
    DirectoryBusy, a ConfigError."""
    directory = Path(directory)
    lock = FileLock(directory / LOCK_FILE)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise DirectoryBusy(
            f"another run is writing into {directory} now (it holds {LOCK_FILE}); wait for it to end, or give this "
            f"run a directory of its own ({key}=...)"
        ) from None
    except OSError:
        yield  # a directory that cannot hold the lock cannot hold results either: the run reports that itself
        return
    try:
        yield
    finally:
        lock.release()
