"""Every config value checked before a task loads a corpus or a model, so a bad one fails in a
second, not after minutes of embedding: one line per bad value, naming the key, the value and a valid example.

Range checks that belong to a task (k and n, the robustness grid, perturbations, IFC settings, metric names)
stay with the task; this module calls them, after checking the types they assume.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, ListConfig, OmegaConf

from textmetric_bench.errors import ConfigError
from textmetric_bench.tasks.command_line import shown
from textmetric_bench.tasks.directories import directory_problems

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


def fraction(v: Any) -> bool:
    return number(0)(v) and v <= 1


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
    Rule("lm.device", device, DEVICES, "cpu"),
    Rule("lm.batch_size", whole(1), "a whole number >= 1", "16"),
    Rule("lm.workers", either(whole(1), lambda v: v == "auto"), "a whole number >= 1 or 'auto'", "2"),
    Rule("lm.threads", either(whole(1), null), "a whole number >= 1, or null for one per core", "1"),
    Rule("lm.generation_threads", either(whole(1), null, lambda v: v == "auto"),
         "a whole number >= 1, auto, or null for one per core", "2"),
)

TASK_RULES = {
    "ksc": (Rule("k", whole(), WHOLE, "7"), Rule("n", whole(), WHOLE, "100"),
            Rule("repetitions", whole(), WHOLE, "5"),
            Rule("reference", lambda v: v is False or isinstance(v, str),
                 "auto, false, or a directory of reference files", "false")),
    "robustness": (Rule("n_ref", whole(), WHOLE, "3000"), Rule("imbalance_total", whole(), WHOLE, "2900"),
                   Rule("repetitions", whole(), WHOLE, "10"),
                   Rule("sizes", lambda v: isinstance(v, ListConfig) and all(whole()(s) for s in v),
                        "a list of whole numbers", "[50,250,450]")),
    "perturb": (Rule("n", whole(), WHOLE, "200"), Rule("repetitions", whole(), WHOLE, "5")),
    "ifc": tuple(Rule(f"ifc.{key}", whole(), WHOLE, example) for key, example in (
        ("iterations", "4"), ("train_per_step", "200"), ("corpus_size", "200"), ("batch_size", "16"),
        ("sampling.batch_size", "64"), ("sampling.max_rounds", "4"))) + (
        Rule("ifc.repetitions", whole(1), "a whole number >= 1", "5"),
        Rule("ifc.generate", boolean, FLAG, "false"),
        Rule("ifc.learning_rate", number(0), "a number > 0", "1e-4"),
        Rule("ifc.reference_share", number(0), "a number strictly between 0 and 1", "0.5"),
        Rule("ifc.sampling.top_p", fraction, "a number > 0 and <= 1", "0.95"),
        Rule("ifc.sampling.temperature", number(0), "a number > 0", "1.0"),
        Rule("ifc.sampling.length_quantile", fraction, "a number > 0 and <= 1", "0.95")),
}
TASK_RULES["check"] = TASK_RULES["ksc"] + (
    Rule("update", boolean, FLAG, "true"),
    Rule("check.z", number(0), "a number > 0", "2.0"),
    Rule("check.min_tolerance", number(0, strict=False), "a number >= 0", "0.02"),
    Rule("check.exact_tolerance", number(0, strict=False), "a number >= 0", "1e-9"),
    Rule("check.two_sided", boolean, FLAG, "true"),
    Rule("check.measures", lambda v: isinstance(v, ListConfig) and 0 < len(v) and set(v) <= set(gated_measures()),
         "a non-empty list of the measures rho, omega2, L, A, Aw", "[A,Aw,rho]"),
)


def gated_measures() -> list[str]:
    """What the regression gate can compare: run_ksc's measures but T, which depends on the machine."""
    from textmetric_bench.tasks.ksc import MEASURE_COLUMNS

    return [m for m in MEASURE_COLUMNS[2:] if m != "T"]


def validate_config(cfg: DictConfig, out_dir: Path | str | None = None) -> None:
    """Raise one `ConfigError` listing every bad value of ``cfg`` (one line each); ``out_dir`` is the run directory."""
    task = str(OmegaConf.select(cfg, "task.name", default=""))
    problems, bad_keys = [], set()
    for rule in COMMON_RULES + TASK_RULES.get(task, ()):
        if problem := rule_problem(cfg, rule):
            problems.append(problem)
            bad_keys.add(rule.key)
    for check in (_pair_cards, _metrics, *TASK_CHECKS.get(task, ())):
        try:
            check(cfg, bad_keys)
        except ConfigError as exc:
            problems.append(str(exc))
        except Exception as exc:  # a key deleted with ~key, or a value of a type the task's check did not expect
            key = getattr(exc, "full_key", None)
            problems.append(f"{key} is missing: give it a value (its default is in conf/)" if key else
                            f"the {task} settings cannot be checked ({type(exc).__name__}: "
                            f"{' '.join(str(exc).split())}); compare them with conf/task/{task}.yaml")
    problems += directory_problems(cfg, out_dir)
    if problems:
        raise ConfigError("\n".join(dict.fromkeys(problems)))


def rule_problem(cfg: DictConfig, rule: Rule) -> str | None:
    """The line reporting ``cfg``'s value of ``rule.key`` if the rule refuses it; an absent key keeps its default."""
    try:
        value = OmegaConf.select(cfg, rule.key, default=_ABSENT)
    except Exception as exc:  # an interpolation that does not resolve, e.g. ${oc.env:...} without the variable
        return f"{rule.key} cannot be read: {exc}; give {rule.advice}, e.g. {rule.key}={rule.example}"
    if value is _ABSENT or rule.accepts(value):
        return None
    return f"{rule.key}={shown(value)} is not valid: give {rule.advice}, e.g. {rule.key}={rule.example}"


# --- the tasks' own checks, run once the values they read have the right types ---------------------


def _pair_cards(cfg: DictConfig, bad: set[str]) -> None:
    if OmegaConf.select(cfg, "task.name") != "ifc":
        from textmetric_bench.tasks.sources import check_pair

        check_pair(cfg)


def _metrics(cfg: DictConfig, bad: set[str]) -> None:
    from textmetric_bench.tasks.config import selected_metrics

    selected_metrics(cfg)


def _ksc(cfg: DictConfig, bad: set[str]) -> None:
    if not bad & {"k", "n", "repetitions"}:
        from textmetric_bench.tasks.ksc import check_run_config

        check_run_config(cfg)


def _reference(cfg: DictConfig, bad: set[str]) -> None:
    if "reference" not in bad:
        from textmetric_bench.tasks.reference import reference_dir

        reference_dir(cfg)


def _check_baseline(cfg: DictConfig, bad: set[str]) -> None:
    if not cfg.get("update", False) and "check.baseline" not in bad:
        path = Path(str(cfg.check.baseline)).expanduser()
        if not path.is_file():
            raise ConfigError(f"check.baseline={shown(str(path))} is not valid: no such file; point it at a "
                              f"baseline JSON, or write one with `python -m textmetric_bench task=check update=true`")


def _robustness(cfg: DictConfig, bad: set[str]) -> None:
    if not bad & {"n_ref", "sizes", "imbalance_total", "repetitions"}:
        from textmetric_bench.collections.size_imbalance import validate_robustness_parameters

        validate_robustness_parameters(cfg.n_ref, cfg.sizes, cfg.imbalance_total, cfg.repetitions)


def _perturb(cfg: DictConfig, bad: set[str]) -> None:
    if not bad & {"n", "repetitions"}:
        from textmetric_bench.collections.perturbation_samples import validate_perturb_parameters

        validate_perturb_parameters(cfg.n, cfg.repetitions, cfg.perturbations)


def _ifc_source(cfg: DictConfig, bad: set[str]) -> None:
    from textmetric_bench.tasks.sources import check_ifc_source

    check_ifc_source(cfg)


def _ifc_plan(cfg: DictConfig, bad: set[str]) -> None:
    if not any(key.startswith("ifc.") for key in bad):
        from textmetric_bench.tasks.ifc import generation_plan, split_source

        generation_plan(cfg)
        split_source([], float(cfg.ifc.reference_share), 0)


#: Per task, the checks it makes itself; each gets the keys already reported, to skip checks that read them.
TASK_CHECKS: dict[str, tuple[Callable[[DictConfig, set[str]], None], ...]] = {
    "ksc": (_ksc, _reference), "check": (_ksc, _reference, _check_baseline), "robustness": (_robustness,),
    "perturb": (_perturb,), "ifc": (_ifc_source, _ifc_plan),
}
