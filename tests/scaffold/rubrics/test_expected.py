"""Which skills a trial is expected to invoke (scaffold.rubrics.expected), and the generic rubric's
skill_invocation that scores them: the task's required skills, else the skills under test of
DYNAMIC_SKILL and TASK_SKILLS, else N/A."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scaffold.catalog.tasks import HarborSettings, Task, TaskSpec
from scaffold.catalog.treatments import CONTROL, DYNAMIC_SKILL, TASK_SKILLS
from scaffold.rubrics import Dimension, RubricInput, RubricResult
from scaffold.rubrics.expected import ExpectedSkills, expected_skills, matching
from scaffold.rubrics.profiles import get_profile
from scaffold.trajectory import Trajectory
from scaffold.validation.results import ValidationCheck, ValidationOutcome


def task(harbor: HarborSettings | None = None, **evaluation: Any) -> Task:
    spec = TaskSpec.model_validate({"metadata": {"name": "t"}, "evaluation": evaluation})
    return Task("t", Path("/nowhere/t"), spec, format="harbor" if harbor else "comet", harbor=harbor)


def scored(
    t: Task, treatment: str, installed: tuple[str, ...], *, profile: str = "generic", **trajectory: Any
) -> tuple[Dimension, RubricResult]:
    traj = Trajectory(agent="claude-code", **trajectory)
    outcome = ValidationOutcome((ValidationCheck("a", "passed", "s"),))
    result = get_profile(profile).score(RubricInput(t, installed, True, traj, outcome, treatment=treatment))
    return next(d for d in result.dimensions if d.name == "skill_invocation"), result


class TestTheRule:
    def test_the_skill_under_test_is_required_when_the_task_names_none(self) -> None:
        assert expected_skills(task(), DYNAMIC_SKILL, ("my-skill",)) == ExpectedSkills(("my-skill",))
        # An empty list, as the built-in tasks write it, names none either.
        assert expected_skills(task(required_skills=[]), DYNAMIC_SKILL, ("my-skill",)).names == ("my-skill",)

    def test_the_tasks_own_skills_without_the_distractors(self) -> None:
        harbor = HarborSettings(distractor_skills=("decoy",))
        found = expected_skills(task(harbor), TASK_SKILLS, ("xlsx", "decoy", "pdf"))
        assert found == ExpectedSkills(("xlsx", "pdf"))

    def test_the_tasks_required_skills_win_and_are_declared(self) -> None:
        found = expected_skills(task(required_skills=["lint"]), DYNAMIC_SKILL, ("lint", "other"))
        assert found == ExpectedSkills(("lint",), declared=True)

    def test_required_skills_the_treatment_does_not_install_leave_the_skill_under_test(self) -> None:
        # comet eval --quick: generic-skill-smoke names markdown-report, DYNAMIC_SKILL installs the skill.
        found = expected_skills(task(required_skills=["markdown-report"]), DYNAMIC_SKILL, ("my-skill",))
        assert found == ExpectedSkills(("my-skill",))

    @pytest.mark.parametrize(
        ("treatment", "installed", "why"),
        [
            (CONTROL, (), "the task requires no skill"),
            ("SKILL_HELPER", ("helper",), "the task requires no skill"),  # a named treatment: its tasks say
            (DYNAMIC_SKILL, (), "the task requires no skill"),
        ],
    )
    def test_none_elsewhere(self, treatment: str, installed: tuple[str, ...], why: str) -> None:
        assert expected_skills(task(), treatment, installed) == ExpectedSkills((), why=why)

    def test_a_task_opts_out(self) -> None:
        found = expected_skills(task(expect_skills_under_test=False), DYNAMIC_SKILL, ("my-skill",))
        assert found == ExpectedSkills((), why="the task requires no skill (expect_skills_under_test = false)")

    def test_matching_ignores_plugin_prefixes_and_paths(self) -> None:
        assert matching(("report", "lint"), ["plugin:report", ".claude/skills/lint", "other"]) == ("report", "lint")


class TestSkillInvocation:
    def test_scored_for_the_skill_under_test(self) -> None:
        dim, _ = scored(task(), DYNAMIC_SKILL, ("my-skill",), skills_invoked=("my-skill",))
        assert dim.score == 1.0
        assert dim.reason == "1/1 skills under test (DYNAMIC_SKILL; the task names none) invoked"

    def test_not_invoked_is_a_zero_never_a_hard_failure(self) -> None:
        t = task(required_skills=["markdown-report"], require_skill_invocation=True)
        dim, result = scored(t, DYNAMIC_SKILL, ("my-skill",), skills_attempted=("my-skill",))
        assert dim.score == 0.0 and dim.reason.endswith("not invoked: my-skill (its call failed)")
        assert result.hard_failures == ()  # the task's hard failure is for its own skills only

    def test_control_stays_not_applicable(self) -> None:
        dim, _ = scored(task(), CONTROL, (), skills_invoked=("my-skill",))
        assert dim.score is None and dim.reason == "N/A: the task requires no skill"

    def test_the_tasks_required_skills_keep_their_hard_failure(self) -> None:
        t = task(required_skills=["lint"], require_skill_invocation=True)
        dim, result = scored(t, DYNAMIC_SKILL, ("lint",))
        assert dim.score == 0.0 and dim.reason == "0/1 required skills invoked; not invoked: lint"
        assert result.hard_failures == ("Required skill not invoked: lint",)

    def test_an_agent_that_cannot_invoke_skills_is_not_scored(self) -> None:
        outcome = ValidationOutcome((ValidationCheck("a", "passed", "s"),))
        data = RubricInput(task(), ("my-skill",), False, Trajectory(agent="oracle"), outcome, treatment=DYNAMIC_SKILL)
        dim = next(d for d in get_profile("generic").score(data).dimensions if d.name == "skill_invocation")
        assert dim.score is None and "oracle" in dim.reason

    def test_the_authoring_profile_takes_the_same_rule(self) -> None:
        dim, _ = scored(task(), DYNAMIC_SKILL, ("my-skill",), profile="authoring-skill")
        assert dim.score == 0.0
