"""A task's own skill installed under a folder its SKILL.md does not name: reading
``.../skills/<folder>/SKILL.md`` is a use of the skill with the frontmatter's name, as a ``Skill`` call is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scaffold.agents.base import AgentRequest
from scaffold.agents.conversation import converse
from scaffold.agents.streams.claude import parse_claude_stream
from scaffold.agents.streams.codex import parse_codex_stream
from scaffold.agents.streams.events import skills_by_name
from scaffold.catalog.tasks import Task, load_task
from scaffold.catalog.treatments import TASK_SKILLS, SkillRef, Treatment, task_treatment
from scaffold.rubrics import RubricInput
from scaffold.rubrics.expected import expected_skills, matching
from scaffold.rubrics.generic import score
from scaffold.trajectory import Trajectory
from scaffold.validation.results import ValidationOutcome
from scaffold.workspaces.base import Workspace

SESSION = "5d1b3c1e-7a0b-4c9e-9d2f-6f1a2b3c4d5e"
FOLDER = "lightcurve-detrend"
NAME = "light-curve-preprocessing"


def skillsbench_task(root: Path) -> Task:
    """A SkillsBench-shaped task whose one skill's folder and frontmatter name differ."""
    folder = root / "exoplanet-like"
    skill = folder / "environment" / "skills" / FOLDER
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {NAME}\ndescription: Detrend a light curve.\n---\n# Detrend\n")
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY skills /root/.claude/skills\n")
    (folder / "tests").mkdir()
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (folder / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 600\n')
    (folder / "instruction.md").write_text("Find the planet's period.\n")
    return load_task(folder)


def claude_transcript() -> list[str]:
    """Claude Code's stream-json as it reads a skill's file: init, a Read tool call, its result, the end."""
    events: list[dict[str, Any]] = [
        {
            "type": "system",
            "subtype": "init",
            "session_id": SESSION,
            "claude_code_version": "2.1.112",
            "cwd": "/root",
            "skills": [NAME],
            "tools": ["Bash", "Read", "Skill"],
        },
        {
            "type": "assistant",
            "session_id": SESSION,
            "parent_tool_use_id": None,
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "I'll read the detrending skill first."}],
                "usage": {"input_tokens": 900, "output_tokens": 12},
            },
        },
        {
            "type": "assistant",
            "session_id": SESSION,
            "parent_tool_use_id": None,
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01Read",
                        "name": "Read",
                        "input": {"file_path": f"/root/.claude/skills/{FOLDER}/SKILL.md"},
                    }
                ],
                "usage": {"input_tokens": 900, "output_tokens": 40},
            },
        },
        {
            "type": "user",
            "session_id": SESSION,
            "parent_tool_use_id": None,
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": "toolu_01Read",
                        "type": "tool_result",
                        "content": f"     1\t---\n     2\tname: {NAME}\n     3\t---\n     4\t# Detrend\n",
                    }
                ],
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "session_id": SESSION,
            "num_turns": 2,
            "result": "The period is 3.52 days.",
            "total_cost_usd": 0.01,
            "usage": {"input_tokens": 1800, "output_tokens": 52},
        },
    ]
    return [json.dumps(event) + "\n" for event in events]


class _Turns:
    """A TurnTaker that answers with one parsed transcript."""

    name = "claude-code"

    def __init__(self, trajectory: Trajectory) -> None:
        self.trajectory = trajectory

    def turn(self, workspace: Workspace, request: AgentRequest, prompt: str, **_: Any) -> Trajectory:
        return self.trajectory


def test_the_task_treatment_names_the_skill_by_its_frontmatter_and_installs_it_under_its_folder(
    tmp_path: Path,
) -> None:
    treatment = task_treatment(skillsbench_task(tmp_path).skills_dir)
    (skill,) = treatment.skills
    assert (skill.name, skill.folder_name) == (NAME, FOLDER)
    assert treatment.names_by_folder == {FOLDER: NAME}


def test_a_read_of_the_skill_file_by_its_folder_is_a_use_of_the_named_skill(tmp_path: Path) -> None:
    task = skillsbench_task(tmp_path)
    treatment = task_treatment(task.skills_dir)
    parsed = parse_claude_stream(claude_transcript())
    assert parsed.skills_invoked == (FOLDER,)  # the stream alone knows the folder only

    request = AgentRequest(task, treatment, "Find the planet's period.", 600.0, tmp_path)
    workspace: Any = object()  # the stub never touches it
    trajectory = converse(_Turns(parsed), workspace, request, "/home", lambda: None, simulator_home="/sim")

    assert trajectory.skills_invoked == (NAME,)
    expected = expected_skills(task, TASK_SKILLS, treatment.skill_names)
    assert expected.names == (NAME,)
    assert matching(expected.names, trajectory.skills_invoked) == (NAME,)
    result = score(
        RubricInput(task, treatment.skill_names, True, trajectory, ValidationOutcome(reward=1.0), treatment=TASK_SKILLS)
    )
    dimension = next(d for d in result.dimensions if d.name == "skill_invocation")
    assert dimension.score == 1.0, dimension.reason


def test_a_codex_command_that_reads_the_skill_file_by_its_folder_counts_too(tmp_path: Path) -> None:
    treatment = task_treatment(skillsbench_task(tmp_path).skills_dir)
    item = {
        "id": "item_3",
        "type": "command_execution",
        "command": f"/bin/bash -lc 'cat /root/.codex/skills/{FOLDER}/SKILL.md'",
        "aggregated_output": f"---\nname: {NAME}\n---\n",
        "exit_code": 0,
        "status": "completed",
    }
    parsed = parse_codex_stream([json.dumps({"type": "item.completed", "item": item}) + "\n"])
    assert skills_by_name(parsed, treatment.names_by_folder).skills_invoked == (NAME,)


def test_a_folder_that_is_another_skills_name_is_left_as_it_is() -> None:
    # Folder "b" holds skill "c", and skill "b" lives in folder "a": a read of skills/b/SKILL.md cannot
    # be told from a Skill call of "b", so neither is renamed.
    treatment = Treatment(
        TASK_SKILLS,
        skills=(SkillRef("b", Path("/s/a"), install_as="a"), SkillRef("c", Path("/s/b"), install_as="b")),
    )
    assert treatment.names_by_folder == {"a": "b"}
    trajectory = Trajectory(agent="claude-code", skills_invoked=("b", "a"), skills_attempted=("a", "x"))
    named = skills_by_name(trajectory, treatment.names_by_folder)
    assert named.skills_invoked == ("b",)  # "a" is "b": one skill, named once
    assert named.skills_attempted == ("x",)  # an attempt of a skill that was used is no attempt
    assert skills_by_name(trajectory, {}) is trajectory
