"""The local backend's supervisor: when the harness process dies, even by SIGKILL, its agents die with it.

A local agent is a process tree on this machine, and agent CLIs leave their process group on purpose
(Claude Code starts its shells with ``setsid``): a signal to one process or one group never reaches all of
them, and a SIGKILLed harness runs no cleanup at all. So each local backend starts, with its first
workspace, one small process that outlives the harness by design:

* it runs ``python -m scaffold.workspaces.supervisor`` in a session of its own (a Ctrl-C, a hangup or a
  SIGKILL sent to the harness's process group does not reach it), with the harness's pid and start time;
* it blocks reading a pipe whose only writer is the harness (the write end is close-on-exec: no command
  inherits it; a child the harness only forks, without exec, would hold it until that child ends). The
  kernel closes that pipe when the harness exits, however it exits; a clean close says ``exit`` first,
  and the supervisor just ends;
* end of file without ``exit``: the harness died. Once its pid is gone or a zombie, the supervisor sweeps
  every folder marked as the harness's (scaffold.workspaces.owners): each process whose environment holds
  that workspace's marker ``COMET_WORKSPACE=<folder>`` (inherited through every fork, ``setsid`` and
  double fork) or works inside the folder is SIGKILLed, then the folder is deleted. Milliseconds after
  the harness died, whatever the depth of the tree.

Why not ``PR_SET_PDEATHSIG`` on the agent: it reaches only the direct child (not what that child
``setsid``-started), and it fires when the *thread* that forked exits, not the process. Why not
``bwrap --die-with-parent``: bubblewrap is not installed on every machine (the local backend needs
nothing), and needs user namespaces; the marker works wherever ``/proc`` does. Why not a cgroup: making
one needs a delegated cgroup tree (systemd) that CI containers and plain shells do not have. What the
supervisor misses is what strict validation misses too: a process that clears its environment *and*
leaves the workspace folder (the local backend is for trusted agents; the docker backend contains all).
If the supervisor itself is killed (``kill -9`` of every process of the user), the next session's sweep
ends the processes and removes the folders instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from scaffold.workspaces.owners import OwnedFolders, Owner

__all__ = ["Supervisor", "main"]

_EXIT: Final = b"exit\n"
_DEATH_WAIT_S: Final = 5.0  # after the pipe closed, how long the harness may take to finish dying


class Supervisor:
    """The harness's side: :meth:`start` before the first command of a workspace runs, :meth:`close` at the
    end. Cheap to make; starting costs one Python start-up (tens of milliseconds), once per backend.

    A supervisor whose backend is garbage without being closed is told "exit" then (tests drop backends).
    One still running at the harness's exit is left alone: it sees the pipe close as the process ends,
    and sweeps what the harness never removed. Started with ``posix_spawn``, not ``Popen``: a Popen still
    running at the interpreter's exit warns, and this one runs past that exit by design."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self._roots = [str(root) for root in dict.fromkeys(roots)]
        self._running: _Running | None = None
        self._stop: weakref.finalize[[_Running], Supervisor] | None = None

    def start(self) -> None:
        if self._running is not None and self._running.alive():
            return
        self.close()  # one that died (killed by hand) is reaped; a new one takes over
        owner = Owner.current()
        package_parent = str(Path(__file__).resolve().parents[2])  # where ``scaffold`` is importable from
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "PYTHONPATH": package_parent,
            "PYTHONDONTWRITEBYTECODE": "1",
            "TMPDIR": tempfile.gettempdir(),  # the owner marks' lock lives there
        }
        # -S: no site-packages (the supervisor needs the standard library and this package only).
        argv = [sys.executable, "-S", "-m", __name__, str(owner.pid), owner.started, owner.host, *self._roots]
        from scaffold.util.run_process import spawn_session  # the harness's side only: the supervisor needs none

        read, write = os.pipe()  # both close on exec: only the dup2 below reaches the supervisor
        try:
            pid = spawn_session(sys.executable, argv, env, stdin_fd=read)
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._running = _Running(pid, write)
        self._stop = weakref.finalize(self, _Running.say_exit, self._running)
        self._stop.atexit = False  # at the harness's exit the pipe closes by itself, and the supervisor acts

    def close(self) -> None:
        """Tell the supervisor the harness ends cleanly: it removes nothing, and ends."""
        if self._stop is not None:
            self._stop()  # runs once: a finalizer called again does nothing
        self._running = self._stop = None


class _Running:
    """A started supervisor: its pid and the write end of its pipe."""

    def __init__(self, pid: int, pipe: int) -> None:
        self.pid, self.pipe = pid, pipe
        self.reaped = False

    def alive(self) -> bool:
        if not self.reaped:
            try:
                self.reaped = os.waitpid(self.pid, os.WNOHANG) != (0, 0)
            except ChildProcessError:  # reaped by someone else (a SIGCHLD handler)
                self.reaped = True
        return not self.reaped

    def say_exit(self) -> None:
        """Say "exit" and close the pipe; the supervisor ends at once. It is not waited for (it may still be
        starting: a tenth of a second on a busy machine), but reaped by the next start or close."""
        with contextlib.suppress(OSError):
            os.write(self.pipe, _EXIT)
        os.close(self.pipe)
        _UNREAPED.add(self)
        _reap()


_UNREAPED: set[_Running] = set()
"""Supervisors told to exit and not reaped yet (a zombie each, until then)."""


def _reap() -> None:
    for running in list(_UNREAPED):
        if not running.alive():
            _UNREAPED.discard(running)


def main(argv: Sequence[str]) -> int:
    """``PID STARTED HOST ROOT...``: wait for the end of standard input, then act as the module docstring says."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    os.chdir("/")  # never hold a workspace (or a mount) busy
    pid, started, host, *roots = argv
    owner = Owner(int(pid), started, host)
    said = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(0, 64):
            said += chunk
    if said.endswith(_EXIT):
        return 0
    deadline = time.monotonic() + _DEATH_WAIT_S
    while not owner.gone():  # the pipe closes while the harness is still exiting
        if time.monotonic() > deadline:
            return 0  # the harness closed the pipe but lives on: its folders are still its own
        time.sleep(0.001)
    for root in roots:
        OwnedFolders(Path(root)).sweep(owner=owner)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
