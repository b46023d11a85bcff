"""Noise classification: is a trial experimental signal (``included``), suspect (``flagged``) or
environment noise (``excluded``)? The original Comet eval's "去噪口径": excluded trials leave the headline statistics.
So do the trials a harness or task error left unmeasured (``TASK_ERROR_REASONS``: a task image that cannot
be built, a CONTROL image holding a skill, a verifier that wrote no reward): excluded too, never counted as
failures, but not noise, and counted apart from it in the reports' data quality.

Structured signals decide first, in this order, and text is only a fallback:

1. record errors typed as workspace/container failures (``WorkspaceError``, docker SDK errors) and
   harness timeouts (``TimeoutError``) -> excluded (container failure, runner timeout); a task image whose
   Dockerfile fails at a step (``ImageBuildError``: ``build_failed``), a Harbor task's CONTROL image
   holding a skill (``skill_leak``) or verifier writing no reward (``missing_reward``);
2. the trajectory's typed API failures (streams.failures) that ended the run -> excluded (rate
   limited, authentication failure, API timeout, network failure, API error);
3. timeouts. The agent's time budget is the task's ``environment.timeout_sec``
   (``config.timeouts.agent_s``): an agent that used it up and was stopped failed the task itself,
   a real result, so it stays **included**. A stop well before that budget was the harness's doing
   (outer runner timeout, a backend's limit) -> excluded as **runner timeout**;
4. exit codes the agent cannot cause by its work: 126/127 (CLI could not start) and a kill by
   signal without a timeout -> excluded (container failure);
5. text fallback over error messages and the final text, with conservative patterns: on a run that
   did not finish it excludes, on a finished run it only flags.

Flagged (kept in the statistics, shown in reports): a completed run that recovered from API failures
or mentions an outer failure, a suspected harness trigger (permission denials by the harness, a
harness error of no known infrastructure type), a validator assumption (a validation script that
crashed, timed out or reported nothing instead of reporting checks), partial observability
(malformed stream lines, missing telemetry for an agent that reports it, no trajectory at all).

Pure: reads a record, returns a verdict with the evidence that decided.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from scaffold.agents.builtin import BUILTIN_TRAITS
from scaffold.records import NoiseVerdict, TrialRecord
from scaffold.trajectory import ApiFailure, Trajectory
from scaffold.util.plain import plain
from scaffold.validation.results import ValidationCheck

__all__ = [
    "EXCLUDED_REASONS",
    "FLAGGED_REASONS",
    "RETRYABLE_REASONS",
    "TASK_ERROR_REASONS",
    "UNCLASSIFIED",
    "classify",
    "retryable",
]

Source = Literal["structured", "text"]

EXCLUDED_REASONS: Final = (
    "rate_limited",
    "api_timeout",
    "runner_timeout",
    "container_failure",
    "auth_failed",
    "network_failed",
    "api_error",
    "skill_leak",
    "missing_reward",
    "build_failed",
)
TASK_ERROR_REASONS: Final = frozenset({"build_failed", "skill_leak", "missing_reward"})
"""Excluded reasons that are harness or task errors, not environment noise: the trial could not measure
anything, and would not on another attempt (the task's image cannot be built, its CONTROL image holds a
skill, its verifier writes no reward). Excluded from the analysis set like noise, counted apart from it."""
RETRYABLE_REASONS: Final = frozenset(
    {"rate_limited", "api_timeout", "runner_timeout", "container_failure", "network_failed", "api_error"}
)
"""Excluded reasons a fresh attempt may well not meet again (``--retry-excluded``): the provider's or the
network's weather, a container or an engine that broke, the harness's own clock. Never retried:
``auth_failed`` (the same key is refused again), ``skill_leak`` (the image holds a skill, every time),
``missing_reward`` (the task's verifier writes none) and ``build_failed`` (a step of the task's Dockerfile
fails, every time): retrying them spends budget to learn nothing.
``api_error`` only when the API did not refuse the request itself (:func:`retryable`)."""
FLAGGED_REASONS: Final = (
    "outer_failure_mentioned",
    "suspected_harness_trigger",
    "validator_assumption",
    "partial_observability",
)
UNCLASSIFIED: Final = NoiseVerdict("included", "unclassified")
"""The noise of a record not yet classified: what the runner builds a record with before it classifies
the finished record (and what an upgraded record holds until it is classified). Never written."""

_CONTAINER_TYPES: Final = frozenset(
    {"WorkspaceError", "DockerException", "APIError", "ContainerError", "ImageNotFound"}
)
_ENGINE_CONNECTION_TYPES: Final = frozenset({"ConnectionError", "ChunkedEncodingError", "ProtocolError"})
"""What the Docker SDK raises when the connection to its engine breaks (requests' and urllib3's types):
with an engine recorded, the engine went away under the trial, whatever the harness was doing then."""
_HARNESS_TYPES: Final = {
    "SkillLeakError": "skill_leak",
    "VerifierError": "missing_reward",
    "ImageBuildError": "build_failed",
}
"""Harness or task errors that say nothing of the agent: a CONTROL image that holds a skill (the comparison
would be unfair), a verifier that wrote no reward (nothing was measured), a task image that cannot be
built (nothing could run). Decided before the container types: each is a WorkspaceError too."""
_TIMEOUT_TYPES: Final = frozenset({"TimeoutError", "TimeoutExpired", "Timeout", "ReadTimeout"})
# A run stopped before this share of its budget was stopped by the harness, not by its own slowness.
_BUDGET_SHARE: Final = 0.9
_SIGNAL_EXITS: Final = frozenset({-9, -15, 137, 143})
_START_EXITS: Final = frozenset({126, 127})

# Text fallback: the fixed wordings of CLIs, SDKs and the Docker engine, never vague words like "error".
_TEXT_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("rate_limited", re.compile(r"(?i)\b429\b|rate[ _-]?limit(?:ed| exceeded|_error)|too many requests")),
    (
        "auth_failed",
        re.compile(r"(?i)\b401\b.{0,40}unauthori[sz]ed|authentication_error|failed to authenticate|invalid x-api-key"),
    ),
    (
        "network_failed",
        re.compile(
            # Error codes as words: "ModuleNotFoundError" holds "enotfound" and is no network failure.
            r"(?i)\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN)\b|unable to connect to api|connection refused"
            r"|NetworkAttemptError|network attempt failed"  # Qoder's CLI, when its service is unreachable
        ),
    ),
    ("api_timeout", re.compile(r"(?i)ETIMEDOUT|request timed out|APITimeoutError|\b504 gateway")),
    (
        "container_failure",
        re.compile(r"(?i)cannot connect to the docker daemon|OCI runtime|no space left on device|OOMKilled"),
    ),
)
# A script that exits non-zero on an assertion reports a failed check its own way; any other exception
# (ImportError, FileNotFoundError, ...) means the script's assumptions about the environment broke.
_VALIDATOR_REASONS: Final = re.compile(
    r"^(?:timed out after|not valid JSON|reported no checks|'\w+' must be a list|a check needs"
    r"|exited with code -?\d+: (?!AssertionError)\w*(?:Error|Exception)\b)"
)


_INCLUDED = NoiseVerdict("included", "")
# What a record without a trajectory reads as: nothing completed late, nothing failed, nothing said.
_NONE: Final = Trajectory(agent="")


def classify(record: TrialRecord) -> NoiseVerdict:
    """The noise verdict of one trial (see the module docstring for the order of the rules)."""
    traj = record.trajectory or _NONE
    for rule in (_record_errors, _api_failures, _timeouts, _exit_codes):
        verdict = rule(record, traj)
        if verdict is not None:
            return verdict
    finished = record.verdict != "error" and traj.completed and not traj.timed_out
    text = _text_match(_texts(record, traj))
    if text is not None and not finished:
        return NoiseVerdict("excluded", text[0], "text", {"pattern": text[0], "text": text[1], "where": text[2]})
    return _flags(record, traj, text) or _INCLUDED


def retryable(noise: NoiseVerdict) -> bool:
    """Whether a trial with this noise verdict is worth another attempt: excluded for a reason of
    RETRYABLE_REASONS, and for ``api_error`` not a 4xx answer (a request the API refused as malformed, or
    a model it does not know, is refused again)."""
    if noise.category != "excluded" or noise.reason not in RETRYABLE_REASONS:
        return False
    if noise.reason == "api_error":
        failure = noise.evidence.get("failure")
        status = failure.get("status") if isinstance(failure, Mapping) else None
        return not (isinstance(status, int) and 400 <= status < 500)
    return True


def _excluded(reason: str, **evidence: Any) -> NoiseVerdict:
    return NoiseVerdict("excluded", reason, "structured", evidence)


def _flagged(reason: str, source: Source = "structured", **evidence: Any) -> NoiseVerdict:
    return NoiseVerdict("flagged", reason, source, evidence)


def _record_errors(record: TrialRecord, traj: Trajectory) -> NoiseVerdict | None:
    for error in record.errors:
        if error.type in _HARNESS_TYPES:
            return _excluded(_HARNESS_TYPES[error.type], error=plain(error))
        if error.type in _TIMEOUT_TYPES:
            return _excluded("runner_timeout", error=plain(error))
        engine = record.workspace.engine
        if error.type in _CONTAINER_TYPES or (engine and error.type in _ENGINE_CONNECTION_TYPES):
            if engine:  # which engine of a pool failed: an engine that died names itself
                return _excluded("container_failure", error=plain(error), engine=engine)
            return _excluded("container_failure", error=plain(error))
    return None


def _api_failures(record: TrialRecord, traj: Trajectory) -> NoiseVerdict | None:
    failures = traj.failures
    final = [f for f in failures if f.final]
    if final:
        return _excluded(_reason_of(final[-1]), failure=plain(final[-1]), failures=len(failures))
    # Retries and then no result at all (Codex waits for the network until it is killed): the
    # failure it was retrying is what stopped the run.
    if failures and (not traj.completed or traj.timed_out):
        return _excluded(_reason_of(failures[-1]), failure=plain(failures[-1]), failures=len(failures), recovered=False)
    return None


def _reason_of(failure: ApiFailure) -> str:
    return failure.kind if failure.kind in EXCLUDED_REASONS else "api_error"


def _timeouts(record: TrialRecord, traj: Trajectory) -> NoiseVerdict | None:
    if not traj.timed_out:
        return None
    budget = (record.config.get("timeouts") or {}).get("agent_s")
    used = float(traj.duration_s or 0.0)
    evidence = {"agent_budget_s": budget, "agent_duration_s": used}
    if isinstance(budget, (int, float)) and used >= _BUDGET_SHARE * budget:
        # The agent exceeded the task's own time budget: a real failure, counted.
        return NoiseVerdict("included", "agent_exceeded_task_budget", "structured", evidence)
    return _excluded("runner_timeout", **evidence)


def _exit_codes(record: TrialRecord, traj: Trajectory) -> NoiseVerdict | None:
    code = traj.exit_code
    if code in _START_EXITS:
        return _excluded("container_failure", exit_code=code, why="the agent CLI could not start")
    if code in _SIGNAL_EXITS and not traj.timed_out:
        return _excluded("container_failure", exit_code=code, why="the agent was killed by a signal it did not ask for")
    return None


def _texts(record: TrialRecord, traj: Trajectory) -> list[tuple[str, str]]:
    found = [(f"errors[{i}]", f"{e.type}: {e.message}") for i, e in enumerate(record.errors)]
    found += [(f"trajectory.errors[{i}]", e) for i, e in enumerate(traj.errors)]
    if traj.final_text:
        found.append(("trajectory.final_text", traj.final_text))
    return found


def _text_match(texts: list[tuple[str, str]]) -> tuple[str, str, str] | None:
    """(reason, the matched excerpt, where) of the first conservative pattern that matches."""
    for reason, pattern in _TEXT_PATTERNS:
        for where, text in texts:
            m = pattern.search(text)
            if m:
                start = max(0, m.start() - 60)
                return reason, text[start : m.end() + 60], where
    return None


def _flags(record: TrialRecord, traj: Trajectory, text: tuple[str, str, str] | None) -> NoiseVerdict | None:
    if traj.failures:
        return _flagged("outer_failure_mentioned", recovered_failures=[plain(f) for f in traj.failures][:5])
    if record.errors:
        # An error of no infrastructure type: the harness, not the agent, probably broke the trial.
        return _flagged("suspected_harness_trigger", error=plain(record.errors[0]))
    if traj.permission_denials:
        return _flagged("suspected_harness_trigger", permission_denials=list(traj.permission_denials))
    broken = [plain(c) for c in record.checks if c.status == "failed" and _validator_broke(c)]
    if broken:
        return _flagged("validator_assumption", checks=broken[:5])
    if record.trajectory is None and record.verdict != "error":
        return _flagged("partial_observability", missing="trajectory")
    if traj.malformed_lines:
        return _flagged("partial_observability", malformed_lines=traj.malformed_lines)
    if record.trajectory is not None and traj.tokens is None and _reports_tokens(traj.agent):
        return _flagged("partial_observability", missing="tokens", agent=traj.agent)
    if text is not None:
        return _flagged("outer_failure_mentioned", "text", pattern=text[0], text=text[1], where=text[2])
    return None


def _reports_tokens(agent: str) -> bool:
    """Whether *agent*'s stream reports tokens, so that a finished run without them lost telemetry.
    Known for the built-in agents; a custom adapter's telemetry is not assumed."""
    traits = BUILTIN_TRAITS.get(agent)
    return traits is not None and traits.reports_tokens


def _validator_broke(check: ValidationCheck) -> bool:
    """A script check that failed because the script itself broke, not because the work was wrong."""
    return check.source.startswith("script:") and bool(_VALIDATOR_REASONS.match(check.reason))
