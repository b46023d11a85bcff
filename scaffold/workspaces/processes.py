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
rather than one per process of the machine, unless the ids wrapped around.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Final

from scaffold.errors import WorkspaceError

__all__ = ["MARKER", "end_marked", "last_pid"]

MARKER: Final = "COMET_WORKSPACE"
_ROUNDS: Final = 20
_UNSURE_ROUNDS: Final = 5  # rounds a process that shows no environment is waited for (like the docker keeper)
_KERNEL_THREAD: Final = 0x00200000  # PF_KTHREAD in /proc/PID/stat's flags: kernel threads have no environment


def last_pid() -> int:
    """The id of the process the kernel started last (0 where ``/proc/loadavg`` is not readable)."""
    try:
        with open("/proc/loadavg", "rb") as handle:  # noqa: PTH123
            return int(handle.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def end_marked(marker: str, *, folder: str, since: int) -> int:
    """SIGKILL every process whose environment holds the entry *marker* (``NAME=value``) or whose working
    directory is inside *folder*, among those started after the process *since*, round after round until
    none is left; returns how many.

    A process in the middle of an ``execve`` shows an empty environment for a moment: it is looked at
    again in the next round. WorkspaceError when processes keep appearing for every round (a fork bomb
    outrunning the kill) or ``/proc`` cannot be read at all.
    """
    wanted = marker.encode()
    killed = unsure_rounds = 0
    for _ in range(_ROUNDS):
        found, unsure = _marked(wanted, os.path.realpath(folder), since)
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(found)
        if not found:
            # A process that never shows an environment (one that cleared it) is not waited for forever.
            unsure_rounds += 1
            if not unsure or unsure_rounds >= _UNSURE_ROUNDS:
                return killed
            time.sleep(0.002)
    raise WorkspaceError(f"the processes of the workspace {folder} could not all be ended ({killed} killed)")


def _marked(wanted: bytes, folder: str, since: int) -> tuple[list[int], bool]:
    """(ids of the workspace's processes, whether one could not be read yet) among those after *since*."""
    try:
        names = os.listdir("/proc")  # noqa: PTH208 (plain names, thousands of them: no Path objects)
    except OSError as exc:
        raise WorkspaceError(f"cannot list the processes of this machine (/proc): {exc}") from None
    current = last_pid()
    wrapped = current < since  # the ids started again from the bottom: look at every process
    me = os.getpid()
    found: list[int] = []
    unsure = False
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me or (pid <= since and not wrapped):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:  # noqa: PTH123
                environ = handle.read()
        except OSError:  # gone, or another user's: not ours to end
            continue
        if (wanted in environ and wanted in environ.split(b"\0")) or _inside(pid, folder):
            found.append(pid)
        elif not environ:
            unsure = unsure or _user_process(pid)
    return found, unsure


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
        with open(f"/proc/{pid}/stat", "rb") as handle:  # noqa: PTH123
            fields = handle.read().rsplit(b")", 1)[-1].split()
        state, flags = fields[0], int(fields[6])
    except (OSError, IndexError, ValueError):
        return False
    return state not in (b"Z", b"X") and not flags & _KERNEL_THREAD
