"""Work taken off a trial's critical path: jobs run after the caller has moved on.

The backends remove what a finished trial leaves (a local workspace's folder, a container and its
volume) this way, so the next trial starts while the removal goes on. Cleanup stays guaranteed by the
owner of the jobs: it calls :meth:`Background.drain` before anything that needs them done and
:meth:`Background.close` when it closes, and whatever a killed process left is swept later (owner marks,
container labels).

Two kinds of jobs:

* **waiting on the network** (a container's removal through the engine's API): one thread per
  :class:`Background` runs them in order as soon as they come.
* **Python's own work** (rendering a transcript, removing a local folder), made with ``when_waiting=True``:
  it is run by the next thread of the process that is about to wait on a command (scaffold.util.run_process calls
  :func:`run_pending` between starting the command and waiting for its exit). The command runs on another
  core meanwhile, so the job costs the trial nothing while the command lasts, and it needs no hand-over
  to another thread: a job handed to a thread of its own cost about 0.5 ms more a trial, in the
  wake-ups and in the interpreter's lock passed back and forth (benchmarks/overhead.py's pairs, 2 cores).
  When no command comes within ``WHEN_WAITING_S`` (the docker backend's commands go through its API, the
  session ends), or a thread waits elsewhere (a durable write's flush, scaffold.util.atomic, marked with
  :func:`waiting_on_command`), a backstop thread runs them: put off, never held. Draining runs the
  owner's pending jobs in the draining thread, at once. Such a job works on files only: the thread that
  runs it may be inside a validation command's network namespace (scaffold.workspaces.netns).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Final

__all__ = ["WHEN_WAITING_S", "Background", "run_pending", "waiting_on_command"]

Job = Callable[[], object]
Steps = Iterator[object]
"""A job done in steps (``Background.submit_steps``): whoever runs it may stop between two of them."""

WHEN_WAITING_S: Final = 0.05
"""The longest a ``when_waiting`` job waits for a thread to wait on a command: it is put off, never held."""


class _Pending:
    """The process's ``when_waiting`` jobs not started yet, oldest first, under one condition; the threads
    now waiting on a command (or a flush, or a drain); and the backstop thread."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.changed = threading.Condition()
        self.jobs: deque[tuple[float, Background, Steps]] = deque()
        self.waiters = 0
        self.idle = False  # the backstop sleeps until told: a new job must wake it
        self.backstop: threading.Thread | None = None

    def take(self, owner: Background | None = None) -> tuple[float, Background, Steps] | None:
        """The oldest pending job (of *owner* only, when given), marked as running; called holding the lock."""
        for i, entry in enumerate(self.jobs):
            if owner is None or entry[1] is owner:
                del self.jobs[i]
                entry[1]._running += 1
                return entry
        return None

    def put_back(self, entry: tuple[float, Background, Steps]) -> None:
        """A job stopped between two steps: first in line again, for the next waiter or the backstop."""
        with self.changed:
            self.jobs.appendleft(entry)

    def done(self, owner: Background) -> None:
        with self.changed:
            owner._running -= 1
            if owner._running == 0:
                self.changed.notify_all()  # a drainer waits for the jobs of its owner running elsewhere


_PENDING = _Pending()


# A forked child does not run its parent's jobs (it would remove the parent's folders again), and its copy
# of the lock may have been held by a thread that does not exist in it; nor has it the backstop thread.
os.register_at_fork(after_in_child=_PENDING.reset)


@contextlib.contextmanager
def waiting_on_command() -> Iterator[None]:
    """Mark the calling thread as blocked outside the interpreter (a command's exit, a flush, a drain): the
    backstop runs pending jobs now, the interpreter's lock being free."""
    pending = _PENDING
    with pending.changed:
        pending.waiters += 1
        if pending.jobs:
            pending.changed.notify_all()
    try:
        yield
    finally:
        with pending.changed:
            pending.waiters -= 1


def run_pending(stop: Callable[[], bool]) -> None:
    """Run pending ``when_waiting`` jobs in the calling thread, one at a time, until none is left or *stop*
    (asked after each job: has the command it waits for exited?) says to wait no more."""
    pending = _PENDING
    while pending.jobs:  # read without the lock: a job missed here is run by the next waiter or the backstop
        with pending.changed:
            taken = pending.take()
        if taken is None:
            return
        try:  # done in every case, Ctrl-C inside a job too: a drain would otherwise wait for it forever
            while not _step(taken):
                if stop():
                    pending.put_back(taken)
                    return
        finally:
            pending.done(taken[1])
        if stop():
            return


def _step(entry: tuple[float, Background, Steps]) -> bool:
    """Run the next step of *entry*'s job; True once the job is over (a job that raises is over)."""
    try:
        next(entry[2])
    except StopIteration:
        return True
    except Exception as exc:  # kept for the owner, whose close or sweep retries what is left
        entry[1].errors.append(str(exc))
        return True
    return False


def _finish(pending: _Pending, entry: tuple[float, Background, Steps]) -> None:
    """Run *entry*'s job to its end, then count it done (also when interrupted: Ctrl-C inside a job)."""
    try:
        while not _step(entry):
            pass
    finally:
        pending.done(entry[1])


def _once(job: Job) -> Steps:
    """A plain job as a job of one step."""
    job()
    yield from ()


def _backstop(pending: _Pending) -> None:
    """Run a pending job once some thread waits outside the interpreter, or once it has waited
    ``WHEN_WAITING_S`` for one to."""
    while True:
        with pending.changed:
            while not pending.jobs:
                pending.idle = True
                pending.changed.wait()
            pending.idle = False
            age = time.monotonic() - pending.jobs[0][0]
            if pending.waiters == 0 and age < WHEN_WAITING_S:
                pending.changed.wait(WHEN_WAITING_S - age)
                continue  # look again: the job may be gone (a command's waiter ran it) or due now
            taken = pending.take()
        if taken is not None:
            _finish(pending, taken)


class Background:
    """Jobs run after :meth:`submit` returns; one that raises is noted in :attr:`errors` and the next one
    runs. Without ``when_waiting``, one daemon thread runs them in order (it starts on the first job, again
    in a forked child, which has none); with it, see the module docstring: the jobs may run in any thread,
    so each must stand on its own."""

    def __init__(self, name: str, *, finish: Callable[[], None] | None = None, when_waiting: bool = False) -> None:
        self._name = name
        self._when_waiting = when_waiting
        self._finish = finish  # run in the thread as it ends (close(): a connection of its own)
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running = 0  # when_waiting jobs of this owner being run (under the pending jobs' lock)
        self.errors: list[str] = []

    def submit(self, job: Job) -> None:
        if self._when_waiting:
            self._put_aside(_once(job))
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def submit_steps(self, steps: Steps) -> None:
        """Submit a job done in steps (a generator: each ``next`` one step). A ``when_waiting`` job's runner
        may stop between two steps, when the command it waits for exits, and leave the rest to the next:
        a long job (a large folder's removal) then neither holds a trial up nor stretches its timeout."""
        if self._when_waiting:
            self._put_aside(steps)
        else:
            self.submit(lambda: all(True for _ in steps))

    def drain(self) -> None:
        """Return once every submitted job has run (a thread of its own keeps running)."""
        if self._when_waiting:
            self._drain_aside()
        elif self._thread is not None and self._thread.is_alive():
            with waiting_on_command():
                self._jobs.join()

    def close(self) -> None:
        """Run the remaining jobs, then end the thread."""
        if self._when_waiting:
            self._drain_aside()
            if self._finish is not None:
                with contextlib.suppress(Exception):
                    self._finish()
            return
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._jobs.put(None)
            with waiting_on_command():
                thread.join()

    def _put_aside(self, steps: Steps) -> None:
        pending = _PENDING
        with pending.changed:
            pending.jobs.append((time.monotonic(), self, steps))
            if pending.backstop is None or not pending.backstop.is_alive():
                backstop = threading.Thread(target=_backstop, args=(pending,), name="comet-backstop", daemon=True)
                pending.backstop = backstop
                backstop.start()
            elif pending.idle:
                pending.idle = False
                pending.changed.notify_all()

    def _drain_aside(self) -> None:
        pending = _PENDING
        while True:
            with pending.changed:
                taken = pending.take(self)
                if taken is None:
                    if self._running == 0:
                        return
                    # Jobs of ours another thread runs now: wait for them (they notify as they end or stop),
                    # then look again (a stopped one is pending again). A drainer waits outside the
                    # interpreter too: the backstop may run other owners' jobs meanwhile.
                    pending.waiters += 1
                    pending.changed.notify_all()
                    try:
                        pending.changed.wait_for(lambda: self._running == 0)
                    finally:
                        pending.waiters -= 1
                    continue
            _finish(pending, taken)

    def _work(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                try:
                    if job is None:
                        return
                    job()
                except Exception as exc:  # kept for the owner, whose close or sweep retries what is left
                    self.errors.append(str(exc))
                finally:
                    self._jobs.task_done()
        finally:
            if self._finish is not None:
                with contextlib.suppress(Exception):
                    self._finish()
