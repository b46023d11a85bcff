"""What a fresh copy of a task's files holds, known without reading it again.

Every trial starts from a fresh copy of its task's ``environment/``, and the first thing the runner does
with it is list and hash every file (scaffold.trial.changes.capture: what the agent starts from). Trial after
trial that is the same files with the same content: for a repository of a few thousand files, hashing
them again is most of what tracking the agent's changes costs. So the copy notes, file by file, which
source file each came from (:class:`Copied`), and the first manifest of the workspace takes the digest
(and the small files' bytes) from a process-wide cache keyed by the source file's identity, hashing only
what it has not seen.

When a digest is taken from the cache, three things hold, each checked:

- **The source has not changed since the digest was made.** The key is the source file's size,
  modification time, inode and change time. Any write changes the change time, which no program can set
  back; and only a source whose change time is :data:`SETTLED_NS` old is cached, so two writes within one
  tick of the file system's clock (which would keep the change time) cannot both have happened after it.
- **The copy is of that source as keyed.** The source is checked unchanged after its bytes were copied
  (the same identity before and after), else the file is not noted.
- **The copy is as it was made.** The workspace file's own identity must be the one it had right after
  the copy; the harness's writes into the workspace drop the notes of what they touch, and the workspace's
  first command drops them all, so an agent's work is always hashed (a write in the same clock tick as the
  copy would keep the change time: the notes are gone before any command can make one).

Standard library only, as scaffold.workspaces.files (imported by the supervisor under ``python -S``).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Final

__all__ = ["SETTLED_NS", "Copied", "Identity", "cached", "identity", "remember"]

Identity = tuple[int, int, int, int]
"""A file's size, modification time, inode and change time: its bytes are the same while these are."""

SETTLED_NS: Final = 2_000_000_000
"""A source file is cached only once its last change is this old (far more than a clock tick)."""
CACHE_BYTES: Final = 32 * 1024 * 1024
CACHE_ENTRIES: Final = 200_000
"""At most this many file bytes and files are kept in the cache of this process; beyond, it starts again
empty."""


def identity(info: os.stat_result) -> Identity:
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


class Copied:
    """The files one copy made: workspace-relative path -> (the copy's identity right after it was made,
    the source file, the source's identity)."""

    __slots__ = ("files",)

    def __init__(self) -> None:
        self.files: dict[str, tuple[Identity, str, Identity]] = {}

    def note(self, rel: str, copy: os.stat_result, source: str, before: os.stat_result, after: os.stat_result) -> None:
        """Note *rel* as a copy of *source*, when the source was the same (*before* and *after* its bytes
        were read)."""
        if identity(before) == identity(after):
            self.files[rel] = (identity(copy), source, identity(after))

    def forget(self, rel: str) -> None:
        """Drop the notes of *rel* and of everything below it (the harness is writing there)."""
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:  # the whole folder, or a path the confinement resolves: all of it
            self.files.clear()
            return
        rel = "/".join(parts)
        self.files.pop(rel, None)
        prefix = rel + "/"
        for path in [p for p in self.files if p.startswith(prefix)]:
            del self.files[path]

    def source(self, rel: str, now: Identity) -> tuple[str, Identity] | None:
        """The source *rel* is a copy of, when the file is still as the copy made it (*now*)."""
        entry = self.files.get(rel)
        if entry is None or entry[0] != now:
            return None
        return entry[1], entry[2]


class _Digests:
    """The process's cache: a source file as keyed -> its digest and, for a small file, its bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, Identity], tuple[str, bytes | None]] = {}
        self._bytes = 0

    def get(self, source: tuple[str, Identity]) -> tuple[str, bytes | None] | None:
        return self._entries.get(source)

    def put(self, source: tuple[str, Identity], digest: str, data: bytes | None) -> None:
        size = len(data) if data is not None else 0
        with self._lock:
            if self._bytes + size > CACHE_BYTES or len(self._entries) >= CACHE_ENTRIES:
                self._entries.clear()
                self._bytes = 0
            if source not in self._entries:
                self._entries[source] = (digest, data)
                self._bytes += size

    def after_fork(self) -> None:
        """A forked child's lock is free (another thread may have held it at the fork)."""
        self._lock = threading.Lock()


_DIGESTS = _Digests()
os.register_at_fork(after_in_child=_DIGESTS.after_fork)


def cached(source: tuple[str, Identity]) -> tuple[str, bytes | None] | None:
    """The digest (and the bytes, for a small file) of the source as keyed, when known."""
    return _DIGESTS.get(source)


def remember(source: tuple[str, Identity], digest: str, data: bytes | None) -> None:
    """Keep *digest* (and *data*) of the source as keyed, when its last change is settled."""
    if source[1][3] <= time.time_ns() - SETTLED_NS:
        _DIGESTS.put(source, digest, data)
