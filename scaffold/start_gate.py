"""Spacing the starts of agent trials on one machine, across every worker and session that runs there.

An agent CLI spends its first second or so starting (Claude Code: about 1.1 CPU s, Node loading its
bundle), then mostly waits on the model. Trials that start at the same moment burst at the same moment:
xdist's workers all begin together, their model calls take similar times, so they stay in step, their
start-up bursts pile onto the cores together and the cores then idle while every trial waits. Measured
with 32 Claude Code trials on 2 cores, 2 s a model call (benchmarks/concurrency.py): -n 4 took 49.1 s
and -n 8 36.4 s in step; spaced by this gate, 44.5 s and 27.4 s.

The gate admits at most ``slots`` starts (the cores of the machine that runs the agents' processes:
this one, or a Docker engine's host) within any ``window`` seconds, per machine. The first round of
trials is spread over a few seconds; after that the trials stay apart by themselves (they take about
the same time) and the gate seldom waits. Agents that call no model (oracle, nop) are never spaced:
their trials are milliseconds of work with nothing to overlap.

The state is a small file per machine under a folder every worker and session of this user shares
(under the state root, scaffold.workspaces.owners.state_root), holding the monotonic times of the
latest starts; an exclusive lock on it orders the admissions (a waiter sleeps holding it, so the next
one queues behind). ``time.monotonic`` is the system's CLOCK_MONOTONIC on Linux, the same for every
process; times from before a reboot (larger than now) are ignored.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_WINDOW_S", "Admission", "StartGate"]

DEFAULT_WINDOW_S: Final = 1.0
"""A Node agent CLI's start-up CPU, about a second (measured: 1.1-1.4 CPU s for Claude Code)."""


@dataclass(frozen=True, slots=True)
class Admission:
    at: float
    """When the start was admitted (the gate's clock: monotonic, machine-wide)."""
    waited: float
    """Seconds spent waiting for it."""


@dataclass
class StartGate:
    """Admits trial starts, at most *slots* per *window* seconds on each machine (by key)."""

    folder: Path
    window: float = DEFAULT_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _made: bool = field(default=False, repr=False)

    def admit(self, machine: str, slots: int) -> Admission:
        """Wait until a start on *machine* (a key: ``local``, a Docker engine's URL) is due. Never raises:
        a gate that cannot keep its file lets the trial start at once."""
        if self.window <= 0 or slots <= 0:
            return Admission(self.clock(), 0.0)
        try:
            return self._admit(machine, slots)
        except OSError:
            return Admission(self.clock(), 0.0)

    def _admit(self, machine: str, slots: int) -> Admission:
        if not self._made:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._made = True
        name = hashlib.sha256(machine.encode()).hexdigest()[:16]
        fd = os.open(self.folder / f"{name}.starts", os.O_RDWR | os.O_CREAT, 0o600)
        with contextlib.closing(os.fdopen(fd, "r+", encoding="ascii")) as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes
            now = self.clock()
            starts = sorted(t for t in _times(fh.read()) if now - self.window < t <= now)
            waited = 0.0
            if len(starts) >= slots:
                due = starts[-slots] + self.window
                waited = max(0.0, due - now)
                if waited:
                    self.sleep(waited)
                now = self.clock()
            starts.append(now)
            fh.seek(0)
            fh.truncate()
            fh.write(" ".join(repr(t) for t in starts[-slots:]))  # exact: a rounded-up time would lie in the future
            fh.flush()
        return Admission(now, waited)


def _times(text: str) -> list[float]:
    out: list[float] = []
    for word in text.split():
        with contextlib.suppress(ValueError):
            out.append(float(word))
    return out
