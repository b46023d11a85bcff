"""What the Harbor and Inspect AI importers share: one scored trial of another tool as our TrialRecord.

A source trial becomes a record with the source's own score as its one dimension, ``completion``, and
the same rule our own Harbor runs follow (scaffold.rubrics.generic.completion,
scaffold.validation.harbor): a score of at least 1 passes, anything less fails, and the score (clamped
to [0, 1]) is the completion score. A trial the source could not score is ``error``: unscored, never
failed. The noise verdict comes from the source's structured reason when it gives one (an error type,
a limit); an error it does not explain goes to our classifier (scaffold.records.noise), as for our own
trials; a trial without an error is included.

Pure: values in, records out.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

import msgspec

from scaffold.records import AgentInfo, Endpoint, NoiseVerdict, TrialError, TrialRecord, Verdict, WorkspaceInfo
from scaffold.records.noise import UNCLASSIFIED, classify
from scaffold.rubrics import Dimension
from scaffold.trajectory import TokenUsage, Trajectory
from scaffold.util.hashing import hash_json
from scaffold.validation.results import ValidationCheck

__all__ = [
    "MESSAGE_LIMIT",
    "SourceTrial",
    "duration_between",
    "endpoint_of",
    "error_of",
    "number_trials",
    "to_record",
    "treatment_name",
    "valid_name",
]

MESSAGE_LIMIT: Final = 500
"""How much of a source's error message a record keeps (its tracebacks stay in the source's files)."""
_NO_MODEL_AGENTS: Final = frozenset({"oracle", "nop"})
_INCLUDED: Final = NoiseVerdict("included", "")
_NAMEABLE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNNAMEABLE: Final = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class SourceTrial:
    """One trial (a Harbor trial, an Inspect sample epoch) in the terms of our records, before numbering."""

    experiment_id: str
    case_id: str
    task: str
    treatment: str
    config: Mapping[str, Any]
    score: float | None
    """The source's score (a reward, a scorer's value as a number); None when it gave none."""
    check: str
    """The name of the check that gave the score: ``reward`` (Harbor), the scorer's name (Inspect)."""
    score_source: str
    """Where the score came from, for the check's reason (``reward.txt``, ``scorer includes``)."""
    agent: AgentInfo
    backend: str
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0
    phases: Mapping[str, float] = field(default_factory=dict)
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    errors: tuple[TrialError, ...] = ()
    noise: NoiseVerdict | None = None
    """Decided from the source's structured reason; None leaves it to our classifier."""
    order: str = ""
    """How trials of one (experiment, task, treatment) are numbered when the source has no index."""
    trial: int | None = None
    """The source's own trial index (Inspect's epoch); None numbers the trials by ``order``."""


def to_record(source: SourceTrial, trial: int) -> TrialRecord:
    """The record of *source* as trial number *trial*."""
    score = source.score if source.score is not None and math.isfinite(source.score) else None
    verdict: Verdict = "error"
    checks: tuple[ValidationCheck, ...] = ()
    dimensions: tuple[Dimension, ...] = ()
    weighted = None
    if score is not None:
        status: Literal["passed", "failed"] = "passed" if score >= 1.0 else "failed"
        verdict = status
        weighted = min(max(score, 0.0), 1.0)
        reason = f"{score:g} from {source.score_source}"
        checks = (ValidationCheck(source.check, status, str(source.config.get("source", "")), reason),)
        dimensions = (Dimension("completion", 1.0, weighted, reason),)
    trajectory = None
    if source.tokens is not None or source.cost_usd is not None:
        trajectory = Trajectory(
            agent=source.agent.name or "",
            tokens=source.tokens,
            cost_usd=source.cost_usd,
            duration_s=source.duration_s,
            agent_version=source.agent.version,
        )
    record = TrialRecord(
        experiment_id=source.experiment_id,
        case_id=source.case_id,
        task=source.task,
        treatment=source.treatment,
        trial=trial,
        config=source.config,
        config_hash=hash_json(source.config),
        verdict=verdict,
        started_at=source.started_at,
        finished_at=source.finished_at,
        duration_s=max(source.duration_s, 0.0),
        phases=source.phases,
        agent=source.agent,
        trajectory=trajectory,
        checks=checks,
        dimensions=dimensions,
        weighted_score=weighted,
        errors=source.errors,
        workspace=WorkspaceInfo(backend=source.backend),
        noise=source.noise or UNCLASSIFIED,
        streams=(),
    )
    if source.noise is not None:
        return record
    if not source.errors:
        # Nothing went wrong. (Our classifier would flag the missing trajectory as partial observability:
        # an imported trial never has one, so that says nothing here.)
        return msgspec.structs.replace(record, noise=_INCLUDED)
    # An error the source does not type: our classifier reads its type and message, as for our trials.
    return msgspec.structs.replace(record, noise=classify(record))


def number_trials(sources: Iterable[SourceTrial]) -> list[TrialRecord]:
    """Every trial as a record: the source's index when it has one, else 1, 2, ... per (experiment, task,
    treatment) in ``order``."""
    groups: dict[tuple[str, str, str], list[SourceTrial]] = defaultdict(list)
    for source in sources:
        groups[(source.experiment_id, source.task, source.treatment)].append(source)
    records = []
    for group in groups.values():
        ordered = sorted(group, key=lambda s: (s.order, s.case_id))
        for position, source in enumerate(ordered, start=1):
            records.append(to_record(source, source.trial if source.trial is not None else position))
    return records


def error_of(kind: str, message: str) -> TrialError:
    """A source's error as a record keeps it: its type and the first lines of its message."""
    text = message.strip()
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + " ..."
    return TrialError(kind, text)


def duration_between(start: str | None, end: str | None) -> float:
    """Seconds from *start* to *end* (ISO 8601 times); 0 when either is missing or unreadable."""
    if not start or not end:
        return 0.0
    try:
        seconds = (_parse(end) - _parse(start)).total_seconds()
    except (ValueError, TypeError):  # TypeError: one time with a zone, the other without
        return 0.0
    return max(seconds, 0.0)


def _parse(text: str) -> datetime:
    # Harbor writes both "...Z" and naive times; Python 3.11 reads "Z" itself.
    return datetime.fromisoformat(text)


def endpoint_of(agent: str | None, model: str | None) -> Endpoint | None:
    """``none`` for an agent that calls no model (Harbor's oracle and nop, Inspect's mockllm); None
    (unknown) otherwise: a source does not say whether its model was local or remote."""
    if agent in _NO_MODEL_AGENTS or (model or "").startswith("mockllm/"):
        return "none"
    return None


def treatment_name(*parts: str) -> str:
    """A treatment name made of *parts* (an agent and its skills, a model and its arguments) that the
    gates can name (scaffold.reports.gates: letters, digits, ``.``, ``_``, ``-``): the parts joined by
    ``.``, every other character as ``_``."""
    text = ".".join(p for p in parts if p)
    name = _UNNAMEABLE.sub("_", text).strip("._-")
    return name or "imported"


def valid_name(name: str) -> bool:
    """Whether a treatment *name* given by the user (``--as``) can be named in a gate."""
    return bool(_NAMEABLE.fullmatch(name))
