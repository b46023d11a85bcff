"""The progress of ``comet eval``'s in-process pytest session: a pytest plugin (hooks only; it imports no
pytest) printing one line per finished trial and, on a terminal, a live line for the trials in progress,
and keeping what the end of the run needs (the records written, the invalid items, collection errors).
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """A pytest plugin for the in-process session: one line per finished trial, a live line on a terminal,
    and what the controller's reporter decided, read at the end."""

    def __init__(self, out: TextIO, total: int, experiment_dir: Path) -> None:
        self.out = out
        self.total = total
        self.done = 0
        self.records: list[Path] = []
        self.invalid = 0
        self.collect_errors: list[str] = []
        self.config: Any = None
        self.started = time.monotonic()
        self._running: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._live = out.isatty()
        self._experiment_dir = experiment_dir
        self._thread: threading.Thread | None = None

    # pytest hooks

    def pytest_configure(self, config: Any) -> None:
        self.config = config

    def pytest_sessionstart(self) -> None:
        if self._live:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def pytest_collection_finish(self, session: Any) -> None:
        # Under pytest-xdist the controller collects nothing (the workers do): keep the planned count then.
        if session.items:
            self.total = len(session.items)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "")

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        with self._lock:
            self._running[nodeid] = time.monotonic()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        props = dict(report.user_properties)
        with self._lock:
            # The trial runs in the comet_trial fixture (setup): its time is since the item started.
            started = self._running.pop(report.nodeid, None)
            elapsed = time.monotonic() - started if started is not None else report.duration
            self.done += 1
            verdict = str(props.get("comet_verdict", "error" if report.failed else "passed"))
            if verdict == "invalid":
                self.invalid += 1
            if props.get("comet_record"):
                self.records.append(Path(str(props["comet_record"])))
            score = props.get("comet_weighted_score")
            scored = f"  score {score:.2f}" if isinstance(score, float) else ""
            resumed = "  (from an earlier run)" if props.get("comet_resumed") else ""
            case = report.nodeid.rpartition("[")[2].rstrip("]") or report.nodeid
            self._clear()
            print(
                f"[{self.done}/{self.total}] {case}: {verdict}{scored}  {elapsed:.0f} s{resumed}",
                file=self.out,
                flush=True,
            )

    def pytest_sessionfinish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._clear()

    # the live line

    def _clear(self) -> None:
        if self._live:
            self.out.write("\r\x1b[K")
            self.out.flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            line = self.live_line(time.monotonic())
            if line:
                width = shutil.get_terminal_size((100, 20)).columns - 1
                with self._lock:
                    self.out.write("\r\x1b[K" + line[:width])
                    self.out.flush()

    def live_line(self, now: float) -> str:
        """What the live line says at *now*: the trials in progress (the first three: each one's time and
        its agent's turns so far) and the session's elapsed time; empty when no trial is running."""
        with self._lock:
            running = sorted(self._running.items(), key=lambda kv: kv[1])
        if not running:
            return ""
        names = ", ".join(
            f"{n.rpartition('[')[2].rstrip(']')} {_clock(now - t)}{_turns(self._experiment_dir, n)}"
            for n, t in running[:3]
        )
        more = f" +{len(running) - 3}" if len(running) > 3 else ""
        return f"running {len(running)}: {names}{more}  [{_clock(now - self.started)} elapsed]"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _turns(experiment_dir: Path, nodeid: str) -> str:
    """The agent's model turns so far, counted in the stream it is writing (assistant messages; Codex's
    completed turns); empty when there is none yet. A display hint only: never recorded."""
    case = nodeid.rpartition("[")[2].rstrip("]")
    folder = experiment_dir / "trials" / case
    count = 0
    try:
        for stream in folder.glob("agent.*"):
            with stream.open("rb") as handle:
                for line in handle:
                    if b'"type":"assistant"' in line or b'"type": "assistant"' in line or b'"turn.completed"' in line:
                        count += 1
    except OSError:
        return ""
    return f" ({count} turns)" if count else ""
