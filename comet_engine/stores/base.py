"""The store contract shared by every backend.

A run is one JSON object (its state) plus an append-only list of trajectory events. Every commit names
the revision it was computed from; the store publishes it only if that is still the current revision
(compare-and-swap), else raises ``ConflictError`` and writes nothing visible. Events of a commit are
made durable before the state that refers to them is published, so a crash between the two leaves
events of an unpublished revision, which readers ignore (every event carries its ``revision``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Store", "StoredRun"]


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run as loaded: its id, the revision it is at (1 after create) and its state (a JSON object).

    Every store stamps ``runId`` and ``revision`` into the state it keeps and returns (a state may carry
    ``runId`` only with its own id; a stale ``revision`` in a committed state is simply overwritten).
    """

    run_id: str
    revision: int
    state: Mapping[str, Any]


class Store(Protocol):
    def create(self, run_id: str, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> StoredRun:
        """Store a new run at revision 1 with its first events; ``RunExistsError`` if the id is taken."""
        ...

    def load(self, run_id: str) -> StoredRun:
        """The current published state; ``RunNotFoundError`` if absent, ``CorruptRunError`` if unreadable."""
        ...

    def commit(
        self, run_id: str, expected_revision: int, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
    ) -> StoredRun:
        """Publish *state* as revision ``expected_revision + 1`` after appending *events* durably.

        ``ConflictError`` when the current revision is not ``expected_revision``: nothing is published.
        """
        ...

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The trajectory of published revisions, in append order."""
        ...

    def run_ids(self) -> list[str]:
        """Every run in the store, sorted."""
        ...
