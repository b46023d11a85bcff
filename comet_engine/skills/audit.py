"""Reading a run directory someone else left behind, from the files' text: is the state whole and is it
the state its projections were made from?

An evaluation harness looks at the run files a workflow skill left in a workspace after the agent is
gone: it has their text (through whatever reads that workspace), not a store to open. These functions
judge that text with the store's own decoding rules and raise :class:`CorruptRunError` with a message
naming the file and what is wrong; they never touch the file system, so a reader decides where the text
comes from. ``checkpoint.json`` is checked against ``run-state.json`` by the digest the engine writes
(``stateDigest``): a state edited by hand after its last checkpoint shows as a mismatch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from comet_engine.errors import CorruptRunError
from comet_engine.skills.companions import state_digest
from comet_engine.state import RunState
from comet_engine.stores.codec import RESERVED, decode_event, decode_state

__all__ = ["read_checkpoint", "read_pending", "read_state", "read_trajectory"]

_REQUIRED = ("runId", "status", "iteration")


def read_state(text: str, where: str = "run-state.json") -> RunState:
    """The run state in *text*; CorruptRunError when it is not a whole run state."""
    raw = decode_state("?", text, where)
    run_id = raw.get("runId") if isinstance(raw.get("runId"), str) else "?"
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise CorruptRunError(f"run {run_id!r}: {where} lacks {', '.join(missing)}: not a run state")
    try:
        return RunState.from_json(raw, revision=int(raw.get("revision", 0)))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise CorruptRunError(f"run {run_id!r}: {where} has a malformed part ({err!r})") from err


def read_trajectory(text: str, run_id: str = "?", where: str = "trajectory.jsonl") -> int:
    """The number of events in *text*; CorruptRunError on a line that is not an event, or on revisions
    that go backwards (events are appended in commit order)."""
    last = -1
    count = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        event = decode_event(run_id, line, f"{where} line {number}")
        if event["revision"] < last:
            raise CorruptRunError(
                f"run {run_id!r}: {where} line {number} has revision {event['revision']} after {last}: "
                "the trajectory was reordered or edited"
            )
        last = event["revision"]
        count += 1
    return count


def read_checkpoint(text: str, state: RunState | None, where: str = "checkpoint.json") -> Mapping[str, Any]:
    """The checkpoint in *text*, checked: the engine's own (``stateDigest``, compared with *state* when
    there is one), or the original Comet layout's (``runId``, ``contextHash``, ``artifactsHash``,
    ``createdAt``). CorruptRunError otherwise."""
    data = decode_state("?", text, where)
    run_id = data.get("runId")
    if not run_id:
        raise CorruptRunError(f"{where} names no runId")
    if "stateDigest" in data:
        # The digest is of the state as the store hands it out: without the store's own bookkeeping keys.
        stored = {key: value for key, value in state.raw.items() if key not in RESERVED} if state else None
        if stored is not None and data["stateDigest"] != state_digest(stored):
            raise CorruptRunError(
                f"run {run_id!r}: {where} was made from another state than run-state.json (stateDigest "
                "differs): the state was changed after its checkpoint"
            )
        return data
    if "contextHash" in data and data.get("artifactsHash") and data.get("createdAt"):
        return data
    raise CorruptRunError(
        f"run {run_id!r}: {where} has neither a stateDigest nor contextHash, artifactsHash and createdAt"
    )


def read_pending(text: str, where: str = "pending-action.json") -> Any:
    """What a pending file says the run waits for: None when nothing (``{"pending": null}``, an empty
    object or an empty file), else the pending item. A file that is not JSON raises CorruptRunError."""
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise CorruptRunError(f"{where} is not valid JSON ({err})") from err
    if isinstance(data, dict) and "pending" in data:
        return data["pending"]
    return data or None
