"""What the engine evaluates (``Job``), what one evaluation gives (``Outcome``), and the call itself."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import numpy as np

from textmetric_bench.api.registry import BUILTIN_PACKAGE, MetricInfo
from textmetric_bench.api.sharing import charged_time

#: Outcome statuses. ``error``: the metric raised or returned no finite number; ``timeout``: it
#: exceeded the time limit and its worker was killed; ``crash``: its worker process died;
#: ``skipped``: not evaluated, its metric having timed out too often in the run (not an attempt).
OK, ERROR, TIMEOUT, CRASH, SKIPPED = "ok", "error", "timeout", "crash", "skipped"


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
    """One evaluation's result; ``attempts`` counts this and every earlier try logged for the job;
    ``traceback``: where the metric raised (``metric_traceback``), when it did."""

    distance: float
    seconds: float
    error: str = ""
    status: str = OK
    attempts: int = 1
    traceback: str = ""

    @property
    def failed(self) -> bool:
        return self.status != OK

    def attempt(self, number: int) -> "Outcome":
        return replace(self, attempts=number)


def failure(status: str, error: str, seconds: float = 0.0, traceback: str = "") -> Outcome:
    return Outcome(math.nan, seconds, error, status, traceback=traceback)


def raised(exc: BaseException, seconds: float = 0.0, prefix: str = "") -> Outcome:
    """The failure of a metric (or its prepare step) that raised ``exc``: its one-line reason and its traceback."""
    return failure(ERROR, f"{prefix}{type(exc).__name__}: {exc}", seconds, metric_traceback(exc))


@functools.lru_cache(maxsize=1)
def _harness_dirs() -> tuple[Path, Path]:
    """(the harness package's directory, that of its built-in metrics), as installed or in a checkout."""
    import importlib.util

    import textmetric_bench

    spec = importlib.util.find_spec(BUILTIN_PACKAGE)
    locations = spec.submodule_search_locations if spec else None
    metrics = Path(next(iter(locations))) if locations else Path("/nonexistent")
    return Path(textmetric_bench.__file__).parent.resolve(), metrics.resolve()


def metric_traceback(exc: BaseException) -> str:
    """``exc``'s traceback limited to the metric's own frames (and the libraries it called): the harness's
    frames (worker, engine, registry) are left out, the built-in metrics' kept; chained exceptions too."""
    harness, builtin = _harness_dirs()

    def own(frame: traceback.FrameSummary) -> bool:
        path = Path(frame.filename).resolve()
        return not path.is_relative_to(harness) or path.is_relative_to(builtin)

    summary = traceback.TracebackException.from_exception(exc)
    seen, todo = set(), [summary]
    while todo:
        part = todo.pop()
        if id(part) in seen:
            continue
        seen.add(id(part))
        part.stack = traceback.StackSummary.from_list([f for f in part.stack if own(f)])
        todo += [p for p in (part.__cause__, part.__context__) if p is not None]
    return "".join(summary.format()).rstrip("\n")


def params_digest(params: Mapping) -> str:
    """A short stable id of a metric's parameters, part of each job key."""
    return hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:10]


def evaluate(metric: MetricInfo, params: dict, p, q, *, seed: int) -> Outcome:
    """Call the metric once; a failure (exception, NaN/inf, not a number) is returned, never raised.

    Its seconds (T, 004 §4.4) are the call's wall time plus the full cost of the shared preparations
    it reused (``textmetric_bench.api.sharing.charged_time``), so they do not depend on what ran before it.
    """
    with charged_time() as charged:
        start = time.perf_counter()
        try:
            value = metric(p, q, seed=seed, **params)
        except Exception as exc:  # isolate the plugin: record and go on
            wall = time.perf_counter() - start
            return raised(exc, wall + charged.seconds)
        seconds = time.perf_counter() - start
        seconds += charged.seconds
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return failure(ERROR, f"returned {type(value).__name__}, not a number", seconds)
    value = float(value)
    if not math.isfinite(value):
        return failure(ERROR, f"returned {value}", seconds)
    return Outcome(value, seconds)
