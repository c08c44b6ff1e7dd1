"""Exit statuses (docs/reliability.md, "Exit status") and failing plugins' reports, through the CLI.

Each run is a real subprocess of `python -m textmetric_bench`, as a script would start it, with the fake
plugins of ``tests/fake_failing_plugin.py`` installed through the entry-point group (a dist-info directory on
PYTHONPATH): ``fake_divides_by_zero`` fails every evaluation, ``fake_fails_once`` only the first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fake_lines import FD2_LINE
from figure_captions import assert_caption_warns

from textmetric_bench.collections.seeds import metric_seed
from textmetric_bench.measures.run_warnings import run_warnings
from textmetric_bench.measures.summaries import most_repetitions
from textmetric_bench.reports.figures.ksc import distance_scatter
from textmetric_bench.reports.sweep.runs import load_run
from textmetric_bench.errors import EXIT_BAD_INPUT, EXIT_METRIC_FAILED, EXIT_REGRESSION, EXIT_OK, worst_exit_status

TESTS_DIR = Path(__file__).parent
TINY = ["k=3", "n=6", "repetitions=1", "engine.workers=1", "progress=false"]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    """A directory whose dist-info declares ``fake_failing_plugin`` in the plugin entry-point group."""
    site = tmp_path_factory.mktemp("site")
    info = site / "fake_failing_plugin-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-failing-plugin\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[textmetric_bench.metrics]\nfake_failing = fake_failing_plugin\n")
    return site


def cli(tmp_path: Path, plugin_path: Path, cache_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), str(TESTS_DIR)]),
        "BENCH_CACHE_DIR": str(cache_dir),
        "FAKE_FAIL_ONCE_FILE": str(tmp_path / "failed-once"),
    }
    return subprocess.run(
        [sys.executable, "-m", "textmetric_bench", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def run(tmp_path, plugin_path, cache_dir, metrics: str, *extra: str):
    out = tmp_path / "run"
    proc = cli(tmp_path, plugin_path, cache_dir, *TINY, f"metrics={metrics}", f"hydra.run.dir={out}", *extra)
    return proc, out


def test_a_run_whose_metrics_all_succeed_exits_0(tmp_path, plugin_path, cache_dir):
    proc, out = run(tmp_path, plugin_path, cache_dir, "[chi]")
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    assert json.loads((out / "exit_status.json").read_text())["exit_status"] == EXIT_OK
    assert "FAILED" not in proc.stderr and not (out / "failures.csv").exists()


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_metrics_output_below_python_goes_to_the_log_not_the_console(tmp_path, plugin_path, cache_dir):
    """Text a metric's C code writes straight on file descriptor 2 (faiss did, on every small k-means) is in the run's
    log file and never on the console (docs/running.md, "Console, log file and progress")."""
    proc, out = run(tmp_path, plugin_path, cache_dir, "[chi,fake_writes_to_fd2]")
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    assert FD2_LINE not in proc.stderr + proc.stdout
    assert FD2_LINE in (out / "__main__.log").read_text()


def test_a_metric_that_always_raises_exits_with_the_metric_failure_status_and_says_where(
    tmp_path, plugin_path, cache_dir
):
    proc, out = run(tmp_path, plugin_path, cache_dir, "[chi,fake_divides_by_zero]")
    assert proc.returncode == EXIT_METRIC_FAILED, proc.stderr[-3000:]
    # the console: one line for the metric, none per evaluation
    lines = [line for line in proc.stderr.splitlines() if "fake_divides_by_zero" in line]
    assert lines == [
        f"metric fake_divides_by_zero FAILED: 3 of 3 evaluations failed, first: ZeroDivisionError: "
        f"division by zero; details: {out / 'failures.csv'} and {out / '__main__.log'}"
    ], proc.stderr
    assert "failed on" not in proc.stderr and "Traceback" not in proc.stderr
    # failures.csv, the evaluation log and the log file keep the metric's traceback, without the harness's frames
    failures = pd.read_csv(out / "failures.csv")
    assert len(failures) == 3 and set(failures["metric"]) == {"fake_divides_by_zero"}
    logged = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()[1:]]
    logged = [row["traceback"] for row in logged if row["key"][0] == "fake_divides_by_zero"]
    log_file = (out / "__main__.log").read_text()
    assert len(logged) == 3
    for traceback in [*failures["traceback"], *logged]:
        assert traceback.startswith("Traceback (most recent call last):")
        assert "fake_failing_plugin.py" in traceback and "in _mean_length" in traceback
        assert traceback.rstrip().endswith("ZeroDivisionError: division by zero")
        for harness in ("engine", "registry.py", "worker.py"):
            assert harness not in traceback
        assert traceback in log_file
    assert log_file.count("metric fake_divides_by_zero failed on") == 3
    assert json.loads((out / "exit_status.json").read_text())["exit_status"] == EXIT_METRIC_FAILED


def test_allow_metric_failures_keeps_exit_0_and_still_reports(tmp_path, plugin_path, cache_dir):
    proc, out = run(tmp_path, plugin_path, cache_dir, "[fake_divides_by_zero]", "allow_metric_failures=true")
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    assert "metric fake_divides_by_zero FAILED: 3 of 3 evaluations failed" in proc.stderr
    assert (out / "failures.csv").exists()


def test_a_metric_that_fails_some_evaluations_exits_with_the_metric_failure_status(tmp_path, plugin_path, cache_dir):
    proc, out = run(tmp_path, plugin_path, cache_dir, "[chi,fake_fails_once]")
    assert proc.returncode == EXIT_METRIC_FAILED, proc.stderr[-3000:]
    assert (
        "metric fake_fails_once FAILED: 1 of 3 evaluations failed, first: RuntimeError: fake first call fails"
        in proc.stderr
    )
    failures = pd.read_csv(out / "failures.csv")
    assert len(failures) == 1 and "in fake_fails_once" in failures["traceback"][0]


@pytest.mark.parametrize(
    "bad",
    [
        "allow_metric_failures=maybe",  # refused by the config validation
        "metric.chi.no_such_parameter=1",  # refused by main() before Hydra starts
        "no_such_key=1",  # refused by main() before Hydra starts (Hydra's own words would be several lines)
        "pair=no_such_pair",  # a config group's choice: refused by main() before Hydra starts
    ],
)
def test_bad_configuration_exits_with_the_bad_input_status(tmp_path, plugin_path, cache_dir, bad):
    proc, _ = run(tmp_path, plugin_path, cache_dir, "[chi]", bad)
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-3000:]
    assert bad.split("=")[0].split(".")[-1] in proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.strip() and "findfont" not in line]
    assert len(said) == 1 and said[0].startswith("error: "), proc.stderr[-3000:]


def sweep(tmp_path, plugin_path, cache_dir, *args: str):
    out = tmp_path / "sweep"
    proc = cli(tmp_path, plugin_path, cache_dir, "-m", *TINY, f"hydra.sweep.dir={out}", *args)
    return proc, out


def launchers() -> list[str]:
    import importlib.util

    joblib = importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher") is not None
    return ["basic", pytest.param("joblib", marks=pytest.mark.skipif(not joblib, reason="no joblib launcher"))]


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
@pytest.mark.parametrize("launcher", launchers())
def test_a_sweep_exits_non_zero_when_a_job_failed_and_names_it(tmp_path, plugin_path, cache_dir, launcher):
    proc, out = sweep(
        tmp_path,
        plugin_path,
        cache_dir,
        f"hydra/launcher={launcher}",
        "metrics=[chi,fake_divides_by_zero]",
        "allow_metric_failures=true,false",
    )
    assert proc.returncode == EXIT_METRIC_FAILED, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-2:]
    assert last[0].startswith("sweep: 1 of 2 jobs failed (exit status 3;"), proc.stderr[-3000:]
    assert last[1].lower().startswith("  job allow_metric_failures=false ->") and f"{out / '1'}:" in last[1], last
    for job, status in ((0, EXIT_OK), (1, EXIT_METRIC_FAILED)):
        assert json.loads((out / str(job) / "exit_status.json").read_text())["exit_status"] == status


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_job_with_a_bad_value_does_not_stop_the_sweep(tmp_path, plugin_path, cache_dir):
    proc, out = sweep(tmp_path, plugin_path, cache_dir, "metrics=[chi]", "seed=-1,0")
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr[-3000:]
    assert (out / "1" / "measures.csv").exists()  # the job after the bad one ran
    assert "seed=-1" in proc.stderr.strip().splitlines()[-1]


def test_the_worst_status_wins():
    assert worst_exit_status([]) == EXIT_OK
    assert worst_exit_status([EXIT_OK, EXIT_METRIC_FAILED, EXIT_OK]) == EXIT_METRIC_FAILED
    assert worst_exit_status([EXIT_METRIC_FAILED, EXIT_REGRESSION, EXIT_OK]) == EXIT_REGRESSION
    assert worst_exit_status([EXIT_METRIC_FAILED, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_OK]) == EXIT_BAD_INPUT
    assert worst_exit_status([EXIT_BAD_INPUT, 1]) == 1  # an unexpected error (a crash) ranks above all
    assert worst_exit_status([EXIT_BAD_INPUT, 7]) == 7


@pytest.fixture(scope="module")
def broken_plugins(tmp_path_factory) -> Path:
    """Two plugins declared in the entry-point group: ``broken_top`` raises before defining anything,
    ``broken_end`` registers ``punct_gap`` and then raises (a fake, for the error handling only)."""
    site = tmp_path_factory.mktemp("broken_site")
    (site / "broken_top.py").write_text("import a_module_that_does_not_exist  # noqa\n")
    (site / "broken_end.py").write_text(
        "from textmetric_bench.api import metric\n\n"
        "@metric('punct_gap', inputs='texts', symmetric=True)\n"
        "def punct_gap(p, q, *, seed=0):\n    return 0.0\n\n"
        "raise RuntimeError('broken at the end of the module')\n"
    )
    info = site / "broken_plugins-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugins\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[textmetric_bench.metrics]\ntop = broken_top\nend = broken_end\n")
    return site


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_plugin_that_fails_to_import_is_reported_everywhere_and_fails_the_run(tmp_path, broken_plugins, cache_dir):
    proc, out = run(tmp_path, broken_plugins, cache_dir, "[chi]")
    assert proc.returncode == EXIT_METRIC_FAILED, proc.stderr[-3000:]
    failed = [line for line in proc.stderr.splitlines() if "FAILED to import" in line]
    assert failed == [
        f"metric plugin top (broken_top) FAILED to import: ModuleNotFoundError: No module named "
        f"'a_module_that_does_not_exist'; traceback in {out / '__main__.log'}",
        f"metric plugin end (broken_end) FAILED to import: RuntimeError: broken at the end of the module; left out: "
        f"punct_gap; traceback in {out / '__main__.log'}",
    ], proc.stderr
    assert "could not load metric plugin" not in proc.stderr  # said once per failure, not again at loading
    info = json.loads((out / "run.json").read_text())
    assert set(info["plugin_failures"]) == {"broken_top", "broken_end"}
    assert info["plugin_failures"]["broken_end"]["withdrawn"] == ["punct_gap"]
    assert "punct_gap" not in info["metrics"]  # a half-imported module never runs
    said = (
        "Metric plugin end (broken_end) failed to import: RuntimeError: broken at the end of the module; its "
        "metric punct_gap did not run"
    )
    page = (out / "table3.md").read_text()  # the printed page, under its title: the console shows it too
    assert (
        page.split("\n")[2]
        == "**Warning: Metric plugin top (broken_top) failed to import: ModuleNotFoundError: "
        "No module named 'a_module_that_does_not_exist'**"
        and f"**Warning: {said}**" in page
    )
    assert " ".join(said.split()) in " ".join(proc.stdout.split())
    assert f"{said}.</p>" in (out / "report.html").read_text()
    assert said.split(";")[0] in " ".join((out / "radar.svg").read_text().split())  # the radar's caption
    scatters = load_run(out)
    warnings = run_warnings(info, most_repetitions(scatters.measures))
    assert "Metric plugin end (broken_end) failed to import" in " ".join(warnings)
    chi = run_warnings(info, most_repetitions(scatters.measures), metric="chi")  # chi's own figure: not the plugins
    assert chi and not any("failed to import" in w for w in chi)
    for name, shown, rather_than in (("scatter_all", warnings, ()), ("scatter_chi", chi, warnings)):

        def draw(shown, where, name=name):
            paths = distance_scatter(scatters.distances, where, setting=info["title"], warnings=shown)
            return next(p for p in paths if p.stem == name)

        assert_caption_warns(out / f"{name}.png", draw, shown, tmp_path / name, rather_than=rather_than)
    log_file = (out / "__main__.log").read_text()
    assert "Traceback (most recent call last)" in log_file and 'broken_end.py", line 7' in log_file
    status = json.loads((out / "exit_status.json").read_text())
    assert status == {**status, "exit_status": EXIT_METRIC_FAILED, "reason": "metric plugins top, end failed to import"}
    allowed, _ = run(tmp_path, broken_plugins, cache_dir, "[chi]", "allow_metric_failures=true")
    assert allowed.returncode == EXIT_OK


def test_printing_the_config_notes_a_plugin_that_failed_to_import(tmp_path, broken_plugins, cache_dir):
    """Hydra's ``--cfg job`` runs nothing, so no run reports the plugin: the command says it beside the config."""
    import yaml

    proc = cli(tmp_path, broken_plugins, cache_dir, "--cfg", "job")
    assert proc.returncode == EXIT_OK, proc.stderr[-3000:]
    assert yaml.safe_load(proc.stdout)["task"]["name"] == "ksc"  # stdout stays the config alone
    assert proc.stderr.splitlines() == [
        "note: metric plugin top (broken_top) FAILED to import: ModuleNotFoundError: No module named "
        "'a_module_that_does_not_exist'",
        "note: metric plugin end (broken_end) FAILED to import: RuntimeError: broken at the end of the module; left "
        "out: punct_gap",
    ]


def test_naming_a_metric_of_a_plugin_that_failed_to_import_names_the_import_error(tmp_path, broken_plugins, cache_dir):
    proc, _ = run(tmp_path, broken_plugins, cache_dir, "[chi,punct_gap]")
    assert proc.returncode == EXIT_BAD_INPUT
    assert (
        "error: metrics=[chi,punct_gap]: metric 'punct_gap' is defined in broken_end, which failed to import: RuntimeError: broken at "
        "the end of the module"
    ) in proc.stderr
    proc, _ = run(tmp_path, broken_plugins, cache_dir, "[chi,punct_gpa]")
    assert "Metric plugins that failed to load: top (broken_top: ModuleNotFoundError" in proc.stderr
    assert "its traceback: python -c 'import broken_top')" in proc.stderr  # where to see it: no run dir is kept
    proc, _ = run(tmp_path, broken_plugins, cache_dir, "[chi,top]")  # the plugin's name: no "did you mean" guess
    assert proc.returncode == EXIT_BAD_INPUT and "Did you mean" not in proc.stderr
    assert (
        "error: metrics=[chi,top]: unknown metric 'top': the metric plugin top failed to load (broken_top: ModuleNotFoundError"
    ) in proc.stderr


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_partly_failing_metric_keeps_its_row_and_its_failed_corpora_can_be_written(tmp_path, plugin_path, cache_dir):
    """fake_fails_once fails 1 of 6 evaluations (repetition 0 of 2), fake_divides_by_zero all 6: both keep a row
    in every table, marked; the failed evaluations' corpora are rebuilt from the saved config."""
    proc, out = run(
        tmp_path,
        plugin_path,
        cache_dir,
        "[chi,fake_fails_once,fake_divides_by_zero]",
        "repetitions=2",
        "metric.fake_fails_once.scale=2.5",
    )
    assert proc.returncode == EXIT_METRIC_FAILED, proc.stderr[-3000:]
    table = pd.read_csv(out / "table3.csv", index_col="metric", keep_default_na=False, na_values=[""])
    assert table.loc["fake_fails_once", "reps"] == 1 and table.loc["fake_fails_once", "failed_evaluations"] == 1
    assert table.loc["fake_fails_once", "evaluations"] == 6
    assert table.loc["fake_divides_by_zero", "reps"] == 0 and pd.isna(table.loc["fake_divides_by_zero", "A"])
    assert table.loc["fake_divides_by_zero", "failed_evaluations"] == 6 and table.loc["chi", "reps"] == 2
    assert table.loc["chi", "failed_evaluations"] == 0 and pd.isna(table.loc["chi", "evaluations"])
    assert pd.api.types.is_integer_dtype(table["failed_evaluations"])  # a number to compute with, not "1 of 6"
    page = (out / "table3.md").read_text()
    assert "| fake_fails_once | 1 of 2; 1 of 6 evaluations failed |" in page
    assert "| fake_divides_by_zero | 0 of 2; 6 of 6 evaluations failed | – |" in page
    html = (out / "report.html").read_text()
    assert "✗ 0 of 2 repetitions complete; 6 of 6 evaluations failed" in html
    assert "✗ 1 of 2 repetitions complete; 1 of 6 evaluations failed" in html
    assert "Cells: mean over the complete repetitions (a repetition with a failed evaluation counts for none)" in html

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), str(TESTS_DIR)]),
        "BENCH_CACHE_DIR": str(cache_dir),
    }
    written = subprocess.run(
        [
            sys.executable,
            "-m",
            "textmetric_bench.running.failed_corpora",
            str(out),
            "--metric",
            "fake_fails_once",
            "--out",
            "failed",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert written.returncode == 0, written.stderr[-3000:]
    failures = pd.read_csv(out / "failures.csv")
    row = failures[failures["metric"] == "fake_fails_once"].iloc[0]
    target = elsewhere / "failed" / "fake_fails_once" / f"repetition{row['repetition']}_i{row['i']}_j{row['j']}"
    corpora = {
        side: [json.loads(line)["text"] for line in (target / f"{side}.jsonl").read_text().splitlines()]
        for side in ("p", "q")
    }
    assert len(corpora["p"]) == len(corpora["q"]) == 6 and corpora["p"] != corpora["q"]  # n = 6 texts each
    assert str(target) in written.stdout and "fake first call fails" in written.stdout
    recorded = json.loads((target / "failure.json").read_text())  # the seed the run handed the metric there
    assert recorded["seed"] == metric_seed(0, int(row["repetition"])) and recorded["metric"] == "fake_fails_once"
    assert recorded["params"] == {"scale": 2.5}  # the parameters the run called it with
    refused = subprocess.run(
        [sys.executable, "-m", "textmetric_bench.running.failed_corpora", str(out), "--metric", "chi"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert refused.returncode == EXIT_BAD_INPUT and "no failed evaluation of 'chi'" in refused.stderr


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_ctrl_c_says_in_one_line_what_is_kept_and_how_to_go_on_and_ends_by_sigint(tmp_path, plugin_path, cache_dir):
    """As a terminal's Ctrl-C: SIGINT to the whole process group, while an evaluation runs. No traceback (before:
    two, about 70 lines, one of them from the embedding helper), no warning of leaked semaphores, and status 130 at
    once: the embedding helper, started ahead and maybe still importing, ends too (the exit waits for it)."""
    import signal
    import time

    out = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), str(TESTS_DIR)]),
        "BENCH_CACHE_DIR": str(cache_dir),
    }
    command = [
        sys.executable,
        "-m",
        "textmetric_bench",
        *TINY,
        "metrics=[chi,fake_takes_a_minute]",
        f"hydra.run.dir={out}",
    ]
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    log, deadline = out / "evaluations.jsonl", time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:  # the log begun: evaluations are running
        if log.is_file() and log.read_text().strip():
            break
        time.sleep(0.2)
    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)  # at once, not after the minute the fake evaluation takes
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr and "leaked" not in stderr, stderr[-3000:]
    assert stderr.rstrip().splitlines()[-1] == (
        f"interrupted: the evaluations finished so far are kept in {out}; to go on from them, run the same command "
        f"with hydra.run.dir={out}"
    )
    status = json.loads((out / "exit_status.json").read_text())  # as a sweep's summary and aggregate read it
    assert status["exit_status"] == 130 and status["reason"].startswith("interrupted")


@pytest.mark.slow  # one of the slowest of the default suite (make test --durations)
def test_a_run_refused_in_another_runs_directory_leaves_it_as_it_was(tmp_path, plugin_path, cache_dir):
    """Hydra writes a run's config into its directory before the harness sees what the directory holds. A run then
    refused there, for other settings than its evaluations' or because another run writes into it now, leaves the
    earlier run's config and exit status in place, so that its failed corpora are still the ones it evaluated. It is
    refused before it embeds a text (minutes, on paragraphs): its empty cache stays without vectors."""
    from filelock import FileLock

    proc, out = run(tmp_path, plugin_path, cache_dir, "[chi,fake_fails_once]", "repetitions=2")
    assert proc.returncode == EXIT_METRIC_FAILED, proc.stderr[-3000:]
    record = [".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml", "exit_status.json"]

    def state():
        return {name: (out / name).read_bytes() for name in [*record, "evaluations.jsonl"]}

    before = state()
    empty = tmp_path / "empty_cache"  # refused as soon as the corpora are built: before fid's texts are embedded
    other = cli(tmp_path, plugin_path, empty, *TINY, "n=7", "metrics=[chi,fake_fails_once,fid]", f"hydra.run.dir={out}")
    assert other.returncode == EXIT_BAD_INPUT and "holds evaluations of another configuration" in other.stderr
    assert state() == before
    assert not [p for p in empty.rglob("*") if p.is_file()], sorted(empty.rglob("*"))
    with FileLock(out / ".run.lock", timeout=0):  # another run holds the directory
        busy = cli(tmp_path, plugin_path, cache_dir, *TINY, "metrics=[chi,fake_fails_once]", f"hydra.run.dir={out}")
    assert busy.returncode == EXIT_BAD_INPUT, busy.stderr[-3000:]
    assert f"error: another run is writing into {out} now" in busy.stderr
    assert state() == before and out.is_dir()

    def failed_corpora(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(TESTS_DIR)])}
        command = [sys.executable, "-m", "textmetric_bench.running.failed_corpora", str(out), *args]
        return subprocess.run(command, env={**env, "BENCH_CACHE_DIR": str(cache_dir)}, capture_output=True, text=True)

    assert failed_corpora().returncode == 0
    config = out / ".hydra" / "config.yaml"  # a config that is not the evaluations': refused, not other corpora
    config.write_text(config.read_text().replace("'n': 6", "'n': 7"))
    refused = failed_corpora("--out", str(tmp_path / "again"))
    assert refused.returncode == EXIT_BAD_INPUT and "builds other corpora than the run evaluated" in refused.stderr
    assert "'n': (6, 7)" in refused.stderr and not (tmp_path / "again").exists()
    nowhere = subprocess.run(
        [sys.executable, "-m", "textmetric_bench.running.failed_corpora", str(tmp_path / "no_such_run")],
        capture_output=True,
        text=True,
    )
    assert nowhere.returncode == EXIT_BAD_INPUT and f"{tmp_path / 'no_such_run'} is not a directory" in nowhere.stderr


@pytest.mark.slow  # two sweeps of two jobs (15 s); the record's restore for a single run is in the default suite
def test_a_sweep_started_again_with_other_values_leaves_its_earlier_jobs_records_and_tables_true(
    tmp_path, plugin_path, cache_dir
):
    """`-m k=3,4` then `-m k=5,4` in the same sweep directory: job 0 (k=5) is refused in the directory of the earlier
    k=3 job. Hydra had written k=5's config there; it is put back, so the sweep's table does not label k=3's
    results k=5, and the sweep's last lines still name the refused job, with the sweep's own directory option."""
    sweep = tmp_path / "sweep"
    common = ["n=6", "repetitions=1", "metrics=[zipf]", "progress=false", f"hydra.sweep.dir={sweep}"]
    first = cli(tmp_path, plugin_path, cache_dir, "-m", "k=3,4", *common)
    assert first.returncode == EXIT_OK, first.stderr[-3000:]
    record = [".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml", "exit_status.json"]
    before = {name: (sweep / "0" / name).read_bytes() for name in record}
    again = cli(tmp_path, plugin_path, cache_dir, "-m", "k=5,4", *common)
    assert again.returncode == EXIT_BAD_INPUT, again.stderr[-3000:]
    assert {name: (sweep / "0" / name).read_bytes() for name in record} == before
    last = again.stderr.rstrip().splitlines()[-2:]
    assert last[0] == f"sweep: 1 of 2 jobs failed (exit status {EXIT_BAD_INPUT}; {sweep}):", again.stderr[-3000:]
    assert last[1].startswith(f"  job k=5 -> {sweep / '0'}: exit status {EXIT_BAD_INPUT}, ")
    assert "holds evaluations of another configuration ({'k': (3, 5)})" in last[1]
    assert last[1].endswith("or use a new run directory (hydra.sweep.dir=...)")
    from textmetric_bench.reports.sweep.aggregate import aggregate_sweep

    table = aggregate_sweep(sweep)
    assert sorted(set(zip(table["run_dir"].map(lambda d: Path(d).name), table["k"]))) == [("0", 3), ("1", 4)]


def test_a_ksc_job_is_labelled_by_the_run_that_wrote_its_results_when_its_config_was_written_over(tmp_path):
    """A launcher whose jobs run in processes of their own cannot put an earlier job's record back (the records are
    read in the process that starts the sweep): the sweep's table then takes a KSC job's k, n, repetitions and seed
    from its run.json, which the run that wrote the results wrote, not from a later refused job's .hydra/."""
    from textmetric_bench.reports.sweep.aggregate import read_run_config

    job = tmp_path / "0"
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "config.yaml").write_text("task: ksc\nk: 5\nn: 6\nrepetitions: 1\nseed: 0\n")
    (job / ".hydra" / "overrides.yaml").write_text("- k=5\n")
    (job / "run.json").write_text(json.dumps({"task": "ksc", "pair": "p", "k": 3, "n": 6, "repetitions": 1, "seed": 0}))
    assert read_run_config(job) | {"source": None} == {
        "pair": "p",
        "task": "ksc",
        "k": 3,
        "n": 6,
        "repetitions": 1,
        "seed": 0,
        "source": None,
        "overrides": "",
    }
    (job / "run.json").write_text(json.dumps({"task": "ksc", "pair": "p", "k": 5, "n": 6, "repetitions": 1, "seed": 0}))
    assert read_run_config(job)["overrides"] == "k=5"  # the same values: the overrides are the run's
