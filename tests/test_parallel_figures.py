"""Figures drawn in worker processes (textmetric_bench.reports.figures.parallel): the same files as drawn here, what a
job raises reaches the caller, and a job whose process died is drawn here."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pandas as pd
import pytest

from textmetric_bench.engine.pool import worker_context
from textmetric_bench.reports.figures import parallel
from textmetric_bench.reports.figures.ksc import scatter_file, scatter_names
from textmetric_bench.reports.figures.parallel import FigureDrawer
from textmetric_bench.reports.figures.radar import radar_chart


def distances() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        (metric, r, i, j, j - i, (j - i) * scale + rng.normal(0, 0.3))
        for metric, scale in (("alpha", 1.0), ("beta", -0.5), ("gamma", 0.2))
        for r in range(2)
        for i in range(4)
        for j in range(i + 1, 5)
    ]
    return pd.DataFrame(rows, columns=["metric", "repetition", "i", "j", "ell", "distance"])


def test_figures_drawn_in_two_processes_are_the_files_drawn_in_this_one(tmp_path, monkeypatch):
    frame = distances()
    names = scatter_names(frame)
    assert names == ["scatter_alpha", "scatter_beta", "scatter_gamma", "scatter_all"]
    written = {}
    for processes in (1, 2):
        monkeypatch.setattr(parallel, "PROCESSES", processes)
        out = tmp_path / str(processes)
        with FigureDrawer(len(names), worker_context(parallel.PRELOAD)) as drawer:
            assert (drawer.pool is not None) == (processes == 2 and len(os.sched_getaffinity(0)) > 1)
            futures = [drawer.submit(scatter_file, frame, out, name, setting="a setting") for name in names]
            written[processes] = [drawer.result(f) for f in futures]
    assert [p.name for p in written[1]] == [p.name for p in written[2]] == [f"{n}.png" for n in names]
    for one, two in zip(written[1], written[2]):
        assert one.read_bytes() == two.read_bytes(), one.name


def test_without_a_context_every_figure_is_drawn_in_this_process(monkeypatch):
    """A report built on its own (no run, so no forkserver its caller's script is known to survive) starts no process."""
    monkeypatch.setattr(parallel, "PROCESSES", 2)
    with FigureDrawer(4) as drawer:
        assert drawer.processes == 1 and drawer.pool is None
        assert drawer.result(drawer.submit(fake_job_that_kills_its_worker_process, 2)) == 4


def test_what_a_job_raises_is_raised_by_its_result(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "PROCESSES", 2)
    empty = pd.DataFrame(columns=["metric", "measure", "mean"])
    with FigureDrawer(2, worker_context(parallel.PRELOAD)) as drawer:
        future = drawer.submit(radar_chart, empty, tmp_path / "radar")
        with pytest.raises(ValueError):
            drawer.result(future)


def fake_job_that_kills_its_worker_process(value: int) -> int:
    """Ends a worker process at once (as the out-of-memory killer would); in the caller's process, returns."""
    if multiprocessing.parent_process() is not None:
        os._exit(1)
    return value * 2


def test_a_job_whose_process_died_is_drawn_in_this_process(monkeypatch):
    monkeypatch.setattr(parallel, "PROCESSES", 2)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: every job runs in this process")
    with FigureDrawer(2, worker_context(parallel.PRELOAD)) as drawer:
        assert drawer.pool is not None
        future = drawer.submit(fake_job_that_kills_its_worker_process, 21)
        assert drawer.result(future) == 42


def job_that_warns_like_matplotlib(text: str) -> int:
    """Logs a warning through matplotlib's logger (as its font manager does when a font is missing) and prints."""
    import logging
    import sys

    logging.getLogger("matplotlib.font_manager").warning("findfont: %s", text)
    print(f"printed: {text}", file=sys.stderr, flush=True)
    return os.getpid()


def test_what_a_drawing_process_logs_goes_to_the_runs_log_not_the_console(tmp_path, monkeypatch, capfd):
    """With a stale font cache every figure logged "findfont: ... not found" from the drawing processes, which had
    no logging set up, so Python's last-resort handler printed it on the console; a run's log file gets it."""
    import logging

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: every job runs in this process")
    from textmetric_bench.tasks.skeleton import figure_processes

    monkeypatch.setattr(parallel, "PROCESSES", 2)
    log_path = tmp_path / "__main__.log"
    handler = logging.FileHandler(log_path)
    logging.getLogger().handlers.insert(0, handler)  # before pytest's own file handler (to os.devnull)
    try:
        with FigureDrawer(2, figure_processes()) as drawer:  # as a run draws its figures
            assert drawer.pool is not None
            pid = drawer.result(drawer.submit(job_that_warns_like_matplotlib, "Font family ['cmr10'] not found"))
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert pid != os.getpid()
    console = capfd.readouterr()
    assert "findfont" not in console.err + console.out and "printed:" not in console.err + console.out
    logged = log_path.read_text()
    assert "findfont: Font family ['cmr10'] not found" in logged and "printed: Font family" in logged
