"""A run's or a sweep's default directory is its own: two jobs started in the same second never share one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

import textmetric_bench
from textmetric_bench.running import directories
from textmetric_bench.running.directories import names_only, new_dir

SECOND = datetime(2026, 11, 30, 21, 41, 12)
STAMP = "2026-11-30_21-41-12"


@pytest.fixture
def one_second(monkeypatch):
    """Every call of ``new_dir`` in this test falls in the same second."""

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return SECOND

    monkeypatch.setattr(directories, "datetime", Frozen)


def test_callers_in_the_same_second_each_make_a_directory_of_their_own(tmp_path, one_second):
    made: list[str] = []
    threads = [threading.Thread(target=lambda: made.append(new_dir(str(tmp_path / "runs")))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = sorted(Path(p).name for p in made)
    assert names == sorted([STAMP, *(f"{STAMP}_{n}" for n in range(2, 7))])
    assert all(Path(p).is_dir() and Path(p).absolute() in directories.MADE for p in made)
    with names_only():  # a check of the path before Hydra makes it: named, not made
        assert Path(new_dir(str(tmp_path / "runs"))).name == f"{STAMP}_7"
    assert not (tmp_path / "runs" / f"{STAMP}_7").exists()


def cli(cwd: Path, cache_dir, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache_dir)}
    command = [sys.executable, "-m", "textmetric_bench", *args, "progress=false"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_a_run_whose_second_is_taken_gets_its_own_directory_and_a_refused_one_leaves_none(tmp_path, cache_dir):
    """Another job's directories for this second and the next minute are there: the run takes ``<time>_2`` and
    leaves theirs alone (before, it resumed into the other job's directory and mixed their results)."""
    pair = tmp_path / "outputs" / "ksc" / "fortune_computing_people"
    now = datetime.now().timestamp()
    taken = {datetime.fromtimestamp(now + s).strftime(directories.STAMP) for s in range(60)}
    for name in taken:
        (pair / name).mkdir(parents=True)
        (pair / name / "other_job.txt").write_text("another job's run\n")
    proc = cli(tmp_path, cache_dir, "metrics=[zipf]", "k=3", "n=10", "repetitions=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (mine,) = [p for p in pair.iterdir() if p.name not in taken]
    assert mine.name.rpartition("_")[0] in taken and mine.name.endswith("_2")
    assert json.loads((mine / "run.json").read_text())["metrics"] == ["zipf"]
    assert all([p.name for p in (pair / name).iterdir()] == ["other_job.txt"] for name in taken)  # untouched
    refused = cli(tmp_path, cache_dir, "metrics=[zipf]", "k=2", "n=10", "repetitions=1")
    assert refused.returncode == 2 and "k >= 3" in refused.stderr
    assert sorted(p.name for p in pair.iterdir()) == sorted([*taken, mine.name])  # no directory left by the refusal


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_sweep_makes_one_directory_for_all_its_jobs(tmp_path, cache_dir):
    proc = cli(tmp_path, cache_dir, "-m", "metrics=[zipf]", "k=3,4", "n=10", "repetitions=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep,) = (tmp_path / "multirun" / "ksc").iterdir()
    assert sorted(p.name for p in sweep.iterdir()) == ["0", "1", "multirun.yaml"]
    assert not (tmp_path / "outputs").exists()  # no run directory made beside the sweep's


def test_two_api_calls_in_the_same_second_write_two_directories(tmp_path, monkeypatch, cache_dir, one_second):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCH_CACHE_DIR", str(cache_dir))
    small = {"k": 3, "n": 10, "repetitions": 1, "progress": False}
    first = textmetric_bench.evaluate(["zipf"], **small)
    second = textmetric_bench.evaluate(["chi"], **small)
    assert (first.run_dir.name, second.run_dir.name) == (STAMP, f"{STAMP}_2")
    assert set(first.measures["metric"]) == {"zipf"} and set(second.measures["metric"]) == {"chi"}
