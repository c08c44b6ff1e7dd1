"""What the engine evaluates (``Job``), what one evaluation gives (``Outcome``), and the call itself."""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from textmetric_bench.api.registry import MetricInfo
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
    """One evaluation's result; ``attempts`` counts this and every earlier try logged for the job."""

    distance: float
    seconds: float
    error: str = ""
    status: str = OK
    attempts: int = 1

    @property
    def failed(self) -> bool:
        return self.status != OK

    def attempt(self, number: int) -> "Outcome":
        return replace(self, attempts=number)


def failure(status: str, error: str, seconds: float = 0.0) -> Outcome:
    return Outcome(math.nan, seconds, error, status)


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
            return failure(ERROR, f"{type(exc).__name__}: {exc}", wall + charged.seconds)
        seconds = time.perf_counter() - start
        seconds += charged.seconds
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return failure(ERROR, f"returned {type(value).__name__}, not a number", seconds)
    value = float(value)
    if not math.isfinite(value):
        return failure(ERROR, f"returned {value}", seconds)
    return Outcome(value, seconds)
