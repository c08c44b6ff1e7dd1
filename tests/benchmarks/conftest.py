"""Benchmark plumbing: timed experiments in subprocesses with peak memory, and a ratio table at the end.

Memory of an experiment is the peak resident set size of its whole process tree (the
experiment process plus our engine's worker processes), summed over processes and sampled
every 0.1 s with psutil: unlike tracemalloc it includes native allocations (BLAS, libsvm,
faiss) and concurrent workers. Shared library pages are counted once per process, so the
parallel figure is an upper bound. ``rss_before`` is the experiment process after imports and
inputs, before the first evaluation.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench import PROJECT_ROOT

HERE = Path(__file__).resolve().parent
RECORD_FILE = PROJECT_ROOT / "outputs" / "benchmark" / "results.jsonl"  # every result as it arrives
RESULTS: dict[str, dict] = {}      # experiment label -> record
METRIC_TIMES: dict[tuple, float] = {}  # (metric, size, impl) -> median seconds per call
MEMORY: dict[tuple, float] = {}        # (metric, size, impl) -> tracemalloc peak MB


def _tree_rss(proc) -> int:
    import psutil

    total = 0
    try:
        for p in [proc, *proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return total


def run_experiment(experiment: str, impl: str, workers: int = 1, *, label: str | None = None) -> dict:
    """Run ``timed_experiments.py`` in a fresh process; return its record with the tree's peak RSS."""
    import psutil

    cmd = [sys.executable, str(HERE / "timed_experiments.py"), experiment, impl, f"--workers={workers}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, handle = [0], psutil.Process(proc.pid)

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(handle))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    sampler.join()
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    record = json.loads(out.strip().splitlines()[-1])
    record["peak_tree_rss_mb"] = peak[0] / 2**20
    if label:
        RESULTS[label] = record
        keep(label, {k: v for k, v in record.items() if k != "distances"})
    return record


def keep(label: str, record: dict) -> None:
    """Append one result to outputs/benchmark/results.jsonl, so a long run's results survive an interrupt."""
    RECORD_FILE.parent.mkdir(parents=True, exist_ok=True)
    with RECORD_FILE.open("a") as fh:
        fh.write(json.dumps({"label": label, "time": time.strftime("%Y-%m-%d %H:%M:%S"), **record}) + "\n")


@pytest.fixture(scope="session")
def prepared_inputs():
    """Embed every input of both experiments once (in a subprocess), so timed runs find a warm cache."""
    for experiment in ("ksc", "robustness"):
        run_experiment(experiment, "prepare")


def _ratio(a, b) -> str:
    return f"{a / b:.3f}" if a and b else "-"


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if METRIC_TIMES:
        tr.section("metric time per pair: ours / reference (median seconds per call; < 1 = ours faster)")
        tr.write_line(f"{'metric':<11}{'size':>6}  {'reference':<12}{'ours s':>10}{'ref s':>10}{'ratio':>8}"
                      f"{'ours MB':>9}{'ref MB':>8}")
        for (metric, size, impl), secs in sorted(METRIC_TIMES.items()):
            if impl == "ours":
                continue
            ours = METRIC_TIMES.get((metric, size, "ours"))
            tr.write_line(f"{metric:<11}{size:>6}  {impl:<12}{ours or 0:>10.4f}{secs:>10.4f}{_ratio(ours, secs):>8}"
                          f"{MEMORY.get((metric, size, 'ours'), 0):>9.1f}{MEMORY.get((metric, size, impl), 0):>8.1f}")
    if RESULTS:
        tr.section("experiments: metric time and peak memory (ratio = ours / compcor)")
        for experiment in ("ksc", "robustness", "make-run"):
            ref = RESULTS.get(f"{experiment}/compcor")
            for label, r in RESULTS.items():
                if not label.startswith(experiment + "/"):
                    continue
                ratio = _ratio(r.get("seconds"), ref.get("seconds")) if ref else "-"
                tr.write_line(f"{label:<24} {r['evaluations']:>6} evals {r.get('seconds', 0):>9.1f} s  ratio {ratio:>6}"
                              f"  peak RSS {r['peak_tree_rss_mb']:>7.0f} MB (before {r.get('rss_before_mb', 0):.0f})"
                              f"  errors {r.get('n_errors', 0)}")
                per = r.get("seconds_per_metric", {})
                tr.write_line("    " + ", ".join(f"{m} {s:.1f}" for m, s in sorted(per.items())))


@pytest.fixture(scope="session")
def experiment(prepared_inputs):
    """``experiment(name, impl, workers, label=...)`` runs one timed experiment (see ``run_experiment``)."""
    return run_experiment


@pytest.fixture(scope="session")
def metric_records():
    """(seconds, memory, keep) : dicts keyed (metric, size, impl) that the summary turns into ratios."""
    return METRIC_TIMES, MEMORY, keep


@pytest.fixture(scope="session")
def experiment_results():
    """label -> record of every experiment of the session, for the summary."""
    return RESULTS
