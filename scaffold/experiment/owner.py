"""Who runs an experiment: one session at a time, and a session that dies lets go.

Two sessions writing one experiment folder would run their trials in the same workspaces and records,
and each would count the other's trials as its own. So every process of a session that runs trials or
writes the reports *holds* the experiment: a shared ``flock`` on ``<experiment>/.owner``, kept until the
process ends (the kernel releases it then, also after SIGKILL, so a crashed owner never holds it
forever; a session that ends cleanly removes the file). The file names the owner (its session token,
pid, host and start). A process of another session finds it held under another token and is refused
with the owner named; a process of the same session (a pytest-xdist worker, the controller's reports)
joins it. Taking and joining happen under an exclusive lock of the folder itself (:func:`folder_locked`),
so two sessions that start together cannot both take it; the reports of a folder are written under the
same lock, one writer at a time.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from scaffold.errors import BusyError, DiskFullError

__all__ = ["OWNER_FILE", "Holding", "folder_locked", "hold"]

OWNER_FILE: Final = ".owner"


@dataclass(slots=True)
class Holding:
    """An experiment held by this process; :meth:`release` lets go (the process's end does too)."""

    root: Path
    fd: int

    def release(self) -> None:
        """Let go; the session's last process to do so removes the owner file (and the folder, when the
        session wrote nothing into it: a usage error leaves no empty experiment behind)."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError), folder_locked(self.root):
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: another still holds it
            (self.root / OWNER_FILE).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.root.rmdir()  # only when empty
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1


def hold(root: Path, token: str, *, what: str = "a session") -> Holding:
    """Hold the experiment folder *root* for the session *token* (made when missing); BusyError naming
    the owner when a live process of another session holds it. *what* says what this process is doing
    (for the next one's message)."""
    root.mkdir(parents=True, exist_ok=True)
    with folder_locked(root):
        fd = os.open(root / OWNER_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held by live processes: ours to join, or another session's
            owner = _read(fd)
            if owner.get("token") != token:
                os.close(fd)
                raise BusyError(_busy_message(root, owner)) from None
            fcntl.flock(fd, fcntl.LOCK_SH)
            return Holding(root, fd)
        except BaseException:
            os.close(fd)
            raise
        # Nobody holds it (never held, or every holder has ended): this session owns it now.
        record = {
            "token": token,
            "pid": os.getpid(),
            "host": os.uname().nodename,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "what": what,
        }
        os.ftruncate(fd, 0)
        try:
            os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFullError(root / OWNER_FILE, exc.strerror or "no space left on device") from exc
            raise
        fcntl.flock(fd, fcntl.LOCK_SH)  # shared: the session's other processes join under the lock above
        return Holding(root, fd)


@contextlib.contextmanager
def folder_locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` of *folder* itself (no file is made in it): released when the block
    ends, or when the process does."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read(fd: int) -> dict[str, object]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _busy_message(root: Path, owner: dict[str, object]) -> str:
    who = f"pid {owner.get('pid', '?')} on {owner.get('host', '?')}, since {owner.get('started', '?')}"
    return (
        f"experiment {root.name} ({root}) is being run by another session ({owner.get('what', 'a session')}, "
        f"{who}): two sessions would run their trials in the same workspaces and records. Wait for it to "
        "end (an ended or killed session lets go at once), or give another --experiment-id"
    )
