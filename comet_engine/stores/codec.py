"""What every store shares: strict JSON encoding, revision stamps on events, and crash points.

States and events are encoded once, compactly (no indent: this is the hot path), with ``allow_nan``
off so that every store holds the same plain JSON and a value that only one backend could keep never
gets in. Each event is stamped with the revision that publishes it, so readers can drop the events of a
revision that never became visible.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Mapping, Sequence
from typing import Any

from comet_engine.errors import CorruptRunError, StoreError

__all__ = [
    "CRASH_ENV",
    "RESERVED",
    "crash_point",
    "decode_event",
    "decode_state",
    "encode_events",
    "encode_state",
    "stamped",
]

CRASH_ENV = "COMET_ENGINE_CRASH_AT"
# Keys only a store writes into a state document; ``revision`` is not here: it is overwritten, not refused.
RESERVED = ("trajectoryBytes",)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL when ``COMET_ENGINE_CRASH_AT`` names *name* (crash tests only).

    ``name#N`` kills at the Nth time this process reaches the point (to hit, say, the second commit of a
    claim-then-record pair). SIGKILL, not an exception: nothing may run after it (no ``finally``, no
    buffered flush), exactly like the OOM killer between two durable writes.
    """
    wanted = os.environ.get(CRASH_ENV)
    if not wanted or not wanted.startswith(name):
        return  # the common case: one dict lookup
    point, _, nth = wanted.partition("#")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


_reached: dict[str, int] = {}


def encode_state(run_id: str, revision: int, state: Mapping[str, Any], **store_keys: int) -> str:
    """The stored document: *state* with ``runId`` and ``revision`` stamped at the top level.

    ``runId`` is the original Comet engine's field: a state may carry it, but only with this run's id. ``revision`` is
    always the store's, so a caller may hand back a loaded state unchanged. *store_keys* are a backend's
    own bookkeeping (the file store's ``trajectoryBytes``), which a state may not use.
    """
    if not isinstance(state, Mapping):
        raise StoreError(f"run {run_id!r}: the state must be a JSON object (a mapping), got {type(state).__name__}")
    if state.get("runId", run_id) != run_id:
        raise StoreError(
            f"run {run_id!r}: the state says runId {state['runId']!r}; a run's state must carry its own run id"
        )
    reserved = sorted(key for key in RESERVED if key in state)
    if reserved:
        raise StoreError(f"run {run_id!r}: state field {reserved[0]!r} is reserved for the store; rename it")
    try:
        return _ENCODER.encode({**state, "runId": run_id, "revision": revision, **store_keys})
    except (TypeError, ValueError) as err:
        raise StoreError(
            f"run {run_id!r}: the state is not plain JSON ({err}); keep only dict, list, str, int, "
            "finite float, bool and None in run states"
        ) from err


def stamped(run_id: str, revision: int, state: Mapping[str, Any]) -> dict[str, Any]:
    """What create and commit return: the state with its stamps, without parsing back what was encoded.

    A shallow copy: nested values are the caller's own (the store keeps its encoded copy), so a commit
    costs one encode and no decode on the hot path.
    """
    return {**state, "runId": run_id, "revision": revision}


def encode_events(run_id: str, revision: int, events: Sequence[Mapping[str, Any]]) -> list[str]:
    """One JSON line per event (without the newline), each stamped ``"revision": revision``."""
    lines = []
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise StoreError(f"run {run_id!r}: event {index} must be a JSON object, got {type(event).__name__}")
        try:
            lines.append(_ENCODER.encode({**event, "revision": revision}))
        except (TypeError, ValueError) as err:
            raise StoreError(
                f"run {run_id!r}: event {index} ({event.get('type', '?')!r}) is not plain JSON ({err}); "
                "keep only dict, list, str, int, finite float, bool and None in events"
            ) from err
    return lines


def decode_state(run_id: str, text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise CorruptRunError(
            f"run {run_id!r}: {where} is not valid JSON ({err}); restore it from a backup or remove the run"
        ) from err
    if not isinstance(value, dict):
        raise CorruptRunError(f"run {run_id!r}: {where} holds {type(value).__name__}, not a JSON object")
    return value


def decode_event(run_id: str, text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise CorruptRunError(f"run {run_id!r}: {where} is not a JSON line ({err})") from err
    if not isinstance(value, dict) or not isinstance(value.get("revision"), int):
        raise CorruptRunError(f"run {run_id!r}: {where} is not an event with an integer 'revision'")
    return value
