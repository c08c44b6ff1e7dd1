"""Fake metrics for testing error handling only: they hang, crash or misbehave on purpose.

Module-level, so worker processes can import them; registered only inside ``registered()``
so they never join `metrics=all` runs or the contract tests.
"""

import contextlib
import os
import time

from bench.registry import metric, unregister


def fake_sleeps(p, q, *, seed: int = 0, seconds: float = 30.0) -> float:
    """Hangs when the second corpus is the one named 'slow'; otherwise returns its size."""
    if len(q) == 7:
        time.sleep(seconds)
    return float(len(p) + len(q))


def fake_crashes(p, q, *, seed: int = 0) -> float:
    """Kills its own process on 7-text corpora, like a segfault in native code."""
    if len(q) == 7:
        os._exit(3)
    return float(len(p) + len(q))


def fake_raises(p, q, *, seed: int = 0) -> float:
    raise RuntimeError("fake plugin exploded")


FAKES = {"fake_sleeps": fake_sleeps, "fake_crashes": fake_crashes, "fake_raises": fake_raises}


@contextlib.contextmanager
def registered(*names):
    infos = {}
    for name in names:
        metric(name, inputs="texts", symmetric=True)(FAKES[name])
        infos[name] = FAKES[name].metric_info
    try:
        yield infos
    finally:
        for name in names:
            unregister(name)
