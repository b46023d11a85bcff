"""Evaluation profiles: which rubric scores a task. Resolution: command line > manifest > task.toml > inference."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scaffold.errors import ProfileError

if TYPE_CHECKING:
    from scaffold.catalog.tasks import Task
    from scaffold.rubrics import RubricInput, RubricResult

__all__ = ["GENERIC", "Profile", "get_profile", "infer_profile", "known_profiles", "register", "resolve_profile"]

GENERIC = "generic"
COMET_WORKFLOW = "comet-workflow"
AUTHORING_SKILL = "authoring-skill"


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    description: str
    score: Callable[[RubricInput], RubricResult]
    weights: tuple[tuple[str, float], ...] = ()
    """The rule dimensions in display order, with their weights (``comet profiles`` lists them)."""
    interaction: str = "none"
    """The interaction mode a task of this profile gets when its task.toml sets none."""
    max_turns: int = 12
    """Likewise, the turn limit."""
    simulator_prompt: str | None = None
    """Likewise, the simulated user's instructions (auto_user)."""


COMET_SIMULATOR = (
    "You are the developer who asked for this change, answering the coding agent in a few words. Approve "
    "its proposals and plans when they are reasonable, choose the first option it offers when asked to "
    "choose, and ask it to carry on through the whole workflow until the change is verified and archived. "
    "Never write code or files yourself."
)
"""The simulated user of comet-workflow tasks (auto_user) whose task.toml gives none."""

AUTHORING_SIMULATOR = (
    "You are the person who asked for this skill package, answering its author in a few words. Confirm "
    "sensible defaults, pick the option that keeps the workflow you asked for and its review step when "
    "asked to choose, add no new requirements, and ask it to go on until the package is written and "
    "reviewed. Never write the package or any file yourself."
)
"""The simulated user of authoring-skill tasks (auto_user) whose task.toml gives none."""

_REGISTRY: dict[str, Profile] = {}
_BUILDING = threading.Lock()
"""Two trials of one process may be in flight (pytest_comet.ahead): a built-in is made once."""


def register(profile: Profile) -> Profile:
    if profile.name in _REGISTRY and _REGISTRY[profile.name] is not profile:
        raise ProfileError(f"profile {profile.name!r} is registered twice")
    _REGISTRY[profile.name] = profile
    return profile


def known_profiles() -> list[str]:
    # The built-in names without importing their rubrics: collection asks for the names only, and the
    # comet-workflow and authoring rubrics import the whole workflow engine (jsonschema and all).
    return sorted({*_REGISTRY, *_BUILTINS})


def get_profile(name: str) -> Profile:
    _ensure_builtin(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ProfileError(
            f"unknown evaluation profile {name!r}; known profiles: {', '.join(known_profiles())}"
        ) from None


def infer_profile(task: Task) -> str:
    """Comet workflow tasks (category ``comet`` or a name starting ``comet-``) get ``comet-workflow``.

    Harbor-format tasks are never inferred to be workflow tasks, whatever their category or name: Harbor
    has no workflow, phases or run state to score, so they get the generic profile (completion from the
    reward, efficiency, safety, skill invocation against required_skills)."""
    meta = task.spec.metadata
    if task.format == "harbor":
        return GENERIC
    if meta.category == "comet" or meta.name.startswith("comet-"):
        return COMET_WORKFLOW
    return GENERIC


def resolve_profile(task: Task, override: str | None = None) -> Profile:
    """The profile for *task*: *override* (``--profile``, else the manifest's ``skill.profile``: the session
    resolves both into one option), else task.toml's, else inferred."""
    name = override or task.spec.evaluation.profile or infer_profile(task)
    try:
        return get_profile(name)
    except ProfileError as exc:
        source = (
            "--profile"
            if override
            else (
                f"{task.root / 'task.toml'}: [evaluation] profile"
                if task.spec.evaluation.profile
                else f"inferred for task {task.name!r} from its category/name"
            )
        )
        raise ProfileError(f"{source}: {exc}") from None


def _generic() -> Profile:
    from scaffold.rubrics import generic

    return Profile(GENERIC, "Any skill: 7 rule-based dimensions", generic.score, tuple(generic.WEIGHTS.items()))


def _comet_workflow() -> Profile:
    from scaffold.rubrics import comet_workflow

    return Profile(
        COMET_WORKFLOW,
        "The Comet workflow skills: 9 rule-based dimensions (phases, guards, skills, artifacts, run state)",
        comet_workflow.score,
        tuple(comet_workflow.WEIGHTS.items()),
        interaction="auto_user",
        max_turns=12,
        simulator_prompt=COMET_SIMULATOR,
    )


def _authoring() -> Profile:
    from scaffold.rubrics import authoring

    return Profile(
        AUTHORING_SKILL,
        "A skill package the agent writes: 11 dimensions (the generic ones, the package, its engine "
        "contract, route, lanes and review)",
        authoring.score,
        tuple(authoring.WEIGHTS.items()),
        interaction="auto_user",
        max_turns=8,
        simulator_prompt=AUTHORING_SIMULATOR,
    )


_BUILTINS: dict[str, Callable[[], Profile]] = {
    GENERIC: _generic,
    COMET_WORKFLOW: _comet_workflow,
    AUTHORING_SKILL: _authoring,
}


def _ensure_builtin(name: str) -> None:
    """Register the built-in profile *name* on first use (one registered under that name first wins)."""
    if name not in _REGISTRY and name in _BUILTINS:
        with _BUILDING:
            if name not in _REGISTRY:
                register(_BUILTINS[name]())
