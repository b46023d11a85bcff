"""The one way the harness writes a file of state: records, reports and caches.

A reader (another worker, ``comet report``, a CI step, a crash later) sees the old file or the new one,
never half of one: the bytes go to a temporary file in the same folder, with a name unique to this
writer (two writers of one path never share a temporary file), are flushed to the disk, then renamed
over the target; the folder is flushed as well, so the rename itself survives a crash. The mode is
explicit, whatever the umask: the temporary file is made 0600 (nobody reads it half written), while
records and reports are meant to be read by other tools.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from scaffold.errors import DiskFullError

__all__ = ["FILE_MODE", "json_bytes", "locked", "write_bytes_atomic", "write_json_atomic", "write_text_atomic"]

FILE_MODE: Final = 0o644


def write_text_atomic(path: Path, text: str | Iterable[str], *, mode: int = FILE_MODE, durable: bool = True) -> Path:
    """Write *text* (a string, or its pieces in order) as UTF-8 to *path* atomically; returns *path*."""
    pieces = [text] if isinstance(text, str) else text
    return write_bytes_atomic(path, (piece.encode("utf-8") for piece in pieces), mode=mode, durable=durable)


def write_json_atomic(path: Path, data: Any, *, mode: int = FILE_MODE, durable: bool = True) -> Path:
    """*data* as indented JSON (UTF-8 kept as is, keys in their order) with a final newline."""
    return write_bytes_atomic(path, json_bytes(data), mode=mode, durable=durable)


def json_bytes(data: Any) -> bytes:
    """*data* as the files of state hold it: indented JSON, UTF-8 kept as is, keys in their order, a final
    newline."""
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_bytes_atomic(
    path: Path, chunks: bytes | Iterable[bytes], *, mode: int = FILE_MODE, durable: bool = True
) -> Path:
    """Write *chunks* to *path* atomically (see the module docstring); the folder is created if needed.

    *durable* False skips the flushes to the disk: still never half a file for a reader, but a crash may
    lose the write. Only for files rebuilt from others at will (a trial's transcript page), where about
    2 ms a file of flushing would dominate rewriting thousands of them."""
    folder = path.parent
    try:
        fd, tmp = _temporary(path)
    except OSError as exc:  # no free inode, or no room for the folder's new entry
        if exc.errno in _FULL:
            raise DiskFullError(path, exc.strerror or "no space left on device") from exc
        raise
    try:
        os.fchmod(fd, mode)
        with os.fdopen(os.dup(fd), "wb") as handle:
            if isinstance(chunks, bytes):
                handle.write(chunks)
            else:
                handle.writelines(chunks)
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in _FULL:
            raise DiskFullError(path, exc.strerror or "no space left on device") from exc
        raise
    if durable:
        _sync_folder(folder)
    return path


_FULL: Final = (errno.ENOSPC, errno.EDQUOT)
"""A full file system, a used-up quota: said as such (DiskFullError), not as a traceback."""

_TEMPORARY_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_serial = itertools.count()


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside *path*, open for writing, named for this process, thread and write: no other
    writer can share it, and the name says whose a leftover was. The folder is made only when missing
    (most writes go to a folder that exists: no system call is spent on it then)."""
    # The name's first 100 characters: a long one with the suffix would pass the file system's limit.
    stem = f"{path.parent}/.{path.name[:100]}.{os.getpid()}-{threading.get_ident()}-"
    made = False
    for _ in range(100):
        tmp = f"{stem}{next(_serial)}.tmp"
        try:
            return os.open(tmp, _TEMPORARY_FLAGS, 0o600), tmp
        except FileExistsError:  # a leftover of a dead process that had this id
            continue
        except FileNotFoundError:
            if made:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            made = True
    raise FileExistsError(f"{path}: no free temporary name beside it")


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries (the rename) to the disk; file systems that cannot are left alone."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on *path* (made, with its folder, when missing): the one writer of a
    shared cache entry among processes and pytest-xdist workers; closing the file releases it, also when
    the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
