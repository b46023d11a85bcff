"""The run state: one JSON object, exactly what a store commits (run-state.json in the file store).

The top level carries the original Comet engine's run-state.json fields (``runId``, ``skill``, ``skillVersion``,
``skillHash``, ``orchestration``, ``currentStep``, ``iteration``, ``pending``, ``status``, ``retries``)
and what the core needs besides::

    schemaVersion      1
    definitionId / definitionVersion / definitionHash   the definition the run is pinned to
    input              the run's input object
    actions            {actionId: action}   the open actions (an ended action's record is in the trajectory)
    waits              {waitId: wait}       approvals, evidence and confirmation waits
    open               {instanceId: stepId} step activations not yet ended (actions, waits, children)
    arrivals           {joinStepId: [parent, ...]} parents arrived at a join since it last fired
    outputs            {stepId: output}     latest outputs the graph reads and results of ended paths
                                            (every output is in the trajectory: Runtime.outputs)
    artifacts          {name: value}        merged from outcomes
    children           {childRunId: child}  child runs started by this run
    parent             {runId, step, instance} | null,   depth  (0 for a top-level run)
    transitions        how many transitions this run has taken (bounded by the definition)
    error              {code, message, step} | null   why the run failed
    checks             {checkId: result}    the latest verdict of each runtime check

``iteration`` counts step activations; an action's id is the first 16 hex characters of
``sha256(runId:iteration:stepId)`` for the iteration it was proposed in, so a retry keeps its id (and
its ``retries`` count) while a loop's next visit gets a new one. ``pending`` is the id of the first open
action ("" when none), as in the original Comet engine. ``retries`` counts the retries of each open action.

Actions that end leave the state, so a state stays the size of its open work however long the run:
their ``action_completed`` events (attempt, outcome digest, digest of the claim token) are enough to
recognise a late resubmission of the same outcome.

Statuses: run ``running | waiting | completed | failed | cancelled``; action
``pending | claimed | succeeded | failed | unknown | cancelled``; wait ``open | resolved | cancelled``.
The machine never mutates a state it was given: it returns a new one (the dataclasses below are read-only
views for callers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from comet_engine.canonical import digest, short_id

__all__ = [
    "ACTION_STATUSES",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "TERMINAL",
    "Action",
    "Outcome",
    "Receipt",
    "RunState",
    "Wait",
    "action_id",
]

SCHEMA_VERSION = 1
RUN_STATUSES = ("running", "waiting", "completed", "failed", "cancelled")
TERMINAL = ("completed", "failed", "cancelled")
ACTION_STATUSES = ("pending", "claimed", "succeeded", "failed", "unknown", "cancelled")


def action_id(run_id: str, iteration: int, step_id: str) -> str:
    """The original Comet engine's deterministic id: first 16 hex characters of ``sha256(runId:iteration:stepId)``."""
    return short_id(run_id, iteration, step_id)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an executor reports for one attempt of an action.

    ``status`` is ``succeeded`` or ``failed``; ``route`` optionally names the outcome that transitions
    match (``on``), falling back to ``succeeded`` edges when no edge names it. ``artifacts`` are merged
    into the run's artifacts on success.
    """

    status: str
    output: Any = None
    route: str | None = None
    error: str | None = None
    artifacts: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "output": self.output}
        if self.route is not None:
            out["route"] = self.route
        if self.error is not None:
            out["error"] = self.error
        if self.artifacts:
            out["artifacts"] = dict(self.artifacts)
        return out

    @property
    def digest(self) -> str:
        return digest(self.to_json())

    @classmethod
    def succeeded(
        cls, output: Any = None, *, route: str | None = None, artifacts: Mapping[str, Any] | None = None
    ) -> Outcome:
        return cls("succeeded", output, route, None, artifacts)

    @classmethod
    def failed(cls, error: str) -> Outcome:
        return cls("failed", None, None, error)


@dataclass(frozen=True, slots=True)
class Receipt:
    """The result of recording an outcome; an identical resubmission returns an equal receipt."""

    action_id: str
    attempt: int
    status: str
    digest: str


@dataclass(frozen=True, slots=True)
class Action:
    """A read-only view of one action of a run."""

    id: str
    step: str
    kind: str
    ref: str | None
    iteration: int
    status: str
    attempt: int
    input: Any
    input_digest: str
    lease_expires_at: float | None
    confirmed: bool
    retry: str
    outcome: Mapping[str, Any] | None
    reconciliation: Mapping[str, Any] | None
    error: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Action:
        return cls(
            id=data["id"],
            step=data["step"],
            kind=data["kind"],
            ref=data.get("ref"),
            iteration=data["iteration"],
            status=data["status"],
            attempt=data["attempt"],
            input=data.get("input"),
            input_digest=data.get("inputDigest", ""),
            lease_expires_at=data.get("leaseExpiresAt"),
            confirmed=bool(data.get("confirmed", True)),
            retry=data.get("retry", "manual"),
            outcome=data.get("outcome"),
            reconciliation=data.get("reconciliation"),
            error=data.get("error"),
        )


@dataclass(frozen=True, slots=True)
class Wait:
    """A read-only view of one wait: ``kind`` is ``approval``, ``evidence`` or ``confirmation``."""

    id: str
    kind: str
    step: str
    status: str
    question: str | None
    proposal: Any
    digest: str
    choices: tuple[str, ...]
    validator: str | None
    action: str | None
    decision: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Wait:
        return cls(
            id=data["id"],
            kind=data["kind"],
            step=data["step"],
            status=data["status"],
            question=data.get("question"),
            proposal=data.get("proposal"),
            digest=data.get("digest", ""),
            choices=tuple(data.get("choices") or ()),
            validator=data.get("validator"),
            action=data.get("action"),
            decision=data.get("decision"),
        )


@dataclass(frozen=True, slots=True)
class RunState:
    """A read-only view of a run state (``raw`` is the JSON object as stored)."""

    run_id: str
    revision: int
    status: str
    current_step: str | None
    iteration: int
    pending: str
    definition_hash: str
    actions: tuple[Action, ...]
    waits: tuple[Wait, ...]
    outputs: Mapping[str, Any]
    artifacts: Mapping[str, Any]
    error: Mapping[str, Any] | None
    raw: Mapping[str, Any]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], revision: int = 0) -> RunState:
        return cls(
            run_id=data["runId"],
            revision=revision,
            status=data["status"],
            current_step=data.get("currentStep"),
            iteration=data["iteration"],
            pending=data.get("pending", ""),
            definition_hash=data.get("definitionHash", ""),
            actions=tuple(Action.from_json(a) for a in data.get("actions", {}).values()),
            waits=tuple(Wait.from_json(w) for w in data.get("waits", {}).values()),
            outputs=data.get("outputs", {}),
            artifacts=data.get("artifacts", {}),
            error=data.get("error"),
            raw=MappingProxyType(dict(data)),
        )

    def open_actions(self) -> list[Action]:
        """Actions still to be done or in flight (pending, claimed, failed or unknown), oldest first."""
        open_ids = set(self.raw.get("open", {}))
        return sorted((a for a in self.actions if a.id in open_ids), key=lambda a: a.iteration)

    def open_waits(self) -> list[Wait]:
        return [w for w in self.waits if w.status == "open"]
