"""The console of a run (docs/running.md, "Console, log file and progress"): no third-party warning on it, all of them
in the run's log file, progress bars only where they belong, and a last line naming the report."""

import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from textmetric_bench import PROJECT_ROOT
from textmetric_bench.console import bars_shown, progress_mode, set_progress

#: What a warning line of a library looks like: Python's "UserWarning: ...", faiss's "WARNING clustering ...".
WARNING_LINE = re.compile(r"Warning|WARNING|please provide")
#: The harness's own warning of too few repetitions (``few_repetitions_warning``), at the top of its printed page.
OWN_WARNING = re.compile(r"Warning: only \d+ repetitions? \(fewer than \d+\)")
#: The rate column of a tqdm bar drawn by the harness.
BAR = re.compile(r"(evaluation/s|s/evaluation|text/s|s/text)\]")


#: A small KSC run with mauve (faiss's k-means of 40 points, which would print a warning of its own) and chi.
KSC = ("k=4", "n=20", "repetitions=5", "metrics=[mauve,chi]")


def run_app(out: Path, cache: Path, *overrides: str, task: tuple[str, ...] = KSC) -> str:
    """`python -m textmetric_bench` on ``task``; returns stdout and stderr as one stream, in the order they were written."""
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache)}
    env.pop("TOKENIZERS_PARALLELISM", None)
    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", *task, f"hydra.run.dir={out}", *overrides],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_run_shows_no_warning_logs_them_and_ends_with_its_report(tmp_path, cache_dir):
    out = tmp_path / "run"
    console = run_app(out, cache_dir)  # progress left at auto: a pipe is not a terminal
    lines = [line for line in console.splitlines() if line.strip()]
    assert warning_lines(console) == []
    assert not BAR.search(console), "progress=auto drew bars on a pipe"
    log = (out / "__main__.log").read_text()
    assert "please provide at least" not in log + console  # faiss's line per small k-means no longer floods the log
    # (C-level output of a worker in the log: tests/test_exit_status.py)
    assert "faiss.loader" not in console
    if "forkserver" not in multiprocessing.get_all_start_methods():
        assert "faiss.loader" in log  # a spawned worker imports faiss itself, once its output goes to the log
    # (where there is a forkserver, it imports faiss before any run log exists, and drops the INFO lines)
    last = re.fullmatch(r"report: (\S+) \(all outputs in (\S+)\)", lines[-1])
    assert last, f"last console line does not name the report: {lines[-1]!r}"
    report = Path(last.group(1))
    assert report.is_absolute() and report.is_file() and report.parent == out.resolve()


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_forced_bars_show_rates_of_embedding_and_evaluations(tmp_path):
    console = run_app(tmp_path / "run", tmp_path / "fresh-cache", "progress=true")  # every text is embedded
    assert re.search(r"embedding: 100%.*(text/s|s/text)\]", console)
    # 4 corpora give 6 pairs, each of 5 repetitions, for 2 metrics; and MAUVE's own noise: 5 seeds on 2 pairs
    assert re.search(r"ksc evaluations: 100%.*\b70/70\b.*(evaluation/s|s/evaluation)\]", console)
    assert warning_lines(console) == []


def warning_lines(console: str) -> list[str]:
    """The console's lines that look like a library's warning; not the harness's own warning of few repetitions,
    which a run of fewer than 5 must print."""
    return [
        line
        for line in console.replace("\r", "\n").splitlines()
        if WARNING_LINE.search(line) and not OWN_WARNING.match(line)
    ]


@pytest.mark.slow  # fine-tunes and samples the real SmolLM2: about 90 s
def test_ifc_training_shows_steps_per_second_and_no_warning(tmp_path, cache_dir, mirror_dir):
    console = run_app(
        tmp_path / "ifc",
        cache_dir,
        "progress=true",
        task=(
            "task=ifc",
            "ifc.iterations=1",
            "ifc.train_per_step=32",
            "ifc.corpus_size=24",
            "ifc.repetitions=2",
            "ifc.batch_size=16",
            "metrics=[chi]",
            "lm.device=cpu",
            f"data.mirror={mirror_dir}",
        ),
    )
    assert re.search(r"fine-tuning step 1: 100%.*\b2/2\b.*(step/s|s/step)", console)  # 32 texts, 16 a batch
    assert re.search(r"sampling g_1: 100%.*(text/s|s/text)", console)
    assert warning_lines(console) == []
    assert any(OWN_WARNING.match(line) for line in console.splitlines())  # 2 repetitions: the IFC page says so


def test_third_party_records_and_python_warnings_go_to_the_log_file_only(tmp_path):
    """The shipped logging config (conf/hydra/job_logging/bench.yaml) with setup_run_console, in a fresh process."""
    code = f"""
import logging.config, warnings, yaml
from textmetric_bench.console import setup_run_console
config = yaml.safe_load(open({str(PROJECT_ROOT / "conf/hydra/job_logging/bench.yaml")!r}))
config["handlers"]["file"]["filename"] = {str(tmp_path / "run.log")!r}
logging.config.dictConfig(config)
setup_run_console("auto")
warnings.warn("a library's deprecation notice", FutureWarning)
logging.getLogger("sklearn.cluster").warning("a library's warning record")
logging.getLogger("textmetric_bench.tasks.ksc").info("our own message")
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr.strip() == "INFO textmetric_bench.tasks.ksc: our own message"
    log = (tmp_path / "run.log").read_text()
    assert "FutureWarning: a library's deprecation notice" in log and "a library's warning record" in log


@pytest.mark.parametrize(
    "mode,enabled,shown", [("false", True, False), ("true", True, True), (True, False, False), ("auto", True, False)]
)
def test_progress_modes(mode, enabled, shown):
    """Under pytest stderr is captured, not a terminal, so auto draws nothing."""
    try:
        set_progress(mode)
        assert bars_shown(enabled) is shown
    finally:
        set_progress("auto")


def test_a_bad_progress_value_is_named():
    with pytest.raises(ValueError, match="progress='maybe'"):
        progress_mode("maybe")


def test_help_is_the_harness_usage_not_hydras_page(tmp_path):
    """`--help` from a directory of the user's own: the tasks, the common options, the docs and the exit codes."""
    from textmetric_bench.running.registry import available_tasks

    proc = subprocess.run(
        [sys.executable, "-m", "textmetric_bench", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    assert "powered by Hydra" not in text and "$APP_CONFIG_GROUPS" not in text
    assert max(map(len, text.splitlines())) < 80  # wrapped to the terminal's width
    for name in available_tasks():
        assert re.search(rf"^  {name} +\S", text, re.M), name  # each task with its one-line description
    for option in ("pair=files pair.a=", "metrics=", "engine.workers=auto", "suite=", "--hydra-help", "docs/index.md"):
        assert option in text, option
    assert re.search(r"^pair: .*\batis_news\b", text, re.M)  # the config groups and their options
    assert "Exit status: 0" in text and not list(tmp_path.iterdir())  # --help writes no directory
    flat = " ".join(text.split())
    for code in (1, 2, 3, 4, 130):  # every status of docs/reliability.md, the plugin that failed to import under 3
        assert re.search(rf"(Exit status: |; ){code} ", flat), code
    assert "plugin failed to import" in flat
    assert "000: Pimentel" in flat and "004: Kour" in flat  # the paper numbers the task lines cite


class FakeFullDiskStream:
    """A fake log file stream on a disk with no room left (ENOSPC on every write): error handling only."""

    def write(self, text):
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        pass

    def close(self):
        pass


def test_a_log_file_that_cannot_be_written_says_so_once_and_not_with_a_traceback_per_record(tmp_path, capsys):
    import logging

    from textmetric_bench.console import LogFileHandler

    handler = LogFileHandler(tmp_path / "run.log")
    handler.stream.close()
    handler.stream = FakeFullDiskStream()
    logger = logging.getLogger("textmetric_bench.test_full_log")
    logger.addHandler(handler)
    try:
        for i in range(3):
            logger.warning("record %d", i)
    finally:
        logger.removeHandler(handler)
    err = capsys.readouterr().err
    assert err == (
        f"warning: the log file {tmp_path / 'run.log'} cannot be written (No space left on device); "
        "its later records are lost\n"
    )
