"""Treatment kinds: what a treatment does beside installing its skills, for the questions the field asks.

* **distractors**: the skills under test plus N others drawn from a pool (a folder of skill folders, or
  the skills of the corpus's other tasks), reproducibly from (seed, task, treatment): does the agent still
  find and use the right skill among N? Distractors are installed, never expected (scaffold.rubrics.expected).
* **nudge**: one line of ours in the agent's instructions file saying that skills are installed and where:
  it separates "the skill helps" from "the agent noticed it".
* **self-written**: before the task the agent writes a skill for this kind of task (scaffold.trial.
  self_written), which is then installed for the task run.

A kind may build on another treatment's skills (``skills_of: DYNAMIC_SKILL``, ``TASK_SKILLS`` or a named
one), and kinds combine. Names that say what they are come from :func:`kind_name`. Pure: the pool is read
by the caller (scaffold.catalog.treatments.task_treatment lists a folder's skills).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, TypeVar

from scaffold.errors import SelectionError

__all__ = [
    "NUDGE_LINE",
    "Distractors",
    "Skill",
    "draw_distractors",
    "kind_name",
    "nudge_line",
]

NUDGE_LINE: Final = (
    "Skills are installed for this project in `{skills_dir}/` (one folder each, its SKILL.md says what it is "
    "for): look at them before you start and use any that fits the task."
)
"""The nudge, our wording; ``{skills_dir}`` is the agent's skills folder (``.claude/skills``)."""


class Skill(Protocol):
    """What a draw needs of a skill (scaffold.catalog.treatments.SkillRef, which imports this module)."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def folder_name(self) -> str: ...


S = TypeVar("S", bound=Skill)


@dataclass(frozen=True, slots=True)
class Distractors:
    """N skills drawn from a pool and installed beside the skills under test."""

    count: int
    pool: Path | None = None
    """A folder of skill folders; None: the skills of the corpus's other tasks (their environment/skills)
    and the built-in pool's (scaffold.catalog.builtin.distractor_pool)."""
    seed: int = 0

    def pool_words(self) -> str:
        """Where the distractors come from, in words."""
        if self.pool is not None:
            return f"the skill pool {self.pool}"
        return "the skills of the corpus's other tasks and the built-in pool"

    def describe(self) -> str:
        return f"{self.count} distractor skill(s) from {self.pool_words()} (seed {self.seed})"


def nudge_line(skills_dir: str) -> str:
    """The nudge for an agent whose skills folder is *skills_dir*."""
    return NUDGE_LINE.format(skills_dir=skills_dir.rstrip("/"))


def kind_name(base: str, *, distractors: int = 0, nudge: bool = False) -> str:
    """The name of a kind built on *base* (``DYNAMIC_SKILL``, ``SELF_WRITTEN``): ``DYNAMIC_SKILL_NUDGE``,
    ``DYNAMIC_SKILL_PLUS_3_DISTRACTORS``, ``DYNAMIC_SKILL_NUDGE_PLUS_3_DISTRACTORS``; *base* alone without any."""
    name = base + ("_NUDGE" if nudge else "")
    return name + (f"_PLUS_{distractors}_DISTRACTORS" if distractors else "")


def draw_distractors(
    pool: Sequence[S],
    spec: Distractors,
    *,
    task: str,
    treatment: str,
    under_test: Sequence[Skill],
    where: str,
) -> tuple[S, ...]:
    """*spec.count* skills of *pool*, drawn by (seed, task, treatment) alone: the same three give the same
    skills whatever the order the pool was listed in. A skill of *pool* named as one under test, or in the
    same folder, is never drawn; a pool too small for the count is a SelectionError naming *where*."""
    names = {s.name for s in under_test} | {s.folder_name for s in under_test}
    folders = {s.path.resolve() for s in under_test}
    candidates = sorted(
        (s for s in pool if s.name not in names and s.folder_name not in names and s.path.resolve() not in folders),
        key=lambda s: (s.name, str(s.path)),
    )
    unique: dict[str, S] = {}
    for skill in candidates:  # one skill per installed folder: two of one name would overwrite each other
        unique.setdefault(skill.folder_name, skill)
    choices = list(unique.values())
    if spec.count > len(choices):
        raise SelectionError(
            f"{treatment}: distractors.count is {spec.count} but {where} holds only {len(choices)} skill(s) "
            "other than the skills under test; lower the count or add skills to the pool"
        )
    digest = hashlib.sha256(f"{spec.seed}\0{task}\0{treatment}".encode()).digest()
    drawn = random.Random(int.from_bytes(digest[:8], "big")).sample(choices, spec.count)
    return tuple(sorted(drawn, key=lambda s: s.name))
