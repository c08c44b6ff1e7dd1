"""The evaluation engine: many (metric, corpus pair) evaluations, resumable, isolated and parallel.

Every task reduces to a list of ``Job``s over corpora held in one ``CorpusStore``.
- Isolation: every evaluation runs in a worker process (``textmetric_bench.engine.pool``, on pebble) with a
  time limit (``engine.timeout``, 600 s by default); a metric that raises or returns no finite
  number, exceeds the limit, or kills its worker is recorded as a failure with its reason, the
  worker is replaced, and the run goes on. A metric that timed out ``engine.max_timeouts`` times
  (3) has its remaining evaluations recorded as skipped, so a hanging plugin cannot hold the run.
- Resume and retry: each attempt is appended to the run directory's log (``result_log``) as soon
  as it exists; a rerun skips what is done, and retries what failed or was skipped.
- Parallelism: ``workers`` processes evaluate jobs concurrently. Every job carries its own seed,
  so results do not depend on the number of workers or their order.
- Start: workers open the store from disk (``store``), memory-mapped, in seconds.
- Shared work: per-corpus statistics (``textmetric_bench.api.sharing``) are reused across pairs in a worker,
  and a metric's ``prepare`` hook sees every text of the run once, before any pair (an LM pass).
  Reuse saves wall time, not measured time: each evaluation's seconds include the full cost of
  the preparations it used, so T does not depend on the order of metrics or the number of workers.
"""

from textmetric_bench.engine.jobs import CRASH, ERROR, OK, SKIPPED, TIMEOUT, Job, Outcome, evaluate, params_digest
from textmetric_bench.engine.pool import start_worker_server
from textmetric_bench.engine.result_log import ResultLog
from textmetric_bench.engine.run import (
    DEFAULT_MAX_TIMEOUTS,
    DEFAULT_START_TIMEOUT,
    DEFAULT_TIMEOUT,
    engine_options,
    result_log_for,
    run_jobs,
)
from textmetric_bench.engine.settings import EngineSettings
from textmetric_bench.engine.store import CorpusStore

__all__ = [
    "CRASH",
    "ERROR",
    "OK",
    "SKIPPED",
    "TIMEOUT",
    "CorpusStore",
    "DEFAULT_MAX_TIMEOUTS",
    "DEFAULT_START_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "EngineSettings",
    "Job",
    "Outcome",
    "ResultLog",
    "engine_options",
    "evaluate",
    "params_digest",
    "result_log_for",
    "run_jobs",
    "start_worker_server",
]
