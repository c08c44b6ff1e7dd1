"""Running a task whose corpora have known positions, so the reference metric ``oracle`` can read them.

A task that knows where each corpus lies (``KnownPositions``) calls ``publish_positions`` in its
``build``; the runner ``runner_with_positions`` keeps them in the run context from then until the
run ends, so the engine's worker processes, started after ``build``, receive them
(``textmetric_bench.api.positions``). Without that runner (or for a corpus left out) the oracle fails with an
error naming the problem, recorded as its failure.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from omegaconf import DictConfig

from textmetric_bench.api.positions import corpus_key, known_positions
from textmetric_bench.tasks.skeleton import TaskResult, run_task


class KnownPositions:
    """Mixin for a ``Task`` whose ``build`` knows each corpus's position on the collection's axis."""

    _positions_scope: contextlib.ExitStack | None = None

    def publish_positions(self, corpora: Mapping[str, Sequence[str]], positions: Mapping[str, float]) -> None:
        """Make ``positions`` (corpus id -> position) readable by the oracle for the rest of the run."""
        if self._positions_scope is not None:
            keyed = {corpus_key(corpora[cid]): float(pos) for cid, pos in positions.items()}
            self._positions_scope.enter_context(known_positions(keyed))


def runner_with_positions(task: KnownPositions) -> Callable[[DictConfig, Path | str], TaskResult]:
    """``fn(cfg, out_dir)`` running ``task`` with the positions its ``build`` publishes in the run context."""
    def run(cfg: DictConfig, out_dir: Path | str) -> TaskResult:
        with contextlib.ExitStack() as scope:
            task._positions_scope = scope
            try:
                return run_task(task, cfg, out_dir)  # type: ignore[arg-type]
            finally:
                task._positions_scope = None

    run.__name__ = f"run_{task.name}"  # type: ignore[attr-defined]
    run.__doc__ = f"Run the {task.name} task described by ``cfg``; write its outputs to ``out_dir``."  # type: ignore[attr-defined]
    return run
