"""The run directory's append-only log of evaluations: resume, retries and metric versions.

The first line fingerprints the run (task, corpora, seed, embedder, project version); a log
of another configuration is refused. Every later line is one attempt at one job, flushed and
fsynced as soon as it exists, so a run killed even by SIGKILL loses nothing it finished.
Lines carry the metric's version: on resume, attempts of a metric whose version changed are
set aside (and recomputed), and failed attempts are retried; earlier attempts stay in the file.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import Counter
from pathlib import Path
from typing import Mapping

from textmetric_bench import __version__
from textmetric_bench.engine.jobs import CRASH, ERROR, OK, SKIPPED, TIMEOUT, Outcome
from textmetric_bench.errors import BenchError, ConfigError, StorageError
from textmetric_bench.files import storage_error

#: How a command line run names another run directory, in the refusal of a log of another configuration (a sweep's
#: job says ``hydra.sweep.dir=...``, textmetric_bench.__main__).
NEW_RUN_DIR = "hydra.run.dir=..."

log = logging.getLogger(__name__)


def fingerprint_changes(logged: Mapping | None, current: Mapping) -> dict[str, tuple]:
    """{key: (logged value, current value)} of the fingerprint keys that differ."""
    return {k: (logged.get(k) if logged else None, v) for k, v in current.items() if not logged or logged.get(k) != v}


def logged_fingerprint(path: Path | str) -> dict | None:
    """The fingerprint an evaluation log ``path`` starts with (None: no log, or no header)."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            first = handle.readline()
        return json.loads(first).get("fingerprint") if first.endswith("\n") else None
    except (OSError, ValueError, AttributeError):
        return None


class ResultLog:
    """``<run dir>/evaluations.jsonl``: what ``load`` finds done, what ``append`` adds."""

    def __init__(self, path: Path | str, fingerprint: Mapping):
        self.path = Path(path)
        self.fingerprint = json.loads(json.dumps({**fingerprint, "version": __version__}, default=str))
        self._fh: int | None = None

    def check(self) -> None:
        """Refuse now (ConfigError) a log of another configuration, as ``load`` would: before a run embeds its
        texts, not after."""
        try:
            with self.path.open(encoding="utf-8") as handle:
                first = handle.readline()
            header = json.loads(first) if first.endswith("\n") else None
        except (OSError, ValueError):
            return  # no log, or none ``load`` reads a header from: it says so itself
        if isinstance(header, dict):
            self._refuse_another(header.get("fingerprint"))

    def _refuse_another(self, header: Mapping | None) -> None:
        if header != self.fingerprint:
            changed = fingerprint_changes(header, self.fingerprint)
            raise ConfigError(
                f"{self.path} holds evaluations of another configuration ({changed}); resume only "
                f"with the same settings, or use a new run directory ({NEW_RUN_DIR})"
            )

    def load(self, versions: Mapping[str, str] | None = None) -> dict[tuple, Outcome]:
        """The latest attempt per job key (with the number of attempts), ignoring attempts made
        by another version of their metric (``versions``: metric name -> version)."""
        latest: dict[tuple, Outcome] = {}
        attempts: Counter = Counter()
        stale: Counter = Counter()
        for key, row in self._rows():
            metric = str(key[0])
            if versions is not None and metric in versions and row.get("metric_version") != versions[metric]:
                stale[(metric, row.get("metric_version"))] += 1
                continue
            attempts[key] += row.get("status") != SKIPPED  # a skipped evaluation was never tried
            latest[key] = _outcome(row, attempts[key])
        for (metric, old), count in stale.items():
            log.warning(
                "metric %s changed (version %s, now %s): its %d logged evaluations are recomputed",
                metric,
                old,
                (versions or {}).get(metric),
                count,
            )
        return latest

    def latest_per_metric(self) -> dict[tuple, Outcome]:
        """The latest attempt per job key, for each metric only with the parameters (key[1]) it was
        last evaluated with: what a run that does not select the metric reports of it."""
        latest: dict[tuple, Outcome] = {}
        attempts: Counter = Counter()
        params: dict[str, object] = {}
        for key, row in self._rows():
            attempts[key] += row.get("status") != SKIPPED
            latest[key] = _outcome(row, attempts[key])
            params[key[0]] = key[1]
        return {key: o for key, o in latest.items() if params[key[0]] == key[1]}

    def _rows(self):
        """(key, row) of every complete line after the header, which must match this run's fingerprint."""
        if not self.path.exists():
            return
        data = self.path.read_text()
        # only lines that end in a newline are complete: open() cuts a last line without one, so
        # counting it done here would lose it (a line cut before its newline still parses)
        lines = data.split("\n")[:-1]
        if not lines:
            return
        self._refuse_another(json.loads(lines[0]).get("fingerprint"))
        for line in lines[1:]:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a kill: recompute it
                continue
            yield tuple(row["key"]), row

    def open(self) -> "ResultLog":
        try:
            if self.path.exists():  # drop a last line cut short by a kill, so appends start clean
                data = self.path.read_bytes()
                if data and not data.endswith(b"\n"):
                    with self.path.open("r+b") as fh:
                        fh.truncate(data.rfind(b"\n") + 1)
            new = not self.path.exists() or self.path.stat().st_size == 0
            # unbuffered: a line either reaches the file whole or is rolled back (no buffer that a
            # garbage collector flushes later, into the middle of another run's lines)
            self._fh = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            if new:
                self._write({"fingerprint": self.fingerprint})
        except OSError as exc:
            raise _storage_error(exc, self.path) from exc
        return self

    def append(self, key: tuple, outcome: Outcome, metric_version: str = "") -> None:
        distance = outcome.distance if math.isfinite(outcome.distance) else None
        self._write(
            {
                "key": list(key),
                "distance": distance,
                "seconds": outcome.seconds,
                "error": outcome.error,
                "status": outcome.status,
                "metric_version": metric_version,
                **({"traceback": outcome.traceback} if outcome.traceback else {}),
            }
        )

    def _write(self, row: dict) -> None:
        if self._fh is None:
            raise RuntimeError(f"{self.path} is not open: call open() first")
        line = (json.dumps(row) + "\n").encode()
        start = os.fstat(self._fh).st_size
        try:
            done = 0
            while done < len(line):
                done += os.write(self._fh, line[done:])
            os.fsync(self._fh)
        except OSError as exc:
            try:  # a line cut short by a full disk is taken back, so the file ends with a whole line
                os.ftruncate(self._fh, start)
            except OSError:
                pass
            raise _storage_error(exc, self.path, len(line)) from exc

    def close(self) -> None:
        if self._fh is not None:
            try:
                os.close(self._fh)
            except OSError:  # the data already failed to reach the disk and was reported
                pass
            self._fh = None


def _outcome(row: dict, attempts: int) -> Outcome:
    distance = row["distance"] if row["distance"] is not None else math.nan
    status = row.get("status") or (ERROR if row["error"] else OK)
    return Outcome(distance, row["seconds"], row["error"], status, attempts, row.get("traceback") or "")


def retry_wanted(outcome: Outcome, retry_failed: bool) -> bool:
    """Whether a logged outcome is evaluated again: timeouts, crashes and skipped ones always, errors if asked."""
    return outcome.status in (TIMEOUT, CRASH, SKIPPED) or (outcome.status == ERROR and retry_failed)


def _storage_error(exc: OSError, path: Path, size: int | None = None) -> BenchError:
    what = f"the evaluation log {path.name} (every evaluation logged so far is kept)"
    return storage_error(exc, path.parent, what, size) or StorageError(f"cannot write {path}: {exc}")
