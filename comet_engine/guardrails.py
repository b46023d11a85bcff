"""Guardrails: what a run may do, fixed by the workflow (or skill package) and never relaxed at run time.

``check_action`` applies the original Comet engine's four checks in its order, and the first that fails
blocks the action with its message (details follow after the message, so callers can match the prefix):

1. ``iteration >= maxIterations``                -> ``Blocked: iteration budget exhausted``
2. the ref is not in the allow list             -> ``Blocked: skill/tool/agent not declared`` (with the kind)
3. the ref needs confirmation and has none      -> ``Blocked: user confirmation required``
4. ``retries[actionId] > maxRetriesPerAction``  -> ``Blocked: retry budget exhausted``

Check 4 counts retries already granted, so ``maxRetriesPerAction = 3`` allows exactly three retries.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Block", "Guardrails", "check_action"]

#: Which allow list governs each action kind (approval, evidence, child and checkpoint steps carry no ref
#: that an executor runs, so no allow list applies to them).
KIND_LIST = {"skill": "skill", "tool": "tool", "handoff": "agent"}


@dataclass(frozen=True, slots=True)
class Guardrails:
    """Allow lists and budgets. ``None`` for a list means "everything the workflow declares"."""

    allowed_skills: tuple[str, ...] | None = None
    allowed_agents: tuple[str, ...] | None = None
    allowed_tools: tuple[str, ...] | None = None
    max_iterations: int = 50
    max_retries_per_action: int = 3
    confirmation_required_for: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, object]:
        """The camelCase form of ``guardrails.yaml`` (the form that is hashed and stored)."""

        def opt(value: tuple[str, ...] | None) -> list[str] | None:
            return None if value is None else list(value)

        return {
            "allowedSkills": opt(self.allowed_skills),
            "allowedAgents": opt(self.allowed_agents),
            "allowedTools": opt(self.allowed_tools),
            "maxIterations": self.max_iterations,
            "maxRetriesPerAction": self.max_retries_per_action,
            "confirmationRequiredFor": opt(self.confirmation_required_for),
        }


@dataclass(frozen=True, slots=True)
class Block:
    """Why a guardrail refused an action: a stable ``code`` and the original Comet engine's message."""

    code: str
    message: str


def check_action(
    rails: Guardrails, *, iteration: int, kind: str, ref: str | None, confirmed: bool, retries: int
) -> Block | None:
    """The first guardrail that refuses this action, or ``None`` when it may be proposed.

    *rails* must be resolved (no ``None`` lists): ``Workflow.guardrails`` always is.
    """
    if iteration >= rails.max_iterations:
        return Block(
            "iteration-budget",
            f"Blocked: iteration budget exhausted (iteration {iteration}, maxIterations {rails.max_iterations})",
        )
    word = KIND_LIST.get(kind)
    if word is not None and ref is not None:
        allowed = {"skill": rails.allowed_skills, "tool": rails.allowed_tools, "agent": rails.allowed_agents}[word]
        if allowed is None or ref not in allowed:
            return Block(
                "not-declared",
                f"Blocked: {word} not declared: {ref!r} is not in allowed{word.capitalize()}s of the guardrails",
            )
        if not confirmed and ref in (rails.confirmation_required_for or ()):
            return Block(
                "confirmation-required",
                f"Blocked: user confirmation required for {word} {ref!r} (confirmationRequiredFor)",
            )
    if retries > rails.max_retries_per_action:
        return Block(
            "retry-budget",
            f"Blocked: retry budget exhausted ({retries} retries, maxRetriesPerAction {rails.max_retries_per_action})",
        )
    return None
