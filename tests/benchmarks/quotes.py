"""What the quoting scripts (cold_run.py, embedding_speed.py) share: a measurement's record of the machine, load and
commit; the command line (measure and quote, or only write the page again); and the quote file kept as records,
from which the docs page is written.

A quote is ``{"records": [...]}`` in ``tests/benchmarks/<name>.json``; its page ``docs/generated/<name>.md`` is made
from it alone, and the tests check that it is, unedited.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path
from typing import Callable

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
#: What ``summary.machine()`` records that says nothing here (the load it takes is before the runs, not at their end).
NOT_RECORDED = ("load_average_at_end", "robustness_grid")


def commit() -> str:
    """The checkout's commit, with ``+changes`` when its tracked files differ from it."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=PROJECT_ROOT).returncode != 0
    return f"{head or 'unknown'}{'+changes' if dirty else ''}"


def new_record() -> dict:
    """The machine as ``make benchmark`` records it (summary.py), the load average now (before measuring) and the
    commit."""
    from summary import machine  # tests/benchmarks/summary.py: this script's directory is on sys.path

    about = {key: value for key, value in machine().items() if key not in NOT_RECORDED}
    return {**about, "load_average_before": [round(v, 2) for v in os.getloadavg()], "commit": commit()}


def quote_main(
    argv: list[str],
    *,
    description: str,
    count: tuple[str, int, str],
    measure: Callable[[int], dict],
    quoted: Path,
    page_path: Path,
    page: Callable[[dict], str],
) -> None:
    """The command line of a quoting script: ``--<count name> N`` (``count``: name, default, help) measures,
    ``measure(N)`` giving what the record adds, appends the record to ``quoted``; ``--docs`` measures nothing.
    Either way the page is written from the quote and printed."""
    name, default, help_text = count
    parser = argparse.ArgumentParser(description=description)
    what = parser.add_mutually_exclusive_group()
    what.add_argument(f"--{name}", type=int, default=default, help=f"{help_text} (default {default})")
    what.add_argument("--docs", action="store_true", help="only write the page again from the quote; measure nothing")
    args = parser.parse_args(argv)
    if getattr(args, name) < 1:
        parser.error(f"--{name} must be at least 1")
    if not args.docs:
        record = new_record()
        record.update(measure(getattr(args, name)))
        content = json.loads(quoted.read_text(encoding="utf-8")) if quoted.is_file() else {"records": []}
        content["records"].append(record)
        quoted.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    page_path.write_text(page(json.loads(quoted.read_text(encoding="utf-8"))), encoding="utf-8")
    print(page_path.read_text(encoding="utf-8"))
