"""The cache and the run directory must be creatable and writable: checked before any work, each problem one line.
A run's default directory is new: ``${new_dir:<parent>}`` in conf/config.yaml makes it (``new_dir``)."""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from textmetric_bench.settings import shown
from textmetric_bench.data.settings import DataSettings
from textmetric_bench.errors import ConfigError
from textmetric_bench.running.run_record import LOCK_FILE


def directory_problems(cfg: DictConfig, out_dir: Path | str | None) -> list[str]:
    problems = []
    try:
        data = DataSettings.of(cfg)
    except ConfigError:  # a bad value of the data block: validate_config reports it from the same check
        return []
    cache_dir, mirror = data.locations()
    from_env = os.environ.get("BENCH_CACHE_DIR") and Path(os.environ["BENCH_CACHE_DIR"]).expanduser() == cache_dir
    problems += filter(
        None,
        [
            directory_problem(
                "data.cache_dir",
                cache_dir,
                "~/.cache/textmetric-bench",
                origin=" (set by BENCH_CACHE_DIR)" if from_env else "",
            )
        ],
    )
    if mirror is not None and data.mirror and not mirror.is_dir():
        env = os.environ.get("BENCH_DATA_MIRROR")
        origin = " (set by BENCH_DATA_MIRROR)" if env and Path(env).expanduser() == mirror else ""
        problems.append(
            f"data.mirror={shown(str(mirror))}{origin} is not valid: no such directory; give a directory "
            f"laid out <corpus>/<file>, e.g. data.mirror=/data/mirror, or unset it to download"
        )
    if out_dir is not None:
        key = run_dir_key()
        problems += filter(None, [directory_problem(key, Path(out_dir), RUN_DIR_EXAMPLES[key])])
    return problems


RUN_DIR_EXAMPLES = {"hydra.run.dir": "outputs/my_run", "hydra.sweep.dir": "multirun/my_sweep"}


def run_dir_key() -> str:
    """The Hydra key that set this job's output directory: hydra.sweep.dir in a multirun, else hydra.run.dir."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        return "hydra.sweep.dir"
    return "hydra.run.dir"


def directory_problem(key: str, path: Path, example: str, *, origin: str = "") -> str | None:
    """Why ``path`` cannot be created and written, or None: no regular file on its way, and a probe directory with a
    file of ``PROBE_BYTES`` can be written in it (or, if it does not exist yet, in its nearest existing ancestor,
    which is left unchanged)."""
    path = Path(path).expanduser()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    stated, remedy = f"{key}={shown(str(path))}{origin}", f"give a directory you can write, e.g. {key}={example}"
    if not existing.is_dir():
        return f"{stated} is not valid: {existing} is a file, not a directory; {remedy}"
    probe = None
    try:  # a directory and a file of PROBE_BYTES in it, on the disk: a full one refuses either, an empty file not
        probe = tempfile.mkdtemp(dir=existing, prefix=".textmetric-bench-probe-")
        with open(os.path.join(probe, "probe"), "wb") as handle:
            handle.write(bytes(PROBE_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        return f"{stated} is not valid: cannot write in {existing} ({os_problem(exc)}); {remedy}"
    finally:
        if probe is not None:
            shutil.rmtree(probe, ignore_errors=True)
    return None


#: What ``directory_problem`` writes to tell a full disk: more than Hydra's record of a run's config.
PROBE_BYTES = 64 * 1024


def os_problem(exc: OSError) -> str:
    """A short lower-case phrase for an OSError: 'read-only file system', 'no space left on device', ..."""
    names = {
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EDQUOT: "disk quota exceeded",
        errno.ENOTDIR: "a part of the path is a file, not a directory",
        errno.EEXIST: "a file is in the way",
    }
    return names.get(exc.errno, (exc.strerror or type(exc).__name__).lower())


def remove_unused_run_dir(out_dir: Path, start_dir: Path) -> bool:
    """Remove a run directory holding nothing but what Hydra wrote on entering the run (``.hydra/``, the log) and the
    run's lock, and the parents that leaves empty up to ``start_dir``; True if removed.

    For a run that failed before evaluating anything (a bad value, a missing file): it would leave a directory
    per attempt with no result in it. A directory with anything else (an earlier run's results, to resume) stays,
    and so do the directory the command started in and its ancestors."""
    out_dir, start_dir = Path(out_dir).absolute(), Path(start_dir).absolute()
    try:
        entries = list(out_dir.iterdir())
        if start_dir.is_relative_to(out_dir) or any(
            not (
                entry.name == ".hydra"
                and entry.is_dir()
                or entry.is_file()
                and (entry.suffix == ".log" or entry.name == LOCK_FILE)
            )
            for entry in entries
        ):
            return False
        shutil.rmtree(out_dir)
    except OSError:
        return False
    parent = out_dir.parent
    while parent != start_dir and parent.is_relative_to(start_dir):
        try:
            parent.rmdir()  # only an empty one
        except OSError:
            break
        parent = parent.parent
    return True


#: How ``new_dir`` names a run directory: its start, to the second.
STAMP = "%Y-%m-%d_%H-%M-%S"
#: The directories ``new_dir`` made in this process (absolute): a caller tells a directory it was given from one an
#: earlier run left.
MADE: set[Path] = set()


#: Inside ``names_only()``: ``new_dir`` names the directory it would make, and makes none.
_NAMES_ONLY: list[bool] = []


@contextmanager
def names_only() -> Iterator[None]:
    """Compose a config's run directory without making it: for a check of its path before Hydra composes and makes
    it (``__main__.run_dir_problem``)."""
    _NAMES_ONLY.append(True)
    try:
        yield
    finally:
        _NAMES_ONLY.pop()


def new_dir(parent: str) -> str:
    """``<parent>/<time>``, made here, for a run's or a sweep's default directory (``${new_dir:<parent>}``): a second
    job started in the same second finds it made and takes ``<time>_2``, so two jobs never share a directory. Made
    with one ``mkdir`` (atomic: of two processes, one makes it, the other gets FileExistsError). OmegaConf caches the
    value per config, as it does Hydra's ``${now:}``, and Hydra hands the cache on to a sweep's jobs, so a run and
    its jobs each resolve it once. Where it cannot be made (a read-only or full disk), the name alone: the run's
    directory check then says why (``directory_problems``)."""
    base, stamp = Path(parent).expanduser(), datetime.now().strftime(STAMP)
    for number in itertools.count(1):
        path = base / (stamp if number == 1 else f"{stamp}_{number}")
        if _NAMES_ONLY:
            if path.exists():
                continue
            return str(path)
        try:
            path.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError:
            return str(path)
        MADE.add(path.absolute())
        return str(path)
    raise AssertionError("unreachable")  # itertools.count never ends


if not OmegaConf.has_resolver("new_dir"):
    OmegaConf.register_new_resolver("new_dir", new_dir, use_cache=True)
