"""The Python API: evaluate metrics, compare them with the reference rows and run the regression gate from a notebook
or a script, with the engine, cache and files of ``python -m textmetric_bench`` (``textmetric_bench.evaluate``).

A thin layer over the tasks: the arguments become the command line's overrides, the task runs as the command line
runs it (``textmetric_bench.running.runner``), and the result is read back from the run directory (``Result``).
Metrics defined in a notebook reach the engine's worker processes by value (cloudpickle,
``textmetric_bench.engine.pool``), so a function decorated in a cell is evaluated like an installed plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from textmetric_bench.session.reference import reference_rows
from textmetric_bench.session.result import Result, load_run, show_figures_inline
from textmetric_bench.session.scoring import score

__all__ = ["evaluate", "score", "check", "load_run", "reference_rows", "Result"]

show_figures_inline()


def evaluate(
    metrics: Any = None,
    *,
    pair: str | tuple[str | Path, str | Path] | None = None,
    task: str = "ksc",
    out_dir: str | Path | None = None,
    progress: bool | str = "auto",
    report: bool = True,
    config: Mapping[str, Any] | Sequence[str] | None = None,
    **settings: Any,
) -> Result:
    """Evaluate ``metrics`` with ``task`` (KSC by default) and return the run's results.

    Args:
        metrics: a registered name, ``"default"`` or ``"all"``, a function decorated with
            ``@textmetric_bench.api.metric`` (also one defined in a notebook), or a list of those; None: the
            task's choice, the default metrics (the gate, ``task="check"``: its baseline's).
        pair: a pair card's name (e.g. ``"fortune_computing_people"``), or two corpus files ``(a, b)``;
            None: the config's default pair.
        task: the registered task to run (``ksc``, ``robustness``, ``perturb``, ``ifc``, ``check``); a task added
            later (a suite of pairs, for one) is run the same way, by its name.
        out_dir: the run directory; None: the command line's, ``outputs/<task>/<label>/<time>``. A run in a
            directory that holds earlier results resumes there and adds its metrics to them.
        progress: progress bars: ``"auto"`` (in a terminal or a Jupyter notebook), True or False.
        report: write ``report.html`` as the command line does.
        config: further settings by dotted key, e.g. ``{"engine.workers": 2, "metric.mauve.kmeans_num_redo": 5}``,
            or a list of command-line overrides.
        **settings: the task's settings, e.g. ``k=5, n=30, repetitions=2, seed=0`` (docs/tasks.md).

    Returns:
        The run's ``Result``: its tables as DataFrames, figures, and ``passed``. A metric that failed does not
        raise (see ``Result.failures``); a bad setting raises ``ConfigError`` before anything is computed.
    """
    from textmetric_bench.session.running import overrides_of, run

    overrides = overrides_of(task, metrics, pair, settings, config)
    return load_run(run(overrides, out_dir=out_dir, progress=progress, report=report))


def check(
    metrics: Any = None,
    *,
    out_dir: str | Path | None = None,
    progress: bool | str = "auto",
    config: Mapping[str, Any] | Sequence[str] | None = None,
    **settings: Any,
) -> Result:
    """Run the regression gate (``task=check``, docs/regression-gate.md): a small fixed KSC study compared with the
    committed baseline. ``Result.passed`` says whether it held; ``Result.check`` is the comparison table.

    ``metrics``: None runs the metrics of the baseline (the default ones with ``update=True``); ``settings`` as
    ``evaluate``'s
    (e.g. ``update=True`` writes a baseline instead, to ``config={"check.baseline": "mine.json"}``).
    """
    return evaluate(metrics, task="check", out_dir=out_dir, progress=progress, report=True, config=config, **settings)
