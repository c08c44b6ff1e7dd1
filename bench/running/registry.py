"""The tasks: found, registered with Hydra, and looked up by name.

A task is a module that subclasses ``Task`` (``textmetric_bench.tasks.skeleton``); subclassing registers it under
its ``name=``. Every task comes through the entry-point group ``textmetric_bench.tasks``, whose entries name the
modules to import: the built-in ones are this package's own entries (pyproject.toml), a task of another installed
package is that package's entry, and nothing is found by reading or listing source files. ``register_task_configs``
stores each task's settings defaults as the Hydra option ``task=<name>`` (at the config's top level, so ``k=12``
sets a KSC setting), as ``textmetric_bench.running.metric_configs`` does for the metrics.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Sequence
from importlib.metadata import entry_points
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.config import CONF_DIR
from textmetric_bench.tasks.settings import config_node
from textmetric_bench.tasks.skeleton import TASKS, Task

log = logging.getLogger(__name__)

PACKAGE = "textmetric_bench.tasks"
ENTRY_POINT_GROUP = "textmetric_bench.tasks"
GROUP = "task"


def task_modules() -> list[str]:
    """The modules the entry-point group names, in its order (the only modules imported by name here)."""
    return [point.value for point in entry_points(group=ENTRY_POINT_GROUP)]


@functools.cache
def available_tasks() -> dict[str, type[Task]]:
    """Every task by name, from the entry-point group ``textmetric_bench.tasks``.

    A built-in entry that fails to import raises (the installation is broken); another package's is left out with
    a warning naming it and its error, so one broken plugin does not stop the built-in tasks. An entry whose module
    registers no task of the entry's name is said the same way.
    """
    points = list(entry_points(group=ENTRY_POINT_GROUP))
    if not any(point.value.startswith(PACKAGE + ".") for point in points):
        raise ConfigError(
            f"no built-in task in the entry-point group {ENTRY_POINT_GROUP!r}: textmetric_bench is not installed "
            "(make venv, or pip install -e . in the checkout)"
        )
    for point in points:
        builtin = point.value.startswith(PACKAGE + ".")
        try:
            point.load()
        except Exception as exc:
            if builtin:
                raise
            log.warning("task plugin %s (%s) failed to import and is left out: %r", point.name, point.value, exc)
            continue
        if point.name not in TASKS:
            log.warning(
                "entry point %r of %s names %s, which registers no task of that name (registered: %s)",
                point.name,
                ENTRY_POINT_GROUP,
                point.value,
                ", ".join(sorted(TASKS)),
            )
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


def config_groups(overrides: Sequence[str] = (), *, among: Collection[str] | None = None) -> dict[str, list[str]]:
    """Each config group of the command line's config (Hydra's own left out) and its choices, from Hydra's config
    loader: the app's once Hydra has started (``--help``), else one set up as ``compose_config`` does. A user's
    ``hydra.searchpath=[...]`` among ``overrides`` adds the groups and choices of those directories. ``among``: only
    the groups of these names (each run's check of its overrides lists the few it overrides, not all)."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.object_type import ObjectType

    from textmetric_bench.running.metric_configs import register_metric_configs

    searchpath = [o for o in overrides if o.lstrip("+~").startswith("hydra.searchpath")]

    def read() -> dict[str, list[str]]:
        loader = GlobalHydra.instance().config_loader()

        def options(group: str, kind: ObjectType) -> list[str]:
            return list(loader.get_group_options(group, kind, config_name="config", overrides=searchpath))

        groups = sorted(g for g in options("", ObjectType.GROUP) if g != "hydra" and (among is None or g in among))
        return {g: options(g, ObjectType.CONFIG) for g in groups}

    if GlobalHydra.instance().is_initialized():
        return read()
    register_task_configs()
    register_metric_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return read()


def compose_config(overrides: Sequence[str] = (), *, return_hydra_config: bool = False) -> DictConfig:
    """The config ``python -m textmetric_bench <overrides>`` runs with, composed outside the app (tests, checks).

    Registers the tasks' and the metrics' generated nodes first, as ``main`` does.
    """
    from hydra import compose, initialize_config_dir

    from textmetric_bench.running import directories  # noqa: F401 - registers ${new_dir:} of the run directories
    from textmetric_bench.running.metric_configs import register_metric_configs

    register_task_configs()
    register_metric_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=return_hydra_config)


def settings_markdown() -> str:
    """The settings of every task as markdown tables (docs/generated/tasks.md, included by docs/tasks.md)."""
    from textmetric_bench.settings import settings_reference

    lines = ["<!-- generated by `python -m textmetric_bench.running.registry --docs`; do not edit -->", ""]
    for name, task in available_tasks().items():
        doc = " ".join((task.__doc__ or "").split())
        lines += [f"### `task={name}`", "", doc, "", "| setting | default | what it sets |", "|---|---|---|"]
        lines += [
            f"| `{key}` | `{default}` | {_escaped(help_)} |"
            for key, default, help_ in settings_reference(task.settings)
        ]
        lines.append("")
    from textmetric_bench.tasks.skeleton import SHARED_SETTINGS as SHARED

    lines += ["### Settings every task shares", ""]
    for block in SHARED:
        doc = " ".join((block.__doc__ or "").split())
        lines += [
            f"`{block.block}` ({block.__name__}): {doc}",
            "",
            "| setting | default | what it sets |",
            "|---|---|---|",
        ]
        lines += [f"| `{key}` | `{default}` | {_escaped(help_)} |" for key, default, help_ in settings_reference(block)]
        lines.append("")
    return "\n".join(lines)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    from textmetric_bench import PROJECT_ROOT

    parser = argparse.ArgumentParser(description="List the tasks, or write their settings' reference for the docs.")
    parser.add_argument("--docs", action="store_true", help="write docs/generated/tasks.md of the checkout")
    args = parser.parse_args(argv)
    if args.docs:
        target = Path(PROJECT_ROOT) / "docs" / "generated" / "tasks.md"
        target.write_text(settings_markdown() + "\n", encoding="utf-8")
        print(f"wrote {target}")
    else:
        for name, task in available_tasks().items():
            print(f"{name}: {' '.join((task.__doc__ or '').split())}")


if __name__ == "__main__":
    main()
