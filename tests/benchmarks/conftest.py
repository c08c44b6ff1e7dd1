"""Benchmark plumbing: timed experiments in subprocesses with peak memory, and a ratio table at the end.

Memory of an experiment is the peak resident set size of its whole process tree (the
experiment process plus our engine's worker processes), summed over processes and sampled
every 0.1 s with psutil: unlike tracemalloc it includes native allocations (BLAS, libsvm,
faiss) and concurrent workers. Shared library pages are counted once per process, so the
summed RSS is an upper bound; where the OS reports them, the summed PSS (shared pages split
between their processes) and USS (pages of one process only) are sampled too, every 0.5 s
(reading them walks each process's page tables: ~15 ms a process). ``rss_before`` is the
experiment process after imports and inputs, before the first evaluation.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from summary import IFC_RUN_KEPT, ifc_run_row, lm_rows, machine, summary_rows, table_lines, write_summary

from textmetric_bench import PROJECT_ROOT

HERE = Path(__file__).resolve().parent
RECORD_FILE = PROJECT_ROOT / "outputs" / "benchmark" / "results.jsonl"  # every result as it arrives
SUMMARY_FILE = PROJECT_ROOT / "outputs" / "benchmark" / "summary.json"  # the one table (summary.py)
RESULTS: dict[str, dict] = {}  # experiment label -> record
METRIC_TIMES: dict[tuple, float] = {}  # (metric, size, impl) -> median seconds per call
MEMORY: dict[tuple, float] = {}  # (metric, size, impl) -> tracemalloc peak MB


class TreeMemory:
    """Peaks of a process tree's memory, summed over its processes: RSS at every ``sample()``,
    PSS and USS (where psutil reports them) at every ``full_every``-th; and each process's peak RSS
    by role (``main``, ``worker``, ``tracker``: multiprocessing's resource tracker, ``forkserver``: the
    process our workers are forked from). Also the CPU seconds of every process of the tree, start-up
    included (workers that end unreaped escape ``getrusage``, so they are read while they live)."""

    def __init__(self, pid: int, full_every: int = 5):
        import psutil

        self.root, self.full_every, self.ticks = psutil.Process(pid), full_every, 0
        self.peak = {"rss": 0, "pss": 0, "uss": 0}
        self.per_process: dict[int, tuple[str, int]] = {}  # pid -> (role, peak RSS)
        self.cpu: dict[int, float] = {}  # pid -> last CPU seconds (user + system) seen

    def _role(self, proc) -> str:
        import psutil

        if proc.pid == self.root.pid:
            return "main"
        try:
            command, parent = " ".join(proc.cmdline()), proc.ppid()
        except psutil.Error:
            return "worker"
        if "resource_tracker" in command:
            return "tracker"
        # the forkserver is the main process's child; the workers it forks keep its command line
        return "forkserver" if "forkserver" in command and parent == self.root.pid else "worker"

    def sample(self) -> None:
        import psutil

        full = self.ticks % self.full_every == 0
        self.ticks += 1
        total = dict.fromkeys(self.peak, 0)
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        for proc in procs:
            try:
                mem = proc.memory_full_info() if full else proc.memory_info()
                times = proc.cpu_times()
            except psutil.Error:
                continue
            self.cpu[proc.pid] = times.user + times.system
            for key in total:
                total[key] += getattr(mem, key, 0) or 0
            role, peak = self.per_process.get(proc.pid) or (self._role(proc), 0)
            self.per_process[proc.pid] = (role, max(peak, mem.rss))
        for key in ("rss", "pss", "uss") if full else ("rss",):
            self.peak[key] = max(self.peak[key], total[key])

    def record(self) -> dict:
        """The peaks in MiB: ``peak_tree_rss_mb``, ``peak_tree_pss_mb`` and ``peak_tree_uss_mb``
        (None where not reported), and ``peak_process_rss_mb`` (role -> peak of each such process)."""
        out = {f"peak_tree_{k}_mb": (v / 2**20 if v else None) for k, v in self.peak.items()}
        roles: dict[str, list[float]] = {}
        for role, peak in self.per_process.values():
            roles.setdefault(role, []).append(round(peak / 2**20, 1))
        out["peak_process_rss_mb"] = {role: sorted(peaks, reverse=True) for role, peaks in roles.items()}
        out["tree_cpu_s"] = sum(self.cpu.values())  # up to the last sample (0.1 s before the end)
        return out


def run_measured(cmd: list[str], **popen) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``cmd`` to its end while sampling its process tree every 0.1 s; (result, memory record)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    memory = TreeMemory(proc.pid)

    def sample():
        while proc.poll() is None:
            memory.sample()
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    sampler.join()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), memory.record()


def run_experiment(experiment: str, impl: str, workers: int = 1, *, label: str | None = None) -> dict:
    """Run ``timed_experiments.py`` in a fresh process; return its record with the tree's peak memory."""
    cmd = [sys.executable, str(HERE / "timed_experiments.py"), experiment, impl, f"--workers={workers}"]
    done, memory = run_measured(cmd)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    record = json.loads(done.stdout.strip().splitlines()[-1])
    record.update(memory)
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
        tr.write_line(
            f"{'metric':<11}{'size':>6}  {'reference':<12}{'ours s':>10}{'ref s':>10}{'ratio':>8}"
            f"{'ours MB':>9}{'ref MB':>8}"
        )
        for (metric, size, impl), secs in sorted(METRIC_TIMES.items()):
            if impl == "ours":
                continue
            ours = METRIC_TIMES.get((metric, size, "ours"))
            tr.write_line(
                f"{metric:<11}{size:>6}  {impl:<12}{ours or 0:>10.4f}{secs:>10.4f}{_ratio(ours, secs):>8}"
                f"{MEMORY.get((metric, size, 'ours'), 0):>9.1f}{MEMORY.get((metric, size, impl), 0):>8.1f}"
            )
    if any(not label.startswith(("memory/", "lm/")) for label in RESULTS):
        tr.section("experiments: metric time and peak memory (ratio = ours / compcor)")
        for experiment in ("ksc", "robustness", "make-run"):
            ref = RESULTS.get(f"{experiment}/compcor")
            for label, r in RESULTS.items():
                if not label.startswith(experiment + "/"):
                    continue
                ratio = _ratio(r.get("seconds"), ref.get("seconds")) if ref else "-"
                tr.write_line(
                    f"{label:<24} {r['evaluations']:>6} evals {r.get('seconds', 0):>9.1f} s  ratio {ratio:>6}"
                    f"  peak RSS {r['peak_tree_rss_mb']:>7.0f} MB (before {r.get('rss_before_mb', 0):.0f})"
                    f"  errors {r.get('n_errors', 0)}"
                )
                per = r.get("seconds_per_metric", {})
                tr.write_line("    " + ", ".join(f"{m} {s:.1f}" for m, s in sorted(per.items())))
    memory = {label: r for label, r in RESULTS.items() if label.startswith("memory/")}
    if memory:
        tr.section("peak memory of the process tree, MiB summed over its processes")
        for label, r in memory.items():
            tr.write_line(
                f"{label:<32} RSS {r['peak_tree_rss_mb']:>7.0f}  PSS {_mb(r.get('peak_tree_pss_mb'))}"
                f"  USS {_mb(r.get('peak_tree_uss_mb'))}  (goal: RSS <= {r.get('goal_mb', '-')})"
                f"  in {r.get('seconds', 0):.0f} s"
            )
            tr.write_line(
                "    peak RSS per process: "
                + ", ".join(
                    f"{role} {'/'.join(f'{v:.0f}' for v in peaks)}" for role, peaks in r["peak_process_rss_mb"].items()
                )
            )

    rows, jobs = summary_rows(RESULTS), lm_rows(RESULTS)
    if rows:
        tr.section("the benchmark table: ours serial against compcor serial (ratio = compcor s / ours s)")
        for line in table_lines(rows):
            tr.write_line(line)
    if jobs:
        tr.section("the language model: tokens per second before and after, one pinned core (ratio = after / before)")
        for r in jobs:
            tr.write_line(
                f"{r['job']:<30} {r['before_tokens_per_s'] or 0:>8.1f} -> {r['after_tokens_per_s'] or 0:>8.1f}"
                f" tokens/s  ratio {r['tokens_per_s_ratio'] or 0:.2f}  (per CPU s: ratio "
                f"{r['tokens_per_cpu_s_ratio'] or 0:.2f})"
            )
    ifc_run, ifc_kept = ifc_run_row(RESULTS), ifc_run_row(RESULTS, IFC_RUN_KEPT)
    if rows or jobs or ifc_run or ifc_kept:
        lm = (
            {"machine": machine(), "jobs": jobs, "ifc_run": ifc_run, "ifc_run_kept": ifc_kept}
            if jobs or ifc_run or ifc_kept
            else None
        )
        write_summary(SUMMARY_FILE, rows, machine(), lm)
        tr.write_line(f"written to {SUMMARY_FILE}")


def _mb(value) -> str:
    return f"{value:>7.0f}" if value else "      -"


@pytest.fixture(scope="session")
def experiment(prepared_inputs):
    """``experiment(name, impl, workers, label=...)`` runs one timed experiment (see ``run_experiment``)."""
    return run_experiment


@pytest.fixture(scope="session")
def measured_run():
    """``measured_run(cmd, **popen)`` runs a command while sampling its process tree's memory
    (see ``run_measured``)."""
    return run_measured


@pytest.fixture(scope="session")
def metric_records():
    """(seconds, memory, keep) : dicts keyed (metric, size, impl) that the summary turns into ratios."""
    return METRIC_TIMES, MEMORY, keep


@pytest.fixture(scope="session")
def experiment_results():
    """label -> record of every experiment of the session, for the summary."""
    return RESULTS
