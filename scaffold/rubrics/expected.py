"""Which skills a trial is expected to invoke: the task's required skills, else the skills under test.

The one rule, used by every rubric that scores ``skill_invocation`` against skills (generic, authoring)
and by the trial runner, which records its answer (``TrialRecord.expected_skills``) for the reports'
"skill used in x of y trials":

1. the task's ``required_skills`` that the treatment installs (``require_skill_invocation`` makes a miss
   a hard failure);
2. else, for ``DYNAMIC_SKILL`` (``--skill-path``, ``comet eval``) and ``TASK_SKILLS`` (a Harbor task's
   own ``environment/skills``, each named as the agent invokes it, by its SKILL.md's ``name``:
   scaffold.catalog.treatments.task_treatment; its ``distractor_skills`` left out), the skills the
   treatment installs: they are the skills under test, and a trial that never used them says something
   about them; so are the skills of a treatment of a kind (distractors, nudge, self-written:
   scaffold.catalog.treatment_kinds), whose *installed* are given without its distractors. Scored,
   never a hard failure (the task did not ask for one). ``[evaluation] expect_skills_under_test = false``
   turns this default off for a task (``comet eval``'s ``requiredSkills: []``);
3. else none: ``skill_invocation`` is N/A (CONTROL, and named treatments of tasks that name no skill).

Pure: it reads the task and the treatment's name and skill names, all of which a record keeps, so an old
record re-scores with the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from scaffold.catalog.tasks import Task
from scaffold.catalog.treatments import DYNAMIC_SKILL, TASK_SKILLS

__all__ = ["UNDER_TEST", "ExpectedSkills", "expected_skills", "matching", "skill_key"]

UNDER_TEST: Final = frozenset({DYNAMIC_SKILL, TASK_SKILLS})
"""The treatments whose skills are the skills under test: they exist to ask whether those skills help.
A named treatment of a treatments file is a comparison the author set up; its tasks say what they need."""


@dataclass(frozen=True, slots=True)
class ExpectedSkills:
    """The skills a trial is expected to invoke; ``names`` empty when none is (``why`` says why)."""

    names: tuple[str, ...]
    declared: bool = False
    """The task's own ``required_skills`` (``require_skill_invocation`` applies to them), not the default."""
    why: str = ""


def skill_key(name: str) -> str:
    """Compare skill names without a plugin prefix (``plugin:skill``) or a path (``.../skill``)."""
    return PurePosixPath(name.rsplit(":", maxsplit=1)[-1]).name


def matching(expected: Sequence[str], names: Iterable[str]) -> tuple[str, ...]:
    """The *expected* skills found among *names* (the trajectory's ``skills_invoked`` or ``skills_attempted``)."""
    keys = {skill_key(n) for n in names}
    return tuple(s for s in expected if skill_key(s) in keys)


def expected_skills(
    task: Task, treatment: str, installed: Sequence[str], *, under_test: bool = False
) -> ExpectedSkills:
    """The skills a trial of *task* under *treatment* (which installs the skills named *installed*) is
    expected to invoke, by the rule of the module docstring; *under_test*: the treatment is of a kind."""
    under_test = under_test or treatment in UNDER_TEST
    evaluation = task.spec.evaluation
    required = evaluation.required_skills
    declared = matching(required, installed)  # a skill the treatment does not install cannot be invoked
    if declared:
        return ExpectedSkills(declared, declared=True)
    if under_test and evaluation.expect_skills_under_test:
        distractors = {skill_key(s) for s in task.harbor.distractor_skills} if task.harbor is not None else set()
        tested = tuple(s for s in installed if skill_key(s) not in distractors)
        if tested:
            return ExpectedSkills(tested)
    if required:
        return ExpectedSkills((), why=f"the treatment installs none of the required skills ({', '.join(required)})")
    if under_test and installed and not evaluation.expect_skills_under_test:
        return ExpectedSkills((), why="the task requires no skill (expect_skills_under_test = false)")
    return ExpectedSkills((), why="the task requires no skill")
