"""The one way the harness writes a file of state: records, reports and caches.

A reader (another worker, ``comet report``, a CI step, a crash later) sees the old file or the new one,
never half of one: the bytes go to a temporary file in the same folder, with a name unique to this
writer (two writers of one path never share a temporary file), are flushed to the disk, then renamed
over the target; the folder is flushed as well, so the rename itself survives a crash. The mode is
explicit: ``mkstemp`` makes 0600 files, while records and reports are meant to be read by other tools.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

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
    """The UTF-8 of ``json.dumps(data, indent=2, ensure_ascii=False) + "\\n"``, byte for byte, made faster.

    json indents with its pure-Python encoder (the C one writes compact JSON only): about 80 µs for a
    trial record, and a trial writes several such files. Here the C encoder writes compact JSON and
    msgspec indents it, copying every number and string as written, so the bytes are json's own
    (tests/scaffold/test_atomic.py checks this over generated data). What is not JSON (NaN and
    Infinity, which json writes) takes json's own indenting, as do values json cannot encode, so
    their errors are json's.
    """
    try:
        compact = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return msgspec.json.format(compact, indent=2) + b"\n"
    except (ValueError, TypeError, RecursionError):  # NaN/Infinity (msgspec refuses), or json's own error
        return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_bytes_atomic(
    path: Path, chunks: bytes | Iterable[bytes], *, mode: int = FILE_MODE, durable: bool = True
) -> Path:
    """Write *chunks* to *path* atomically (see the module docstring); the folder is created if needed.

    *durable* False skips the flushes to the disk: still never half a file for a reader, but a crash may
    lose the write. Only for files rebuilt from others at will (a trial's transcript page), where about
    2 ms a file of flushing would dominate rewriting thousands of them."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            if isinstance(chunks, bytes):
                handle.write(chunks)
            else:
                handle.writelines(chunks)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        _sync_folder(folder)
    return path


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
