"""Failure injection for the trace server: which requests wait, which are answered with an error status."""

from __future__ import annotations

import fnmatch
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from scaffold.errors import CometError

__all__ = ["Failure", "FailurePlan", "Injected", "parse_delay", "parse_failure"]


@dataclass(frozen=True)
class Failure:
    """Requests matching *route* wait *delay* seconds, then get *status* (None: the normal answer).

    *route*: a route name (``langfuse.scores``), an fnmatch pattern of route names (``langfuse.*``,
    ``*``), or a path prefix (anything starting with ``/``). *times*: only the first N matching
    requests (None: every one).
    """

    route: str
    status: int | None = None
    delay: float = 0.0
    times: int | None = None

    def __post_init__(self) -> None:
        if self.status is not None and not 100 <= self.status <= 599:
            raise CometError(f"failure status must be an HTTP status (100-599), not {self.status}")
        if not math.isfinite(self.delay) or self.delay < 0:
            raise CometError(f"failure delay must be a non-negative number of seconds, not {self.delay}")
        if self.times is not None and self.times < 1:
            raise CometError(f"failure times must be at least 1, not {self.times}")
        if not self.route:
            raise CometError("failure route must not be empty (use '*' for every route)")

    def matches(self, route: str, path: str) -> bool:
        if self.route.startswith("/"):
            return path == self.route or path.startswith(self.route.rstrip("/") + "/")
        pattern = "*" if self.route == "all" else self.route
        return fnmatch.fnmatchcase(route, pattern)

    def describe(self) -> dict[str, object]:
        return {"route": self.route, "status": self.status, "delay": self.delay, "times": self.times}


@dataclass(frozen=True)
class Injected:
    """What the failures matching one request add up to: the total delay and the first status."""

    delay: float
    status: int | None
    failures: tuple[Failure, ...]

    def describe(self) -> dict[str, object]:
        return {"delay": self.delay, "status": self.status, "failures": [f.describe() for f in self.failures]}


class FailurePlan:
    """The server's failures and how often each has struck; safe to use from the handler threads."""

    def __init__(self, failures: Iterable[Failure] = ()) -> None:
        self._failures: list[Failure] = list(failures)
        self._used: dict[int, int] = {}  # index in _failures -> requests it has matched
        self._lock = threading.Lock()

    def add(self, failure: Failure) -> None:
        with self._lock:
            self._failures.append(failure)

    def clear(self) -> None:
        with self._lock:
            self._failures, self._used = [], {}

    def take(self, route: str, path: str) -> Injected | None:
        """The failures that strike this request (each counts it against its ``times``); None if none."""
        struck: list[Failure] = []
        with self._lock:
            for index, failure in enumerate(self._failures):
                used = self._used.get(index, 0)
                if not failure.matches(route, path) or (failure.times is not None and used >= failure.times):
                    continue
                self._used[index] = used + 1
                struck.append(failure)
        if not struck:
            return None
        status = next((f.status for f in struck if f.status is not None), None)
        return Injected(sum(f.delay for f in struck), status, tuple(struck))


def _split(spec: str, what: str) -> tuple[str, str, int | None]:
    route, sep, value = spec.rpartition("=")
    if not sep or not route or not value:
        raise CometError(f"{what} {spec!r}: expected ROUTE=VALUE or ROUTE=VALUExN")
    times: int | None = None
    head, x, count = value.rpartition("x")
    if x:
        if not count.isdigit():
            raise CometError(f"{what} {spec!r}: the count after 'x' must be a whole number")
        value, times = head, int(count)
    return route, value, times


def parse_failure(spec: str) -> Failure:
    """``ROUTE=STATUS`` or ``ROUTE=STATUSxN`` (the first N matching requests only): ``langfuse.scores=500x2``."""
    route, value, times = _split(spec, "--fail")
    if not value.isdigit():
        raise CometError(f"--fail {spec!r}: the status must be a whole number such as 500")
    return Failure(route, status=int(value), times=times)


def parse_delay(spec: str) -> Failure:
    """``ROUTE=SECONDS`` or ``ROUTE=SECONDSxN``: ``*=1.5``, ``langsmith.runs=10x1``."""
    route, value, times = _split(spec, "--delay")
    try:
        seconds = float(value)
    except ValueError:
        raise CometError(f"--delay {spec!r}: the delay must be a number of seconds") from None
    return Failure(route, delay=seconds, times=times)
