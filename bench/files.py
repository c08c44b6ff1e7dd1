"""Writing the harness's files: atomically, with the usual permissions, and with a clear error on a full disk.

Every file or directory the harness writes into a cache or run directory is first written under a hidden
temporary name (``.<name>.<random>.part``, which no reader's pattern matches) and then renamed into place,
so a reader sees all of it or nothing. Temporaries are created with mode 0o666 (directories 0o777), so the
umask and default ACLs give them the usual permissions, not the 0o600 of ``tempfile``. A full disk or a
read-only directory raises a ``StorageError`` naming the directory and the bytes needed; what was written
before stays. ``held_lock`` lets one process do a piece of work while the others wait for it.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from textmetric_bench.errors import BenchError, StorageError

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".part"
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def temporary_name(target: Path) -> Path:
    """A hidden name beside ``target`` for writing it; never matches ``*.npz``, ``*.jsonl`` or ``*.json``."""
    return target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}{TEMP_SUFFIX}")


def is_temporary(path: Path) -> bool:
    """A file or directory being written (or left behind by a writer that was killed)."""
    return path.name.startswith(".") and path.name.endswith(TEMP_SUFFIX)


def remove_stale_temporaries(directory: Path, *, older_than_s: float = 3600.0) -> int:
    """Delete temporaries in ``directory`` untouched for ``older_than_s`` (their writer died); returns how many."""
    removed = 0
    now = time.time()
    for path in Path(directory).glob(".*"):
        legacy = path.name.startswith(".tmp-") and path.suffix == ".npz"  # shard temporaries of earlier versions
        if not (is_temporary(path) or legacy):
            continue
        try:
            if now - path.lstat().st_mtime < older_than_s:
                continue
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            removed += 1
        except OSError:  # another job removed it first, or the directory is read-only: leave it
            pass
    return removed


def current_umask() -> int:
    """The process's umask, read without changing it (Linux), else by setting it and back."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def usual_permissions(directory: Path) -> None:
    """Give everything under ``directory`` the modes the umask gives new files, as libraries that write through
    ``tempfile`` (safetensors, for one) leave their files 0o600."""
    mask = current_umask()
    for root, dirs, names in os.walk(directory):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in names:
            os.chmod(os.path.join(root, name), 0o666 & ~mask)


def _size(n: int | None) -> str:
    if n is None:
        return "an unknown number of bytes"
    return f"{n:,} bytes ({n / 2**20:.1f} MiB)"


def _free_bytes(directory: Path) -> int | None:
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return None


def _read_only(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY) or not os.access(directory, os.W_OK)
    except OSError:
        return False


def storage_error(
    exc: BaseException, directory: Path, what: str, needed: int | None = None, free: int | None = None
) -> StorageError | None:
    """The ``StorageError`` ``exc`` amounts to when writing ``what`` into ``directory``, or None if it is not one.

    An ``OSError`` is judged by its errno; any other exception (a library that hides the errno, e.g.
    safetensors) by the state of the directory: read-only, or less free space than ``needed``.
    """
    if isinstance(exc, BenchError) or not isinstance(exc, Exception):
        return None
    code = exc.errno if isinstance(exc, OSError) else None
    free_now = _free_bytes(directory)
    full = code in NO_SPACE or (code is None and needed is not None and free_now is not None and free_now < needed)
    if full:
        had = f"{_size(free)} were free when writing began" if free is not None else f"{_size(free_now)} are free"
        need = f"it needs {_size(needed)}, {had}" if needed is not None else had
        return StorageError(
            f"no space left to write {what} in {directory}: {need}. Free some space "
            "(or choose a directory on a larger disk) and rerun: everything written so far is kept and not redone"
        )
    if code in NOT_WRITABLE or (code is None and _read_only(directory)):
        reason = os.strerror(code) if code is not None else "read-only or not writable"
        return StorageError(
            f"cannot write {what} in {directory} ({reason}): choose a writable directory "
            "(data.cache_dir=... for caches, hydra.run.dir=... for a run) or fix its permissions"
        )
    return None


@contextmanager
def storage_errors(directory: Path, what: str, needed: int | None = None) -> Iterator[None]:
    """Turn a full disk or a read-only ``directory`` met inside the block into a ``StorageError``."""
    free = _free_bytes(directory) if Path(directory).is_dir() else None
    try:
        yield
    except Exception as exc:
        error = storage_error(exc, Path(directory), what, needed, free)
        if error is None:
            raise
        raise error from exc


def make_dirs(directory: Path | str, what: str) -> Path:
    """``directory`` and its parents, or a ``StorageError`` saying why they cannot be made."""
    directory = Path(directory).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            raise StorageError(
                f"cannot make the directory {directory} for {what}: a part of that path is a "
                "regular file; choose another directory or move that file"
            ) from exc
        above = next((p for p in directory.parents if p.exists()), directory)
        raise (
            storage_error(exc, above, what) or StorageError(f"cannot make the directory {directory} for {what}: {exc}")
        ) from exc
    return directory


@contextmanager
def atomic_path(target: Path | str, *, what: str, needed: int | None = None) -> Iterator[Path]:
    """An empty temporary file beside ``target`` for the block to fill; renamed onto ``target`` if the block succeeds."""
    target = Path(target)
    make_dirs(target.parent, what)
    tmp = temporary_name(target)
    try:
        with storage_errors(target.parent, what, needed):
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask applies
            yield tmp
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write(target: Path | str, data: bytes | str, *, what: str) -> Path:
    """Write ``data`` (str as UTF-8) to ``target`` atomically and durably."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(target, what=what, needed=len(payload)) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(target)


@contextmanager
def atomic_directory(target: Path | str, *, what: str, needed: int | None = None) -> Iterator[Path]:
    """A temporary directory for the block to fill; it then replaces ``target`` (an old one is removed)."""
    target = Path(target)
    make_dirs(target.parent, what)
    tmp, old = temporary_name(target), None
    try:
        with storage_errors(target.parent, what, needed):
            os.mkdir(tmp, 0o777)  # the umask applies
            yield tmp
            usual_permissions(tmp)
            if target.exists():
                old = temporary_name(target)
                os.replace(target, old)
            try:
                os.replace(tmp, target)
            except BaseException:
                if old is not None and not target.exists():
                    os.replace(old, target)
                    old = None
                raise
    finally:
        for leftover in (tmp, old):
            if leftover is not None:
                shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def held_lock(lock_file: Path | str, doing: str) -> Iterator[None]:
    """Hold the inter-process lock ``lock_file`` for the block; while another job holds it, wait (and say so).

    The operating system releases the lock of a process that dies, so a killed job never blocks the others.
    """
    lock_file = Path(lock_file)
    lock = FileLock(lock_file)
    with storage_errors(lock_file.parent, f"the lock file {lock_file.name}"):
        try:
            lock.acquire(timeout=0)
        except Timeout:
            log.info("waiting for another job %s (it holds %s)", doing, lock_file)
            lock.acquire()
    try:
        yield
    finally:
        lock.release()
