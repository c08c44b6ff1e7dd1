"""Composing a run from Python arguments and running it as the command line does (``textmetric_bench.running.runner``).

The arguments become Hydra overrides (``k=5`` -> ``"k=5"``), the config is composed from the same files and
generated nodes as ``python -m textmetric_bench <overrides>``, and the run directory is the command line's
(``outputs/<task>/<label>/<time>``, relative to the working directory) unless ``out_dir`` is given. A run writes
what a command-line run writes (tables, figures, ``report.html``, ``exit_status.json``), so its directory opens
with ``textmetric-bench-report`` and ``load_run`` alike.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf, open_dict

from textmetric_bench.console import ConsoleHandler, LogFileHandler, OwnMessages, set_progress, setup_run_console
from textmetric_bench.errors import BenchError, ConfigError, DataError
from textmetric_bench.running.run_record import API_LOG_FILE

log = logging.getLogger(__name__)

#: The log file of a run started from Python (a command-line run's is ``__main__.log``, named by Hydra's job).
LOG_FILE = API_LOG_FILE


def metric_names(metrics: Any) -> list[str]:
    """Registered names of ``metrics``: a name (or ``"default"``/``"all"``), a function decorated with
    ``@textmetric_bench.api.metric``, or a list of those."""
    items = [metrics] if isinstance(metrics, str) or callable(metrics) else list(metrics)
    names = []
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif hasattr(item, "metric_info"):
            names.append(item.metric_info.name)
        elif hasattr(item, "fn") and hasattr(item, "inputs"):  # a MetricInfo
            names.append(item.name)
        else:
            label = getattr(item, "__name__", repr(item))
            raise ConfigError(
                f"metric {label!r} is not registered: decorate it first, e.g. "
                f"@textmetric_bench.api.metric({label!r}, inputs='texts', symmetric=True) above `def {label}(p, q, *, "
                "seed=0)`, then pass the function or its name"
            )
    if not names:
        raise ConfigError("no metric given: pass a name, a decorated function, a list of them, or 'default'")
    return names


def override(key: str, value: Any) -> str:
    """One Hydra override ``key=value`` for a Python value (bool, None, number, str, list, dict)."""
    return f"{key}={_value(value)}"


def _value(value: Any) -> str:
    if isinstance(value, (np.generic, np.ndarray)):  # np.int64(7) from np.arange, an array of values: Python's own
        value = value.tolist()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(float(value))  # a float subclass's repr may not be a number ("np.float64(0.5)")
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        safe = value and all(c.isalnum() or c in "_-./:~+" for c in value)
        return value if safe else "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    raise ConfigError(
        f"cannot pass {value!r} ({type(value).__name__}) as a setting: give a str, number, bool, None, list or dict"
    )


def pair_overrides(pair: Any) -> list[str]:
    """``pair``: a pair card's name, or two corpus files (A, B) for ``pair=files`` (absolute paths)."""
    if pair is None:
        return []
    if isinstance(pair, str):
        return [override("pair", pair)]
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        a, b = (Path(p).expanduser().absolute() for p in pair)
        return ["pair=files", override("pair.a", a), override("pair.b", b)]
    raise ConfigError(
        f"pair={pair!r} is not valid: give a pair's name (e.g. 'fortune_computing_people') or two "
        "files (a, b), e.g. pair=('texts_a.jsonl', 'texts_b.csv')"
    )


def overrides_of(
    task: str, metrics: Any, pair: Any, settings: Mapping[str, Any], config: Mapping[str, Any] | Sequence[str] | None
) -> list[str]:
    """The overrides the command line would take: task, metrics, pair, the task's settings, then ``config``
    (a mapping of dotted keys, e.g. ``{"engine.workers": 2}``, or override strings)."""
    out = [override("task", task)]
    if metrics is not None:  # None: the task's choice (``Task.unnamed_metrics``), as the command line without metrics=
        out.append(override("metrics", metric_names(metrics)))
    out += pair_overrides(pair)
    out += [override(key, value) for key, value in settings.items()]
    if isinstance(config, Mapping):
        out += [override(key, value) for key, value in config.items()]
    elif config is not None:
        out += [str(item) for item in config]
    return out


#: What a sweep given to a call of the API is told (``unknown_keys.sweep_lines``).
API_SWEEP_ADVICE = "a call runs one setting: call it once per value, or sweep on the command line with -m"


def compose(overrides: Sequence[str], *, run_dir: bool = True):
    """(config, run directory as the command line names it, made: ``new_dir``) for ``overrides``; one ConfigError
    for a bad one. ``run_dir=False``: no directory (None), for a call given one or writing none."""
    from textmetric_bench.running.metric_configs import metric_override_problems
    from textmetric_bench.running.registry import compose_config
    from textmetric_bench.running.suite import suite_override_problems
    from textmetric_bench.running.unknown_keys import unknown_key_problems

    # The command line's own checks, in its order (textmetric_bench.__main__.main): the same lines, suggestions too.
    problems = metric_override_problems(list(overrides)) + suite_override_problems(
        list(overrides)
    ) or unknown_key_problems(list(overrides), sweep_advice=API_SWEEP_ADVICE)
    if problems:
        raise ConfigError("\n".join(problems))
    try:
        cfg = compose_config(overrides, return_hydra_config=True)
    except ConfigError:
        raise
    except Exception as exc:  # Hydra's own refusal: an unknown key, a config group option that does not exist
        raise ConfigError(f"{' '.join(str(exc).split())} (overrides: {' '.join(overrides)})") from None
    made = Path(str(OmegaConf.select(cfg, "hydra.run.dir"))) if run_dir else None
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, made


@contextlib.contextmanager
def run_console(out_dir: Path, progress: object) -> Iterator[Path]:
    """For the duration of a run: the harness's messages on stderr (between progress bars), every record in
    ``<out_dir>/session.log``, and the progress mode; the caller's logging is restored afterwards."""
    out_dir.mkdir(parents=True, exist_ok=True)
    root, path = logging.getLogger(), out_dir / LOG_FILE
    console = ConsoleHandler(sys.stderr)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(OwnMessages())
    file = LogFileHandler(path)
    file.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    level = root.level
    root.addHandler(console)
    root.addHandler(file)
    root.setLevel(logging.INFO)
    setup_run_console(progress)
    try:
        yield path
    finally:
        root.removeHandler(console)
        root.removeHandler(file)
        file.close()
        root.setLevel(level)
        logging.captureWarnings(False)
        set_progress("auto")


def run(
    overrides: Sequence[str],
    *,
    out_dir: Path | str | None,
    progress: object,
    report: bool,
    allow_metric_failures: bool | None = None,
) -> Path:
    """Run the composed config into its run directory as ``python -m textmetric_bench`` does, and return it."""
    from textmetric_bench.running.directories import MADE, remove_unused_run_dir
    from textmetric_bench.running.exit_status import failure_lines, run_exit_status, write_run_status
    from textmetric_bench.running.run_record import RunRecord, run_lock
    from textmetric_bench.running.runner import run_configured

    cfg, made = compose(overrides, run_dir=out_dir is None)
    out_dir = Path(out_dir).expanduser().absolute() if out_dir is not None else Path(made).absolute()
    allowed = bool(cfg.get("allow_metric_failures", False)) if allow_metric_failures is None else allow_metric_failures
    existed = out_dir.exists() and out_dir not in MADE  # a directory this call made is new
    record = RunRecord.read(out_dir) if existed else None  # what a refused call leaves as it was
    with run_console(out_dir, progress), run_lock(out_dir, "out_dir"):  # DirectoryBusy: another run writes there
        save_config(cfg, overrides, out_dir)
        try:
            result = run_configured(cfg, out_dir)
        except BenchError as exc:
            if not existed:  # refused before anything ran: no run directory, nor the empty folders above it
                remove_unused_run_dir(out_dir, Path.cwd())
            elif record is not None and isinstance(exc, (ConfigError, DataError)):
                record.restore()  # refused: the directory's results, and so its record, are another run's
            in_api_words(exc)
            if type(exc).__name__ == "WorkerStartError" and getattr(sys.modules.get("__main__"), "__file__", None):
                raise type(exc)(
                    f"{exc}. Called from a script? Worker processes start by importing it: put the call "
                    'under `if __name__ == "__main__":`'
                ) from exc
            raise
        if report:
            from textmetric_bench.tasks.skeleton import write_run_report

            write_run_report(out_dir)  # None (and a warning) if it cannot be built: the tables are written
        code, reason = run_exit_status(result, allowed)
        for line in failure_lines(result, out_dir):  # as the command line says it: one line per failure
            log.warning("%s", line)
        write_run_status(out_dir, code, reason, list(overrides))
    return out_dir


def in_api_words(exc: BaseException) -> None:
    """``exc``'s message with the command line's key for the run directory (``hydra.run.dir=``) as the API's
    (``out_dir=``)."""
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (exc.args[0].replace("hydra.run.dir=", "out_dir="), *exc.args[1:])


def save_config(cfg, overrides: Sequence[str], out_dir: Path) -> None:
    """The composed config and the overrides in ``<out_dir>/.hydra/``, where a command-line run has them from Hydra:
    what reruns the run, or rebuilds its corpora (``textmetric_bench.running.failed_corpora``)."""
    saved = out_dir / ".hydra"
    saved.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, saved / "config.yaml")
    OmegaConf.save(OmegaConf.create(list(overrides)), saved / "overrides.yaml")
