"""What the tracing suites send about a trial (scaffold.tracing): the same shape for LangSmith and Langfuse."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from scaffold.catalog.tasks import Task, TaskSpec
from scaffold.tracing import (
    TEXT_LIMIT,
    Feedback,
    case_inputs,
    feedback,
    reference_outputs,
    trajectory_observations,
    trial_outputs,
)
from tests.support.records import dims, judged, rec

TRAJECTORY = {
    "agent": "claude-code",
    "turns": 3,
    "tool_calls": [{"name": "Skill", "input": {"skill": "s"}}, {"name": "Write", "input": {"content": "x" * 30_000}}],
    "commands": ["pytest -q"],
    "skills_invoked": ["s"],
    "tokens": {"input": 100, "output": 20},
    "cost_usd": 0.01,
    "final_text": "Done.",
}
CHECKS = [
    {"name": "a", "status": "passed", "source": "script:t.py"},
    {"name": "b", "status": "failed", "source": "script:t.py"},
    {"name": "c", "status": "skipped", "source": "script:t.py"},
]


def _task() -> Task:
    spec = TaskSpec.model_validate(
        {
            "metadata": {"name": "t", "difficulty": "hard"},
            "validation": {"target_artifacts": ["x"]},
            "evaluation": {"expected_artifacts": ["out.md"], "required_skills": ["s"], "rubric_criteria": ["clear"]},
        }
    )
    return Task("t", Path("/tasks/t"), spec)


def test_inputs_reference_outputs_and_outputs_of_a_trial() -> None:
    record = rec("t", "SKILL", 2, "failed", trajectory=TRAJECTORY, checks=CHECKS, dimensions=dims(0.5, 1.0))
    assert case_inputs(record, _task()) == {
        "task": "t",
        "treatment": "SKILL",
        "difficulty": "hard",
        "trial": 2,
        "experiment_id": "exp",
    }
    assert reference_outputs(_task()) == {
        "expected_artifacts": ["out.md"],
        "required_skills": ["s"],
        "rubric_criteria": ["clear"],
    }
    out = trial_outputs(record)
    assert out["verdict"] == "failed" and out["passed"] is False
    assert (out["checks_passed"], out["checks_failed"], out["failed_checks"]) == (1, 1, ["b"])
    assert (out["num_turns"], out["tool_calls"], out["total_tokens"], out["total_cost_usd"]) == (3, 2, 120, 0.01)
    assert out["skills_invoked"] == ["s"]
    assert out["rubric"] == {"completion": 0.5, "skill_invocation": 1.0}


def test_an_agent_without_telemetry_sends_none_not_zero() -> None:
    out = trial_outputs(rec("t", "CONTROL", 1, trajectory={"agent": "oracle"}))
    assert out["num_turns"] is None and out["total_tokens"] is None and out["total_cost_usd"] is None
    assert out["tool_calls"] == 0


def test_feedback_holds_every_scored_dimension_and_the_judges() -> None:
    record = rec("t", "CONTROL", 1, checks=CHECKS, dimensions=(*dims(1.0, None), *judged(task_completion=0.75)))
    got = {f.key: f for f in feedback(record)}
    assert got["passed"] == Feedback("passed", 1.0, "passed", boolean=True)
    assert got["checks_pass_rate"].value == 0.5  # the skipped check does not count
    assert got["rubric.completion"].value == 1.0
    assert "rubric.skill_invocation" not in got  # N/A is not sent as a score
    assert got["judge.task_completion"].value == 0.75


def test_no_counted_check_sends_no_pass_rate() -> None:
    assert "checks_pass_rate" not in {f.key for f in feedback(rec("t", "CONTROL", 1))}


def test_the_trajectory_as_child_observations_bounded() -> None:
    record = rec("t", "CONTROL", 1, trajectory=TRAJECTORY)
    steps = trajectory_observations(record.trajectory)
    assert [(s.kind, s.name) for s in steps] == [
        ("tool", "Skill"),
        ("tool", "Write"),
        ("command", "pytest -q"),
        ("turn", "final answer"),
    ]
    written = steps[1].input["content"]
    assert len(written) < 30_000 and written.startswith("x" * TEXT_LIMIT) and "more characters" in written
    assert trajectory_observations(None) == []


@given(st.text(max_size=50_000))
def test_every_text_sent_is_bounded(text: str) -> None:
    record = rec("t", "CONTROL", 1, trajectory={"agent": "a", "final_text": text, "commands": [text]})
    assert len(trial_outputs(record)["final_response"]) <= TEXT_LIMIT + 40
    for step in trajectory_observations(record.trajectory):
        for value in (step.input, step.output):
            assert value is None or len(value) <= TEXT_LIMIT + 40
