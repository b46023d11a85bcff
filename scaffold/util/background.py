"""Work taken off a trial's critical path: jobs one thread runs in order after the caller has moved on.

The backends remove what a finished trial leaves (a local workspace's folder; a container and its volume,
through the engine's API) this way, so the next trial starts while the removal goes on. Cleanup stays
guaranteed by the owner of the jobs: it calls :meth:`Background.drain` before anything that needs them
done and :meth:`Background.close` when it closes, and whatever a killed process left is swept later
(owner marks, container labels).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable

__all__ = ["Background", "Job"]

Job = Callable[[], object]


class Background:
    """Jobs run in order by one daemon thread, started with the first job; one that raises is noted in
    :attr:`errors` (for the owner, whose close or sweep retries what is left) and the next one runs.
    *finish* runs in the thread as it ends (a connection of its own, closed there)."""

    def __init__(self, name: str, *, finish: Callable[[], None] | None = None) -> None:
        self._name = name
        self._finish = finish
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
            self._jobs.join()

    def close(self) -> None:
        """Run the remaining jobs, then end the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._jobs.put(None)
            thread.join()

    def _work(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                try:
                    if job is None:
                        return
                    job()
                except Exception as exc:
                    self.errors.append(str(exc))
                finally:
                    self._jobs.task_done()
        finally:
            if self._finish is not None:
                with contextlib.suppress(Exception):
                    self._finish()
