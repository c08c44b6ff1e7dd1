"""Hydra config nodes of the registered metrics, generated from their signatures.

A metric's parameters and defaults live in its function signature only (``MetricInfo.params``).
``register_metric_configs`` turns each registered metric into a structured config (a dataclass)
in Hydra's ConfigStore, group ``metric``: one option per metric name, placed at
``metric.<name>``, and the option ``registered`` holding them all at ``metric`` (the one
``conf/config.yaml`` selects). So ``metric.mauve.kmeans_num_redo=1`` sets a parameter,
``metric=[chi]`` composes only CHI's node, and Hydra checks a value against the parameter's
annotation (int, float, bool, str or Optional of those; anything else is typed ``Any``).

The dataclasses are published in this module under ``class_name(metric)``, so a config that
holds them can be pickled into another process (a launcher's job, a worker): unpickling looks the
class up here, which registers the metrics again in that process.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import logging
import sys
import types
import typing
from typing import Any, Optional, Union

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from textmetric_bench.api.registry import MetricInfo, available_metrics, get_metric
from textmetric_bench.errors import ConfigError
from textmetric_bench.settings import shown

log = logging.getLogger(__name__)

GROUP = "metric"
ALL_OPTION = "registered"
_SCALARS = (int, float, bool, str)
_CLASSES: dict[str, tuple[MetricInfo, type]] = {}  # class name -> (the metric it was made from, dataclass)


def register_metric_configs() -> None:
    """Store every registered metric's node in the ConfigStore (idempotent: storing again replaces)."""
    store = ConfigStore.instance()
    nodes = {}
    for name in available_metrics():
        nodes[name] = metric_dataclass(get_metric(name))
        store.store(group=GROUP, name=name, node=nodes[name], package=f"{GROUP}.{name}")
    store.store(group=GROUP, name=ALL_OPTION, node=nodes, package=GROUP)


def metric_override_problems(overrides: list[str]) -> list[str]:
    """One line per command-line override of ``metric`` that Hydra would reject, or [].

    Hydra's own messages for these span several lines and suggest ``+metric...`` for a misspelt
    parameter; these start with the override, as the other keys' lines do, and name the metric, the parameter and
    what it takes. Checks the metric names of
    ``metric=[...]`` and ``metric.<name>.<param>=<value>``: the parameter must exist, the value (each
    value of a sweep) must fit its type, and ``+`` (add a key) must not name a parameter the node has.
    ``metric=<names>`` without ``metrics=...`` is refused too: it looks like choosing the metrics to run.
    Overrides that do not parse are left to Hydra.
    """
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        return []
    problems = []
    lists_metrics = any(o.key_or_group == "metrics" for o in parsed)
    for override in parsed:
        key = override.key_or_group
        if key == "metrics" and not override.is_delete():  # each metric named, in every value of a sweep too
            problems += _unknown_metrics(override)
            continue
        if override.is_delete() or override.package or not (key == GROUP or key.startswith(GROUP + ".")):
            continue
        try:
            values = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
        except Exception:  # noqa: BLE001 - an interval sweep: only the key is checked
            values = []
        try:
            if key == GROUP:  # metric=[chi,fid]: options of the group
                if settings := next((value for value in values if isinstance(value, dict)), None):
                    problems.append(f"{override.input_line}: {parameters_as_group_problem(settings)}")
                    continue
                for value in values:
                    for name in value if isinstance(value, list) else [value]:
                        if name != ALL_OPTION:
                            get_metric(str(name))
                if not lists_metrics and any(value != ALL_OPTION for value in values):
                    problems.append(group_for_list_problem(override.input_line, values))
                continue
            name, *path = key[len(GROUP) + 1 :].split(".")
            info = get_metric(name)
            for value in values:
                params = value if not path and isinstance(value, dict) else {path[0]: value} if path else {}
                info.check_params(params)
                if override.is_add() and path and path[0] in info.params:  # Hydra: "Could not append"
                    raise ConfigError(
                        f"+{key}: metric {name!r} has this parameter already; set it without "
                        f"the '+': {key}={shown(value)}"
                    )
                if len(path) < 2:
                    check_values(info, params)
        except ConfigError as exc:
            problems.append(str(exc) if str(exc).startswith((key, "+" + key)) else f"{override.input_line}: {exc}")
    return list(dict.fromkeys(problems))


def _unknown_metrics(override) -> list[str]:
    """The "unknown metric" line of each name of a ``metrics=`` override that is not registered (every value of a
    sweep: before, a misspelt name in ``-m metrics=zipf,fdi`` was refused job by job)."""
    try:
        values = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
    except Exception:  # noqa: BLE001 - an interval or a function: the run's validation reads it
        return []
    problems = []
    for value in values:
        names = value if isinstance(value, list) else str(value).split(",")
        for name in (str(n).strip() for n in names):
            if name and name not in ("default", "all"):
                try:
                    get_metric(name)
                except ConfigError as exc:
                    problems.append(f"{override.input_line}: {exc}")
    return problems


def group_for_list_problem(given: str, values: list) -> str:
    """The line for ``metric=fid`` without ``metrics=``: it composes only FID's parameters, and every default metric
    still runs (``metrics`` chooses which run, ``metric`` holds their parameters)."""
    names = [str(n) for value in values for n in (value if isinstance(value, list) else [value]) if n != ALL_OPTION]
    listed = ",".join(dict.fromkeys(names))
    return (
        f"{given} chooses which metrics' parameters are composed, not which metrics run (every default metric "
        f"would still run): to run only {listed}, write metrics=[{listed}]"
    )


def parameters_as_group_problem(settings: dict) -> str:
    """The line for ``metric={chi:{top:3}}``: ``metric=`` chooses options of the group (names), and a metric's
    parameters are keys below it."""
    name, params = next(iter(settings.items()))
    param, value = next(iter(params.items())) if isinstance(params, dict) and params else ("<parameter>", "<value>")
    return (
        f"{GROUP}= takes names of metrics (whose parameters are composed), not their settings; set a parameter as "
        f"{GROUP}.<metric>.<parameter>=<value>, e.g. {GROUP}.{name}.{param}={shown(value)}"
    )


def check_values(info: MetricInfo, params: dict[str, Any]) -> None:
    """Raise ConfigError naming the first value that does not fit its parameter's type in the metric's node."""
    cls = metric_dataclass(info)
    kinds = {f.name: f.type for f in dataclasses.fields(cls)}
    node = OmegaConf.structured(cls)
    for param, value in params.items():
        if param not in kinds:  # a default no config can hold: the parameter is not in the node
            continue
        try:
            node[param] = value
        except ValidationError:
            raise ConfigError(
                f"{GROUP}.{info.name}.{param}={shown(value)}: parameter {param!r} of metric {info.name!r} takes "
                f"{_described(kinds[param])}, e.g. {GROUP}.{info.name}.{param}={shown(info.params[param])}"
            ) from None


def _described(kind: Any) -> str:
    names = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}
    optional = [m for m in typing.get_args(kind) if m is not type(None)]
    return f"{names[optional[0]]} or null" if optional else names.get(kind, str(kind))


def metric_dataclass(info: MetricInfo) -> type:
    """The structured config of one metric: a field per parameter, its default the signature's."""
    cls_name = class_name(info.name)
    made = _CLASSES.get(cls_name)
    if made is not None and made[0] is info:
        return made[1]
    types = parameter_types(info)
    fields = []
    for param, default in info.params.items():
        if not _storable(default):
            log.warning(
                "metric %r: parameter %r has a default (%r) a config cannot hold; it is left out of "
                "metric.%s and always takes its default",
                info.name,
                param,
                default,
                info.name,
            )
            continue
        kind = types.get(param, Any)
        if not _fits(kind, default):
            kind = Any
        fields.append((param, kind, _field(default)))
    cls = dataclasses.make_dataclass(cls_name, fields)
    cls.__module__, cls.__qualname__ = __name__, cls_name
    cls.__doc__ = f"Parameters of metric {info.name!r} ({info.module}), generated from its signature."
    _CLASSES[cls_name] = (info, cls)
    return cls


def class_name(metric: str) -> str:
    """A Python name for the dataclass of ``metric``, distinct for distinct metric names."""
    if metric.isidentifier():
        return f"{metric}_params"
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in metric)
    return f"{safe}_params_{hashlib.sha1(metric.encode()).hexdigest()[:8]}"


def parameter_types(info: MetricInfo) -> dict[str, Any]:
    """The config type of each parameter: its annotation if OmegaConf can check it, else ``Any``."""
    fn = info.fn
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation that does not evaluate is simply not checked
        hints = {}
    namespace = vars(sys.modules[fn.__module__]) if fn.__module__ in sys.modules else {}
    out = {}
    for param in inspect.signature(fn).parameters.values():
        if param.name not in info.params:
            continue
        hint = hints.get(param.name, param.annotation)
        if isinstance(hint, str):  # a signature built by hand (textmetric_bench.api.per_text) keeps its strings
            try:
                hint = eval(hint, namespace)  # the plugin's own annotation, in its module
            except Exception:  # noqa: BLE001
                hint = Any
        out[param.name] = config_type(hint)
    return out


def config_type(hint: Any) -> Any:
    """int, float, bool, str or Optional of one of them as is; anything else (Literal, unions) ``Any``."""
    if hint in _SCALARS:
        return hint
    members = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else ()
    rest = [m for m in members if m is not type(None)]
    if len(members) == 2 and len(rest) == 1 and rest[0] in _SCALARS:
        return Optional[rest[0]]  # noqa: UP045 - the form OmegaConf documents
    return Any


def _storable(default: Any) -> bool:
    try:
        OmegaConf.create({"value": default})
    except Exception:  # noqa: BLE001 - e.g. a function or an arbitrary object
        return False
    return True


def _fits(kind: Any, default: Any) -> bool:
    """Whether ``default`` is a value of ``kind`` as OmegaConf holds it (e.g. not None for a plain int)."""
    if kind is Any:
        return True
    try:
        node = OmegaConf.structured(dataclasses.make_dataclass("Probe", [("value", kind, _field(default))]))
        return node.value == default
    except Exception:  # noqa: BLE001
        return False


def _field(default: Any) -> dataclasses.Field:
    if isinstance(default, (list, dict, tuple)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default))
    return dataclasses.field(default=default)


def __getattr__(name: str) -> type:
    """A dataclass by its class name, for unpickling a config in a process that has not registered yet."""
    if name not in _CLASSES and "_params" in name:
        for metric in available_metrics():
            metric_dataclass(get_metric(metric))
    if name in _CLASSES:
        return _CLASSES[name][1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
