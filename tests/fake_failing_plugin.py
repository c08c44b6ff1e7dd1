"""Fake metric plugins that fail or misbehave on purpose, for tests of exit statuses, failure reports and the
console only.

Registered when imported: tests make a run load this module through the plugin entry-point group
(``plugin_path``), never the test process itself, so the fakes join no other run.
"""

import os
import time

from fake_lines import FD2_LINE  # tests/ is on the run's PYTHONPATH

from textmetric_bench.api.registry import metric

#: env var: a file that ``fake_fails_once`` creates at its first call (which fails); later calls succeed.
FAIL_ONCE_FILE = "FAKE_FAIL_ONCE_FILE"


def _mean_length(texts) -> float:
    return sum(len(t) for t in texts) / (len(texts) - len(texts))  # always divides by zero


@metric("fake_divides_by_zero", inputs="texts", symmetric=True)
def fake_divides_by_zero(p, q, *, seed: int = 0) -> float:
    """Always raises ZeroDivisionError, two frames deep in this module."""
    return abs(_mean_length(p) - _mean_length(q))


@metric("fake_fails_once", inputs="texts", symmetric=True)
def fake_fails_once(p, q, *, seed: int = 0, scale: float = 1.0) -> float:
    """Raises at its very first call of a run ($FAKE_FAIL_ONCE_FILE does not exist yet), then returns the corpora's
    size times ``scale`` (a parameter, for the record of a failure to keep)."""
    try:
        os.close(os.open(os.environ[FAIL_ONCE_FILE], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return float(len(p) + len(q)) * scale
    raise RuntimeError("fake first call fails")


@metric("fake_writes_to_fd2", inputs="texts", symmetric=True)
def fake_writes_to_fd2(p, q, *, seed: int = 0) -> float:
    """Writes a line on file descriptor 2 below Python's sys.stderr, as a C library's fprintf does, then succeeds."""
    os.write(2, (FD2_LINE + "\n").encode())
    return float(abs(len(p) - len(q)))


@metric("fake_takes_a_minute", inputs="texts", symmetric=True)
def fake_takes_a_minute(p, q, *, seed: int = 0) -> float:
    """Sleeps a minute, then returns the corpora's size: a run to interrupt."""
    time.sleep(60)
    return float(len(p) + len(q))
