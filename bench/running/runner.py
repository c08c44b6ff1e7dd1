"""Running a composed config: the one way both the command line (``textmetric_bench.__main__``) and the Python API
(``textmetric_bench.session``) run a task, so both give the same results from the same engine and cache."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from textmetric_bench.api.context import use_context
from textmetric_bench.tasks.config import run_context
from textmetric_bench.running.registry import get_task
from textmetric_bench.tasks.skeleton import TaskResult
from textmetric_bench.running.validate import validate_config


def run_configured(cfg: DictConfig, out_dir: Path) -> TaskResult:
    """Run the task named by ``cfg.task.name`` within the run's context (cache, LM); the config is read and checked
    once, here, before a corpus, a model or a text is touched, and the task gets typed values."""
    task = get_task(str(cfg.task.name))
    inputs = validate_config(cfg, out_dir)
    with use_context(run_context(cfg, inputs.cache_dir)):
        return task.run(inputs)
