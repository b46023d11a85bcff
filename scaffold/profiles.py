"""Evaluation profiles: which rubric scores a task. Resolution: command line > task.toml > inference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scaffold.errors import ProfileError

if TYPE_CHECKING:
    from scaffold.rubrics import RubricInput, RubricResult
    from scaffold.tasks import Task

__all__ = ["GENERIC", "Profile", "get_profile", "infer_profile", "known_profiles", "register", "resolve_profile"]

GENERIC = "generic"
COMET_WORKFLOW = "comet-workflow"


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


_REGISTRY: dict[str, Profile] = {}


def register(profile: Profile) -> Profile:
    if profile.name in _REGISTRY and _REGISTRY[profile.name] is not profile:
        raise ProfileError(f"profile {profile.name!r} is registered twice")
    _REGISTRY[profile.name] = profile
    return profile


def known_profiles() -> list[str]:
    _ensure_builtins()
    return sorted(_REGISTRY)


def get_profile(name: str) -> Profile:
    _ensure_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ProfileError(
            f"unknown evaluation profile {name!r}; known profiles: {', '.join(sorted(_REGISTRY))}"
        ) from None


def infer_profile(task: Task) -> str:
    """Comet workflow tasks (category ``comet`` or a name starting ``comet-``) get ``comet-workflow``."""
    meta = task.spec.metadata
    if meta.category == "comet" or meta.name.startswith("comet-"):
        return COMET_WORKFLOW
    return GENERIC


def resolve_profile(task: Task, override: str | None = None) -> Profile:
    """The profile for *task*: *override* (``--profile``), else task.toml's, else inferred."""
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


def _ensure_builtins() -> None:
    if GENERIC not in _REGISTRY:
        from scaffold.rubrics import generic

        register(
            Profile(GENERIC, "Any skill: 7 rule-based dimensions", generic.score, tuple(generic.WEIGHTS.items()))
        )
