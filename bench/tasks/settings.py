"""A task's settings as a typed dataclass (``TaskSettings``): the one place its keys, types, defaults and help live.

A task declares ``settings=<dataclass>`` when it subclasses ``Task``. Each field is one config key
(``option(default, help, key=...)``, from ``textmetric_bench.settings``). From the dataclass come the task's Hydra
node (``config_node``: ``task=<name>`` composes the defaults at their keys, so the command line sets them as before,
``k=12``, ``ifc.iterations=8``, and ``--cfg job`` shows them) and the check of every value (``read_settings``); the
typed values are read once at the top and passed down.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from textmetric_bench.settings import Settings, default_of, key_of, option, read_settings, settings_reference

__all__ = ["TaskSettings", "config_node", "option", "read_settings", "settings_reference"]


@dataclass(frozen=True)
class TaskSettings(Settings):
    """Base of every task's settings: ``run_label`` names the output folder outputs/<task>/<run_label>/<time>."""


def config_node(task: str, settings: type[TaskSettings]) -> dict:
    """The task's Hydra node at the global package: ``task.name`` and every setting's default at its key."""
    node: dict = {"task": {"name": task}}
    for f in dataclasses.fields(settings):
        *parents, last = key_of(f).split(".")
        place = node
        for part in parents:
            place = place.setdefault(part, {})
        place[last] = default_of(f)
    return node
