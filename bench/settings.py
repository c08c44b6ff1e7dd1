"""Typed settings: a dataclass is the one place a block of config keys has its types, defaults, ranges and help.

A task's own settings (``textmetric_bench.tasks.settings.TaskSettings``) and the blocks every task shares (``engine``,
``data``, ``embedder``, ``lm``: ``SharedSettings`` in the layer that uses them) are such dataclasses. Each field is
one config key (``option(default, help, key=...)``; the key defaults to the field's name, dotted keys such as
``ifc.sampling.top_p`` place it deeper; a shared block reads its keys under its ``block`` name). From the dataclass
come

- the check of every value (``read_settings``): its type from the annotation (int, float, bool, str, list[int],
  list[str], or a union of those and None), its range from ``minimum``/``maximum``/``accepts``, one line per bad
  value naming the key, the value and an example; then the dataclass's own ``check()`` for what depends on several
  values;
- the typed values the run works with: read once at the top, passed down, never ``.get()`` on the raw config.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from dataclasses import MISSING, dataclass
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from omegaconf import DictConfig, ListConfig, OmegaConf

from textmetric_bench.errors import ConfigError

_ABSENT = object()
T = TypeVar("T", bound="Settings")
_KINDS = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}


def shown(value: Any) -> str:
    """A config value as a user writes it on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (DictConfig, ListConfig)):
        return str(OmegaConf.to_container(value, resolve=False))
    return str(value)


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
class Settings:
    """Base of every typed settings block."""

    def check(self) -> None:
        """Raise ConfigError for a combination of values that cannot run (each value is already valid)."""


S = TypeVar("S", bound="SharedSettings")


@dataclass(frozen=True)
class SharedSettings(Settings):
    """A block every task shares, read under its ``block`` key (``engine``, ``data``, ``embedder``, ``lm``).

    A key the config leaves out keeps the field's default, so a user's own embedder or LM file need not repeat
    them; a key it gives is checked like a task's. ``of`` reads the block from a run's config or from a plain
    mapping of its keys (a metric helper's ``RunContext.lm``), and returns an already typed block unchanged."""

    block: ClassVar[str] = ""

    @classmethod
    def of(cls: type[S], source: Any) -> S:
        """The typed block from ``source``: itself, the whole composed config, or a mapping of the block's keys;
        ConfigError with one line per bad value."""
        if isinstance(source, cls):
            return source
        if isinstance(source, DictConfig) and cls.block in source:  # the whole composed config
            found, problems, _ = read_settings(cls, source)
        else:
            found, problems, _ = read_settings(cls, {cls.block: {} if source is None else source})
        if found is None:
            raise ConfigError("\n".join(problems))
        return found

    def as_dict(self) -> dict[str, Any]:
        """The block as plain values by key, as its YAML file writes it."""
        return {key_of(f): copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}


def key_of(f: dataclasses.Field, settings: type | None = None) -> str:
    """The field's config key; under its block for a shared block."""
    key = f.metadata.get("key") or f.name
    block = getattr(settings, "block", "") if settings is not None else ""
    return f"{block}.{key}" if block else key


def default_of(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default is MISSING else f.default


def looked_up(source: Any, key: str) -> Any:
    """The value at dotted ``key`` of a composed config or a plain mapping, or ``_ABSENT``."""
    if isinstance(source, DictConfig):
        return OmegaConf.select(source, key, default=_ABSENT)
    place = source
    for part in key.split("."):
        if not isinstance(place, Mapping) or part not in place:
            return _ABSENT
        place = place[part]
    return place


def read_settings(settings: type[T], cfg: Any) -> tuple[T | None, list[str], set[str]]:
    """(the typed settings or None, one line per bad value, the bad keys) from the composed config (or a plain
    mapping laid out like it)."""
    values, problems, bad = {}, [], set()
    hints = typing.get_type_hints(settings)
    shared = issubclass(settings, SharedSettings)
    for f in dataclasses.fields(settings):
        key = key_of(f, settings)
        try:
            value = looked_up(cfg, key)
        except Exception as exc:  # an interpolation that does not resolve, e.g. ${oc.env:...} without the variable
            problems.append(
                f"{key} cannot be read: {exc}; give {advice(f, hints[f.name])}, e.g. {example(f, settings)}"
            )
            bad.add(key)
            continue
        if value is _ABSENT and shared:
            continue
        if value is _ABSENT:
            problems.append(f"{key} is missing: give it a value (its default is {shown(default_of(f))})")
            bad.add(key)
            continue
        if isinstance(value, (DictConfig, ListConfig)):
            value = OmegaConf.to_container(value, resolve=True)
        if not accepted(f, hints[f.name], value):
            problems.append(
                f"{key}={shown(value)} is not valid: give {advice(f, hints[f.name])}, e.g. {example(f, settings)}"
            )
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


def example(f: dataclasses.Field, settings: type | None = None) -> str:
    return f"{key_of(f, settings)}={shown(f.metadata['example'])}"


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


def settings_reference(settings: type[Settings]) -> list[tuple[str, str, str]]:
    """(key, default as written on the command line, help) of every setting, for the docs."""
    return [(key_of(f, settings), shown(default_of(f)), f.metadata["help"]) for f in dataclasses.fields(settings)]
