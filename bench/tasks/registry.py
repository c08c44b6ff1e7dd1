"""The tasks: found, registered with Hydra, and looked up by name.

A task is one module in ``textmetric_bench/tasks/`` (this folder) that subclasses ``Task``
(``textmetric_bench.tasks.skeleton``); subclassing registers it. ``available_tasks`` imports every module of
the folder once, so a new task file is found without being listed anywhere, and those of installed packages
through the entry-point group ``textmetric_bench.tasks``. ``register_task_configs`` stores each task's
settings defaults as the Hydra option ``task=<name>`` (at the config's top level, so ``k=12`` sets a KSC
setting), as ``textmetric_bench.tasks.metric_configs`` does for the metrics.
"""

from __future__ import annotations

import functools
import pkgutil
from collections.abc import Sequence
from importlib import import_module
from importlib.metadata import entry_points

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.config import CONF_DIR
from textmetric_bench.tasks.settings import config_node
from textmetric_bench.tasks.skeleton import TASKS, Task

ENTRY_POINT_GROUP = "textmetric_bench.tasks"
GROUP = "task"


@functools.cache
def available_tasks() -> dict[str, type[Task]]:
    """Every task by name: the modules of this folder, then installed packages' (``textmetric_bench.tasks``)."""
    package = __name__.rpartition(".")[0]
    here = import_module(package)
    for module in pkgutil.iter_modules(here.__path__):
        if module.name != __name__.rpartition(".")[2]:
            import_module(f"{package}.{module.name}")
    for point in entry_points(group=ENTRY_POINT_GROUP):
        point.load()
    return dict(sorted(TASKS.items()))


def get_task(name: str) -> Task:
    """The task registered as ``name``; ConfigError naming the available ones otherwise."""
    tasks = available_tasks()
    if name not in tasks:
        raise ConfigError(f"unknown task {name!r}; available: {', '.join(tasks)}")
    return tasks[name]()


def register_task_configs() -> None:
    """Store every task's node in Hydra's ConfigStore, group ``task`` (idempotent)."""
    store = ConfigStore.instance()
    for name, task in available_tasks().items():
        store.store(group=GROUP, name=name, node=config_node(name, task.settings), package="_global_")


def compose_config(overrides: Sequence[str] = (), *, return_hydra_config: bool = False) -> DictConfig:
    """The config ``python -m textmetric_bench <overrides>`` runs with, composed outside the app (tests, checks).

    Registers the tasks' and the metrics' generated nodes first, as ``main`` does.
    """
    from hydra import compose, initialize_config_dir

    from textmetric_bench.tasks.metric_configs import register_metric_configs

    register_task_configs()
    register_metric_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=return_hydra_config)
