"""FileStore: each run is a directory holding ``run-state.json`` and ``trajectory.jsonl``.

A commit, under an exclusive ``fcntl`` lock on the run's lock file (the compare-and-swap section):

1. read the published ``run-state.json`` and compare its ``revision`` with the expected one;
2. cut ``trajectory.jsonl`` back to the published length (``trajectoryBytes`` in the state document),
   dropping events a crashed writer appended but never published, then append the new events and fsync;
3. write the new state to a temp file, fsync it, rename it over ``run-state.json`` (the commit point),
   and fsync the directory so the rename itself survives a power cut.

Readers take no lock: a rename is atomic, so they see the old or the new state, never a torn one, and
they read only the first ``trajectoryBytes`` of the trajectory, which no writer ever changes again.
Directory fsync matters beyond tidiness: without it a power cut could bring back the revision before a
claim whose action was already dispatched, and the action would be dispatched again unflagged.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from comet_engine.errors import ConflictError, CorruptRunError, RunExistsError, RunNotFoundError, StoreError
from comet_engine.stores.base import StoredRun
from comet_engine.stores.codec import crash_point, decode_event, decode_state, encode_events, encode_state, stamped
from comet_engine.stores.paths import check_run_id

__all__ = ["LOCK_FILE", "STATE_FILE", "TRAJECTORY_FILE", "FileStore"]

STATE_FILE = "run-state.json"
TRAJECTORY_FILE = "trajectory.jsonl"
LOCK_FILE = "run-state.lock"
_TEMP_FILE = "run-state.json.tmp"  # one fixed name is enough: only the lock holder writes it


class FileStore:
    """Runs under ``root/<run id>/`` (standalone mode), or exactly one run in one directory (``single``).

    One handle may be shared by threads; every process opens its own. Handles keep the lock file and
    the trajectory open per run, so call ``close`` (or use ``with``) when done with a long-lived store.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._single = False
        self._mutex = threading.Lock()  # flock does not exclude threads sharing one descriptor
        self._handles: dict[str, _Handles] = {}

    @classmethod
    def single(cls, directory: str | os.PathLike[str]) -> FileStore:
        """A store of exactly one run kept in *directory* itself (change mode: ``<change>/.comet``)."""
        store = cls(directory)
        store._single = True
        return store

    def __enter__(self) -> FileStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._mutex:
            for handles in self._handles.values():
                handles.close()
            self._handles.clear()

    # --- the Store protocol ----------------------------------------------------------------------------

    def create(self, run_id: str, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> StoredRun:
        check_run_id(run_id)
        lines = encode_events(run_id, 1, events)
        data = "".join(line + "\n" for line in lines).encode()
        text = encode_state(run_id, 1, state, trajectoryBytes=len(data))
        directory = self._directory(run_id)
        try:
            new_directory = not directory.is_dir()
            directory.mkdir(parents=True, exist_ok=True)
            if new_directory and not self._single:
                _fsync_directory(directory.parent)
        except OSError as err:
            raise self._os_error(run_id, directory, "create the run directory", err) from err
        with self._locked(run_id) as handles:
            existing = self._find_document(None if self._single else run_id)
            if existing is not None:
                held = existing.get("runId", run_id)
                raise RunExistsError(
                    f"run {held!r} already exists in {directory}"
                    + ("; change mode keeps one run per directory: use another directory" if self._single else "")
                )
            self._publish(run_id, handles, 0, data, text)
        return StoredRun(run_id, 1, stamped(run_id, 1, state))

    def load(self, run_id: str) -> StoredRun:
        document = self._read_document(run_id)
        return StoredRun(run_id, document["revision"], _without_store_keys(document))

    def commit(
        self, run_id: str, expected_revision: int, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
    ) -> StoredRun:
        revision = expected_revision + 1
        lines = encode_events(run_id, revision, events)
        data = "".join(line + "\n" for line in lines).encode()
        with self._locked(run_id) as handles:
            current = self._read_document(run_id)
            if current["revision"] != expected_revision:
                raise ConflictError(run_id, expected_revision, current["revision"])
            published = current["trajectoryBytes"]
            text = encode_state(run_id, revision, state, trajectoryBytes=published + len(data))
            self._publish(run_id, handles, published, data, text)
        return StoredRun(run_id, revision, stamped(run_id, revision, state))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        document = self._read_document(run_id)
        length = document["trajectoryBytes"]
        path = self._directory(run_id) / TRAJECTORY_FILE
        try:
            with path.open("rb") as file:
                data = file.read(length)
        except FileNotFoundError:
            data = b""
        except OSError as err:
            raise self._os_error(run_id, path, "read", err) from err
        if len(data) < length:
            raise CorruptRunError(
                f"run {run_id!r}: {path} holds {len(data)} bytes but revision {document['revision']} published "
                f"{length}; the trajectory was truncated outside the engine: restore it from a backup"
            )
        where = f"{path}"
        return [
            decode_event(run_id, line, f"{where} line {number}")
            for number, line in enumerate(data.decode().splitlines(), start=1)
        ]

    def run_ids(self) -> list[str]:
        if self._single:
            document = self._find_document(None)
            return [] if document is None else [str(document["runId"])]
        if not self.root.is_dir():
            return []
        found = []
        for entry in self.root.iterdir():
            if (entry / STATE_FILE).is_file():
                found.append(entry.name)
        return sorted(found)

    # --- internals -------------------------------------------------------------------------------------

    def _directory(self, run_id: str) -> Path:
        return self.root if self._single else self.root / run_id

    def _read_document(self, run_id: str) -> dict[str, Any]:
        document = self._find_document(run_id)
        if document is None:
            raise RunNotFoundError(f"run {run_id!r} does not exist: no {self._directory(run_id) / STATE_FILE}")
        return document

    def _find_document(self, run_id: str | None) -> dict[str, Any] | None:
        """The published state document, checked, or None; ``run_id`` None: whichever run a single store holds."""
        directory = self.root if run_id is None else self._directory(check_run_id(run_id))
        path = directory / STATE_FILE
        label = run_id if run_id is not None else "?"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as err:
            raise CorruptRunError(f"run {label!r}: cannot read {path} ({err}); restore it from a backup") from err
        document = decode_state(label, text, str(path))
        revision, length, held = document.get("revision"), document.get("trajectoryBytes"), document.get("runId")
        if not (isinstance(revision, int) and revision >= 1 and isinstance(length, int) and length >= 0):
            raise CorruptRunError(
                f"run {label!r}: {path} lacks a positive integer 'revision' and 'trajectoryBytes'; "
                "it was not written by this store: restore it from a backup"
            )
        if not isinstance(held, str):
            raise CorruptRunError(f"run {label!r}: {path} has no string 'runId'; restore it from a backup")
        if run_id is not None and held != run_id:
            if self._single:
                raise RunNotFoundError(f"run {run_id!r} does not exist: {directory} holds run {held!r}")
            raise CorruptRunError(f"run {run_id!r}: {path} belongs to run {held!r}; move it back to its own directory")
        return document

    def _publish(self, run_id: str, handles: _Handles, published: int, data: bytes, text: str) -> None:
        """Append *data* after the first *published* bytes and make *text* the state: the durable commit."""
        directory = self._directory(run_id)
        try:
            trajectory = handles.trajectory(directory)
            if os.fstat(trajectory).st_size != published:
                os.ftruncate(trajectory, published)  # events of a revision that never got published
            if data:
                _write_all(trajectory, data, published)
                crash_point("file-events-written")
                os.fdatasync(trajectory)
            crash_point("file-events-synced")
            temp = directory / _TEMP_FILE
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                _write_all(fd, text.encode(), 0)
                os.fsync(fd)
            finally:
                os.close(fd)
            crash_point("file-state-synced")
            os.replace(temp, directory / STATE_FILE)
            crash_point("file-state-renamed")
            os.fsync(handles.directory(directory))
        except OSError as err:
            raise self._os_error(run_id, directory, "commit to", err) from err

    @contextmanager
    def _locked(self, run_id: str) -> Iterator[_Handles]:
        with self._mutex:
            handles = self._handles.get(run_id)
            if handles is None:
                handles = self._handles[run_id] = _Handles()
            directory = self._directory(run_id)
            try:
                lock = handles.lock(directory)
                fcntl.flock(lock, fcntl.LOCK_EX)
                if os.fstat(lock).st_ino != (directory / LOCK_FILE).stat().st_ino:
                    # The run directory was removed and made again since we opened it: a lock on the old
                    # inode excludes nobody, so reopen everything on the new one.
                    fcntl.flock(lock, fcntl.LOCK_UN)
                    handles.close()
                    lock = handles.lock(directory)
                    fcntl.flock(lock, fcntl.LOCK_EX)
            except FileNotFoundError:
                raise RunNotFoundError(f"run {run_id!r} does not exist: no directory {directory}") from None
            except OSError as err:
                raise self._os_error(run_id, directory, "lock", err) from err
            try:
                yield handles
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _os_error(self, run_id: str, path: Path, doing: str, err: OSError) -> StoreError:
        hint = "free some disk space" if err.errno == errno.ENOSPC else "check that it exists and is writable"
        return StoreError(f"run {run_id!r}: cannot {doing} {path} ({err.strerror or err}); {hint}")


class _Handles:
    """Open descriptors of one run kept by one store handle: lock file, trajectory, directory."""

    __slots__ = ("_directory", "_lock", "_trajectory")

    def __init__(self) -> None:
        self._lock: int | None = None
        self._trajectory: int | None = None
        self._directory: int | None = None

    def lock(self, directory: Path) -> int:
        if self._lock is None:
            self._lock = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._lock

    def trajectory(self, directory: Path) -> int:
        if self._trajectory is None:
            self._trajectory = os.open(directory / TRAJECTORY_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._trajectory

    def directory(self, directory: Path) -> int:
        if self._directory is None:
            self._directory = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return self._directory

    def close(self) -> None:
        for fd in (self._lock, self._trajectory, self._directory):
            if fd is not None:
                os.close(fd)
        self._lock = self._trajectory = self._directory = None


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _without_store_keys(document: dict[str, Any]) -> dict[str, Any]:
    document.pop("trajectoryBytes", None)
    return document
