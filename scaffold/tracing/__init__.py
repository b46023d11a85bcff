"""What the LangSmith and Langfuse suites send about a trial: one shape for both services, built from the
finished TrialRecord (and its Task), so a re-upload of an old experiment sends what the live run sent.

Pure: plain data from records. The suites (``langsmith/``, ``langfuse/`` at the top level) and their
reporters turn it into SDK calls. Nothing here holds a credential: records never do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from scaffold.catalog.tasks import Task
from scaffold.records import TrialRecord
from scaffold.rubrics import JUDGE_SOURCE
from scaffold.trajectory import Trajectory

__all__ = [
    "TEXT_LIMIT",
    "Feedback",
    "Observation",
    "case_inputs",
    "feedback",
    "reference_outputs",
    "trajectory_observations",
    "trial_outputs",
]

TEXT_LIMIT: Final = 20_000
"""Characters of any one text sent (a final answer, a tool input): long enough to read, bounded."""


@dataclass(frozen=True, slots=True)
class Feedback:
    """One score of a trial: LangSmith feedback, a Langfuse score. ``key`` without a service prefix:
    ``checks_pass_rate``, ``passed``, ``rubric.<dimension>``, ``judge.<dimension>``."""

    key: str
    value: float
    comment: str = ""
    boolean: bool = False


@dataclass(frozen=True, slots=True)
class Observation:
    """One step of the agent's trajectory, as a child of the trial's trace: ``kind`` is ``turn``,
    ``tool`` (a tool call with its input) or ``command`` (a shell command it ran)."""

    kind: str
    name: str
    index: int
    input: Any = None
    output: Any = None


def _bounded(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def case_inputs(record: TrialRecord, task: Task | None = None) -> dict[str, Any]:
    """The case: task, treatment, difficulty (when the task is known), trial and experiment."""
    out: dict[str, Any] = {"task": record.task, "treatment": record.treatment}
    if task is not None:
        out["difficulty"] = task.spec.metadata.difficulty
    out["trial"] = record.trial
    out["experiment_id"] = record.experiment_id
    return out


def reference_outputs(task: Task) -> dict[str, Any]:
    """What the task expects: its expected artifacts, required skills and rubric criteria."""
    evaluation = task.spec.evaluation
    return {
        "expected_artifacts": list(evaluation.expected_artifacts),
        "required_skills": list(evaluation.required_skills),
        "rubric_criteria": list(evaluation.rubric_criteria),
    }


def trial_outputs(record: TrialRecord) -> dict[str, Any]:
    """The trial's result: verdict, checks passed and failed, turns, tool calls, duration, tokens, cost,
    skills invoked, the rubric's scores and the noise class. None stays None (not reported, not zero)."""
    counted = [c for c in record.checks if c.status != "skipped"]
    passed = sum(c.status == "passed" for c in counted)
    traj = record.trajectory
    tokens = traj.tokens if traj is not None else None
    return {
        "case_id": record.case_id,
        "verdict": record.verdict,
        "passed": record.verdict == "passed",
        "checks_passed": passed,
        "checks_failed": len(counted) - passed,
        "failed_checks": [c.name for c in counted if c.status != "passed"][:20],
        "num_turns": traj.turns if traj is not None else None,
        "tool_calls": len(traj.tool_calls) if traj is not None else None,
        "duration_seconds": record.duration_s,
        "total_tokens": (tokens.input + tokens.output) if tokens is not None else None,
        "total_cost_usd": traj.cost_usd if traj is not None else None,
        "skills_invoked": list(traj.skills_invoked) if traj is not None else [],
        "weighted_score": record.weighted_score,
        "rubric": {d.name: d.score for d in record.dimensions if d.source != JUDGE_SOURCE},
        "noise": {"category": record.noise.category, "reason": record.noise.reason},
        "profile": record.profile,
        "agent": record.agent.name,
        "model": record.agent.model,
        "final_response": _bounded(traj.final_text) if traj is not None else "",
        "errors": [_bounded(f"{e.type}: {e.message}", 2000) for e in record.errors],
    }


def feedback(record: TrialRecord) -> list[Feedback]:
    """Every score of the trial: ``passed`` (boolean), ``checks_pass_rate`` (when a check counted), each
    scored rubric dimension as ``rubric.<name>`` and each judge score as ``judge.<name>`` (N/A ones are
    not sent: a missing score, not a zero)."""
    out = [Feedback("passed", 1.0 if record.verdict == "passed" else 0.0, record.verdict, boolean=True)]
    counted = [c for c in record.checks if c.status != "skipped"]
    if counted:
        passed = sum(c.status == "passed" for c in counted)
        out.append(Feedback("checks_pass_rate", passed / len(counted), f"{passed}/{len(counted)} checks passed"))
    for dim in record.dimensions:
        if dim.score is None:
            continue
        prefix = "judge" if dim.source == JUDGE_SOURCE else "rubric"
        out.append(Feedback(f"{prefix}.{dim.name}", dim.score, _bounded(dim.reason, 500)))
    return out


def trajectory_observations(trajectory: Trajectory | None) -> list[Observation]:
    """The agent's steps from our normalized trajectory, the same for every agent: one ``turn`` per
    conversation turn of an auto_user run (its prompt kind and reply), every tool call with its input,
    every shell command; the final answer as the last turn."""
    if trajectory is None:
        return []
    out: list[Observation] = []
    for i, entry in enumerate(trajectory.interaction_log):
        out.append(Observation("turn", f"turn {i + 1}", i, input=_plain_mapping(entry)))
    for i, call in enumerate(trajectory.tool_calls):
        out.append(Observation("tool", call.name, i, input=_plain_mapping(call.input)))
    for i, command in enumerate(trajectory.commands):
        out.append(Observation("command", _bounded(command, 200), i, input=_bounded(command)))
    if trajectory.final_text:
        out.append(
            Observation("turn", "final answer", len(trajectory.interaction_log), output=_bounded(trajectory.final_text))
        )
    return out


def _plain_mapping(value: Mapping[str, Any]) -> dict[str, Any]:
    """A tool input or log entry with every string bounded (a Write call may carry a whole file)."""
    return {str(k): _bounded(v) if isinstance(v, str) else v for k, v in value.items()}
