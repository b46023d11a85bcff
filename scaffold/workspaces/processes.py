"""Finding and ending the processes a local workspace's commands left behind.

A process that left its command's process group (``setsid``, a daemon's double fork) outlives the kill
of that group; the validation phase ends it here. Such a process is the workspace's when either

* its environment holds the workspace's marker, ``COMET_WORKSPACE=<its path>``: every command of a local
  workspace carries it, and so does everything it starts; or
* its working directory is inside the workspace, which also finds one that cleared its environment
  (``env -i``).

A process that does both, clears its environment and leaves the folder, is not found: the local backend
isolates by folder and environment only, for trusted agents (the docker backend ends every process of the
container). Only processes started after the workspace was made are looked at: the kernel hands out
process ids in increasing order (``/proc/loadavg`` names the last one), so a few ``/proc`` reads per trial
rather than one per process of the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Final

from scaffold.errors import WorkspaceError
from scaffold.workspaces.files import read_bytes

__all__ = ["MARKER", "end_marked", "last_pid"]

MARKER: Final = "COMET_WORKSPACE"
_ROUNDS: Final = 20
_UNSURE_ROUNDS: Final = 5  # rounds a process that shows no environment is waited for (like the docker keeper)
_PROBE_LIMIT: Final = 256  # at most this many new ids are looked up one by one rather than listed
_KERNEL_THREAD: Final = 0x00200000  # PF_KTHREAD in /proc/PID/stat's flags: kernel threads have no environment


def last_pid() -> int:
    """The id of the process the kernel started last (0 where ``/proc/loadavg`` is not readable)."""
    try:
        return int((read_bytes("/proc/loadavg") or b"").split()[-1])
    except (ValueError, IndexError):
        return 0


def end_marked(marker: str, *, folder: str, since: int, real: str | None = None) -> int:
    """SIGKILL every process whose environment holds the entry *marker* (``NAME=value``) or whose working
    directory is inside *folder*, among those started after the process *since*, round after round until
    no new one appears, then wait until they are gone; returns how many.

    A process in the middle of an ``execve`` shows an empty environment for a moment: it is looked at
    again in the next round. WorkspaceError when processes keep appearing for every round (a fork bomb
    outrunning the kill), when one does not die, or when ``/proc`` cannot be read at all. *real*: the
    folder's real path, when the caller knows it (else it is resolved here).
    """
    wanted, root = marker.encode(), real or os.path.realpath(folder)
    killed: set[int] = set()
    unsure_rounds = 0
    for _ in range(_ROUNDS):
        found, unsure = _marked(wanted, root, since)
        new = [pid for pid in found if pid not in killed]  # a killed process shows its environment until it dies
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed.update(new)
        if not new:
            # A process that never shows an environment (one that cleared it) is not waited for forever.
            unsure_rounds += 1
            if not unsure or unsure_rounds >= _UNSURE_ROUNDS:
                _wait_gone(killed, folder)
                return len(killed)
            time.sleep(0.002)
    raise WorkspaceError(f"the processes of the workspace {folder} could not all be ended ({len(killed)} killed)")


def _wait_gone(pids: set[int], folder: str, timeout: float = 10.0) -> None:
    """Until every one of *pids* is gone or a zombie (SIGKILL is delivered, not waited for)."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while left:
        left = {pid for pid in left if _user_process(pid)}
        if not left:
            return
        if time.monotonic() > deadline:
            raise WorkspaceError(f"processes of the workspace {folder} did not end after SIGKILL: {sorted(left)}")
        time.sleep(0.001)


def _marked(wanted: bytes, folder: str, since: int) -> tuple[list[int], bool]:
    """(ids of the workspace's processes, whether one could not be read yet) among those after *since*."""
    me = os.getpid()
    found: list[int] = []
    unsure = False
    for pid in _candidates(since):
        if pid == me:
            continue
        environ = read_bytes(f"/proc/{pid}/environ")
        if environ is None:  # gone, or another user's: not ours to end
            continue
        if (wanted in environ and wanted in environ.split(b"\0")) or _inside(pid, folder):
            found.append(pid)
        elif not environ:
            unsure = unsure or _user_process(pid)
    return found, unsure


def _candidates(since: int) -> list[int]:
    """The ids of running processes that may have started after the process *since*. A few ids (a trial's
    worth) are looked up one by one; many, or ids that wrapped around, from a listing of ``/proc``."""
    current = last_pid()
    if 0 < since <= current and current - since <= _PROBE_LIMIT:
        return list(range(since + 1, current + 1))  # the ones that are gone fail to open: cheap
    try:
        names = os.listdir("/proc")  # noqa: PTH208 (plain names, thousands of them: no Path objects)
    except OSError as exc:
        raise WorkspaceError(f"cannot list the processes of this machine (/proc): {exc}") from None
    pids = [int(n) for n in names if n.isdigit()]
    if not since or not current:  # no /proc/loadavg to tell new ids from old: every process is looked at
        return pids
    return [pid for pid in pids if _started_between(pid, since, current)]


def _started_between(pid: int, since: int, current: int) -> bool:
    """Whether *pid* was handed out after *since* and up to *current*. Ids grow until the kernel's maximum,
    then start again from the bottom: a long-lived process can hold a higher id than new ones."""
    if current >= since:
        return since < pid <= current
    return pid > since or pid <= current  # the ids wrapped around since the workspace was made


def _inside(pid: int, folder: str) -> bool:
    """Whether *pid*'s working directory is *folder* or inside it."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return cwd == folder or cwd.startswith(folder + os.sep)


def _user_process(pid: int) -> bool:
    """Whether *pid* is a running user process: not a zombie (whose environment is always empty) and
    not a kernel thread (which has none)."""
    try:
        fields = (read_bytes(f"/proc/{pid}/stat") or b"").rsplit(b")", 1)[-1].split()
        state, flags = fields[0], int(fields[6])
    except (IndexError, ValueError):  # gone (nothing read), or not the shape expected
        return False
    return state not in (b"Z", b"X") and not flags & _KERNEL_THREAD
