"""MemoryStore: runs in a dict, for tests and for runs that need not survive the process.

Thread-safe: one lock guards the compare-and-swap. States and events are kept as encoded JSON, so a
caller that mutates what it committed or loaded never changes the stored run, and a value the durable
stores could not hold is refused here too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from comet_engine.errors import ConflictError, RunExistsError, RunNotFoundError
from comet_engine.stores.base import StoredRun
from comet_engine.stores.codec import encode_events, encode_state, stamped
from comet_engine.stores.paths import check_run_id

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Run:
    revision: int
    state: str
    events: list[str] = field(default_factory=list)


class MemoryStore:
    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()

    def create(self, run_id: str, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> StoredRun:
        check_run_id(run_id)
        text, lines = encode_state(run_id, 1, state), encode_events(run_id, 1, events)
        with self._lock:
            if run_id in self._runs:
                raise RunExistsError(f"run {run_id!r} already exists in this memory store; choose another run id")
            self._runs[run_id] = _Run(1, text, lines)
        return StoredRun(run_id, 1, stamped(run_id, 1, state))

    def load(self, run_id: str) -> StoredRun:
        with self._lock:
            run = self._get(run_id)
            revision, text = run.revision, run.state
        return StoredRun(run_id, revision, json.loads(text))

    def commit(
        self, run_id: str, expected_revision: int, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
    ) -> StoredRun:
        revision = expected_revision + 1
        text, lines = encode_state(run_id, revision, state), encode_events(run_id, revision, events)
        with self._lock:
            run = self._get(run_id)
            if run.revision != expected_revision:
                raise ConflictError(run_id, expected_revision, run.revision)
            run.events.extend(lines)
            run.revision, run.state = revision, text
        return StoredRun(run_id, revision, stamped(run_id, revision, state))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        with self._lock:
            lines = list(self._get(run_id).events)
        return [json.loads(line) for line in lines]

    def run_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._runs)

    def _get(self, run_id: str) -> _Run:
        try:
            return self._runs[run_id]
        except KeyError:
            raise RunNotFoundError(f"run {run_id!r} does not exist in this memory store") from None
