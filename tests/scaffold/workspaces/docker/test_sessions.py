"""Whose session is gone: the owner of a labelled container or volume, judged from its labels alone."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from scaffold.workspaces.docker.sessions import LABEL, Session, _session_gone


def _labels(pid: int, started: str, host: str | None = None) -> dict[str, str]:
    return {
        f"{LABEL}.session": f"{pid}-test",
        f"{LABEL}.host": host or os.uname().nodename,
        f"{LABEL}.pid": str(pid),
        f"{LABEL}.pid-start": started,
    }


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19]


def test_a_running_owner_is_alive() -> None:
    me = Session.current()
    assert not _session_gone(me.labels())


def test_a_zombie_owner_is_gone() -> None:
    """A SIGKILLed xdist worker stays a zombie until the controller reaps it: it runs no code any more."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        labels = _labels(proc.pid, _start_time(proc.pid))
        assert not _session_gone(labels)
        os.kill(proc.pid, signal.SIGKILL)
        for _ in range(200):  # not reaped (no wait yet): a zombie
            if Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                break
            time.sleep(0.01)
        assert _session_gone(labels)
    finally:
        proc.kill()
        proc.wait()
    assert _session_gone(labels)  # reaped: no such process


def test_a_reused_pid_is_gone_and_another_machine_is_not_judged() -> None:
    assert _session_gone(_labels(os.getpid(), "1"))  # the pid now belongs to a process started later
    assert not _session_gone(_labels(2**22 + 1, "1", host="elsewhere.invalid"))
    assert _session_gone({**_labels(1, "1"), f"{LABEL}.pid": "not-a-pid"})
