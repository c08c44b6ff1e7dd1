"""LM scoring on every core: worker processes, each holding one copy of the causal LM.

``lm.workers`` processes (``auto``: one per usable core on the CPU, one on a GPU) score the
length-sorted batches of ``textmetric_bench.features.lm.model.length_batches`` in a pebble pool, one batch per
task, each worker with one thread (``lm.threads``) of the engine ``lm.engine`` (``textmetric_bench.features.lm.ct2``). The batches are the same as in one
process, so the scores are bit-for-bit those of serial scoring, whatever the number of workers.

Why processes and not torch threads: on this 2-core machine, shared with other jobs (load
average about 7), scoring 40 banking77/clinc150 texts in one process with
``torch.set_num_threads(2)`` took 67.7 s wall against 18.4 s with one thread for the infilling
pass, and 32.9 s against 4.9 s for the plain pass: torch's OpenMP threads spin waiting for each
other when another job holds a core. Processes do not wait for each other.

Measured 2026-11-23, 1 against 2 workers, model loaded before timing, same texts, back to back
(CPU seconds are those of the batches, summed over workers). 40 texts (8 batches of infilling
prompts): infilling 13.4/13.1/13.5 s wall with 1 worker, 7.5/7.4/10.8 s with 2 (1.80x, 1.78x,
1.25x when the load average rose to 2), CPU 13.4 s either way; the CPU seconds per batch predict
1.81x, limited by 8 batches on 2 workers. 160 texts (30 batches): predicted 1.99x from CPU time,
measured 1.07x and 1.10x wall while other jobs held about one core (load average 2.4-2.9). The
plain pass (3 and 10 batches): 1.62x/1.64x measured at 40 texts. Batches go out longest first, so
the last to finish is a short one.

A worker loads the model on its first batch (not in pebble's initializer: a worker whose
initializer fails is restarted forever, a hang), records each batch's wall and CPU seconds with
the model loaded, and exits when the process that started it is gone (a killed job leaves no
model behind). A worker that dies is reported as ``LMWorkerError``.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from textmetric_bench.errors import BenchError
from textmetric_bench.features.embedding import resolve_device
from textmetric_bench.features.lm.model import batch_logprobs
from textmetric_bench.features.lm.ct2 import load_scoring_lm
from textmetric_bench.features.lm.settings import LMConfig, LMSettings

Batch = tuple[list[list[int]], list[int]]  # token sequences and where each one's scored part starts
Scored = tuple[list[np.ndarray], float, float]  # log-probabilities, wall seconds, CPU seconds

_state: dict[str, Any] = {}


class LMWorkerError(BenchError):
    """A worker process scoring texts with the language model died or could not start."""


def resolve_workers(cfg_lm: LMConfig) -> int:
    """How many processes score texts: ``lm.workers``, where ``auto`` (or null) means every usable core
    on the CPU and one process on a GPU."""
    lm = LMSettings.of(cfg_lm)  # checked there: a whole number >= 1, auto or null
    if lm.workers is None or lm.workers == "auto":
        if resolve_device(lm.device) != "cpu":
            return 1
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return int(lm.workers)


def score_batch(model_and_tokenizer, seqs: Sequence[Sequence[int]], starts: Sequence[int]) -> Scored:
    """One padded batch scored, with its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    values = batch_logprobs(*model_and_tokenizer, seqs, starts)
    return values, time.perf_counter() - wall, time.process_time() - cpu


def _exit_when_orphaned(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def _worker_batch(lm: LMSettings, cache_dir: str, parent: int, seqs, starts) -> Scored:
    """The task run in a worker: load the model once per process, then score one batch."""
    if "model" not in _state:
        threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
        _state["model"] = load_scoring_lm(lm.changed(threads=lm.threads or 1), cache_dir)
    return score_batch(_state["model"], seqs, starts)


class LMWorkers:
    """A pool of ``size`` spawned processes scoring batches with the LM of ``cfg_lm``."""

    def __init__(self, cfg_lm: LMConfig, cache_dir: Path | str, size: int):
        from pebble import ProcessPool

        self.size = size
        self._task = (LMSettings.of(cfg_lm), str(cache_dir), os.getpid())
        self.pool = ProcessPool(max_workers=size, context=mp.get_context("spawn"))

    def map(self, batches: Sequence[Batch], done: Callable[[int], None] = lambda n: None) -> list[Scored]:
        """Every batch scored, in order; ``done(n)`` after each batch of ``n`` sequences finishes."""
        from pebble import ProcessExpired

        # longest batches first (they come sorted by length), so the last one to finish is a short one
        futures: dict[Any, int] = {
            self.pool.schedule(_worker_batch, args=(*self._task, *batches[i])): i
            for i in sorted(range(len(batches)), key=lambda i: -max(map(len, batches[i][0])))
        }
        results: list[Scored | None] = [None] * len(batches)
        try:
            for future in cf.as_completed(futures):
                i = futures[future]
                try:
                    results[i] = future.result()
                except (ProcessExpired, BrokenProcessPool) as exc:
                    how = (
                        f"(pid {exc.pid}) died with exit code {exc.exitcode}"
                        if isinstance(exc, ProcessExpired)
                        else f"died ({exc})"
                    )
                    raise LMWorkerError(
                        f"an LM scoring worker process {how} while scoring a batch of {len(batches[i][0])} "
                        "sequences (killed, or out of memory?); the texts scored before are cached, so running "
                        "again continues; lm.workers=1 scores in this process"
                    ) from exc
                done(len(batches[i][0]))
        except BaseException:
            self.close()
            raise
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the workers (they hold a model each)."""
        self.pool.stop()
        self.pool.join()
