"""Rubrics: pure functions from (task, treatment, trajectory, checks) to scored dimensions.

A dimension is either scored in [0, 1] or N/A (``score is None``); N/A never counts in the weighted
score, so a task without required skills is not rewarded or punished for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Final, Protocol

import msgspec

from scaffold.catalog.tasks import Task
from scaffold.trajectory import Trajectory
from scaffold.validation.results import ValidationOutcome

__all__ = ["JUDGE_SOURCE", "Dimension", "RubricInput", "RubricResult", "WorkspaceFiles", "weighted_score"]

JUDGE_SOURCE: Final = "judge"
"""The ``source`` of a dimension scored by the LLM judge: shown beside the rubric, never mixed into it."""


class Dimension(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One scored dimension, as trial records store it. ``source`` is None for the rule-based rubric
    (and then left out of the record) and :data:`JUDGE_SOURCE` for a judge score."""

    name: str
    weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.7976931348623157e308)]
    """Finite and not negative (checked when a record is decoded, like the score's bounds)."""
    score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None
    """In [0, 1], rubric and judge alike; None when the dimension does not apply (N/A)."""
    reason: str
    source: str | None = None

    @property
    def applicable(self) -> bool:
        return self.score is not None


class WorkspaceFiles(Protocol):
    """What a rubric may read of the workspace after the agent (a Workspace is one): reading only, so
    a rubric stays a pure function of what it is handed, on every backend."""

    def glob(self, pattern: str) -> list[str]:
        """Workspace-relative POSIX paths matching *pattern*, sorted."""

    def read_text(self, rel: str) -> str | None:
        """A file's text, or None when it does not exist."""


@dataclass(frozen=True, slots=True)
class RubricInput:
    task: Task
    treatment_skills: tuple[str, ...]
    agent_invokes_skills: bool
    trajectory: Trajectory
    validation: ValidationOutcome
    treatment: str = ""
    """The treatment's name."""
    skills_under_test: bool = False
    """The treatment is of a kind (scaffold.catalog.treatment_kinds): *treatment_skills* (its distractors
    left out) are the skills under test, whatever its name."""
    baseline: str = "CONTROL"
    """The session's baseline treatment (``--baseline``): profiles that score a baseline differently (the
    comet-workflow profile scores it on completion and efficiency only) compare with this, never with a
    hard-coded name."""
    files: WorkspaceFiles | None = None
    """The workspace after the agent and validation; None where no workspace is at hand (re-scoring)."""
    outputs: Mapping[str, str] = field(default_factory=dict)
    """The task's declared outputs (``[evaluation] outputs`` of task.toml, e.g. ``skill_package_path``),
    with the validators' ``outputs`` in ``_test_results.json`` over them."""


@dataclass(frozen=True, slots=True)
class RubricResult:
    profile: str
    dimensions: tuple[Dimension, ...]
    hard_failures: tuple[str, ...]

    @property
    def weighted_score(self) -> float | None:
        return weighted_score(self.dimensions)


def weighted_score(dimensions: Sequence[Dimension]) -> float | None:
    """sum(w*s) / sum(w) over applicable rule dimensions; None when none applies. Judge dimensions never
    count: the judge is shown beside the rule scores, never mixed into them."""
    applicable = [d for d in dimensions if d.score is not None and d.weight > 0 and d.source != JUDGE_SOURCE]
    total = sum(d.weight for d in applicable)
    if not total:
        return None
    return sum(d.weight * d.score for d in applicable if d.score is not None) / total
