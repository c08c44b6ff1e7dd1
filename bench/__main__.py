"""`python -m textmetric_bench` / `textmetric-bench`: the Hydra app that runs a task and writes its report."""

from __future__ import annotations

import signal

from textmetric_bench.errors import exit_quietly_on_sigint

# Ctrl-C while the modules below import (a second or more): exit quietly. The handler before is restored at the end
# of this module; ``main`` answers a KeyboardInterrupt with one line.
_HANDLER_BEFORE = exit_quietly_on_sigint()

import argparse  # noqa: E402 - after the handler above
import errno
import logging
import sys
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.utils import get_original_cwd
from hydra.types import RunMode
from omegaconf import DictConfig

from textmetric_bench.api.registry import announce_plugin_failures, plugin_failures
from textmetric_bench.console import FILE_ONLY, setup_run_console
from textmetric_bench.engine.result_log import NEW_RUN_DIR
from textmetric_bench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, BenchError, ConfigError, DataError
from textmetric_bench.reports.tables.markdown import terminal_text
from textmetric_bench.tasks.config import (
    CONF_DIR,  # importing textmetric_bench.tasks.config also registers the ${shipped:} and ${checkout:} resolvers
)
from textmetric_bench.running.exit_status import (
    failure_lines,
    refused_job,
    plugin_failure_line,
    run_exit_status,
    sweep_exit_status,
    sweep_jobs,
    write_run_status,
)
from textmetric_bench.running.metric_configs import metric_override_problems, register_metric_configs
from textmetric_bench.running.registry import get_task, register_task_configs
from textmetric_bench.running.directories import (
    RUN_DIR_EXAMPLES,
    directory_problem,
    remove_unused_run_dir,
    run_dir_key,
)
from textmetric_bench.running.run_record import DirectoryBusy, RunRecord, run_lock
from textmetric_bench.running.unknown_keys import unknown_key_problems
from textmetric_bench.running.usage import usage_text  # noqa: F401 - registers ${harness_usage:} for --help

log = logging.getLogger("textmetric_bench")


def run_task(cfg: DictConfig, out_dir: Path):
    """Run the task named by ``cfg.task.name`` (``textmetric_bench.running.runner``, shared with the Python API)."""
    from textmetric_bench.running.runner import run_configured

    return run_configured(cfg, out_dir)


# An absolute path, the checkout's conf/ or the installed package's copy (textmetric_bench.shipped_path): "../conf" is resolved
# against the calling module, which the console script `textmetric-bench` makes a package ("pkg://conf", not found).
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def app(cfg: DictConfig) -> int:
    """``run_app``; an error that Ctrl-C caused (a C extension interrupted while it imports says "ImportError:
    initialization failed") is the interruption it is, not an error for Hydra to print with its traceback."""
    try:
        return run_app(cfg)
    except Exception:
        if _sigint_received:
            raise KeyboardInterrupt from None
        raise


def run_app(cfg: DictConfig) -> int:
    """Run the task, print its results, and end with its exit status (``textmetric_bench.errors``: ``EXIT_*``).

    A job of a sweep returns its status instead of exiting, so the sweep goes on to its other jobs; the
    process that launched the sweep exits with the worst of them (``main``)."""
    _app_entered.append(True)
    out_dir = Path(HydraConfig.get().runtime.output_dir).absolute()
    _runs.append((out_dir, list(HydraConfig.get().overrides.task)))  # where an interrupted run is (``interrupted``)
    setup_run_console(progress_setting(cfg))
    from textmetric_bench.running.suite import setting_not_for_pair, skipped_setting

    if (done := skipped_setting(cfg, out_dir, list(HydraConfig.get().overrides.task))) is not None:
        print(done, flush=True)  # a suite run again: this setting finished before (textmetric_bench.running.suite)
        return finish(out_dir, EXIT_OK, "")
    if (unfit := setting_not_for_pair(cfg)) is not None:
        print(unfit, flush=True)  # the pair names the suite settings it takes part in
        return finish(out_dir, EXIT_OK, unfit)
    try:
        with run_lock(out_dir, run_dir_key()):  # one run at a time in a directory, until its exit status is written
            return run_locked(cfg, out_dir)
    except DirectoryBusy as exc:  # another run writes into the directory: it is that run's, not to be removed
        return finish(out_dir, EXIT_BAD_INPUT, first_line(str(exc)), error=str(exc), refused=True, busy=True)


def run_locked(cfg: DictConfig, out_dir: Path) -> int:
    """``run_app``'s work, in the run directory it holds."""
    try:
        result = run_task(cfg, out_dir)
    except (ConfigError, DataError) as exc:  # bad settings or input files: refused before anything was evaluated
        said = str(exc)
        if HydraConfig.get().mode == RunMode.MULTIRUN:  # a sweep's job gets another directory from the sweep's
            said = said.replace(f"({NEW_RUN_DIR})", "(hydra.sweep.dir=...)")
        return finish(out_dir, EXIT_BAD_INPUT, first_line(said), error=said, refused=True)
    except BenchError as exc:
        return finish(out_dir, EXIT_BAD_INPUT, first_line(str(exc)), error=str(exc))
    except OSError as exc:  # a full disk, a read-only or forbidden directory met mid-run
        log_traceback_to_file(exc)
        message = os_error_message(exc, cfg, out_dir)
        return finish(out_dir, EXIT_BAD_INPUT, first_line(message), error=message)
    from textmetric_bench.tasks.skeleton import write_run_report

    report = write_run_report(out_dir)  # None (and a warning) if it cannot be built: the tables are written
    shown_files = [result.files[name] for name in get_task(str(cfg.task.name)).printed if name in result.files]
    for line in failure_lines(result, out_dir):
        print(line, file=sys.stderr)
    for path in shown_files:  # a markdown page as plain text: no ** or HTML tags on the terminal
        text = Path(path).read_text()
        print(terminal_text(text) if Path(path).suffix == ".md" else text)
    if "baseline" in result.files:
        print(f"baseline written to {result.files['baseline']}")
    sys.stderr.flush()
    print(last_line(out_dir, report), flush=True)
    code, reason = run_exit_status(result, bool(cfg.get("allow_metric_failures", False)))
    return finish(out_dir, code, reason)


#: The record of the existing directory a single run was given (``hydra.run.dir=``), read before Hydra writes its
#: config there: a run refused in it puts the record back (``textmetric_bench.running.run_record``).
_records: dict[Path, RunRecord] = {}
#: Whether this process ran ``app``'s body: Hydra exits 1 on arguments it refuses before that.
_app_entered: list[bool] = []
#: The run directories and overrides of the runs this process started (a sweep's jobs, with the basic launcher).
_runs: list[tuple[Path, list[str]]] = []
#: The run directories whose run came to its end (``finish``): an interruption after that is not theirs.
_finished: set[Path] = set()


def finish(
    out_dir: Path, code: int, reason: str, *, error: str | None = None, refused: bool = False, busy: bool = False
) -> int:
    """Record the run's exit status in its directory; exit with it, or, in a job of a sweep, return it.
    ``error``: a message printed as `error: ...` lines (no traceback) and logged. ``refused``: the config or the
    input was refused; a run that holds nothing else than Hydra's files then leaves no directory
    (``remove_unused_run_dir``), so trying things does not pile up empty run directories, and a directory that
    existed before keeps the config and exit status of the run whose results it holds (``_records``). ``busy``:
    refused as another run writes into the directory, which is kept whatever it holds."""
    if error is not None:
        log.error("%s", error, extra=FILE_ONLY)  # the console gets it once, below
        print("\n".join(f"error: {line}" for line in error.splitlines()), file=sys.stderr, flush=True)
    multirun = HydraConfig.get().mode == RunMode.MULTIRUN  # a sweep's job keeps its directory: its status is read
    _finished.add(out_dir)
    overrides = list(HydraConfig.get().overrides.task)
    if refused and multirun and not busy and (record := _records.get(out_dir.absolute())) is not None:
        record.restore()  # an earlier job's results are there: they keep their record; the sweep's end says this one
        refused_job(out_dir, code, reason, overrides)
    elif not refused or multirun:
        write_run_status(out_dir, code, reason, overrides)
    elif busy or not remove_unused_run_dir(out_dir, Path(get_original_cwd())):
        if (record := _records.get(out_dir.absolute())) is not None:
            record.restore()
        elif not busy:  # the run holding the directory writes its own status
            write_run_status(out_dir, code, reason, overrides)
    if multirun:
        return code
    if code != EXIT_OK:
        raise SystemExit(code)
    return code


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def progress_setting(cfg: DictConfig) -> object:
    """The ``progress`` value (auto, true or false); a wrong one is reported by the config validation."""
    value = cfg.get("progress", "auto")
    return value if isinstance(value, bool) or str(value).lower() in ("auto", "true", "false") else "auto"


def last_line(out_dir: Path, report: Path | None) -> str:
    """The run's last console line: where its report (or, without one, its results) is, as an absolute path."""
    if report is not None and report.is_file():
        return f"report: {report} (all outputs in {out_dir})"
    return f"outputs written to {out_dir}"


def log_traceback_to_file(exc: BaseException) -> None:
    """The traceback of ``exc`` into the run's log file only (at debug level), not onto the console."""
    record = log.makeRecord(
        log.name, logging.DEBUG, __file__, 0, "traceback of the error below", (), (type(exc), exc, exc.__traceback__)
    )
    for handler in logging.getLogger().handlers:  # at debug level, below the loggers' own
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def os_error_message(exc: OSError, cfg: DictConfig, out_dir: Path) -> str:
    """One line for an OSError that escaped a task: the problem, the path, and which setting moves it elsewhere."""
    from textmetric_bench.tasks.config import data_locations
    from textmetric_bench.running.directories import os_problem, run_dir_key

    cache_dir = data_locations(cfg)[0].absolute()
    where = Path(str(exc.filename)).expanduser().absolute() if exc.filename else None
    if where is not None and where.is_relative_to(cache_dir):
        setting = "data.cache_dir=/another/dir"
    elif where is not None and where.is_relative_to(out_dir.absolute()):
        setting = f"{run_dir_key()}=/another/dir"
    else:
        setting = f"data.cache_dir=/another/dir (cache: {cache_dir}) or {run_dir_key()}=/another/dir (run: {out_dir})"
    fix = {
        errno.ENOSPC: "free space",
        errno.EDQUOT: "free space",
        errno.EROFS: "make it writable",
        errno.EACCES: "make it writable",
        errno.EPERM: "make it writable",
    }.get(exc.errno, "check that disk")
    return f"{os_problem(exc)} writing {exc.filename or '(path not reported)'}: {fix} or set {setting}"


def run_dir_problem(argv: list[str]) -> str | None:
    """Why Hydra could not create the run (or sweep) directory these arguments give, or None.

    Hydra makes that directory before the app runs and fails there with a traceback, so `main` asks first.
    """
    planned = planned_run_dir(argv)
    return None if planned is None else directory_problem(planned[0], planned[1], RUN_DIR_EXAMPLES[planned[0]])


def planned_run_dir(argv: list[str]) -> tuple[str, Path] | None:
    """(``hydra.run.dir`` or ``hydra.sweep.dir``, its path) as Hydra will make it for these arguments, or None when
    the run writes nothing or its configs come from elsewhere: the config composed as Hydra will (sweep overrides
    left out). Best effort: when the arguments cannot be composed here, Hydra reports them itself.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    from textmetric_bench.running.registry import compose_config
    from textmetric_bench.running.directories import names_only

    try:
        args = command_line(argv)
        if (
            args.help
            or args.hydra_help
            or args.version
            or args.info
            or args.cfg
            or args.shell_completion
            or args.config_dir
            or args.config_path
            or args.config_name
            or args.experimental_rerun
        ):
            return None  # nothing is written, or the configs come from elsewhere
        overrides = [
            o.input_line for o in OverridesParser.create().parse_overrides(args.overrides) if not o.is_sweep_override()
        ]
        hydra_cfg = compose_config(overrides, return_hydra_config=True)
        key = "hydra.sweep.dir" if args.multirun else "hydra.run.dir"
        with names_only():  # Hydra makes it: a second one made here would be left empty
            path = Path(str(OmegaConf.select(hydra_cfg, key)))
    except Exception as exc:  # noqa: BLE001 - Hydra itself will report what is wrong with the arguments
        log.debug("run directory not checked before Hydra: %s", exc)
        return None
    return key, path


#: The flags of a ``hydra.main`` application, as ``--hydra-help`` lists them: those that take no value, and those
#: that take one (``--info`` may take one). Hydra keeps its own parser private, so `main` reads the command line
#: with this one before Hydra does (tests/test_cli.py compares it with ``--hydra-help``).
HYDRA_SWITCHES = (
    ("--help", "-h"),
    ("--hydra-help",),
    ("--version",),
    ("--resolve",),
    ("--run", "-r"),
    ("--multirun", "-m"),
    ("--shell-completion", "-sc"),
)
HYDRA_OPTIONS = (
    ("--cfg", "-c"),
    ("--package", "-p"),
    ("--config-path", "-cp"),
    ("--config-name", "-cn"),
    ("--config-dir", "-cd"),
    ("--experimental-rerun",),
)
HYDRA_FLAGS = tuple(flag for flags in (*HYDRA_SWITCHES, *HYDRA_OPTIONS, ("--info", "-i")) for flag in flags)


def command_line_parser() -> argparse.ArgumentParser:
    """A parser of Hydra's command line that only reads it: no help, no exit on ``--version``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("overrides", nargs="*")
    for flags in HYDRA_SWITCHES:
        parser.add_argument(*flags, action="store_true")
    for flags in HYDRA_OPTIONS:
        parser.add_argument(*flags)
    parser.add_argument("--info", "-i", nargs="?", const="all")
    return parser


def command_line(argv: list[str]) -> argparse.Namespace:
    """Hydra's command-line arguments, read (unknown ones ignored: Hydra reports them)."""
    return command_line_parser().parse_known_args(argv)[0]


def interrupted() -> NoReturn:
    """Ctrl-C: one line saying what is kept and how to go on (no traceback), then exit status 130 (128 + SIGINT, as a
    shell reports a command Ctrl-C ended), after the exit handlers (the embedding helper, the workers' semaphores)."""
    from textmetric_bench.running.directories import run_dir_key
    from textmetric_bench.running.exit_status import sweep_directory

    sweep = sweep_directory()
    if _runs and _runs[-1][0] not in _finished:  # the run, or the sweep's job, that was interrupted says so
        write_run_status(_runs[-1][0], EXIT_INTERRUPTED, "interrupted (Ctrl-C or SIGINT)", _runs[-1][1])
    directory = sweep or (_runs[-1][0] if _runs else None)
    key = "hydra.sweep.dir" if sweep is not None else run_dir_key()
    print(
        "interrupted: the evaluations finished so far are kept"
        + (f" in {directory}; to go on from them, run the same command with {key}={directory}" if directory else ""),
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(EXIT_INTERRUPTED)


#: Set by Ctrl-C (``on_sigint``).
_sigint_received: list[bool] = []


def on_sigint(signum, frame) -> None:
    """Ctrl-C: KeyboardInterrupt, as Python's own handler raises it, and a note that it came."""
    _sigint_received.append(True)
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGINT, on_sigint)  # Ctrl-C from here on: KeyboardInterrupt, answered below in one line
    try:
        _main()
    except KeyboardInterrupt:
        interrupted()


def _main() -> None:
    from textmetric_bench.running.ahead import start_embedding_ahead

    start_embedding_ahead(sys.argv[1:])  # a first run: the embedding helper imports while this one composes
    announce_plugin_failures(False)  # each run reports a plugin that failed to import, and "unknown metric" names it
    register_task_configs()  # Hydra composes `task` from the tasks' settings
    register_metric_configs()  # ... and `metric` from the registry's signatures
    from textmetric_bench.running.suite import suite_override_problems

    asked = command_line(sys.argv[1:])
    overrides = asked.overrides
    own_configs = not (asked.config_dir or asked.config_path or asked.config_name)
    problems = metric_override_problems(overrides) + suite_override_problems(overrides) or unknown_key_problems(
        overrides, own_configs=own_configs, sweep_advice=None if asked.multirun else "to sweep, add -m"
    )
    if not problems and (planned := planned_run_dir(sys.argv[1:])) is not None:
        problems = [p for p in [directory_problem(*planned, RUN_DIR_EXAMPLES[planned[0]])] if p is not None]
        if not problems and planned[0] == "hydra.run.dir" and (record := RunRecord.read(planned[1])) is not None:
            _records[record.directory] = record  # put back if this run is refused there (``finish``)
        if not problems and planned[0] == "hydra.sweep.dir":  # a sweep again in its directory: its jobs' records
            _records.update((record.directory, record) for record in RunRecord.read_jobs(planned[1]))
    if problems:
        print("\n".join(f"error: {problem}" for problem in problems), file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)
    if asked.cfg or asked.info:  # Hydra prints and runs nothing: no run will say it
        for module, record in plugin_failures().items():
            print(f"note: {plugin_failure_line(module, record)}", file=sys.stderr)
    try:
        app()
        code = EXIT_OK
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else 1
        if code == 1 and not _app_entered and sweep_jobs() is None:
            code = EXIT_BAD_INPUT  # Hydra refused the arguments (an unknown key, a config group that does not exist)
    code, lines = sweep_exit_status(code)
    for line in lines:
        print(line, file=sys.stderr if code else sys.stdout, flush=True)
    raise SystemExit(code)


if _HANDLER_BEFORE is not None:
    signal.signal(signal.SIGINT, _HANDLER_BEFORE)

if __name__ == "__main__":
    main()
