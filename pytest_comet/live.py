"""The controller's view of a running comet session in pytest's terminal: the live status line
(scaffold.experiment.live: done / running / queued, elapsed, ETA, spend, each running trial's turn) on a terminal,
or one plain line per finished trial elsewhere (a CI log: no carriage return, no escape code).

Registered on the controller only, for every session; it does nothing until it knows the session runs
comet trials: at collection in a session without pytest-xdist, or, under xdist (whose controller
collects nothing), once the worker that writes the session's plan has left the beacon naming the
experiment folder (pytest_comet.state.beacon_path). Everything it shows is read from the experiment
folder (scaffold.experiment.status), so xdist workers' trials appear as they run.

pytest's own output stays intact: the line is drawn at the end of pytest's current line (after its
progress dots), and cleared around every hook in which pytest's terminal reporter writes. It is not
drawn when pytest's output could interleave with it from elsewhere: ``-s`` (``--capture=no``),
live logging (``log_cli``), ``--collect-only``, or without pytest's terminal reporter (``comet eval``,
which runs ``-p no:terminal``, shows the same line itself: scaffold.cli.eval.progress).
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_comet.state import plugin_state

if TYPE_CHECKING:
    from scaffold.experiment.live import LiveLine
    from scaffold.experiment.status import RecordCache

__all__ = ["LiveDisplay"]


class LiveDisplay:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.root: Path | None = None
        self.done = 0
        self._starts: dict[str, float] = {}
        self._line: LiveLine | None = None
        self._cache: RecordCache | None = None
        self._terminal: Any = None
        self._plain = False
        self._total: int | None = None
        """The session's number of cases, from its plan.json (read until it is found)."""
        self._pending: dict[str, str] = {}
        """Plain lines of finished trials, written once pytest has written its own (at logfinish)."""

    # -- when it applies

    def _activate(self) -> None:
        """Find the experiment folder once the session is known to run comet trials, and start."""
        if self.root is not None or self._terminal is None:
            return
        state = plugin_state(self.config)
        if state.accepted:
            root = state.session.experiment().root
        else:
            beacon = state.beacon_path()
            if beacon is None or not beacon.is_file():
                return
            root = Path(beacon.read_text(encoding="utf-8").strip())
        from scaffold.experiment.status import RecordCache

        self.root = root
        self._cache = RecordCache()
        if self._plain:
            return
        from scaffold.experiment.live import LiveLine

        writer = self._terminal._tw
        # Not pytest's writer.fullwidth for the width: it asks file descriptor 1, which capturing points
        # at a file while a trial runs, and falls back to 80 columns. The line asks its own terminal.
        self._line = LiveLine(writer._file, self._text, column=lambda: writer.width_of_current_line)
        self._line.start()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        option = self.config.option
        if terminal is None or option.collectonly:
            return
        self._terminal = terminal
        file = terminal._tw._file
        tty = hasattr(file, "isatty") and file.isatty() and os.environ.get("TERM") != "dumb"
        self._plain = not tty or option.capture == "no" or bool(self.config.getini("log_cli"))

    # -- pytest writes in these hooks: the line is cleared before and may be drawn again after

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self, nodeid: str) -> Generator[None, object, object]:
        self._starts[nodeid] = time.monotonic()
        self._activate()
        with self._paused():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, object, object]:
        with self._paused():
            result = yield
            self._finished(report)
            return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> Generator[None, object, object]:
        with self._paused():
            result = yield
            line = self._pending.pop(nodeid, None)
            if line is not None:
                writer = self._terminal._tw
                if writer.width_of_current_line:
                    writer.line()
                # Not write_line: it would make pytest write the test file's name again, after a blank line.
                writer.line(line)
            return result

    @pytest.hookimpl(wrapper=True)
    def pytest_collectreport(self) -> Generator[None, object, object]:
        with self._paused():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_internalerror(self) -> Generator[None, object, object]:
        with self._paused():
            return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        if self._line is not None:
            self._line.stop()
            self._line = None

    def _paused(self) -> _Pause:
        return _Pause(self._line, self._terminal)

    # -- what it says

    def _finished(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        not_run = report.when == "setup" and report.skipped and "comet_not_run" in props
        if not (report.when == "call" and "comet_verdict" in props) and not not_run:
            return
        self.done += 1
        if not self._plain or self._terminal is None:
            return
        from scaffold.experiment.live import trial_line
        from scaffold.experiment.status import read_plan

        self._activate()
        if self._total is None and self.root is not None:
            # Read once it is there: the plan lists every case, and a line per trial must not cost a read
            # of it (10,000 trials would read 10,000 cases 10,000 times).
            plan = read_plan(self.root)
            self._total = len(plan["cases"]) if plan is not None else None
        total = self._total
        started = self._starts.pop(report.nodeid, None)
        elapsed = time.monotonic() - started if started is not None else report.duration
        case = str(props.get("comet_case") or report.nodeid)
        self._pending[report.nodeid] = trial_line(self.done, total, case, props, elapsed)

    def _text(self) -> str:
        from scaffold.experiment.status import read_status, status_line

        assert self.root is not None
        status = read_status([self.root], datetime.now(UTC), self._cache)
        return status_line(status) if status.running or status.queued else ""


class _Pause:
    """Clear the live line before pytest writes; after, flush what pytest wrote (the line is drawn on
    its own stream) and let it be drawn again."""

    def __init__(self, line: LiveLine | None, terminal: Any) -> None:
        self._line = line
        self._terminal = terminal

    def __enter__(self) -> None:
        if self._line is not None:
            self._line.pause()

    def __exit__(self, *exc: object) -> None:
        if self._line is not None:
            self._terminal._tw.flush()
            self._line.resume()
