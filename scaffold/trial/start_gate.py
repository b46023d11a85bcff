"""Spacing the starts of agent trials on one machine, across every worker and session that runs there.

An agent CLI spends its first second or so starting (Claude Code: 0.7 CPU s from its compile cache, Node
loading its bundle), then mostly waits on the model. Trials that start at the same moment burst at the same moment:
xdist's workers all begin together, their model calls take similar times, so they stay in step, their
start-up bursts pile onto the cores together and the cores then idle while every trial waits. Measured
with 32 Claude Code trials on 2 cores, 2 s a model call (benchmarks/concurrency.py): -n 4 took 49.1 s
and -n 8 36.4 s in step; spaced by this gate, 44.5 s and 27.4 s.

The gate admits at most ``slots`` starts (the cores of the machine that runs the agents' processes:
this one, or a Docker engine's host) within any ``window`` seconds, per machine. The first round of
trials is spread over a few seconds; after that the trials stay apart by themselves (they take about
the same time) and the gate seldom waits. Agents that call no model (oracle, nop) are never spaced:
their trials are milliseconds of work with nothing to overlap.

On this machine (the local backend, a Docker engine at a ``unix://`` socket) a start also waits while
more threads are runnable than the machine has CPUs (``/proc/loadavg``), for at most three windows: a start
burst on cores that are already full slows every trial in flight. Measured side by side with 32 Claude
Code trials on 2 cores (benchmarks/concurrency.py), with it and without: local ``-n 4/8/16`` 45.5/28.4/30.4
against 46.0/28.9/32.6 s, docker ``-n 4`` 52.3 against 56.8 s and ``-n 16`` 42.6 against 45.1 s (its busy
CPU 76 against 84 s: fewer CLIs contend for the cores at once). ``COMET_START_GATE_LOAD=0`` turns it off.

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

from scaffold.workspaces.engines import on_this_machine

__all__ = ["DEFAULT_WINDOW_S", "LOAD_ENV", "Admission", "StartGate", "crowded_here", "here"]

DEFAULT_WINDOW_S: Final = 0.7
"""A Node agent CLI's start-up CPU: Claude Code from its compile cache spends 0.7 CPU s before its first
model call (it was 1.1-1.4 s without the cache, when this was 1.0). Side by side, 32 trials on 2 cores
(benchmarks/concurrency.py), 0.7 against 1.0: local ``-n 8`` 24.7/24.5 against 25.7/25.5 s, ``-n 16``
19.8 against 22.8 s, docker ``-n 16`` 27.6 against 29.3 s; ``-n 4`` and docker ``-n 8`` the same. 0.5 was
no better than 0.7 (24.2/24.8 s at local ``-n 8``): starts that close overlap their own bursts."""
LOAD_ENV: Final = "COMET_START_GATE_LOAD"
"""``0`` turns the wait for a free core off."""
_LOAD_POLL_S: Final = 0.05
_LOAD_WINDOWS: Final = 3  # the longest wait for a free core, in windows: a busy machine slows, never stalls


def here(machine: str) -> bool:
    """Whether the agents of *machine* (a start gate key: ``local``, or an engine's URL) run on this
    machine's cores."""
    return machine == "local" or on_this_machine(machine)


def crowded_here() -> bool | None:
    """Whether more threads are runnable on this machine now than it has CPUs; None where that cannot be
    read. Both figures are the whole machine's (``/proc/loadavg``'s fourth field, the reader left out,
    and ``os.cpu_count()``), also inside a container whose own share of the CPUs is smaller: what counts
    is whether a start burst would find a core free. The smaller of two readings 10 ms apart: a single
    one catches short spikes (a process starting, a flush)."""
    cpus = os.cpu_count()
    readings = []
    for attempt in range(2):
        if attempt:
            time.sleep(0.01)
        try:
            readings.append(int(Path("/proc/loadavg").read_text("ascii").split()[3].split("/")[0]) - 1)
        except (OSError, ValueError, IndexError):
            return None
    return None if cpus is None else min(readings) > cpus


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
    crowded: Callable[[], bool | None] | None = crowded_here
    """Whether this machine's cores are all taken now (None: unknown); None here: no wait for a core."""
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
            now = entered = self.clock()
            starts = sorted(t for t in _times(fh.read()) if now - self.window < t <= now)
            if len(starts) >= slots:
                wait = starts[-slots] + self.window - now
                if wait > 0:
                    self.sleep(wait)
                now = self.clock()
            if self.crowded is not None and here(machine):
                now = self._free_core(now)
            starts.append(now)
            fh.seek(0)
            fh.truncate()
            fh.write(" ".join(repr(t) for t in starts[-slots:]))  # exact: a rounded-up time would lie in the future
            fh.flush()
        return Admission(now, now - entered)

    def _free_core(self, now: float) -> float:
        """Wait (holding the lock: the others queue behind) until a core is free, or three windows have
        passed."""
        assert self.crowded is not None
        deadline = now + _LOAD_WINDOWS * self.window
        while now < deadline and self.crowded():
            self.sleep(_LOAD_POLL_S)
            now = self.clock()
        return now


def _times(text: str) -> list[float]:
    out: list[float] = []
    for word in text.split():
        with contextlib.suppress(ValueError):
            out.append(float(word))
    return out
