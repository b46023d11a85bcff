"""Trial records: one JSON file per trial, complete in itself; here, their typed form and its JSON.

A record holds everything needed to re-score and re-report a trial without pytest: the resolved
configuration and its hash, timings, the trajectory, every check, every dimension, the noise verdict,
the verdict. Every nested part is a typed value (``msgspec`` structs, frozen), so a record file decodes
straight into them with each field checked against its type: a string where a number belongs is a
RecordError naming the file and the field when the record is read, not a crash in some report later.

Reading files and bringing older record shapes up to date is :mod:`scaffold.records.files`; this module
is pure. Schema changes bump ``SCHEMA_VERSION``; readers refuse versions they do not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import msgspec

from scaffold.rubrics import Dimension
from scaffold.trajectory import Trajectory
from scaffold.util.plain import plain
from scaffold.validation.results import ValidationCheck

__all__ = [
    "SCHEMA_VERSION",
    "STREAM_PREFIX",
    "AgentInfo",
    "AttemptInfo",
    "ChangeCounts",
    "Endpoint",
    "NoiseCategory",
    "NoiseVerdict",
    "SelfWrittenInfo",
    "TrialError",
    "TrialRecord",
    "Verdict",
    "WorkspaceInfo",
    "decode_record",
]

SCHEMA_VERSION: Final = 1
STREAM_PREFIX: Final = "agent."
"""The agent's raw streams in a trial folder are the files whose names start with this."""
Verdict = Literal["passed", "failed", "error"]
"""A trial's verdict. ``error``: the harness failed (unscored, never counted as failed)."""
NoiseCategory = Literal["included", "flagged", "excluded"]
Endpoint = Literal["none", "local", "remote"]
"""Where the agent's model was served (never the URL, which may carry a key): ``none``, the agent calls no
model (oracle, nop); ``local``, an endpoint on this machine's loopback (the scripted model server, a local
proxy); ``remote``, a provider's API or a gateway reached over the network."""

# What a record file may hold, checked as it is decoded (msgspec, in C: nothing to pay per record). Every
# number the harness writes is finite and fits in 64 bits; a file that says otherwise was damaged or edited,
# and would otherwise crash a report (orjson refuses integers beyond 64 bits) or poison every mean with an
# infinity. msgspec refuses NaN and Infinity in JSON itself; the slower reader (scaffold.records.files)
# applies the same bounds to what the json module reads.
_FINITE_MAX: Final = 1.7976931348623157e308
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
_Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=_FINITE_MAX)]
_Score = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]

# Every part is frozen, and outside the cyclic garbage collector (gc=False): records are acyclic JSON
# data, and 100,000 of them are millions of objects the collector would otherwise walk while they are read.


class NoiseVerdict(msgspec.Struct, frozen=True, gc=False):
    """Is the trial experimental signal (``included``), suspect (``flagged``) or environment noise
    (``excluded``)? Decided by scaffold.records.noise; ``evidence`` is the signal that decided it."""

    category: NoiseCategory
    reason: str = ""
    source: Literal["structured", "text"] = "structured"
    evidence: Mapping[str, Any] = {}


class AgentInfo(msgspec.Struct, frozen=True, gc=False):
    """The agent that ran the trial: its name, the model asked for, the version that ran, and where its
    model was served (``endpoint``). None is unknown: no trajectory (version), or a record written before
    the field existed (endpoint); scaffold.reports.comparable never counts unknown as a difference."""

    name: str | None = None
    model: str | None = None
    version: str | None = None
    endpoint: Endpoint | None = None


JudgeStatus = Literal["skipped", "enabled_and_successful", "failed"]
"""Exactly one per judged trial: ``skipped`` (not called: its configuration is incomplete, the reason
says what is missing), ``enabled_and_successful`` (scores in the record), ``failed`` (called, no score:
HTTP status, timeout, an answer without one parseable line; the reason says which)."""


class JudgeInfo(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The LLM judge of one trial, beside the rule scores and never instead of them. Its scores are the
    record's ``dimensions`` with ``source: "judge"`` (with ``--judge-samples N``, the mean of the N
    answers per dimension; ``spread`` holds their population standard deviation). Its cost is the
    judge's own, never added to the subject's."""

    status: JudgeStatus
    reason: str = ""
    agent: str | None = None
    model: str | None = None
    transport: Literal["http", "cli"] | None = None
    """``http``: the Anthropic Messages API called directly; ``cli``: the judge agent's CLI."""
    samples: _Count = 0
    """Answers that gave scores (0 when skipped or failed)."""
    spread: Mapping[str, Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]] = {}
    """Per judge dimension, the standard deviation of its scores over the samples (2 or more samples)."""
    input_tokens: _Count | None = None
    output_tokens: _Count | None = None
    cost_usd: Annotated[float, msgspec.Meta(ge=0.0, le=_FINITE_MAX)] | None = None
    latency_s: _Seconds | None = None
    session_id: str | None = None


class TrialError(msgspec.Struct, frozen=True, gc=False):
    """A harness error that ended the trial (verdict ``error``): the exception's type and message."""

    type: str
    message: str = ""


class WorkspaceInfo(msgspec.Struct, frozen=True, gc=False):
    """Which backend made the workspace, and where it was kept (``path``) when it was."""

    backend: str = ""
    kept: bool = False
    path: str | None = None
    engine: str | None = None
    """The Docker engine that ran the trial (its URL; one of a pool's), None for the local backend."""


class ChangeCounts(msgspec.Struct, frozen=True, gc=False):
    """How many files the agent added, modified and deleted in its workspace (the trial folder's
    changes.json lists them: scaffold.trial.changes)."""

    added: _Count = 0
    modified: _Count = 0
    deleted: _Count = 0

    @property
    def total(self) -> int:
        return self.added + self.modified + self.deleted


class AttemptInfo(msgspec.Struct, frozen=True, gc=False):
    """An earlier attempt of a trial: excluded as environment or runner noise and run again in a fresh
    workspace (``--retry-excluded``). Its files, its own record among them, are kept in *folder*."""

    attempt: _Count
    """1 for the first attempt; the record's own attempt is ``len(attempts) + 1``."""
    folder: str
    """Where its files are, relative to the trial folder (``attempts/1``)."""
    verdict: Verdict
    noise_reason: str
    """Why it was excluded (a reason of scaffold.records.noise, e.g. ``rate_limited``)."""
    started_at: str = ""
    finished_at: str = ""
    duration_s: _Seconds = 0.0
    cost_usd: Annotated[float, msgspec.Meta(ge=0.0, le=_FINITE_MAX)] | None = None
    """What its agent reported it cost; None when it reported nothing."""


class SelfWrittenInfo(msgspec.Struct, frozen=True, gc=False):
    """The pre-phase of a self-written trial (scaffold.trial.self_written): the agent wrote a skill for the
    kind of task in a scratch workspace, kept in *folder* of the trial folder and installed for the task.
    Its tokens and cost are its trajectory's, apart from the task's, so the task's cost compares with other
    treatments' while the whole spend stays visible (``TrialRecord.cost_of_attempts_usd`` counts both)."""

    folder: str
    """Where the skills it wrote are, relative to the trial folder (``self-written-skill``)."""
    skills: Mapping[str, str] = {}
    """Each skill it wrote (the name the agent invokes it by) -> its content hash; empty: it wrote none."""
    duration_s: _Seconds = 0.0
    trajectory: Trajectory | None = None
    """What the agent did writing it (tokens, cost, tool calls); None when it did not start."""


class TrialRecord(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One trial. Fields in the order of the JSON form, ``schema_version`` first.

    Fields this harness does not know are ignored, at every level: a newer release may add fields within
    a schema version (as ``harness_version`` and ``agent.endpoint`` were added), and its records must stay
    readable here. A field renamed or given a new meaning bumps ``SCHEMA_VERSION`` instead.
    """

    schema_version: int = SCHEMA_VERSION
    experiment_id: str
    case_id: str
    task: str
    treatment: str
    trial: _Count
    config: Mapping[str, Any]
    config_hash: str
    verdict: Verdict
    profile: str | None = None
    started_at: str = ""
    finished_at: str = ""
    duration_s: _Seconds = 0.0
    phases: Mapping[str, _Seconds] = {}
    agent: AgentInfo = AgentInfo()
    trajectory: Trajectory | None = None
    checks: tuple[ValidationCheck, ...] = ()
    expected_artifacts: Mapping[str, tuple[str, ...]] = {}
    dimensions: tuple[Dimension, ...] = ()
    weighted_score: _Score | None = None
    hard_failures: tuple[str, ...] = ()
    judge: JudgeInfo | None = None
    """None when the judge is not enabled for the session."""
    errors: tuple[TrialError, ...] = ()
    workspace: WorkspaceInfo = WorkspaceInfo()
    changes: ChangeCounts | None = None
    """What the agent changed in its workspace, counted; None when not captured (a record written before
    it was, a trial that ended before validation, or a capture that failed: changes.json says why)."""
    worker: str = "main"
    harness_version: str | None = None
    """The comet-eval release that ran the trial; None in records written before it was recorded."""
    skill_sources: Mapping[str, str] = {}
    """Where each skill the treatment installed came from (its name -> the folder given, ``snapshot
    BASE/SKILL (...)`` or ``task skills (...)``), for the reports to name it beside ``config``'s content
    hash. Outside ``config``: a path of this machine must not change the configuration hash. Empty
    without skills, and in records written before it was recorded."""
    expected_skills: tuple[str, ...] = ()
    """The skills the trial was expected to invoke (scaffold.rubrics.expected: the task's required
    skills the treatment installs, else DYNAMIC_SKILL's and TASK_SKILLS' skills under test), when it was
    scored and its agent can invoke skills; empty otherwise, and in records written before it was recorded.
    The reports' "skill used in x of y trials" counts these trials."""
    skill_evidence: bool = False
    """The trial's agent reports the skills it uses (its trajectory's ``skills_invoked``), so a skill
    loaded under a treatment that installs none is seen (the reports call it a leak); False for an agent
    that cannot say, and in records written before it was recorded."""
    noise: NoiseVerdict
    """Required: a record without one (written before classification existed) is brought up to date
    when it is read (scaffold.records.files.upgrade)."""
    streams: tuple[str, ...]
    """Names of the agent's raw stream files in the trial folder (``agent.*``), listed when the record is
    written so reports need not list 100,000 folders. Required, as ``noise`` is."""
    attempts: tuple[AttemptInfo, ...] = ()
    """The earlier attempts of this trial, first first: each was excluded as retryable noise and run
    again (scaffold.trial.runner); this record is the last attempt's. Empty when the first attempt counted
    (and in records written before retries existed)."""
    self_written: SelfWrittenInfo | None = None
    """The pre-phase of a self-written treatment (its skills, tokens and cost); None for every other one."""

    @property
    def cost_of_attempts_usd(self) -> float | None:
        """What every attempt of the trial cost, this one and the earlier ones, and the self-written
        pre-phase (what a budget spends); None when none reported a cost."""
        costs = [a.cost_usd for a in self.attempts]
        costs.append(self.trajectory.cost_usd if self.trajectory is not None else None)
        written = self.self_written.trajectory if self.self_written is not None else None
        costs.append(written.cost_usd if written is not None else None)
        known = [c for c in costs if c is not None]
        return sum(known) if known else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: plain data (lists, not tuples) in field order; the trajectory also carries
        ``tool_call_count``."""
        return self._counted(plain(self))

    def to_builtins(self) -> dict[str, Any]:
        """The same data with tuples left as tuples: what a JSON encoder needs, without the copy into lists."""
        return self._counted(msgspec.to_builtins(self))

    def _counted(self, data: dict[str, Any]) -> dict[str, Any]:
        if self.trajectory is not None:
            self.trajectory.counted(data["trajectory"])
        return data


_DECODER: Final = msgspec.json.Decoder(TrialRecord)


def decode_record(data: bytes) -> TrialRecord:
    """The record in *data* when it is a complete, well-typed record of the current shape.

    Raises ``msgspec.DecodeError`` (not JSON msgspec accepts, e.g. NaN) or ``msgspec.ValidationError``
    (a field missing or of the wrong type); scaffold.records.files then tries the slower way that
    upgrades older shapes and names the field for the user.
    """
    return _DECODER.decode(data)
