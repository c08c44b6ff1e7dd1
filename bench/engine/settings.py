"""The ``engine`` block of the config (conf/config.yaml), typed: how evaluations are run, not what they compute."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

from textmetric_bench.settings import SharedSettings, option

SECONDS = "a number of seconds > 0"


def whole_or_auto(value: Any) -> bool:
    return value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)


@dataclass(frozen=True)
class EngineSettings(SharedSettings):
    """How the evaluations run (conf/config.yaml): processes, time limits, resume. Results do not depend on it."""

    block: ClassVar[str] = "engine"

    workers: int | str = option(
        1,
        "worker processes evaluating pairs (`auto` = all cores); results do not depend on it",
        accepts=whole_or_auto,
        advice="a whole number >= 1 or 'auto'",
        example=2,
    )
    timeout: float | None = option(
        600.0,
        "seconds per evaluation; a slower one is killed, recorded as timed out, its worker replaced (null: no limit)",
        minimum=0,
        exclusive=True,
        advice=f"{SECONDS}, or null for no limit",
        example=600,
    )
    max_timeouts: int | None = option(
        3,
        "after this many of a metric's evaluations timed out, its remaining ones are skipped (0 or null: never)",
        minimum=0,
        advice="a whole number >= 0 (0 or null: never skip a metric)",
    )
    start_timeout: float = option(
        120.0, "seconds for the worker processes to start", minimum=0, exclusive=True, advice=SECONDS, example=120
    )
    prepare_timeout: float | None = option(
        7200.0,
        "seconds for a metric's prepare step (one LM pass over every text; null: no limit)",
        minimum=0,
        exclusive=True,
        advice=f"{SECONDS}, or null for no limit",
        example=7200,
    )
    resume: bool = option(True, "a rerun in the same run directory keeps the evaluations it finds", example=False)
    retry_failed: bool = option(True, "... and retries those that failed", example=False)
    blas_threads: int = option(1, "BLAS threads per evaluation", minimum=1, advice="a whole number >= 1")

    @property
    def worker_count(self) -> int:
        """``workers`` with ``auto`` resolved to the machine's cores."""
        return (os.cpu_count() or 1) if self.workers == "auto" else int(self.workers)

    def seconds(self, value: float | None) -> float | None:
        return None if value is None else float(value)
