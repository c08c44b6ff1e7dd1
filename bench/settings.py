"""A task's settings as a typed dataclass: the one place its keys, types, defaults and help live.

A task declares ``settings=<dataclass>`` when it subclasses ``Task``. Each field is one config key
(``option(default, help, key=...)``; the key defaults to the field's name, dotted keys such as
``ifc.sampling.top_p`` place it deeper). From the dataclass come

- the task's Hydra node (``config_node``): ``task=<name>`` composes the defaults at their keys, so the
  command line sets them as before (``k=12``, ``ifc.iterations=8``) and ``--cfg job`` shows them;
- the check of every value (``read_settings``): its type from the annotation (int, float, bool, str,
  list[int], list[str], or a union of those and None), its range from ``minimum``/``maximum``/``accepts``,
  one line per bad value naming the key, the value and an example; then the dataclass's own ``check()``
  for what depends on several values;
- the typed values the task runs with: read once at the top, passed down.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from dataclasses import MISSING, dataclass
from typing import Any, Callable

from omegaconf import DictConfig, ListConfig, OmegaConf

from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.command_line import shown

_ABSENT = object()
_KINDS = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}


def option(
    default: Any,
    help: str,
    *,
    key: str | None = None,
    minimum: float | None = None,  # noqa: A002
    maximum: float | None = None,
    exclusive: bool = False,
    accepts: Callable[[Any], bool] | None = None,
    advice: str | None = None,
    example: Any = MISSING,
) -> Any:
    """A settings field: its default and one line of help; ``minimum``/``maximum`` bound a number (``exclusive``:
    strictly), ``accepts`` replaces the type check (with ``advice`` saying what it takes)."""
    meta = {
        "help": help,
        "key": key,
        "minimum": minimum,
        "maximum": maximum,
        "exclusive": exclusive,
        "accepts": accepts,
        "advice": advice,
        "example": default if example is MISSING else example,
    }
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class TaskSettings:
    """Base of every task's settings: ``run_label`` names the output folder outputs/<task>/<run_label>/<time>."""

    def check(self) -> None:
        """Raise ConfigError for a combination of values the task cannot run (each value is already valid)."""


def key_of(f: dataclasses.Field) -> str:
    return f.metadata.get("key") or f.name


def default_of(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default is MISSING else f.default


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


def read_settings(settings: type[TaskSettings], cfg: DictConfig) -> tuple[TaskSettings | None, list[str], set[str]]:
    """(the typed settings or None, one line per bad value, the bad keys) from the composed config."""
    values, problems, bad = {}, [], set()
    hints = typing.get_type_hints(settings)
    for f in dataclasses.fields(settings):
        key = key_of(f)
        try:
            value = OmegaConf.select(cfg, key, default=_ABSENT)
        except Exception as exc:  # an interpolation that does not resolve, e.g. ${oc.env:...} without the variable
            problems.append(f"{key} cannot be read: {exc}; give {advice(f, hints[f.name])}, e.g. {example(f)}")
            bad.add(key)
            continue
        if value is _ABSENT:
            problems.append(f"{key} is missing: give it a value (its default is {shown(default_of(f))})")
            bad.add(key)
            continue
        if isinstance(value, (DictConfig, ListConfig)):
            value = OmegaConf.to_container(value, resolve=True)
        if not accepted(f, hints[f.name], value):
            problems.append(f"{key}={shown(value)} is not valid: give {advice(f, hints[f.name])}, e.g. {example(f)}")
            bad.add(key)
            continue
        values[f.name] = float(value) if hints[f.name] is float else value
    if problems:
        return None, problems, bad
    made = settings(**values)
    try:
        made.check()
    except ConfigError as exc:
        return None, [str(exc)], bad
    return made, [], bad


def example(f: dataclasses.Field) -> str:
    return f"{key_of(f)}={shown(f.metadata['example'])}"


def accepted(f: dataclasses.Field, kind: Any, value: Any) -> bool:
    if f.metadata.get("accepts") is not None:
        return bool(f.metadata["accepts"](value))
    if not is_of(kind, value):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high, strict = f.metadata["minimum"], f.metadata["maximum"], f.metadata["exclusive"]
        if low is not None and (value <= low if strict else value < low):
            return False
        if high is not None and value > high:
            return False
    return True


def is_of(kind: Any, value: Any) -> bool:
    """Whether ``value`` (plain Python, as read from the config) is a value of the annotation ``kind``."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(is_of(member, value) for member in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(is_of(item, v) for v in value)
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is str:
        return isinstance(value, str)
    if typing.get_origin(kind) is typing.Literal:
        return value in typing.get_args(kind)
    return True


def advice(f: dataclasses.Field, kind: Any) -> str:
    """What the field takes, in words."""
    if f.metadata.get("advice"):
        return f.metadata["advice"]
    said = described(kind)
    low, high, strict = f.metadata["minimum"], f.metadata["maximum"], f.metadata["exclusive"]
    bounds = ([f"{'>' if strict else '>='} {low:g}"] if low is not None else []) + (
        [f"<= {high:g}"] if high is not None else []
    )
    return f"{said} {' and '.join(bounds)}" if bounds else said


def described(kind: Any) -> str:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(described(m) if m is not type(None) else "null" for m in typing.get_args(kind))
    if origin is list:
        return f"a list of {described(typing.get_args(kind)[0]).removeprefix('a ')}s"
    if origin is typing.Literal:
        return ", ".join(str(v) for v in typing.get_args(kind))
    return _KINDS.get(kind, str(kind))


def settings_reference(settings: type[TaskSettings]) -> list[tuple[str, str, str]]:
    """(key, default as written on the command line, help) of every setting, for the docs."""
    return [(key_of(f), shown(default_of(f)), f.metadata["help"]) for f in dataclasses.fields(settings)]
