"""Every config value checked before a task loads a corpus or a model, so a bad one fails in a
second, not after minutes of embedding: one line per bad value, naming the key, the value and a valid example.

The settings shared by every task are checked here (``COMMON_RULES``); a task's own come from its settings
dataclass (``textmetric_bench.tasks.settings``: types, ranges, then its ``check()``), then its ``preflight``
(files that must exist, sources that must be known). ``validate_config`` returns what the run reads, typed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from textmetric_bench.errors import ConfigError
from textmetric_bench.features.long_texts import LONG_TEXT_MODES
from textmetric_bench.tasks.command_line import shown
from textmetric_bench.running.directories import directory_problems
from textmetric_bench.tasks.settings import read_settings
from textmetric_bench.tasks.skeleton import RunInputs

_ABSENT = object()
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def whole(minimum: int | None = None) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and (minimum is None or v >= minimum)


def number(minimum: float = 0.0, *, strict: bool = True) -> Callable[[Any], bool]:
    def accepts(v: Any) -> bool:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            return False
        return v > minimum if strict else v >= minimum

    return accepts


def boolean(v: Any) -> bool:
    return isinstance(v, bool)


def device(v: Any) -> bool:
    return isinstance(v, str) and _DEVICE.fullmatch(v) is not None


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


SECONDS = "a number of seconds > 0"
WHOLE = "a whole number"
FLAG = "true or false"
DEVICES = "auto, cpu, cuda, cuda:N or mps"

COMMON_RULES = (
    Rule("seed", whole(0), "a whole number >= 0", "0"),
    Rule("progress", either(boolean, lambda v: v == "auto"), "auto, true or false", "false"),
    Rule("allow_metric_failures", boolean, FLAG, "true"),
    Rule("engine.workers", either(whole(1), lambda v: v == "auto"), "a whole number >= 1 or 'auto'", "2"),
    Rule("engine.timeout", either(number(0), null), f"{SECONDS}, or null for no limit", "600"),
    Rule("engine.max_timeouts", either(whole(0), null), "a whole number >= 0 (0 or null: never skip a metric)", "3"),
    Rule("engine.start_timeout", number(0), SECONDS, "120"),
    Rule("engine.prepare_timeout", either(number(0), null), f"{SECONDS}, or null for no limit", "7200"),
    Rule("engine.retry_failed", boolean, FLAG, "false"),
    Rule("engine.resume", boolean, FLAG, "false"),
    Rule("engine.blas_threads", whole(1), "a whole number >= 1", "1"),
    Rule("embedder.device", device, DEVICES, "cpu"),
    Rule("embedder.batch_size", whole(1), "a whole number >= 1", "64"),
    Rule(
        "embedder.long_texts",
        lambda v: v in LONG_TEXT_MODES,
        " or ".join(LONG_TEXT_MODES) + " (what a text longer than the embedder's window gets)",
        "windows",
    ),
    Rule("lm.device", device, DEVICES, "cpu"),
    Rule("lm.engine", lambda v: v in ("auto", "torch", "ctranslate2"), "auto, torch or ctranslate2", "auto"),
    Rule("lm.batch_size", whole(1), "a whole number >= 1", "16"),
    Rule("lm.workers", either(whole(1), lambda v: v == "auto"), "a whole number >= 1 or 'auto'", "2"),
    Rule("lm.threads", either(whole(1), null), "a whole number >= 1, or null for one per core", "1"),
    Rule(
        "lm.generation_threads",
        either(whole(1), null, lambda v: v == "auto"),
        "a whole number >= 1, auto, or null for one per core",
        "2",
    ),
    Rule("lm.generation_model", lambda v: v in ("auto", "transformers"), "auto or transformers", "transformers"),
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
    settings, bad_settings, _ = read_settings(task.settings, cfg)
    problems += bad_settings
    metrics = []
    checks = [lambda: metrics.extend(selected_metrics(cfg))] + ([lambda: check_pair(cfg)] if task.uses_pair else [])
    for check in checks:
        try:
            check()
        except ConfigError as exc:
            problems.append(str(exc))
    inputs = None
    if settings is not None and "seed" not in common:
        inputs = RunInputs.of(cfg, settings, metrics, out_dir or ".")
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
