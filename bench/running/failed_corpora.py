"""The two corpora of each failed evaluation of a run, written to files, to reproduce the failure outside the harness.

    python -m textmetric_bench.running.failed_corpora <run dir> [--metric NAME] [--out DIR]

A run keeps its failed evaluations in ``failures.csv`` (the metric, the evaluation's fields, the reason and the
traceback), not their texts. The corpora are rebuilt from the run's saved config (``.hydra/config.yaml``: the
pair, the task's settings, the seed), as the run built them, and each failed evaluation's two corpora are written
as JSON lines (``{"text": ...}``, one text a line; a text's own newlines kept), which ``pair=files`` and
``textmetric_bench.score`` read:

    <out>/<metric>/<evaluation>/p.jsonl, q.jsonl, failure.json

``failure.json`` holds the evaluation, its two corpora's ids, the seed the run handed the metric on it, the metric's
parameters in the run (``run.json``'s ``metric_params``) and the error: ``textmetric_bench.score(metric, p, q,
seed=seed, **params)`` calls the metric on them as the run did.

``<evaluation>`` names the evaluation's fields (``repetition1_i2_j5`` for KSC). The command prints one line per
evaluation written, and exits 2 when the directory is not a run, holds no failure (of ``--metric``), or its
config cannot be rebuilt.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from textmetric_bench.collections.seeds import metric_seed
from textmetric_bench.errors import EXIT_BAD_INPUT, BenchError, ConfigError


def saved_config(run_dir: Path) -> tuple[DictConfig, Path | None]:
    """The run's composed config and the directory it was started in (relative paths of the run start there)."""
    path = run_dir / ".hydra" / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no saved config (.hydra/config.yaml): give the directory of a run")
    hydra_file = run_dir / ".hydra" / "hydra.yaml"
    cwd = OmegaConf.select(OmegaConf.load(hydra_file), "hydra.runtime.cwd") if hydra_file.is_file() else None
    return OmegaConf.load(path), Path(cwd) if cwd else None


@contextlib.contextmanager
def working_directory(path: Path | None) -> Iterator[None]:
    before = Path.cwd()
    if path is not None and path.is_dir():
        os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def evaluation_name(fields: Sequence[str], values: Sequence) -> str:
    return "_".join(f"{name}{value}" for name, value in zip(fields, values))


def rebuild_collections(run_dir: Path | str):
    """(the task, its ``Collections``) of a run, rebuilt from its saved config as the run built them: every corpus
    by its id and the evaluations on them (``Evaluation.p``, ``.q``, ``.fields``, ``.seed``)."""
    from textmetric_bench.api.context import use_context
    from textmetric_bench.tasks.config import run_context
    from textmetric_bench.running.registry import get_task
    from textmetric_bench.running.validate import validate_config

    from omegaconf import ListConfig, open_dict

    from textmetric_bench.api.registry import available_metrics

    run_dir = Path(run_dir).expanduser().absolute()
    cfg, started_in = saved_config(run_dir)
    task = get_task(str(cfg.task.name))
    listed = cfg.get("metrics")
    if isinstance(listed, ListConfig):  # the corpora do not depend on the metrics: one defined in a notebook, not
        known = set(available_metrics())  # registered in this process, must not stop their rebuilding
        kept = [str(m) for m in listed if str(m) in known or str(m) in ("default", "all")]
        with open_dict(cfg):
            cfg.metrics = kept or ["zipf"]
    with working_directory(started_in):
        inputs = validate_config(cfg, run_dir)
        with use_context(run_context(cfg, inputs.cache_dir)):
            return task, task.build(inputs)


def check_same_corpora(run_dir: Path, fingerprint: dict) -> None:
    """ConfigError unless the corpora rebuilt from the saved config are those the run evaluated: the fingerprint
    its evaluation log starts with (a run without one, ``engine.resume=false``, is not checked)."""
    from textmetric_bench.engine.result_log import fingerprint_changes, logged_fingerprint

    logged = logged_fingerprint(run_dir / "evaluations.jsonl")
    if logged is None:
        return
    current = json.loads(json.dumps(fingerprint, default=str))
    if changed := fingerprint_changes(logged, current):
        raise ConfigError(
            f"the saved config ({run_dir / '.hydra' / 'config.yaml'}) builds other corpora than the run evaluated "
            f"(evaluations.jsonl; logged, rebuilt: {changed}): was the config or the data changed since?"
        )


def evaluation_seed(evaluation, run_seed: int) -> int:
    """The seed the run handed the metric on ``evaluation`` (as ``run_task`` does): its own, or its repetition's."""
    if evaluation.seed is not None:
        return int(evaluation.seed)
    return metric_seed(run_seed, evaluation.repetition)


def write_failed_corpora(
    run_dir: Path | str, out_dir: Path | str | None = None, metric: str | None = None
) -> list[Path]:
    """Write the two corpora of every failed evaluation of ``run_dir`` (of ``metric``, or of every metric) under
    ``out_dir`` (default ``<run_dir>/failed_corpora``); returns the directories written, one per evaluation."""
    run_dir = Path(run_dir).expanduser().absolute()
    failures_file = run_dir / "failures.csv"
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir} is not a directory: give the directory of a run (outputs/<task>/<pair>/<time>)")
    if not failures_file.is_file():
        raise ConfigError(f"{run_dir} has no failures.csv: no evaluation of this run failed (or it is not a run)")
    failures = pd.read_csv(failures_file, keep_default_na=False)
    if metric is not None:
        if metric not in set(failures["metric"]):
            raise ConfigError(
                f"no failed evaluation of {metric!r} in {failures_file}; failed: "
                f"{', '.join(sorted(set(failures['metric'])))}"
            )
        failures = failures[failures["metric"] == metric]
    task, collections = rebuild_collections(run_dir)
    check_same_corpora(run_dir, collections.fingerprint)
    run_seed = int(saved_config(run_dir)[0].seed)
    run_info = run_dir / "run.json"
    params = (json.loads(run_info.read_text(encoding="utf-8")).get("metric_params") or {}) if run_info.is_file() else {}
    fields = list(task.fields)
    by_fields = {tuple(str(v) for v in ev.fields): ev for ev in collections.evaluations if not ev.aside}
    out = Path(out_dir).expanduser().absolute() if out_dir is not None else run_dir / "failed_corpora"
    written = []
    for row in failures.to_dict("records"):
        values = [str(row[f]) for f in fields]
        evaluation = by_fields.get(tuple(values))
        if evaluation is None:
            raise ConfigError(
                f"failed evaluation {evaluation_name(fields, values)} of {row['metric']} is not among "
                "the evaluations the saved config builds: was the run's code or data changed since?"
            )
        target = out / str(row["metric"]) / evaluation_name(fields, values)
        target.mkdir(parents=True, exist_ok=True)
        for side, corpus in (("p", evaluation.p), ("q", evaluation.q)):
            with (target / f"{side}.jsonl").open("w", encoding="utf-8") as handle:
                for text in collections.corpora[corpus]:
                    handle.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
        (target / "failure.json").write_text(
            json.dumps(
                {
                    "metric": row["metric"],
                    **{f: row[f] for f in fields},
                    "p": evaluation.p,
                    "q": evaluation.q,
                    "seed": evaluation_seed(evaluation, run_seed),
                    "params": params.get(row["metric"], {}),
                    "error": row.get("error", ""),
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m textmetric_bench.running.failed_corpora",
        description="Write the two corpora of each failed evaluation of a run (failures.csv) as JSON lines.",
    )
    parser.add_argument("run_dir", help="the run's directory (outputs/<task>/<pair>/<time>)")
    parser.add_argument("--metric", help="only this metric's failed evaluations")
    parser.add_argument("--out", help="where to write them (default: <run dir>/failed_corpora)")
    args = parser.parse_args(argv)
    try:
        written = write_failed_corpora(args.run_dir, args.out, args.metric)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT) from None
    for path in written:
        print(f"{path}: p.jsonl, q.jsonl ({json.loads((path / 'failure.json').read_text())['error'][:120]})")


if __name__ == "__main__":
    main()
