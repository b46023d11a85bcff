"""Owner marks: which process a folder the harness made belongs to, and the sweep of those whose owner is gone.

Workspaces, the docker backend's control folders, agent and simulator HOMEs and the validation helpers'
folder all live under ``$TMPDIR/comet-eval`` (or ``--workspace-root``), shared by every session of this
machine: parallel pytest runs, each pytest-xdist worker, ``comet`` commands. A session that is SIGKILLed
never removes its own, so each such folder gets an **owner mark** before it exists: a sibling file
``<folder>.comet-owner`` naming the owning process (pid, the kernel's start time of that pid, host).
The owner removes the mark with the folder; a kept workspace loses its mark and so is never swept.

:meth:`OwnedFolders.sweep` (run when a backend is made, and by the local backend's supervisor the moment
its harness dies) removes what belongs to owners that are gone: first it ends the processes still
working in such a folder (``COMET_WORKSPACE=<folder>`` in their environment, or their working directory
inside it), then it renames the folder to a trash name it marks as its own, and deletes that. An owner is
gone when its pid no longer runs, runs a later process (another start time), or is a zombie (killed and
not yet reaped: it will never clean up). A mark of another host is never judged.

Why a sibling file, not the owner in the folder's name: workspace paths are ``<experiment>/<case>``, the
path users are shown for kept workspaces and that resumes reuse. Why a lock: a sweep must not remove a
folder a live session claims at the same moment (a resumed experiment re-running the dead session's
case); claims and sweeps take one ``flock``, and a sweep only renames under it (deleting happens after).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from scaffold.errors import WorkspaceError
from scaffold.workspaces.files import remove_empty_parents
from scaffold.workspaces.processes import MARKER, end_marked

__all__ = ["MARK_SUFFIX", "TEMP_FOLDER", "OwnedFolders", "Owner", "mark_of", "state_root", "sweep_dead"]

MARK_SUFFIX: Final = ".comet-owner"
_TRASH: Final = ".comet-trash-"
TEMP_FOLDER: Final = ".comet-tmp"
"""Where :meth:`OwnedFolders.make_temp` makes folders: agents' HOMEs, the validation helpers."""


def state_root() -> Path:
    """``<tempdir>/comet-eval``: the default workspace root, and where the HOMEs of agents live."""
    return Path(tempfile.gettempdir()) / "comet-eval"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:  # noqa: PTH123
            return handle.read().rsplit(b")", 1)[-1].decode().split()
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True, slots=True)
class Owner:
    """A process of a host, told apart from a later process with the same pid by its start time."""

    pid: int
    started: str
    host: str

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()  # asked anew: a forked child is another owner
        if _CURRENT.get(pid) is None:
            _CURRENT.clear()
            _CURRENT[pid] = cls.of(pid)
        return _CURRENT[pid]

    @classmethod
    def of(cls, pid: int) -> Owner:
        fields = _stat_fields(pid)
        return cls(pid, fields[19] if fields and len(fields) > 19 else "", os.uname().nodename)

    def gone(self) -> bool:
        """True when this owner will never clean up: its pid runs no more, runs another process, or is a
        zombie (a SIGKILLed pytest-xdist worker stays one until the controller reaps it)."""
        if self.host != os.uname().nodename:
            return False  # another machine's (a shared TMPDIR): not ours to judge
        if self.pid <= 0:
            return True  # a mark cut short or made up: kill(0 or -1) would mean a whole group
        fields = _stat_fields(self.pid)
        if fields is None:
            # No /proc entry: it ended, or /proc hides it (hidepid, or no /proc at all): ask the kernel.
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False
            return False
        if fields[0] in ("Z", "X"):
            return True
        return bool(self.started) and len(fields) > 19 and fields[19] != self.started

    def text(self) -> str:
        return json.dumps({"pid": self.pid, "started": self.started, "host": self.host}) + "\n"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), str(data["started"]), str(data["host"]))
        except (ValueError, TypeError, KeyError):
            return None


_CURRENT: dict[int, Owner] = {}
_LOCK: dict[tuple[int, str], int] = {}
"""The lock file's descriptor, opened once per process (and path of the lock)."""
_THREADS = threading.Lock()


def mark_of(folder: Path) -> Path:
    return folder.with_name(folder.name + MARK_SUFFIX)


class OwnedFolders:
    """Claims and sweeps of the folders under *root* (marks at depth one or two: ``<root>/<name>``,
    ``<root>/<experiment>/<case>``, ``<root>/.comet-ctl/<id>``, ``<root>/.comet-tmp/<name>``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # One lock per machine (not per root): a root given as two different paths still agrees. The file
        # is opened once per process (claims happen per trial), never inherited by commands (O_CLOEXEC).
        path = state_root() / "locks" / "owners.lock"
        key = (os.getpid(), str(path))
        fd = _LOCK.get(key)
        if fd is None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = _LOCK[key] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            except OSError:  # a TMPDIR not writable (a --workspace-root elsewhere is): unlocked, as before marks
                yield
                return
        with _THREADS:  # flock excludes other processes only: threads share the open file
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def claim(self, folder: Path, owner: Owner | None = None) -> None:
        """Mark *folder* (which need not exist yet) as the current process's; call before making it.
        WorkspaceError when the mark cannot be written (the folder could not be made either)."""
        data = (owner or Owner.current()).text().encode()
        try:
            with self._locked():
                try:
                    fd = os.open(mark_of(folder), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                except FileNotFoundError:  # the first trial of an experiment: its folder is new
                    # Its owner's alone: a kept workspace holds what the agent wrote, not for other users.
                    folder.parent.parent.mkdir(parents=True, exist_ok=True)
                    folder.parent.mkdir(mode=0o700, exist_ok=True)
                    fd = os.open(mark_of(folder), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
        except OSError as exc:
            raise WorkspaceError(f"cannot create the workspace {folder}: {exc}") from exc

    def release(self, folder: Path) -> None:
        """Drop the mark: the folder is removed, or kept on purpose (a kept workspace is never swept)."""
        with contextlib.suppress(FileNotFoundError):
            mark_of(folder).unlink()

    def make_temp(self, prefix: str) -> Path:
        """A new private folder ``<root>/.comet-tmp/<prefix><random>``, claimed before it exists."""
        folder = self.root / TEMP_FOLDER / f"{prefix}{uuid.uuid4().hex[:12]}"
        self.claim(folder)
        folder.mkdir(mode=0o700)
        return folder

    def remove(self, folder: Path) -> None:
        """Delete an owned folder, then its mark."""
        shutil.rmtree(folder, ignore_errors=True)
        self.release(folder)

    def sweep(self, *, owner: Owner | None = None) -> list[Path]:
        """Remove every marked folder whose owner is gone (only *owner*'s, when given); returns them.

        Never raises: a session's start must not fail over what another left (a folder that resists, a
        process that will not die, a read-only TMPDIR are left for a later sweep). Marks of another user
        are not ours to judge.
        """
        if not self.root.is_dir():
            return []
        swept: list[Path] = []
        trash: list[Path] = []
        try:
            with self._locked():
                for mark in self._marks():
                    taken = self._take(mark, owner)
                    if taken is not None:
                        swept.append(taken[0])
                        trash += taken[1:]
        except OSError:
            pass
        for bin_ in trash:
            self.remove(bin_)
        for parent in {f.parent for f in swept}:
            remove_empty_parents(parent, self.root)
        return swept

    def _take(self, mark: Path, owner: Owner | None) -> tuple[Path, ...] | None:
        """Under the lock: (the folder, its trash name if it existed) when *mark*'s owner is gone, the
        folder's processes ended and the folder renamed out of the way; else None."""
        try:
            if mark.lstat().st_uid != os.getuid():
                return None
            found = Owner.parse(mark.read_text(encoding="utf-8", errors="replace"))
            # An unreadable mark was cut short by the death of its writer (marks are written under the lock).
            if found is not None and ((owner is not None and found != owner) or not found.gone()):
                return None
            folder = mark.with_name(mark.name.removesuffix(MARK_SUFFIX))
            end_marked(f"{MARKER}={folder}", folder=str(folder), since=0)
            taken: tuple[Path, ...] = (folder,)
            if folder.is_symlink():
                folder.unlink()  # never followed
            elif folder.exists():
                bin_ = folder.with_name(_TRASH + uuid.uuid4().hex[:12])
                mark_of(bin_).write_text(Owner.current().text(), encoding="utf-8")
                try:
                    folder.rename(bin_)
                except OSError:
                    mark_of(bin_).unlink()
                    raise
                taken = (folder, bin_)
            with contextlib.suppress(FileNotFoundError):
                mark.unlink()
        except (OSError, WorkspaceError):
            return None
        return taken

    def _marks(self) -> list[Path]:
        try:
            return [*self.root.glob("*" + MARK_SUFFIX), *self.root.glob("*/*" + MARK_SUFFIX)]
        except OSError:
            return []


def sweep_dead(*roots: Path) -> list[Path]:
    """Sweep what dead owners left under each of *roots* and under :func:`state_root` (agents' HOMEs)."""
    swept: list[Path] = []
    for root in dict.fromkeys([*roots, state_root()]):
        swept += OwnedFolders(root).sweep()
    return swept
