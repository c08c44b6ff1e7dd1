"""What a forkserver imports once, before it forks any worker (``textmetric_bench.engine.pool.PRELOAD``): the worker
module and the built-in metrics, so that each forked worker starts with them imported."""

from textmetric_bench.api.registry import load_builtin_metrics
from textmetric_bench.engine import worker  # noqa: F401  (imported for the workers forked from here)

load_builtin_metrics()
