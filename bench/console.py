"""The console of a run: the harness's own messages and progress bars; everything else goes to the run's log file.

A base module (like ``textmetric_bench.errors``): every layer may use it. Hydra's logging config
(``conf/hydra/job_logging/bench.yaml``) puts a :class:`ConsoleHandler` with the :class:`OwnMessages`
filter on the console and a file handler on ``<run dir>/__main__.log``; :func:`setup_run_console`
routes Python warnings and third-party libraries' own handlers into that logging, and evaluation
workers send even their C-level output (faiss's "please provide at least N training points") to
the file (:func:`send_process_output_to`).

Progress bars are tqdm's (already a dependency, and the bars of Hugging Face libraries are tqdm's
too, so a rich live display would fight them): use :func:`progress_bar` for every bar, e.g.::

    with progress_bar(total=len(texts), desc="LM scoring", unit="text", enabled=progress) as bar:
        for batch in batches:
            ...
            bar.update(len(batch))
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from tqdm.auto import tqdm

#: Top-level names of the loggers whose INFO messages the console shows; all others go to the log file only.
OWN_LOGGERS = ("textmetric_bench", "__main__")
#: Progress mode of this process: "auto" (bars when stderr is a terminal or this is a Jupyter kernel), True (always)
#: or False (never).
_progress: dict[str, object] = {"mode": "auto"}
#: ``log.warning(..., extra=FILE_ONLY)``: a record for the run's log file only, never the console (e.g. each failed
#: evaluation with its traceback, which the console sums up in one line per metric).
FILE_ONLY = {"file_only": True}
#: Libraries that install their own stream handler; their records are sent through the root logger instead.
_SELF_HANDLING = ("transformers", "datasets")


class OwnMessages(logging.Filter):
    """Lets through the records of the harness's own loggers (bench, metrics, reports), none of a third party,
    and none logged with ``extra=FILE_ONLY``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.split(".")[0] in OWN_LOGGERS and not getattr(record, "file_only", False)


class ConsoleHandler(logging.StreamHandler):
    """A stream handler that writes through ``tqdm.write``, so a message never breaks a progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=self.stream)
            self.flush()
        except Exception:  # noqa: BLE001 - logging's own convention: report, never raise
            self.handleError(record)


class LogFileHandler(logging.FileHandler):
    """The run's log file. A disk that refuses a record (full, gone read-only) ends the file's logging with one
    line on stderr, rather than logging's "--- Logging error ---" block with tracebacks for every later record:
    the run reports the disk itself when it next writes a result."""

    failed = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.failed:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
            return
        if not self.failed:
            self.failed = True
            print(
                f"warning: the log file {self.baseFilename} cannot be written ({error.strerror or error}); "
                "its later records are lost",
                file=sys.stderr,
                flush=True,
            )


def progress_mode(value: object) -> object:
    """``progress`` as configured: "auto", True or False (strings "true"/"false" accepted)."""
    if isinstance(value, str) and value.lower() in ("auto", "true", "false"):
        return {"auto": "auto", "true": True, "false": False}[value.lower()]
    if isinstance(value, bool):
        return value
    raise ValueError(f"progress={value!r}: expected auto, true or false")


def set_progress(value: object) -> None:
    """Set this process's progress mode (the app calls it with the ``progress`` config value)."""
    _progress["mode"] = progress_mode(value)


def in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (an IPython shell started by ``IPKernelApp``): its stderr is no
    terminal, yet a notebook shows a bar (tqdm.auto then draws a widget, as it decides by the same test)."""
    ipython = sys.modules.get("IPython")  # never imported here: a kernel has imported it already
    try:
        shell = ipython.get_ipython() if ipython is not None else None
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # noqa: BLE001 - an IPython too old or half-initialised to tell: no kernel
        return False


def bars_shown(enabled: bool = True) -> bool:
    """Whether a bar that its caller ``enabled`` is drawn: never when the mode is False, always when True,
    and under "auto" when stderr is a terminal or this is a Jupyter kernel (a log or a pipe gets no
    carriage-return lines)."""
    mode = _progress["mode"]
    if not enabled or mode is False:
        return False
    if mode is True:
        return True
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty()) or in_jupyter()


def progress_bar(total: int | None = None, *, desc: str, unit: str, enabled: bool = True, **options) -> tqdm:
    """A tqdm bar on stderr showing the rate in ``unit``/s and the ETA; a no-op bar when not :func:`bars_shown`."""
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not bars_shown(enabled),
        dynamic_ncols=True,
        file=sys.stderr,
        **options,
    )


def log_file() -> Path | None:
    """The file the root logger writes to (the run's log), or None."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


def adopt_library_loggers() -> None:
    """Send the records of libraries that print through their own handler (transformers, datasets) through
    the root logger, so they reach the log file and not the console. Call it after such a library is imported."""
    for name in _SELF_HANDLING:
        library = logging.getLogger(name)
        for handler in list(library.handlers):
            if type(handler) is logging.StreamHandler:
                library.removeHandler(handler)
        library.propagate = True


def setup_run_console(progress: object = "auto") -> None:
    """For the process of a run: Python warnings into logging, third-party handlers adopted, progress mode set."""
    logging.captureWarnings(True)
    # tokenizers warns on the console when a process forks after its thread pool ran; deciding beforehand
    # silences it (false: a forked child, e.g. a subprocess, must not deadlock on that pool)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Hugging Face libraries draw their own bars (e.g. "Loading weights" at every model load) between ours
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    adopt_library_loggers()
    set_progress(progress)


def send_process_output_to(path: Path | str) -> None:
    """Point this process's stdout and stderr file descriptors (C-level prints included, e.g. faiss's
    warnings) and its logging, Python warnings too, at the log file ``path`` (appending).

    For worker processes: what they print is for the log, never for the console of the run.
    """
    fd = os.open(str(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for stream, target in ((sys.stdout, 1), (sys.stderr, 2)):
        if stream is not None:
            stream.flush()
        os.dup2(fd, target)
    os.close(fd)
    root = logging.getLogger()
    handler = LogFileHandler(path)
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    adopt_library_loggers()


def output_to_run_log() -> Callable[[], None] | None:
    """A picklable setup for a process a run starts (its figures' drawing processes): ``send_process_output_to``
    the run's log file (the root logger's); None outside a run."""
    path = log_file()
    return functools.partial(send_process_output_to, path) if path is not None else None


def command(script: str) -> str:
    """How to type this package's program ``script`` (a console script of pyproject.toml) in a message telling
    the user what to run next, the way they started this process: a user of the installed commands gets
    ``script``, a user of ``python -m`` gets ``python -m <its module>`` (the scripts may not be on their PATH)."""
    package = __name__.split(".")[0]
    modules = {
        point.name: point.module.removesuffix(".__main__")
        for point in entry_points(group="console_scripts")
        if point.module.split(".")[0] == package
    }
    invoked = Path(sys.argv[0]).name.removesuffix(".exe") if sys.argv and sys.argv[0] else ""
    return script if invoked in modules or script not in modules else f"python -m {modules[script]}"
