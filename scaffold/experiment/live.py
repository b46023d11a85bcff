"""The live status line of a run on a terminal, and the plain line of a finished trial: one implementation
for ``comet eval`` (scaffold.cli.eval.progress) and every pytest session (pytest_comet.live).

The line is redrawn about once a second by a background thread, at the end of the terminal's current
line: after whatever the caller says is already there (pytest's progress dots, or nothing), so redrawing
and clearing it never erases another writer's text and needs no cursor movement across lines (which
breaks when the terminal scrolls). Whoever else writes to the terminal calls :meth:`LiveLine.pause` first
and :meth:`LiveLine.resume` after: the line is cleared, then drawn again at the next tick. Only ever used
on a terminal; elsewhere callers print :func:`trial_line` alone (no carriage return, no escape code).
"""

from __future__ import annotations

import io
import os
import shutil
import threading
from collections.abc import Callable, Mapping
from typing import Final, TextIO

__all__ = ["CLEAR", "LiveLine", "terminal_stream", "terminal_width", "trial_line"]

CLEAR: Final = "\x1b[K"
"""Erase from the cursor to the end of the line (ANSI EL)."""
MIN_WIDTH: Final = 20
"""Columns left on the current line below which the line is not drawn."""
FALLBACK_WIDTH: Final = 100
"""Columns assumed when neither $COLUMNS nor the terminal says."""


def terminal_stream(out: TextIO) -> TextIO:
    """A stream on *out*'s terminal that pytest's output capturing cannot take over: while a test (a
    trial) runs, pytest points the process's stdout at a file, and a line drawn through *out* would land
    there. So: a duplicate of *out*'s file descriptor, made while capturing is suspended (at session
    start). *out* itself when it has no descriptor (a test's fake terminal)."""
    try:
        fd = os.dup(out.fileno())
    except (OSError, ValueError):
        return out
    return io.TextIOWrapper(io.FileIO(fd, "w"), encoding="utf-8", errors="replace", write_through=True)


def terminal_width(out: TextIO) -> int:
    """The columns of *out*'s terminal: ``$COLUMNS`` when set to a number (as shutil.get_terminal_size
    honours it), else the size the terminal behind *out*'s own descriptor reports, else the process's
    terminal by shutil.get_terminal_size (``FALLBACK_WIDTH`` when none says).

    Asked through *out*, not through the process's stdout: while a trial runs, pytest's capturing points
    file descriptor 1 at a file, and shutil.get_terminal_size then falls back to 80 columns (pytest's
    own writer) or its fallback, cutting the line well short of a wide terminal."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        width = os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):  # no descriptor (a test's fake terminal), or not a terminal
        width = 0
    return width if width > 0 else shutil.get_terminal_size((FALLBACK_WIDTH, 20)).columns


def trial_line(done: int, total: int | None, case: str, properties: Mapping[str, object], elapsed_s: float) -> str:
    """``[3/10] alpha-CONTROL-r1: passed  score 1.00  12 s in trial``: a finished trial, from its test
    report's user properties (verdict, weighted score, resumed, attempts; or the reason it was not run).
    The time is the whole trial's as the session saw it, workspace setup to scoring, every attempt of a
    retried trial included."""
    shown = "?" if total is None else str(total)
    not_run = properties.get("comet_not_run")
    if not_run:
        return f"[{done}/{shown}] {case}: not run: {not_run}"
    verdict = str(properties.get("comet_verdict", "error"))
    score = properties.get("comet_weighted_score")
    scored = f"  score {score:.2f}" if isinstance(score, float) else ""
    resumed = "  (from an earlier run)" if properties.get("comet_resumed") else ""
    attempts = properties.get("comet_attempts")
    retries = attempts - 1 if isinstance(attempts, int) and attempts > 1 else 0
    retried = f"  (after {retries} retr{'y' if retries == 1 else 'ies'})" if retries else ""
    return f"[{done}/{shown}] {case}: {verdict}{scored}  {elapsed_s:.0f} s in trial{retried}{resumed}"


class LiveLine:
    """A line redrawn on the terminal *out* about every *interval_s*: *text* says what (empty: nothing
    drawn); *column* is where the terminal's current line ends now (0 when the caller left none);
    *width* is the terminal's width, by default :func:`terminal_width` of the stream the line is drawn
    on (asked at every draw, so a resized window is followed)."""

    def __init__(
        self,
        out: TextIO,
        text: Callable[[], str],
        *,
        column: Callable[[], int] = lambda: 0,
        width: Callable[[], int] | None = None,
        interval_s: float = 1.0,
    ) -> None:
        self._given = out
        self._out = out
        self._text = text
        self._column = column
        self._width = width or (lambda: terminal_width(self._out))
        self._interval = interval_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._paused = 0
        self._drawn_at: int | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start redrawing; call it while pytest's capturing is suspended (see terminal_stream)."""
        if self._thread is None:
            self._out = terminal_stream(self._given)
            self._thread = threading.Thread(target=self._run, name="comet-live-line", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Clear the line and stop redrawing it, for good."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._clear()
            if self._out is not self._given:
                self._out.close()
                self._out = self._given

    def pause(self) -> None:
        """Clear the line and draw nothing until :meth:`resume` (calls nest)."""
        with self._lock:
            self._paused += 1
            self._clear()

    def resume(self) -> None:
        with self._lock:
            self._paused = max(0, self._paused - 1)

    def draw(self) -> None:
        """Draw the line now (the thread calls it at each tick)."""
        try:
            text = self._text()
        except Exception:  # a status that cannot be read this second is drawn at the next
            return
        with self._lock:
            if self._paused or self._stop.is_set():
                return
            column = self._column()
            room = self._width() - column - 2
            if not text or room < MIN_WIDTH:
                self._clear()
                return
            self._out.write(self._home(column) + CLEAR + (" " if column else "") + text[:room])
            self._out.flush()
            self._drawn_at = column

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.draw()

    def _clear(self) -> None:
        if self._drawn_at is None:
            return
        self._out.write(self._home(self._drawn_at) + CLEAR)
        self._out.flush()
        self._drawn_at = None

    @staticmethod
    def _home(column: int) -> str:
        """Back to *column* of the current line: to its start, then forward (ANSI CUF)."""
        return "\r" + (f"\x1b[{column}C" if column else "")
