"""Work taken off a trial's critical path: jobs run one after another in one background thread.

The backends remove what a finished trial leaves (a local workspace's folder, a container and its
volume) this way, so the next trial starts while the removal goes on. Cleanup stays guaranteed by the
owner of the jobs: it calls :meth:`Background.drain` before anything that needs them done and
:meth:`Background.close` when it closes, and whatever a killed process left is swept later (owner marks,
container labels).

Jobs that are Python's own work (rendering a trial's transcript) hold the interpreter's lock while they
run, and a trial thread that wants it back then waits for them. Such a Background is made with
``when_waiting=True``: each job first waits, for at most ``WHEN_WAITING_S``, until some thread of the
process waits outside the interpreter, which is when the lock is free anyway: on a command (scaffold.procs)
or on the disk (a durable write's flush, scaffold.atomic), each marked with :func:`waiting_on_command`.
Draining counts as waiting: what is drained runs at once.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Final

__all__ = ["WHEN_WAITING_S", "Background", "waiting_on_command"]

Job = Callable[[], object]

WHEN_WAITING_S: Final = 0.05
"""The longest a ``when_waiting`` job waits for a thread to wait on a command: it is put off, never held."""


class _Waiters:
    """How many threads of this process now wait on a command (or drain), under a condition."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.count = 0


_WAITERS = _Waiters()


@contextlib.contextmanager
def waiting_on_command() -> Iterator[None]:
    """Mark the calling thread as blocked outside the interpreter (a command's exit, a flush, a drain)."""
    with _WAITERS.changed:
        _WAITERS.count += 1
        _WAITERS.changed.notify_all()
    try:
        yield
    finally:
        with _WAITERS.changed:
            _WAITERS.count -= 1


def _until_someone_waits() -> None:
    with _WAITERS.changed:
        _WAITERS.changed.wait_for(lambda: _WAITERS.count > 0, timeout=WHEN_WAITING_S)


class Background:
    """One daemon thread running submitted jobs in order. A job that raises is noted in :attr:`errors`
    and the next one runs. The thread starts on the first job (again in a forked child, which has none)."""

    def __init__(self, name: str, *, finish: Callable[[], None] | None = None, when_waiting: bool = False) -> None:
        self._name = name
        self._when_waiting = when_waiting
        self._finish = finish  # run in the thread as it ends (close(): a connection of its own)
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def submit(self, job: Job) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def drain(self) -> None:
        """Return once every submitted job has run (the thread keeps running)."""
        if self._thread is not None and self._thread.is_alive():
            with waiting_on_command():
                self._jobs.join()

    def close(self) -> None:
        """Run the remaining jobs, then end the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._jobs.put(None)
            with waiting_on_command():
                thread.join()

    def _work(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                try:
                    if job is None:
                        return
                    if self._when_waiting:
                        _until_someone_waits()
                    job()
                except Exception as exc:  # kept for the owner, whose close or sweep retries what is left
                    self.errors.append(str(exc))
                finally:
                    self._jobs.task_done()
        finally:
            if self._finish is not None:
                with contextlib.suppress(Exception):
                    self._finish()
