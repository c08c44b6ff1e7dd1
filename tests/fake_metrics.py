"""Fake metrics for testing error handling only: they hang, crash or misbehave on purpose.

Module-level, so worker processes can import them; registered only inside ``registered()``
so they never join `metrics=all` runs or the contract tests.
"""

import contextlib
import os
import signal
import time

from textmetric_bench.api.registry import metric, unregister


def fake_sleeps(p, q, *, seed: int = 0, seconds: float = 30.0) -> float:
    """Hangs on 7-text corpora ($FAKE_SLEEP_SECONDS, else ``seconds``); otherwise returns their size."""
    if len(q) == 7:
        time.sleep(float(os.environ.get("FAKE_SLEEP_SECONDS", seconds)))
    return float(len(p) + len(q))


def fake_hangs(p, q, *, seed: int = 0) -> float:
    """Sleeps forever while $FAKE_HANG is "1" (a plugin stuck in a deadlock); otherwise returns the corpora's size."""
    while os.environ.get("FAKE_HANG") == "1":
        time.sleep(3600)
    return float(len(p) + len(q))


def fake_kills_itself(p, q, *, seed: int = 0) -> float:
    """Sends SIGKILL to its own process on 7-text corpora, as the kernel's out-of-memory killer would."""
    if len(q) == 7:
        os.kill(os.getpid(), signal.SIGKILL)
    return float(len(p) + len(q))


def fake_raises_when_told(p, q, *, seed: int = 0) -> float:
    """Raises while $FAKE_RAISE is "1" (a transient fault); otherwise returns the corpora's size."""
    if os.environ.get("FAKE_RAISE") == "1":
        raise OSError("fake transient fault")
    return float(len(p) + len(q))


class SlowToUnpickle:
    """A parameter value whose unpickling hangs: a worker process that receives it never starts."""

    def __reduce__(self):
        return (time.sleep, (3600,))


def fake_crashes(p, q, *, seed: int = 0) -> float:
    """Kills its own process on 7-text corpora, like a segfault in native code."""
    if len(q) == 7:
        os._exit(3)
    return float(len(p) + len(q))


def fake_raises(p, q, *, seed: int = 0) -> float:
    raise RuntimeError("fake plugin exploded")


def fake_reads_context(p, q, *, seed: int = 0) -> float:
    """Returns the length of the current run context's cache directory: shows which context a worker sees."""
    from textmetric_bench.api.context import current_context

    return float(len(current_context().cache_dir))


def fake_reads_environment(p, q, *, seed: int = 0) -> float:
    """Returns $FAKE_ENV_VALUE as a number: shows which environment variables a worker sees."""
    return float(os.environ["FAKE_ENV_VALUE"])


def fake_parent_pid(p, q, *, seed: int = 0) -> float:
    """Returns the pid of the worker's parent process: shows how the worker was started."""
    return float(os.getppid())


def fake_page_faults(p, q, *, seed: int = 0, rows: int = 300, rounds: int = 50) -> float:
    """Returns the minor page faults its process takes while it forms and frees arrays as a metric of
    embeddings does (``rows`` x 384 inputs, their ``rows`` x ``rows`` products) ``rounds`` times: shows
    whether a worker keeps freed memory (a probe of the worker's allocator, not a distance)."""
    import resource

    import numpy as np

    rng = np.random.default_rng(seed)

    def evaluation():
        x = rng.random((rows, 384))
        return float(np.sqrt(np.abs(x @ x.T - 1.0)).sum())

    evaluation()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(rounds):
        evaluation()
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)


PREPARED_FILE = "FAKE_PREPARED_FILE"  # env var: a JSON-lines file where fake_prepared's hook logs its calls


def _record_prepare(texts, *, scale: float = 1.0) -> None:
    """Logs each call to the file named by $FAKE_PREPARED_FILE (hooks run in worker processes)."""
    import json

    with open(os.environ[PREPARED_FILE], "a") as fh:
        fh.write(json.dumps({"texts": list(texts), "params": {"scale": scale}}) + "\n")


def prepared_calls(path) -> list[tuple[list[str], dict]]:
    import json

    with open(path) as fh:
        return [(row["texts"], row["params"]) for row in map(json.loads, fh)]


def fake_prepared(p, q, *, seed: int = 0, scale: float = 1.0) -> float:
    return scale * (len(p) + len(q))


FAKES = {
    "fake_sleeps": fake_sleeps,
    "fake_hangs": fake_hangs,
    "fake_kills_itself": fake_kills_itself,
    "fake_raises_when_told": fake_raises_when_told,
    "fake_crashes": fake_crashes,
    "fake_raises": fake_raises,
    "fake_reads_context": fake_reads_context,
    "fake_prepared": fake_prepared,
    "fake_reads_environment": fake_reads_environment,
    "fake_parent_pid": fake_parent_pid,
    "fake_page_faults": fake_page_faults,
}
PREPARE_HOOKS = {"fake_prepared": _record_prepare}


@contextlib.contextmanager
def registered(*names):
    infos = {}
    for name in names:
        metric(name, inputs="texts", symmetric=True, prepare=PREPARE_HOOKS.get(name))(FAKES[name])
        infos[name] = FAKES[name].metric_info
    try:
        yield infos
    finally:
        for name in names:
            unregister(name)
