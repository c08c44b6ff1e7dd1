"""Errors the harness raises on bad input; each message names what is wrong and how to fix it."""


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
