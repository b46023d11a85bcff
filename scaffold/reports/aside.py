"""Write one report file in a forked child while this process builds the others: the second core.

At 100,000 trials, results.jsonl is a second and more of pure per-trial work that needs nothing the
analysis computes. A forked child already holds the records (copy-on-write, nothing to send), writes
the file and ends with ``os._exit``, while the parent analyses and renders the rest.

Reading the records is not split this way: a child that reads and parses half of them must send them
back, and pickling records costs more than parsing them (measured: reading 100,000 records took 5.9 s
with a pickling child against 3.5 s alone; 4.1 to 4.8 s with marshal and plain dicts).

Forking is done only where it is safe and worth it: on systems with ``fork``, when this process runs no
other Python thread (a lock held by another thread at the fork would stay locked in the child; the
controller of a pytest-xdist session has such threads, so it writes in turn instead), and for large
record sets. The only native threads here are OpenBLAS's, loaded with numpy by scipy; OpenBLAS stops its
pool before a fork (its pthread_atfork handler) and the child calls no BLAS code. Python 3.12 and later
warn about any fork of a process with native threads; that warning is silenced here for this reason.

When the child fails, the parent writes the file itself, so an error surfaces with its traceback where
the caller handles errors; when the parent fails first, it still waits for the child, which then leaves
either a complete file or none (the write is atomic).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

__all__ = ["FORK_MIN_TRIALS", "Aside", "can_fork"]

FORK_MIN_TRIALS = 2_000
"""From this many records, results.jsonl is written by a forked child; below, a fork costs more than it
saves."""


def can_fork() -> bool:
    """Whether a child may be forked here: the system has fork and no other Python thread is running."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Aside:
    """Run *write* (which writes *path*) in a forked child, or right away when *fork* is False or unsafe.

    Use as a context manager; ``wait()`` returns *path* once the file is written (by the child or, after
    a failure of the child, here). Leaving the block always reaps the child.
    """

    def __init__(self, path: Path, write: Callable[[], object], *, fork: bool) -> None:
        self.path = path
        self._write = write
        self.pid: int | None = None
        """The child's process id, when forked."""
        self._running = False
        self.forked = fork and can_fork()
        if not self.forked:
            write()
            return
        pid = _fork()
        if pid == 0:  # the child: write, then end at once, running none of the parent's cleanup
            code = 1
            try:
                write()
                code = 0
            finally:
                os._exit(code)
        self.pid, self._running = pid, True

    def wait(self) -> Path:
        """*path*, written: waits for the child and writes the file here when the child failed."""
        if self._reap() != 0:
            self._write()
        return self.path

    def _reap(self) -> int:
        if not self._running or self.pid is None:
            return 0
        self._running = False
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)

    def __enter__(self) -> Aside:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._reap()  # never leave a child behind, whether or not wait() was reached


def _fork() -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # see the module docstring
        return os.fork()
