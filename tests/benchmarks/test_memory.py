"""Peak memory of the default robustness study with 2 workers: summed RSS <= 3 GiB.

Runs ``python -m textmetric_bench task=robustness pair=clinc150_banking77 engine.workers=2`` (the default
grid of the robustness task's settings (docs/tasks.md), or the one ``BENCH_ROBUSTNESS_GRID`` names, every default
metric) as a user does, and samples the process
tree (the CLI process, its workers and multiprocessing's resource tracker): peak summed RSS,
PSS and USS, and each process's peak RSS, go to the benchmark's extra_info and the summary.
The embedding cache is warm (``prepared_inputs``), as in the timed experiments, so the main
process never loads the sentence encoder. Before the memo's bound counted what its values keep alive, this run peaked at
9-12 GB: the per-corpus memo kept every PR/DC distance matrix alive (see bench/api/sharing.py).
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from timed_experiments import GRIDS

from textmetric_bench import PROJECT_ROOT

pytestmark = pytest.mark.benchmark
GOAL_MB = 3 * 1024  # at most 3 GiB of summed RSS: room for a 2-worker run beside other jobs on a 24 GiB machine


def _robustness_run(measured_run, out_dir) -> dict:
    grid = GRIDS.get(os.environ.get("BENCH_ROBUSTNESS_GRID", "full"), [])
    cmd = [
        sys.executable,
        "-m",
        "textmetric_bench",
        "task=robustness",
        "pair=clinc150_banking77",
        "engine.workers=2",
        "progress=false",
        f"hydra.run.dir={out_dir}",
        *grid,
    ]
    start = time.perf_counter()
    done, memory = measured_run(cmd, cwd=PROJECT_ROOT)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    run = json.loads((out_dir / "run.json").read_text())
    return {
        "seconds": time.perf_counter() - start,
        "metrics": run["metrics"],
        "failures": run["failures"],
        "goal_mb": GOAL_MB,
        **memory,
    }


def test_robustness_2_workers_peak_memory(
    benchmark, prepared_inputs, measured_run, experiment_results, metric_records, tmp_path
):
    label = "memory/robustness-2-workers"
    record = benchmark.pedantic(_robustness_run, args=(measured_run, tmp_path), rounds=1, iterations=1)
    benchmark.extra_info.update(record)
    experiment_results[label] = record
    metric_records[2](label, record)
    assert not record["failures"], record["failures"]
    assert record["peak_tree_rss_mb"] <= GOAL_MB, (
        f"peak summed RSS {record['peak_tree_rss_mb']:.0f} MiB > {GOAL_MB} MiB; "
        f"per process: {record['peak_process_rss_mb']}"
    )
