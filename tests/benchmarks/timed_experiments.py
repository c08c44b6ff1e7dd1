"""One timed experiment in a fresh process: ``python tests/benchmarks/timed_experiments.py EXPERIMENT IMPL``.

EXPERIMENT is ``ksc`` (004's KSC study: clinc150_banking77 and atis_news, k = 7 and 12,
n = 100, 5 repetitions, eight metrics) or ``robustness`` (004's size and imbalance grid on
clinc150_banking77, the robustness task's settings (docs/tasks.md); ``BENCH_ROBUSTNESS_GRID=quick`` shrinks it).
``BENCH_METRICS`` and ``BENCH_OVERRIDES`` change the metrics and add Hydra overrides, for experiments.
IMPL is ``ours`` (``textmetric_bench.engine.run_jobs``, ``--workers N``), ``compcor`` (compcor's
functions called per pair in a plain loop) or ``prepare`` (only build the inputs, embedding
what the cache lacks, so timed runs never run the sentence encoder).

The inputs come from the task code itself: ``run_ksc``/``run_robustness`` run up to their call
of ``run_jobs``, which is intercepted, so both implementations see exactly the jobs, corpora,
embeddings and seeds a real run would. Metric time is the wall time of the evaluations only
(for ours it includes starting workers and their warm-up). The last stdout line is a JSON
record: seconds, seconds per metric, evaluations, errors, RSS and every distance.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import math
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, when run as a script

METRICS = "[chi,classifier,dc,fid,irpr,mauve,pr,zipf]"
#: BENCH_ROBUSTNESS_GRID -> overrides of the robustness task's settings (docs/tasks.md): the full grid, one repetition of it, a small one
GRIDS = {
    "full": [],
    "one": ["repetitions=1"],
    "quick": ["sizes=[50,250,450]", "n_ref=500", "imbalance_total=500", "repetitions=2"],
}


def experiment_configs(name: str) -> list[list[str]]:
    """Hydra overrides of every run an experiment is made of."""
    metrics = f"metrics={os.environ['BENCH_METRICS']}" if os.environ.get("BENCH_METRICS") else f"metrics={METRICS}"
    extra = os.environ.get("BENCH_OVERRIDES", "").split()  # e.g. "metric.mauve.kmeans_num_redo=1"
    if name == "ksc":
        # own_noise.seeds=0: the paper's evaluations only (compcor computes no own noise; the KSC task plans its
        # own-noise evaluations into the same engine call, which capture() intercepts)
        return [
            ["task=ksc", f"pair={pair}", f"k={k}", "n=100", "repetitions=5", "own_noise.seeds=0", metrics, *extra]
            for pair in ("clinc150_banking77", "atis_news")
            for k in (7, 12)
        ]
    if name == "robustness":
        grid = GRIDS.get(os.environ.get("BENCH_ROBUSTNESS_GRID", "full"))
        if grid is None:
            raise SystemExit(
                f"BENCH_ROBUSTNESS_GRID={os.environ['BENCH_ROBUSTNESS_GRID']!r}: use one of {sorted(GRIDS)}"
            )
        return [["task=robustness", "pair=clinc150_banking77", metrics, *grid, *extra]]
    raise SystemExit(f"unknown experiment {name!r}; use ksc or robustness")


class _Captured(Exception):
    pass


def capture(overrides: list[str]) -> dict:
    """The (jobs, store, metrics) the task would hand to ``run_jobs`` under ``overrides``."""

    from textmetric_bench.running.registry import compose_config

    cfg = compose_config(overrides)
    task = {
        "ksc": ("textmetric_bench.tasks.ksc", "run_ksc"),
        "robustness": ("textmetric_bench.tasks.robustness", "run_robustness"),
    }
    runner = getattr(importlib.import_module(task[cfg.task.name][0]), task[cfg.task.name][1])
    module = importlib.import_module("textmetric_bench.tasks.skeleton")  # every task calls run_jobs from there
    got: dict = {}

    def intercept(jobs, store, metrics, **_):
        got.update(jobs=list(jobs), store=store, metrics=metrics)
        raise _Captured

    original, module.run_jobs = module.run_jobs, intercept
    try:
        with tempfile.TemporaryDirectory() as out_dir:
            runner(cfg, out_dir)
    except _Captured:
        pass
    finally:
        module.run_jobs = original
    if not got:
        raise RuntimeError(f"{overrides}: the task finished without evaluating anything")
    return got


def run_ours(runs: list[dict], workers: int) -> tuple[list[float], dict[str, float], list[str]]:
    from textmetric_bench.engine import run_jobs

    distances, per_metric, errors = [], defaultdict(float), []
    for run in runs:
        outcomes = run_jobs(run["jobs"], run["store"], run["metrics"], workers=workers, progress=False)
        for job in run["jobs"]:
            o = outcomes[job.key]
            distances.append(o.distance)
            per_metric[job.metric] += o.seconds
            if o.error:
                errors.append(f"{job.metric}: {o.error}")
    return distances, dict(per_metric), errors


def warm_compcor(runs: list[dict]) -> dict:
    """compcor's functions after one untimed call per metric (lazy imports, tokenizer load), as ours warms up."""
    from reference_impls import compcor_functions

    fns = compcor_functions()
    for run in runs:
        for job in {j.metric: j for j in reversed(run["jobs"])}.values():
            fns[job.metric](*_inputs(run, job), job.seed)
    return fns


def _inputs(run: dict, job) -> list:
    return [run["store"].inputs(run["metrics"][job.metric][0], c) for c in (job.p, job.q)]


def run_compcor(runs: list[dict], fns: dict) -> tuple[list[float], dict[str, float], list[str]]:
    distances, per_metric, errors = [], defaultdict(float), []
    for run in runs:
        for job in run["jobs"]:
            p, q = _inputs(run, job)
            start = time.perf_counter()
            try:
                distances.append(float(fns[job.metric](p, q, job.seed)))
            except Exception as exc:  # noqa: BLE001 -- record, as our engine does
                distances.append(math.nan)
                errors.append(f"{job.metric}: {type(exc).__name__}: {exc}")
            per_metric[job.metric] += time.perf_counter() - start
    return distances, dict(per_metric), errors


def cpu_seconds() -> float:
    """CPU time (user + system) of this process tree: this process, its ended and waited-for children,
    and its live ones (e.g. the joblib workers compcor's PR/DC start, our forkserver) with the ended
    children they waited for (our workers, forked by the forkserver)."""
    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        live += times.user + times.system + times.children_user + times.children_system
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime + live


def pin_to_one_core() -> None:
    """Serial means one core: this process and every process or thread it starts (our worker,
    compcor's joblib threads in prdc, BLAS and OpenMP pools) run on one CPU, and BLAS/OpenMP are
    told to use one thread, so neither implementation gets a second core the other lacks."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"  # before numpy, torch or faiss are imported; inherited by workers
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=["ksc", "robustness"])
    parser.add_argument("impl", choices=["ours", "compcor", "prepare"])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--profile", help="write a cProfile of the timed part here")
    args = parser.parse_args(argv)
    if args.workers == 1 and args.impl != "prepare":
        pin_to_one_core()
    import logging

    logging.basicConfig(level=logging.WARNING)
    import psutil

    runs = [capture(o) for o in experiment_configs(args.experiment)]
    record = {
        "experiment": args.experiment,
        "impl": args.impl,
        "workers": args.workers,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "evaluations": sum(len(r["jobs"]) for r in runs),
    }
    if args.impl != "prepare":
        fns = warm_compcor(runs) if args.impl == "compcor" else None
        record["rss_before_mb"] = psutil.Process().memory_info().rss / 2**20
        profile = cProfile.Profile() if args.profile else None
        start, cpu_start = time.perf_counter(), cpu_seconds()
        if profile:
            profile.enable()
        result = run_ours(runs, args.workers) if args.impl == "ours" else run_compcor(runs, fns)
        if profile:
            profile.disable()
            profile.dump_stats(args.profile)
        record["seconds"] = time.perf_counter() - start
        record["cpu_seconds"] = cpu_seconds() - cpu_start
        distances, per_metric, errors = result
        record.update(
            seconds_per_metric=per_metric,
            errors=errors[:20],
            n_errors=len(errors),
            distances=[d if math.isfinite(d) else None for d in distances],
        )
    record["maxrss_self_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    record["maxrss_children_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    sys.stdout.write("\n" + json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
