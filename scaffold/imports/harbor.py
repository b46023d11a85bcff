"""Read a Harbor job folder (``jobs/<job>/``) as trials of ours: one record per ``<trial>/result.json``.

Harbor's result files are plain JSON with a published schema (``harbor.models.trial.result.TrialResult``,
``schema_version`` 1 as Harbor 0.26.0 writes it). Harbor itself needs Python 3.12 or later and brings a
large dependency tree, so the fields used here are declared as msgspec structs of that schema instead
of importing its models; unknown fields are ignored, so newer results within schema version 1 still read.
tests/data/imports/harbor holds jobs written by Harbor 0.26.0 itself (tests/data/imports/README.md).

What a trial becomes (docs/imports.md has the table):

- task: ``task_name``; treatment: the agent's name, then each skill it was given after a dot
  (``oracle.zrx7-checksum``; ``oracle`` without skills), unless the caller names it (``--as``);
  trial: 1, 2, ... per task in the order the trials started (Harbor's ``n_attempts`` copies have no
  index of their own);
- the verdict from ``verifier_result.rewards`` by our rule (scaffold.imports.common); the rewards' one
  number as scaffold.validation.harbor.reward_of picks it;
- errors (``exception_info``, then each step's) become noise by Harbor's own error types (its error
  policy: scaffold.imports.harbor's ``_EXCLUDED``); an error Harbor does not type is left to our classifier.

Reads files only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from scaffold.imports.common import (
    SourceTrial,
    duration_between,
    endpoint_of,
    error_of,
    treatment_name,
)
from scaffold.records import AgentInfo, NoiseVerdict
from scaffold.reports.model import UnreadableRecord
from scaffold.trajectory import TokenUsage
from scaffold.validation.harbor import reward_of

__all__ = ["RESULT_FILE", "HarborResult", "is_job", "job_folders", "read_job"]

RESULT_FILE: Final = "result.json"
_JOB_CONFIG: Final = "config.json"

# Harbor's error types (harbor.models.trial.error_policy, 0.26.0) that say why a trial measured nothing
# about the agent, as our noise reasons (scaffold.records.noise). Its other typed errors keep the trial:
# an agent that ran out of its time or context (AgentTimeoutError, ContextWindowExceededError, ...) failed
# the task itself and was graded, as our own runs count it.
_EXCLUDED: Final[Mapping[str, str]] = {
    **dict.fromkeys(("ApiRateLimitError", "RateLimitError", "ApiUsageLimitError"), "rate_limited"),
    **dict.fromkeys(("AgentAuthenticationError", "AuthenticationError", "PermissionDeniedError"), "auth_failed"),
    **dict.fromkeys(
        ("NetworkConnectionError", "ApiConnectionError", "APIConnectionError", "ApiConnectionClosedError"),
        "network_failed",
    ),
    **dict.fromkeys(("Timeout", "ApiResponseStalledError"), "api_timeout"),
    **dict.fromkeys(
        (
            "ApiError",
            "ApiInternalServerError",
            "ApiOverloadedError",
            "UnknownApiError",
            "InternalServerError",
            "ServiceUnavailableError",
            "APIError",
            "ModelNotFoundError",
            "ApiProviderResourceNotFoundError",
            "NotFoundError",
        ),
        "api_error",
    ),
    "SandboxBuildFailedError": "build_failed",
    **dict.fromkeys(
        (
            "EnvironmentStartTimeoutError",
            "AgentSetupTimeoutError",
            "HealthcheckError",
            "SandboxLikelyOutOfMemoryError",
            "MemoryLimitExceededError",
            "SSHAccessError",
            "GKEExecStreamClosedError",
            "GKEPodNotFoundError",
            "RuntimeRequestError",
            "AddTestsDirError",
            "DownloadVerifierDirError",
        ),
        "container_failure",
    ),
    **dict.fromkeys(("RewardFileNotFoundError", "RewardFileEmptyError", "VerifierOutputParseError"), "missing_reward"),
}
_AGENT_OWN: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        (
            "AgentTimeoutError",
            "ContextWindowExceededError",
            "ContextLengthExceededError",
            "OutputTokenExceededError",
            "OutputLengthExceededError",
        ),
        "agent_exceeded_task_budget",
    ),
    **dict.fromkeys(("NonZeroAgentExitCodeError", "AgentSafetyRefusalError", "ContentPolicyViolationError"), ""),
}
"""The errors Harbor grades with a valid reward: the agent's own doing (its time, its context, its exit),
kept in the statistics as our runs keep an agent that used up its time budget."""
_VALIDATOR_TYPES: Final = frozenset({"VerifierTimeoutError"})
"""A verifier that ran out of time: graded 0 by Harbor, kept and flagged as our validator assumptions are."""


# --- Harbor's result.json (TrialResult, schema_version 1), the fields read ------------------------------


class _Timing(msgspec.Struct, frozen=True):
    started_at: str | None = None
    finished_at: str | None = None


class _Exception(msgspec.Struct, frozen=True):
    exception_type: str
    exception_message: str = ""


class _ModelInfo(msgspec.Struct, frozen=True):
    name: str
    provider: str | None = None


class _AgentInfo(msgspec.Struct, frozen=True):
    name: str
    version: str | None = None
    model_info: _ModelInfo | None = None


class _AgentContext(msgspec.Struct, frozen=True):
    n_input_tokens: int | None = None
    """Input tokens including the cached ones (Harbor's AgentContext)."""
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None


class _Verifier(msgspec.Struct, frozen=True):
    rewards: dict[str, float] | None = None


class _Step(msgspec.Struct, frozen=True):
    agent_result: _AgentContext | None = None
    exception_info: _Exception | None = None


class _AgentConfig(msgspec.Struct, frozen=True):
    name: str | None = None
    import_path: str | None = None
    model_name: str | None = None
    skills: list[str] = []


class _EnvironmentConfig(msgspec.Struct, frozen=True):
    type: str | None = None
    import_path: str | None = None


class _TrialConfig(msgspec.Struct, frozen=True):
    agent: _AgentConfig = _AgentConfig()
    environment: _EnvironmentConfig = _EnvironmentConfig()
    job_id: str | None = None


class HarborResult(msgspec.Struct, frozen=True):
    """The fields of Harbor's ``TrialResult`` this importer reads."""

    task_name: str
    trial_name: str
    schema_version: int = 1
    task_checksum: str = ""
    config: _TrialConfig = _TrialConfig()
    agent_info: _AgentInfo | None = None
    agent_result: _AgentContext | None = None
    verifier_result: _Verifier | None = None
    exception_info: _Exception | None = None
    started_at: str | None = None
    finished_at: str | None = None
    environment_setup: _Timing | None = None
    agent_setup: _Timing | None = None
    agent_execution: _Timing | None = None
    verifier: _Timing | None = None
    step_results: list[_Step] | None = None


class _JobConfig(msgspec.Struct, frozen=True):
    job_name: str


_RESULT: Final = msgspec.json.Decoder(HarborResult)
_JOB: Final = msgspec.json.Decoder(_JobConfig)


# --- finding jobs ------------------------------------------------------------------------------------------


def is_job(path: Path) -> bool:
    """Whether *path* is a Harbor job folder: its ``config.json`` names the job (Harbor writes it when the
    job starts; a trial's config.json names a trial, not a job)."""
    return path.is_dir() and _job_name(path) is not None


def job_folders(path: Path) -> list[Path]:
    """The job folders *path* stands for: itself, or each job of a jobs folder (``harbor run -o DIR``)."""
    if is_job(path):
        return [path]
    if path.is_dir():
        return sorted(child for child in path.iterdir() if is_job(child))
    return []


def read_job(job: Path, *, treatment: str | None = None) -> tuple[list[SourceTrial], list[UnreadableRecord]]:
    """Every trial of *job* whose ``result.json`` can be read; the others as problems (a trial still
    running has none yet). *treatment*: the name every trial gets, instead of the agent and its skills."""
    job_name = _job_name(job) or job.name
    trials: list[SourceTrial] = []
    problems: list[UnreadableRecord] = []
    for folder in _trial_folders(job):
        path = folder / RESULT_FILE
        try:
            result = _RESULT.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError) as exc:
            problems.append(UnreadableRecord(os.fspath(path), _field(exc), _reason(exc)))
            continue
        if result.schema_version != 1:
            reason = f"Harbor result schema_version {result.schema_version}; this release reads version 1"
            problems.append(UnreadableRecord(os.fspath(path), "$.schema_version", reason))
            continue
        trials.append(_trial(job_name, result, treatment))
    return trials, problems


def _trial_folders(job: Path) -> Iterator[Path]:
    try:
        children = sorted(job.iterdir())
    except OSError:
        return
    for child in children:
        if child.is_dir() and (child / RESULT_FILE).is_file():
            yield child


def _job_name(job: Path) -> str | None:
    try:
        return _JOB.decode((job / _JOB_CONFIG).read_bytes()).job_name
    except (OSError, msgspec.DecodeError):
        return None


def _field(exc: Exception) -> str | None:
    message = str(exc)
    marker = "at `"
    if marker in message:
        return message.split(marker, 1)[1].split("`", 1)[0]
    return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"not a Harbor trial result: {str(exc).split(' - at `', 1)[0]}"


# --- one trial ---------------------------------------------------------------------------------------------


def _trial(job_name: str, result: HarborResult, treatment: str | None) -> SourceTrial:
    agent_config = result.config.agent
    info = result.agent_info
    name = info.name if info is not None else (agent_config.name or agent_config.import_path or "agent")
    model = None
    if info is not None and info.model_info is not None:
        model_info = info.model_info
        model = f"{model_info.provider}/{model_info.name}" if model_info.provider else model_info.name
    elif agent_config.model_name:
        model = agent_config.model_name
    skills = [Path(s).name for s in agent_config.skills]
    environment = result.config.environment.type or result.config.environment.import_path or ""
    config = {
        "source": "harbor",
        "job": job_name,
        "agent": {"name": name, "model": model, "skills": sorted(skills)},
        "environment": environment,
        "task": {"name": result.task_name, "content_hash": result.task_checksum or None},
    }
    score, where = None, "no reward"
    rewards = result.verifier_result.rewards if result.verifier_result is not None else None
    if rewards:
        score, where = reward_of(rewards, "verifier_result.rewards")
    errors = [e for e in (result.exception_info, *(s.exception_info for s in result.step_results or ())) if e]
    return SourceTrial(
        experiment_id=job_name,
        case_id=result.trial_name,
        task=result.task_name,
        treatment=treatment if treatment is not None else treatment_name(name, *sorted(skills)),
        config=config,
        score=score,
        check="reward",
        score_source=where,
        agent=AgentInfo(
            name=name, model=model, version=info.version if info else None, endpoint=endpoint_of(name, model)
        ),
        backend=environment,
        started_at=result.started_at or "",
        finished_at=result.finished_at or "",
        duration_s=duration_between(result.started_at, result.finished_at),
        phases=_phases(result),
        tokens=_tokens(result),
        cost_usd=_cost(result),
        errors=tuple(error_of(e.exception_type, e.exception_message) for e in errors),
        noise=_noise(result, errors, score),
        order=result.started_at or "",
    )


def _phases(result: HarborResult) -> dict[str, float]:
    """Harbor's phases under our phase names where they mean the same (environment -> workspace)."""
    phases = {}
    for name, timing in (
        ("workspace_s", result.environment_setup),
        ("agent_setup_s", result.agent_setup),
        ("agent_s", result.agent_execution),
        ("validation_s", result.verifier),
    ):
        if timing is not None and timing.started_at and timing.finished_at:
            phases[name] = duration_between(timing.started_at, timing.finished_at)
    return phases


def _contexts(result: HarborResult) -> list[_AgentContext]:
    # Multi-step trials record one context per step instead of the trial's (Harbor's own totals do this).
    if result.agent_result is not None:
        return [result.agent_result]
    return [s.agent_result for s in result.step_results or () if s.agent_result is not None]


def _tokens(result: HarborResult) -> TokenUsage | None:
    contexts = [c for c in _contexts(result) if c.n_input_tokens is not None or c.n_output_tokens is not None]
    if not contexts:
        return None
    cache = sum(c.n_cache_tokens or 0 for c in contexts)
    # Harbor's input count includes the cached tokens; ours counts them apart (cache_read).
    total_input = sum(c.n_input_tokens or 0 for c in contexts)
    return TokenUsage(
        input=max(total_input - cache, 0),
        output=sum(c.n_output_tokens or 0 for c in contexts),
        cache_read=cache,
    )


def _cost(result: HarborResult) -> float | None:
    costs = [c.cost_usd for c in _contexts(result) if c.cost_usd is not None]
    return sum(costs) if costs else None


def _noise(result: HarborResult, errors: list[_Exception], score: float | None) -> NoiseVerdict | None:
    """Harbor's typed reason, when an error says why; None leaves the trial to our classifier."""
    for error in errors:
        typed = {"error": {"type": error.exception_type}, "source": "harbor exception_info"}
        if error.exception_type in _EXCLUDED:
            return NoiseVerdict("excluded", _EXCLUDED[error.exception_type], "structured", typed)
        if error.exception_type in _VALIDATOR_TYPES:
            return NoiseVerdict("flagged", "validator_assumption", "structured", typed)
        if error.exception_type in _AGENT_OWN:
            return NoiseVerdict("included", _AGENT_OWN[error.exception_type], "structured", typed)
    if errors and score is None and result.agent_execution is None:
        # The agent never started: the environment did not come up. Harbor's local docker environment
        # raises a plain RuntimeError naming the compose command that failed; its build is a task error.
        evidence: dict[str, Any] = {"error": {"type": errors[0].exception_type}, "phase": "environment_setup"}
        command = _failed_compose_command(errors[0].exception_message)
        if command == "build":
            return NoiseVerdict("excluded", "build_failed", "text", {**evidence, "command": command})
        return NoiseVerdict("excluded", "container_failure", "structured", evidence)
    return None


def _failed_compose_command(message: str) -> str | None:
    """The compose subcommand a Harbor 'Docker compose command failed' message names (its last word)."""
    head = message.split(". Return code:", 1)[0]
    if not head.startswith("Docker compose command failed") or "Command: " not in head:
        return None
    words = head.split("Command: ", 1)[1].split()
    return words[-1] if words else None
