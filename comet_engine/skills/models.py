"""The shapes of the package files, as the original Comet engine names their fields (camelCase on disk).

Shape only: types, required keys, unknown keys rejected (a typo never falls back to a default).
Cross-references (entry, next, refs, allow lists, check ids) are checked in :mod:`.package`,
where the message can name the step and the declaration that is missing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ActionModel",
    "CheckModel",
    "ChecksFileModel",
    "GoalModel",
    "GuardrailsModel",
    "MetadataModel",
    "OrchestrationModel",
    "SkillModel",
    "StepModel",
    "ToolModel",
]

Str = Annotated[str, Field(strict=True, min_length=1)]
Names = tuple[Str, ...]
ActionType = Literal["invoke_skill", "call_tool", "handoff", "ask_user", "checkpoint"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class MetadataModel(_Model):
    name: Annotated[str, Field(strict=True, pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")]
    # Strict: `version: 1` is an int in YAML; the original Comet engine's versions are strings ("1"), so say "quote it".
    version: Str
    description: Annotated[str, Field(strict=True)] = ""


class GoalModel(_Model):
    statement: Str
    inputs: tuple[Any, ...] = ()
    outputs: tuple[Any, ...] = ()
    success: tuple[Any, ...] = ()


class ActionModel(_Model):
    type: ActionType
    ref: Str | None = None
    question: Str | None = None
    # Choices offered by an ask_user step; the first one is the approving choice (see compile.py).
    options: Names | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    description: Annotated[str, Field(strict=True)] = ""


class StepModel(_Model):
    id: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    action: ActionModel
    next: Str | None = None
    completion_evals: Names = Field(default=(), alias="completionEvals")
    description: Annotated[str, Field(strict=True)] = ""


class OrchestrationModel(_Model):
    mode: Literal["deterministic", "adaptive"]
    entry: Str | None = None
    steps: tuple[StepModel, ...] | None = None


class ToolModel(_Model):
    name: Str
    requires_confirmation: Annotated[bool, Field(strict=True)] = Field(default=False, alias="requiresConfirmation")
    # A script tool: its source file, relative to the package root; its sha256 is part of the skill hash.
    script: Str | None = None
    description: Annotated[str, Field(strict=True)] = ""


class SkillModel(_Model):
    api_version: Literal["comet/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Skill"]
    metadata: MetadataModel
    goal: GoalModel
    orchestration: OrchestrationModel
    skills: Names = ()
    agents: Names = ()
    tools: tuple[Str | ToolModel, ...] = ()


Budget = Annotated[int, Field(strict=True, ge=1)]


class GuardrailsModel(_Model):
    allowed_skills: Names | None = Field(default=None, alias="allowedSkills")
    allowed_agents: Names | None = Field(default=None, alias="allowedAgents")
    allowed_tools: Names | None = Field(default=None, alias="allowedTools")
    max_iterations: Budget | None = Field(default=None, alias="maxIterations")
    max_retries_per_action: Annotated[int, Field(strict=True, ge=0)] | None = Field(
        default=None, alias="maxRetriesPerAction"
    )
    confirmation_required_for: Names | None = Field(default=None, alias="confirmationRequiredFor")


class CheckModel(_Model):
    id: Str
    scope: Literal["step", "completion", "progress"]
    type: Literal["artifact_exists", "state_equals"]
    artifact: Str | None = None
    field: Str | None = None
    equals: Any = None
    # Step scope only: run after this step's outcome instead of after every outcome.
    step: Str | None = None
    description: Annotated[str, Field(strict=True)] = ""


class ChecksFileModel(_Model):
    runtime: tuple[CheckModel, ...] = ()
