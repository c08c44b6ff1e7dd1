"""What a forkserver imports once, before it forks any worker (``textmetric_bench.engine.pool.PRELOAD``): the worker
module and the built-in metrics, so that each forked worker starts with them imported.

Ctrl-C in a terminal reaches the whole process group, this server and its workers too: they end quietly (the run
says "interrupted" once, ``textmetric_bench.__main__.interrupted``), here while the server imports, not with a
traceback of each import. The server ignores SIGINT once it serves (``multiprocessing.forkserver``); the workers it
forks take this handler back."""

from textmetric_bench.errors import exit_quietly_on_sigint

exit_quietly_on_sigint()

from textmetric_bench.api.registry import load_builtin_metrics  # noqa: E402 - after the handler
from textmetric_bench.engine import worker  # noqa: E402, F401  (imported for the workers forked from here)

load_builtin_metrics()
