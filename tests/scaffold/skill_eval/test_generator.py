"""Which of the generator's texts is accepted, and what error a failed attempt hands to the repair."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scaffold.skill_eval.generator import _accept
from scaffold.skill_eval.prompt import OUTPUT_FILE, REPAIR_MARKER, SKILL_DIR, generator_prompt
from scaffold.skill_eval.snapshot import SkillSnapshot, SkillSnapshotFile
from scaffold.trajectory import Trajectory

TASKS = [
    {"name": "a", "prompt": "Write a.md", "expect": {"files": ["a.md"]}},
    {"name": "b", "prompt": "Write b.md", "expect": {"files": ["b.md"]}},
]
OK = Trajectory(agent="claude-code", exit_code=0)


def _accept_all(tasks: list[Any]) -> list[str]:
    return []


def test_the_file_first_then_the_final_text() -> None:
    tasks, error, source = _accept(
        OK, [(OUTPUT_FILE, "not json"), ("final_text", json.dumps({"tasks": TASKS}))], _accept_all
    )
    assert tasks == TASKS and error is None and source == "final_text"


def test_the_validators_problems_are_the_error_to_repair() -> None:
    tasks, error, _ = _accept(
        OK,
        [(OUTPUT_FILE, json.dumps({"tasks": TASKS}))],
        lambda t: ["evaluation.tasks[0].expect.files[0]: must stay inside"],
    )
    assert tasks is None and error is not None
    assert "evaluation.tasks[0].expect.files[0]: must stay inside" in error


def test_a_failed_agent_without_answer() -> None:
    failed = Trajectory(agent="codex", exit_code=2, errors=("API error 500",))
    assert _accept(failed, [], _accept_all)[1] == "task_generation: the generator agent failed (exit 2): API error 500"
    timed_out = Trajectory(agent="codex", exit_code=None, timed_out=True)
    assert "timed out" in (_accept(timed_out, [], _accept_all)[1] or "")
    assert _accept(OK, [], _accept_all)[1] == "task_generation: the generator did not return JSON"


def test_prompt_inlines_within_budget_and_carries_the_repair() -> None:
    small = SkillSnapshotFile("SKILL.md", "# Skill\n", "sha256:" + "1" * 64)
    big = SkillSnapshotFile("references/big.md", "x" * (60 * 1024), "sha256:" + "2" * 64)
    snap = SkillSnapshot(root=Path("/s"), files=(small, big), hash="sha256:" + "3" * 64)
    first = generator_prompt(snap, skill_name="s", profile=None, previous_error=None)
    assert "# Skill" in first and "x" * 1000 not in first and f"{SKILL_DIR}/references/big.md" in first
    assert OUTPUT_FILE in first and REPAIR_MARKER not in first and len(first.encode()) < 128 * 1024
    again = generator_prompt(snap, skill_name="s", profile="generic", previous_error="tasks[0].name: bad")
    assert REPAIR_MARKER in again and "tasks[0].name: bad" in again
