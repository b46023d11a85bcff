"""The progress of ``comet eval``'s in-process pytest session: a pytest plugin (hooks only; it imports no
pytest) printing one line per finished trial and, on a terminal, the live status line (scaffold.experiment.live,
the one every pytest session shows; the session runs without pytest's terminal reporter, so only this
plugin writes), and keeping what the end of the run needs (the records written, the invalid items,
collection errors, and the outcomes the comet plugin's hooks hand over: pytest_comet/hooks.py).
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from scaffold.experiment.live import LiveLine, trial_line
from scaffold.experiment.status import RecordCache, read_status, status_line

if TYPE_CHECKING:  # the reports' model (gates, statistics) is loaded by the session, not by the command
    from scaffold.reports.outcome import SessionOutcome, TracingOutcome

__all__ = ["Progress"]


class Progress:
    """A pytest plugin for the in-process session: one line per finished trial, a live line on a terminal,
    and what the session concluded, handed over by the comet plugin's hooks."""

    def __init__(self, out: TextIO, total: int, experiment_dir: Path) -> None:
        self.out = out
        self.total = total
        self.done = 0
        self.records: list[Path] = []
        self.invalid = 0
        self.not_run = 0
        self.collect_errors: list[str] = []
        self.outcome: SessionOutcome | None = None
        """What the controller concluded (None: no trial ran or was skipped)."""
        self.tracing: TracingOutcome | None = None
        """How a tracing suite's reporting went (None: no suite reported)."""
        self._running: dict[str, float] = {}
        self._lock = threading.Lock()
        self._experiment_dir = experiment_dir
        self._cache = RecordCache()
        self.live: LiveLine | None = LiveLine(out, self.live_line) if out.isatty() else None

    # pytest hooks

    def pytest_sessionstart(self) -> None:
        if self.live is not None:
            self.live.start()

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
        props = dict(report.user_properties)
        not_run = report.when == "setup" and report.skipped and "comet_not_run" in props
        if report.when != "call" and not (report.when == "setup" and report.failed) and not not_run:
            return
        with self._lock:
            # The trial runs in the comet_trial fixture (setup): its time is since the item started.
            started = self._running.pop(report.nodeid, None)
            elapsed = time.monotonic() - started if started is not None else report.duration
            self.done += 1
            verdict = str(props.get("comet_verdict", "error" if report.failed else "passed"))
            if not_run:
                self.not_run += 1
            elif verdict == "invalid":
                self.invalid += 1
            if props.get("comet_record"):
                self.records.append(Path(str(props["comet_record"])))
            case = str(props.get("comet_case") or report.nodeid.rpartition("[")[2].rstrip("]") or report.nodeid)
            line = trial_line(self.done, self.total, case, props, elapsed)
            if not not_run and not props.get("comet_record") and verdict in ("invalid", "error"):
                # No record will say why this item did not run: pytest's report is the only account of it.
                line += "".join(f"\n    {reason}" for reason in _why(report))
        if self.live is not None:
            self.live.pause()
        print(line, file=self.out, flush=True)
        if self.live is not None:
            self.live.resume()

    def pytest_sessionfinish(self) -> None:
        if self.live is not None:
            self.live.stop()

    def pytest_comet_session_outcome(self, outcome: SessionOutcome) -> None:
        self.outcome = outcome

    def pytest_comet_tracing_outcome(self, outcome: TracingOutcome) -> None:
        self.tracing = outcome

    def live_line(self) -> str:
        """What the live line says now: the experiment's status (scaffold.experiment.status), empty while no trial
        is running."""
        status = read_status([self._experiment_dir], datetime.now(UTC), self._cache)
        return status_line(status) if status.running else ""


def _why(report: Any, most: int = 3) -> list[str]:
    """The first lines of why an item failed without a record: the message of a failed test (an invalid
    task's problems), or the exception lines (``E ...``) of a setup error's traceback."""
    text = str(getattr(report, "longreprtext", "") or "")
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    raised = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (raised or lines)[:most]
