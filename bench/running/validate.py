"""Every config value checked before a task loads a corpus or a model, so a bad one fails in a
second, not after minutes of embedding: one line per bad value, naming the key, the value and a valid example.

The run's own values are checked here (``COMMON_RULES``: seed, progress, allow_metric_failures), the blocks shared
by every task (engine, data, embedder, lm) by their typed dataclasses (``SHARED``); a task's own come from its settings
dataclass (``textmetric_bench.tasks.settings``: types, ranges, then its ``check()``), then its ``preflight``
(files that must exist, sources that must be known). ``validate_config`` returns what the run reads, typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from textmetric_bench.errors import ConfigError
from textmetric_bench.settings import shown
from textmetric_bench.running.directories import directory_problems
from textmetric_bench.tasks.settings import read_settings
from textmetric_bench.tasks.skeleton import SHARED_SETTINGS as SHARED
from textmetric_bench.tasks.skeleton import RunInputs

_ABSENT = object()


def whole(minimum: int | None = None) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and (minimum is None or v >= minimum)


def boolean(v: Any) -> bool:
    return isinstance(v, bool)


def either(*tests: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: any(t(v) for t in tests)


def null(v: Any) -> bool:
    return v is None


@dataclass(frozen=True)
class Rule:
    """A key, what it accepts, how to say so, and an example value."""

    key: str
    accepts: Callable[[Any], bool]
    advice: str
    example: str


FLAG = "true or false"

COMMON_RULES = (
    Rule("seed", whole(0), "a whole number >= 0", "0"),
    Rule("progress", either(boolean, lambda v: v == "auto"), "auto, true or false", "false"),
    Rule("allow_metric_failures", boolean, FLAG, "true"),
)


def validate_config(cfg: DictConfig, out_dir: Path | str | None = None) -> RunInputs:
    """The typed inputs of the run ``cfg`` describes (``out_dir``: its run directory), or one `ConfigError`
    listing every bad value (one line each)."""
    from textmetric_bench.tasks.config import selected_metrics
    from textmetric_bench.running.registry import get_task
    from textmetric_bench.tasks.sources import check_pair

    task = get_task(str(OmegaConf.select(cfg, "task.name", default="")))
    common = {rule.key: problem for rule in COMMON_RULES if (problem := rule_problem(cfg, rule))}
    problems = list(common.values())
    shared = {}
    for block in SHARED:  # each read once here, and carried typed by the run's inputs
        found, bad_values, _ = read_settings(block, cfg)
        problems += bad_values
        if found is not None:
            shared[block] = found
    settings, bad_settings, _ = read_settings(task.settings, cfg)
    problems += bad_settings
    metrics = []
    checks = [lambda: metrics.extend(selected_metrics(cfg, task.unnamed_metrics(cfg)))] + (
        [lambda: check_pair(cfg)] if task.uses_pair else []
    )
    for check in checks:
        try:
            check()
        except ConfigError as exc:
            problems.append(str(exc))
    inputs = None
    if settings is not None and len(shared) == len(SHARED) and "seed" not in common:
        inputs = RunInputs.of(cfg, settings, metrics, out_dir or ".", shared)
        try:
            task.preflight(inputs)
        except ConfigError as exc:
            problems.append(str(exc))
        except Exception as exc:  # a key deleted with ~key, or a value of a type the task's check did not expect
            key = getattr(exc, "full_key", None)
            problems.append(
                f"{key} is missing: give it a value (see docs/tasks.md)"
                if key
                else f"the {task.name} settings cannot be checked ({type(exc).__name__}: {' '.join(str(exc).split())})"
            )
    problems += directory_problems(cfg, out_dir)
    if problems:
        raise ConfigError("\n".join(dict.fromkeys(problems)))
    return inputs


def rule_problem(cfg: DictConfig, rule: Rule) -> str | None:
    """The line reporting ``cfg``'s value of ``rule.key`` if the rule refuses it; an absent key keeps its default."""
    try:
        value = OmegaConf.select(cfg, rule.key, default=_ABSENT)
    except Exception as exc:  # an interpolation that does not resolve, e.g. ${oc.env:...} without the variable
        return f"{rule.key} cannot be read: {exc}; give {rule.advice}, e.g. {rule.key}={rule.example}"
    if value is _ABSENT or rule.accepts(value):
        return None
    return f"{rule.key}={shown(value)} is not valid: give {rule.advice}, e.g. {rule.key}={rule.example}"
