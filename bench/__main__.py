"""`python -m bench` / `textmetric-bench`: the Hydra app that runs a task and writes its report."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import bench.config  # noqa: F401  (registers the ${project_root:} resolver)
from bench.errors import BenchError, ConfigError

log = logging.getLogger("bench")

# task name -> "module:function"; the function takes (cfg, out_dir) and returns an object with
# `files` (name -> Path; "table3_md" or "perturbation_md" is printed when present) and `failures`
# (metric -> error).
TASKS = {
    "ksc": "bench.runner:run_ksc",
    "robustness": "bench.robustness:run_robustness",
    "ifc": "bench.ifc:run_ifc",
    "check": "bench.check:run_check",
    "perturb": "bench.perturb:run_perturb",
}


def run_task(cfg: DictConfig, out_dir: Path):
    """Dispatch to the task named by ``cfg.task.name``, within the run's context (cache, LM)."""
    from importlib import import_module

    from bench.context import RunContext, use_context

    name = cfg.task.name
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; available: {', '.join(TASKS)}")
    module, func = TASKS[name].split(":")
    with use_context(RunContext.from_cfg(cfg)):
        return getattr(import_module(module), func)(cfg, out_dir)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def app(cfg: DictConfig) -> None:
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        result = run_task(cfg, out_dir)
    except BenchError as exc:
        log.error("%s", exc)
        raise SystemExit(f"error: {exc}") from None
    try:  # the HTML report of this run; a failure here must not hide the results
        from reports.html import build_report

        build_report([out_dir], out_dir)
    except Exception as exc:
        log.warning("could not build report.html: %s", exc)
    table = result.files.get("table3_md") or result.files.get("perturbation_md")
    if table is not None:
        print(Path(table).read_text())
    for name, failure in result.failures.items():
        print(f"metric {name} FAILED: {failure}", file=sys.stderr)
    if "check_md" in result.files:
        print(Path(result.files["check_md"]).read_text())
    if "baseline" in result.files:
        print(f"baseline written to {result.files['baseline']}")
    print(f"outputs written to {out_dir}")
    if getattr(result, "passed", True) is False:
        raise SystemExit(1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
