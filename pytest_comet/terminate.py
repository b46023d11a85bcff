"""SIGTERM ends a comet session the way Ctrl-C does, with a status of its own.

CI cancelling a job, ``timeout`` and ``docker stop`` send SIGTERM, whose default action ends the process
at once: no report is written, containers stay up, and an agent inside keeps calling its model. Here
the signal becomes what Ctrl-C is: the main thread of the process gets KeyboardInterrupt, so the running
trial ends through the path Ctrl-C takes (its agent's process tree killed, its workspace and container
removed, no record), no new trial starts, and the controller writes the reports of what finished. A
controller of pytest-xdist workers sends them SIGTERM first (they do the same; the controller waits for
them as it does on Ctrl-C). The session's exit status is then ExitStatus.TERMINATED (143, as a shell
reports a process ended by SIGTERM), whatever the trials did.

Only the main thread can take a signal, and a handler someone else installed is left alone.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest

__all__ = ["children", "install", "terminated"]

_received = threading.Event()


def terminated() -> bool:
    """Whether this process was sent SIGTERM during the session."""
    return _received.is_set()


def install(config: pytest.Config, *, controller: bool, comet: Callable[[], bool] = lambda: True) -> None:
    """Take SIGTERM for the rest of *config*'s session. A *controller* forwards it to its workers. Until
    *comet* says the session runs comet trials (a controller learns it from its workers only once they
    have collected), SIGTERM does what it did before: it ends the process at once."""
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is not signal.SIG_DFL and not isinstance(current, _Handler):
        return

    def restore() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    _received.clear()
    signal.signal(signal.SIGTERM, _Handler(controller, comet))
    config.add_cleanup(restore)


@dataclass(frozen=True, slots=True)
class _Handler:
    controller: bool
    comet: Callable[[], bool]

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if _received.is_set():
            return  # already stopping: let the clean-up finish
        if not self.comet():  # not a comet session: the default action, as before
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        _received.set()
        if self.controller:
            for pid in children(os.getpid()):
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:  # gone meanwhile
                    continue
        raise KeyboardInterrupt


def children(parent: int) -> list[int]:
    """The processes whose parent is *parent* (a controller's: its pytest-xdist workers), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            found.append(int(entry.name))
    return found
