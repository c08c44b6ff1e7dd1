"""The benchmark's one table: per study, ours and compcor on equal resources, their ratio and peak memory.

Equal resources (issue 20) means ours serial (one worker process) against compcor serial (a plain
loop in one process), both with one BLAS/OpenMP thread: the ratio is compcor's seconds over ours
(> 1 = ours faster). The 2-worker run, where it exists, is shown beside it, not in the ratio.
Peak RSS is the summed resident memory of each run's process tree (conftest.py). The table is
printed at the end of ``make benchmark`` and written, with the machine it ran on, to
outputs/benchmark/summary.json.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

#: study -> (label of ours serial, label of ours with 2 workers, label of compcor), as test_experiments.py names them
STUDIES = {"ksc": ("ksc/ours-serial", "ksc/ours-2-workers", "ksc/compcor"),
           "robustness": ("robustness/ours-serial", "robustness/ours-2-workers", "robustness/compcor")}
COLUMNS = ("study", "evaluations", "ours_s", "compcor_s", "ratio", "ours_cpu_s", "compcor_cpu_s",
           "ours_2_workers_s", "ours_peak_rss_mb", "compcor_peak_rss_mb", "ours_2_workers_peak_rss_mb")


def summary_rows(results: dict[str, dict]) -> list[dict]:
    """One row per study with at least one of its runs in ``results`` (label -> record); None where a run is missing."""
    rows = []
    for study, (serial_label, parallel_label, compcor_label) in STUDIES.items():
        serial, parallel, compcor = (results.get(label) for label in (serial_label, parallel_label, compcor_label))
        if not (serial or parallel or compcor):
            continue
        ours_s, compcor_s = _get(serial, "seconds"), _get(compcor, "seconds")
        rows.append({
            "study": study,
            "evaluations": _get(serial or compcor or parallel, "evaluations"),
            "ours_s": ours_s, "compcor_s": compcor_s,
            "ratio": compcor_s / ours_s if ours_s and compcor_s else None,
            "ours_cpu_s": _get(serial, "cpu_seconds"), "compcor_cpu_s": _get(compcor, "cpu_seconds"),
            "ours_2_workers_s": _get(parallel, "seconds"),
            "ours_peak_rss_mb": _get(serial, "peak_tree_rss_mb"), "compcor_peak_rss_mb": _get(compcor, "peak_tree_rss_mb"),
            "ours_2_workers_peak_rss_mb": _get(parallel, "peak_tree_rss_mb"),
        })
    return rows


def _get(record: dict | None, key: str):
    return None if record is None else record.get(key)


def machine() -> dict:
    """What the numbers ran on: CPU model, logical cores, memory, Python, load average, date."""
    import psutil

    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), None)
    return {"cpu": model or platform.processor() or None, "logical_cores": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1), "python": platform.python_version(),
            "platform": platform.platform(), "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "robustness_grid": os.environ.get("BENCH_ROBUSTNESS_GRID", "full")}


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def write_summary(path: Path, rows: list[dict], about: dict) -> None:
    """``{"machine": ..., "studies": rows}`` as JSON at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": about, "studies": rows}, indent=2) + "\n")


def table_lines(rows: list[dict]) -> list[str]:
    """The rows as a fixed-width text table."""
    head = (f"{'study':<11}{'evals':>7}{'ours s':>10}{'compcor s':>11}{'ratio':>8}{'ours CPU s':>12}"
            f"{'compcor CPU s':>15}{'2 workers s':>13}{'ours RSS MB':>13}{'compcor RSS MB':>16}{'2 workers RSS MB':>18}")
    lines = [head]
    for r in rows:
        lines.append(f"{r['study']:<11}{_num(r['evaluations'], 7, 0)}{_num(r['ours_s'], 10)}{_num(r['compcor_s'], 11)}"
                     f"{_num(r['ratio'], 8, 2)}{_num(r['ours_cpu_s'], 12)}{_num(r['compcor_cpu_s'], 15)}"
                     f"{_num(r['ours_2_workers_s'], 13)}{_num(r['ours_peak_rss_mb'], 13, 0)}"
                     f"{_num(r['compcor_peak_rss_mb'], 16, 0)}{_num(r['ours_2_workers_peak_rss_mb'], 18, 0)}")
    return lines


def _num(value, width: int, digits: int = 1) -> str:
    return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"
