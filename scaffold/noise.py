"""Noise classification: is a trial experimental signal (``included``), suspect (``flagged``) or
environment noise (``excluded``)? The seed's "去噪口径": excluded trials leave the headline statistics.

Structured signals decide first, in this order, and text is only a fallback:

1. record errors typed as workspace/container failures (``WorkspaceError``, docker SDK errors) and
   harness timeouts (``TimeoutError``) -> excluded (container failure, runner timeout);
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from scaffold.records import TrialRecord

__all__ = ["EXCLUDED_REASONS", "FLAGGED_REASONS", "NoiseVerdict", "classify"]

Category = Literal["included", "flagged", "excluded"]
Source = Literal["structured", "text"]

EXCLUDED_REASONS: Final = (
    "rate_limited",
    "api_timeout",
    "runner_timeout",
    "container_failure",
    "auth_failed",
    "network_failed",
    "api_error",
)
FLAGGED_REASONS: Final = (
    "outer_failure_mentioned",
    "suspected_harness_trigger",
    "validator_assumption",
    "partial_observability",
)

# Agents whose streams report tokens: missing tokens on a finished run means we lost telemetry.
_TELEMETRY_AGENTS: Final = frozenset({"claude-code", "codex", "qoder", "codebuddy"})
_CONTAINER_TYPES: Final = frozenset(
    {"WorkspaceError", "DockerException", "APIError", "ContainerError", "ImageNotFound"}
)
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
            r"(?i)ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|unable to connect to api|connection refused"
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


@dataclass(frozen=True, slots=True)
class NoiseVerdict:
    category: Category
    reason: str
    source: Source = "structured"
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form stored in trial records as ``noise``."""
        evidence = dict(self.evidence)
        return {"category": self.category, "reason": self.reason, "source": self.source, "evidence": evidence}


_INCLUDED = NoiseVerdict("included", "")


def classify(record: TrialRecord) -> NoiseVerdict:
    """The noise verdict of one trial (see the module docstring for the order of the rules)."""
    traj: Mapping[str, Any] = record.trajectory or {}
    for rule in (_record_errors, _api_failures, _timeouts, _exit_codes):
        verdict = rule(record, traj)
        if verdict is not None:
            return verdict
    finished = record.verdict != "error" and bool(traj.get("completed", True)) and not traj.get("timed_out")
    text = _text_match(_texts(record, traj))
    if text is not None and not finished:
        return NoiseVerdict("excluded", text[0], "text", {"pattern": text[0], "text": text[1], "where": text[2]})
    return _flags(record, traj, text) or _INCLUDED


def _excluded(reason: str, **evidence: Any) -> NoiseVerdict:
    return NoiseVerdict("excluded", reason, "structured", evidence)


def _flagged(reason: str, source: Source = "structured", **evidence: Any) -> NoiseVerdict:
    return NoiseVerdict("flagged", reason, source, evidence)


def _record_errors(record: TrialRecord, traj: Mapping[str, Any]) -> NoiseVerdict | None:
    for error in record.errors:
        kind = str(error.get("type", ""))
        if kind in _TIMEOUT_TYPES:
            return _excluded("runner_timeout", error=dict(error))
        if kind in _CONTAINER_TYPES:
            return _excluded("container_failure", error=dict(error))
    return None


def _api_failures(record: TrialRecord, traj: Mapping[str, Any]) -> NoiseVerdict | None:
    failures: Sequence[Mapping[str, Any]] = traj.get("failures") or ()
    final = [f for f in failures if f.get("final")]
    if final:
        return _excluded(_reason_of(final[-1]), failure=dict(final[-1]), failures=len(failures))
    # Retries and then no result at all (Codex waits for the network until it is killed): the
    # failure it was retrying is what stopped the run.
    if failures and (not traj.get("completed", True) or traj.get("timed_out")):
        return _excluded(_reason_of(failures[-1]), failure=dict(failures[-1]), failures=len(failures), recovered=False)
    return None


def _reason_of(failure: Mapping[str, Any]) -> str:
    kind = str(failure.get("kind", "api_error"))
    return kind if kind in EXCLUDED_REASONS else "api_error"


def _timeouts(record: TrialRecord, traj: Mapping[str, Any]) -> NoiseVerdict | None:
    if not traj.get("timed_out"):
        return None
    budget = (record.config.get("timeouts") or {}).get("agent_s")
    used = float(traj.get("duration_s") or 0.0)
    evidence = {"agent_budget_s": budget, "agent_duration_s": used}
    if isinstance(budget, (int, float)) and used >= _BUDGET_SHARE * budget:
        # The agent exceeded the task's own time budget: a real failure, counted.
        return NoiseVerdict("included", "agent_exceeded_task_budget", "structured", evidence)
    return _excluded("runner_timeout", **evidence)


def _exit_codes(record: TrialRecord, traj: Mapping[str, Any]) -> NoiseVerdict | None:
    code = traj.get("exit_code")
    if code in _START_EXITS:
        return _excluded("container_failure", exit_code=code, why="the agent CLI could not start")
    if code in _SIGNAL_EXITS and not traj.get("timed_out"):
        return _excluded("container_failure", exit_code=code, why="the agent was killed by a signal it did not ask for")
    return None


def _texts(record: TrialRecord, traj: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = [(f"errors[{i}]", f"{e.get('type', '')}: {e.get('message', '')}") for i, e in enumerate(record.errors)]
    found += [(f"trajectory.errors[{i}]", str(e)) for i, e in enumerate(traj.get("errors") or ())]
    if traj.get("final_text"):
        found.append(("trajectory.final_text", str(traj["final_text"])))
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


def _flags(record: TrialRecord, traj: Mapping[str, Any], text: tuple[str, str, str] | None) -> NoiseVerdict | None:
    failures = traj.get("failures") or ()
    if failures:
        return _flagged("outer_failure_mentioned", recovered_failures=[dict(f) for f in failures][:5])
    if record.errors:
        # An error of no infrastructure type: the harness, not the agent, probably broke the trial.
        return _flagged("suspected_harness_trigger", error=dict(record.errors[0]))
    if traj.get("permission_denials"):
        return _flagged("suspected_harness_trigger", permission_denials=list(traj["permission_denials"]))
    broken = [dict(c) for c in record.checks if c.get("status") == "failed" and _validator_broke(c)]
    if broken:
        return _flagged("validator_assumption", checks=broken[:5])
    if record.trajectory is None and record.verdict != "error":
        return _flagged("partial_observability", missing="trajectory")
    if traj.get("malformed_lines"):
        return _flagged("partial_observability", malformed_lines=traj["malformed_lines"])
    if traj and traj.get("tokens") is None and traj.get("agent") in _TELEMETRY_AGENTS:
        return _flagged("partial_observability", missing="tokens", agent=traj.get("agent"))
    if text is not None:
        return _flagged("outer_failure_mentioned", "text", pattern=text[0], text=text[1], where=text[2])
    return None


def _validator_broke(check: Mapping[str, Any]) -> bool:
    """A script check that failed because the script itself broke, not because the work was wrong."""
    return str(check.get("source", "")).startswith("script:") and bool(
        _VALIDATOR_REASONS.match(str(check.get("reason", "")))
    )
