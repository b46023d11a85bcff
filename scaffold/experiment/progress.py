"""A running trial's progress file (``progress.json`` in its folder): its phase, its agent's turn so far and
the cost reported so far, rewritten atomically on each phase change and each new model turn, so
``comet status`` and the live status line can read it from any process (pytest-xdist workers, CI shards).

It holds figures only: ids, names, times and counts, never a prompt, a stream's text or a credential.
The turn count is a display hint read from the agent's raw streams while they are written (the record's
trajectory is the figure reports use).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from scaffold.experiment.cases import Case
from scaffold.util.atomic import write_json_atomic

__all__ = ["PHASES", "Phase", "StreamTurns", "TrialProgress", "read_progress"]

Phase = Literal["workspace", "agent", "validation", "scoring", "judge", "done"]
PHASES: Final[tuple[Phase, ...]] = ("workspace", "agent", "validation", "scoring", "judge", "done")
SCHEMA_VERSION: Final = 1
WATCH_INTERVAL_S: Final = 1.0
FIRST_WRITE_S: Final = 0.5
"""A trial's progress file is first written once it has run this long: the five writes of a trial that
takes a tenth of a second (the oracle, locally) were most of what the harness added to it, and nobody
watches a trial that short (``comet status`` counts it when its record appears)."""
_TURN_FILE = re.compile(r"^agent\.turn-(\d+)\.jsonl$")


class StreamTurns:
    """The model turns and the cost in a trial folder's agent streams (``agent.turn-N.jsonl``), read
    incrementally: each call reads only what was appended since the last one.

    A model turn is a top-level assistant message (distinct message ids: Claude Code prints one event per
    content block) or a completed Codex turn; the cost is each stream's last ``total_cost_usd``, summed
    over the conversation's turns, as the trajectory counts it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}
        self._ids: set[str] = set()
        self._anonymous = 0
        self._costs: dict[Path, float] = {}
        self.conversation_turn = 0

    @property
    def turns(self) -> int:
        return len(self._ids) + self._anonymous

    @property
    def cost_usd(self) -> float | None:
        return round(sum(self._costs.values()), 6) if self._costs else None

    def update(self) -> bool:
        """Read what the streams gained; True when a figure changed."""
        before = (self.turns, self.cost_usd, self.conversation_turn)
        try:
            names = sorted(p for p in self.folder.iterdir() if _TURN_FILE.match(p.name))
        except OSError:
            return False
        for path in names:
            match = _TURN_FILE.match(path.name)
            assert match is not None
            self.conversation_turn = max(self.conversation_turn, int(match.group(1)))
            self._read(path)
        return (self.turns, self.cost_usd, self.conversation_turn) != before

    def _read(self, path: Path) -> None:
        offset = self._offsets.get(path, 0)
        try:
            with path.open("rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except OSError:
            return
        if not chunk:
            return
        self._offsets[path] = offset + len(chunk)
        lines = (self._partial.pop(path, b"") + chunk).split(b"\n")
        if lines[-1]:
            self._partial[path] = lines[-1]  # a line still being written: completed by a later read
        for line in lines[:-1]:
            self._line(path, line)

    def _line(self, path: Path, line: bytes) -> None:
        # Cheap byte tests first: most lines are tool results, which can be large and never count.
        if b"assistant" not in line and b"turn.completed" not in line and b"total_cost_usd" not in line:
            return
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "assistant" and event.get("parent_tool_use_id") is None:
            message = event.get("message")
            if isinstance(message, dict) and message.get("model") != "<synthetic>":
                if message.get("id"):
                    self._ids.add(f"{path.name}:{message['id']}")
                else:
                    self._anonymous += 1
        elif kind == "turn.completed":
            self._anonymous += 1
        cost = event.get("total_cost_usd")
        if kind == "result" and isinstance(cost, int | float) and not isinstance(cost, bool):
            self._costs[path] = float(cost)


class TrialProgress:
    """The progress file of one trial: :meth:`phase` at each phase boundary, :meth:`watching` around the
    agent (a background thread counting turns), :meth:`remove` once the record is written or the trial
    is abandoned. Writing it never fails the trial: it is a view, not a result."""

    def __init__(
        self, path: Path, case: Case, worker: str, clock: Callable[[], datetime], *, retry: int = 0, retries: int = 0
    ) -> None:
        """*retry*: which retry of the trial this is (0: its first attempt) of at most *retries*
        (``--retry-excluded``); the file says it only for a retry."""
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._born = time.monotonic()
        self._written = False
        self._data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "case_id": case.id,
            "task": case.task,
            "treatment": case.treatment,
            "trial": case.trial,
            "worker": worker,
            "phase": None,
            "started_at": clock().isoformat(),
            "updated_at": None,
            "turn": 0,
            "conversation_turn": 0,
            "cost_usd": None,
        }
        if retry:
            self._data.update(retry=retry, retries=retries)

    def phase(self, name: Phase) -> None:
        """Enter phase *name* (no write when it is the current one)."""
        with self._lock:
            if self._data["phase"] == name:
                return
            self._data["phase"] = name
            self._write()

    @contextlib.contextmanager
    def watching(self, folder: Path, interval_s: float = WATCH_INTERVAL_S) -> Iterator[None]:
        """While the body runs (the agent), count its turns in *folder*'s streams about every *interval_s*
        and rewrite the file when the count changed; no look happens once this returns."""
        streams = StreamTurns(folder)

        def look() -> None:
            self._turns(streams)
            with self._lock:
                if not self._written:
                    self._write()  # the first look of a trial that outlived FIRST_WRITE_S

        watch = _WATCHER.add(look, interval_s)
        try:
            yield
        finally:
            _WATCHER.remove(watch)
            self._turns(streams)  # the last turn, which may have ended between two looks

    def _turns(self, streams: StreamTurns) -> None:
        if not streams.update():
            return
        with self._lock:
            self._data["turn"] = streams.turns
            self._data["conversation_turn"] = streams.conversation_turn
            self._data["cost_usd"] = streams.cost_usd
            self._write()

    def remove(self) -> None:
        with self._lock, contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        if not self._written and time.monotonic() - self._born < FIRST_WRITE_S:
            return  # kept in memory: the next write (or the watcher's next look) carries it
        self._written = True
        self._data["updated_at"] = self._clock().isoformat()
        with contextlib.suppress(OSError):  # a full disk must not fail the trial over a view
            # A view, rewritten often and removed at the end: never half a file, but not worth a flush
            # to the disk (two fsyncs a write were most of a local trial's added time).
            write_json_atomic(self.path, self._data, durable=False)


@dataclass(eq=False, slots=True)
class _Watch:
    look: Callable[[], None]
    interval_s: float
    due: float
    lock: threading.Lock = field(default_factory=threading.Lock)  # held by a look, taken by remove()
    stopped: bool = False


class _Watcher:
    """One thread per process takes the looks of every watched trial in turn.

    Why not a thread per trial: starting and joining one cost ~0.7 ms of a 35 ms local oracle trial
    (measured with py-spy), for looks that a trial shorter than a second never gets. The thread is
    started on first use (again in a forked child, which has none) and sleeps while nothing is watched.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._watches: list[_Watch] = []
        self._thread: threading.Thread | None = None
        # When the thread's sleep ends (None: it sleeps until told). A new watch due later than that is
        # seen then: the thread is not woken for it, which would cost the trial that adds it a hand-over
        # of the interpreter's lock (a watch is added per trial, and a quick trial ends before its look).
        self._wakes_at: float | None = None

    def add(self, look: Callable[[], None], interval_s: float) -> _Watch:
        watch = _Watch(look, interval_s, time.monotonic() + interval_s)
        with self._changed:
            self._watches.append(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="comet-progress", daemon=True)
                self._thread.start()
            elif self._wakes_at is None or self._wakes_at > watch.due:
                self._changed.notify()
        return watch

    def remove(self, watch: _Watch) -> None:
        """Stop *watch*: returns after its look in progress, if any; none follows."""
        with watch.lock:
            watch.stopped = True
        with self._changed, contextlib.suppress(ValueError):
            self._watches.remove(watch)

    def _run(self) -> None:
        while True:
            with self._changed:
                if not self._watches:
                    self._wakes_at = None
                    self._changed.wait()
                    continue
                now = time.monotonic()
                wait = min(w.due for w in self._watches) - now
                if wait > 0:
                    self._wakes_at = now + wait
                    self._changed.wait(wait)
                    continue
                self._wakes_at = now
                due = [w for w in self._watches if w.due <= now]
            for watch in due:
                with watch.lock:
                    if watch.stopped:
                        continue
                    try:
                        watch.look()
                    except Exception as exc:  # one trial's view must not stop the others' looks
                        logging.getLogger(__name__).debug("progress look failed: %s", exc)
                    watch.due = time.monotonic() + watch.interval_s


_WATCHER: Final = _Watcher()


def read_progress(path: Path) -> dict[str, Any] | None:
    """A progress file's content, None when it is missing or not one (being replaced, damaged)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("case_id"), str):
        return None
    return data
