"""Errors the harness raises on bad input; each message names what is wrong and how to fix it."""

import os
import signal


class BenchError(Exception):
    """Base class for every error the harness raises on purpose."""


class DataError(BenchError):
    """A corpus cannot be obtained, verified or parsed, or is too small for the request."""


class ConfigError(BenchError):
    """A configuration value is invalid (unknown name, impossible k/n, ...)."""


class MetricError(BenchError):
    """A metric was called with input it cannot work with (empty corpus, wrong shape, ...)."""


class EmbeddingError(BenchError):
    """An embedder returned something unusable (NaN, wrong shape) or the cache is damaged."""


class StorageError(BenchError):
    """A file cannot be written: out of space, read-only or no permission. Work done so far is kept."""


#: Exit statuses of `python -m textmetric_bench` (docs/reliability.md, "Exit status"); a sweep exits with its
#: worst job's.
EXIT_OK = 0  # every metric produced its measures
EXIT_REGRESSION = 4  # task=check: the regression gate failed
#: 1 is left to Python: an unexpected error (a bug), which prints its traceback.
EXIT_BAD_INPUT = 2  # bad configuration or input: nothing, or not all, was run (as argparse's usage errors)
EXIT_METRIC_FAILED = 3  # the run finished, but a metric failed some or all of its evaluations
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it): what finished is kept, to go on from
#: From least to most severe: a sweep's status is the most severe of its jobs' (any other code ranks above).
EXIT_SEVERITY = (EXIT_OK, EXIT_METRIC_FAILED, EXIT_REGRESSION, EXIT_BAD_INPUT)


def worst_exit_status(codes) -> int:
    """The most severe of ``codes`` (``EXIT_SEVERITY``; a code not listed there ranks above all), 0 for none."""
    rank = {code: i for i, code in enumerate(EXIT_SEVERITY)}
    return max(codes, key=lambda code: rank.get(code, len(EXIT_SEVERITY)), default=EXIT_OK)


def exit_quietly_on_sigint():
    """From now on Ctrl-C ends this process at once with ``EXIT_INTERRUPTED`` and no traceback: for the run's helper
    processes (its forkserver and workers, the embedding helper) and its own imports, as Ctrl-C reaches the whole
    process group and the run says "interrupted" once. Returns the handler it replaced; None outside the main thread,
    where a handler cannot be set."""
    try:
        return signal.signal(signal.SIGINT, lambda *_: os._exit(EXIT_INTERRUPTED))
    except ValueError:
        return None
