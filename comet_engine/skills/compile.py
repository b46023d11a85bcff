"""Compile a validated skill package to the core's workflow graph.

    invoke_skill -> skill step     call_tool -> tool step     handoff -> handoff step
    ask_user     -> approval step  checkpoint -> checkpoint step
    next: B      -> transition (A -> B) on ``succeeded``; for ask_user, on its first option

Decisions (the original Comet engine's documentation is silent on them):

- Action steps use the core's ``reconcile`` retry policy: a reported failure is retried automatically
  on the same step (the original Comet engine's documentation: "on failure it increments the retry count
  and stays on the current step") until ``maxRetriesPerAction`` is spent, while a lost result still needs a
  reconciliation.
- ``ask_user`` offers ``options`` (default ``approved``/``rejected``); the first option follows ``next``.
  Any other choice ends that path, so the run completes without the later steps and its completion
  checks say whether the goal was met. Its proposal is the latest output of the step whose ``next`` it
  is (when exactly one step leads to it), so the decision is bound to what the user was shown: a
  re-done predecessor changes the proposal digest and a stale decision is refused.
- A step's ``completionEvals`` names runtime checks to evaluate when that step ends: each becomes a
  step-scope check ``<check>@<step>`` bound to the step (the core keeps check ids unique).
"""

from __future__ import annotations

from comet_engine.checks import Check
from comet_engine.definitions import (
    Step,
    Workflow,
    approval,
    checkpoint,
    define_workflow,
    handoff,
    skill,
    tool,
)
from comet_engine.guardrails import Guardrails
from comet_engine.skills.models import StepModel
from comet_engine.skills.package import RuntimeCheck, SkillPackage

__all__ = ["APPROVAL_CHOICES", "KINDS", "compile_package"]

APPROVAL_CHOICES = ("approved", "rejected")
#: The original Comet engine's action types and the core's step kinds, both ways.
KINDS = {
    "invoke_skill": "skill",
    "call_tool": "tool",
    "handoff": "handoff",
    "ask_user": "approval",
    "checkpoint": "checkpoint",
}
RETRY_POLICY = "reconcile"


def compile_package(package: SkillPackage) -> Workflow:
    """The core workflow of *package* (``DefinitionError`` only if the two validations ever disagree)."""
    definition = package.definition
    confirm = {t.name for t in package.tools if t.requires_confirmation}
    before: dict[str, list[str]] = {}
    for s in package.steps:
        if s.next is not None:
            before.setdefault(s.next, []).append(s.id)
    steps = {s.id: _step(s, confirm, before.get(s.id, [])) for s in package.steps}
    transitions = []
    for s in package.steps:
        if s.next is not None:
            on = _choices(s)[0] if s.action.type == "ask_user" else "succeeded"
            transitions.append((s.id, s.next, on))
    rails = package.guardrails
    checks = [_check(c) for c in package.checks]
    for s in package.steps:
        by_id = {c.id: c for c in package.checks}
        checks.extend(_check(by_id[cid], step=s.id, suffix=f"@{s.id}") for cid in s.completion_evals)
    return define_workflow(
        definition.metadata.name,
        definition.metadata.version,
        entry=definition.orchestration.entry,
        steps=steps,
        transitions=transitions,
        skills=definition.skills,
        tools=[t.name for t in package.tools],
        agents=definition.agents,
        guardrails=Guardrails(
            allowed_skills=rails.allowed_skills,
            allowed_agents=rails.allowed_agents,
            allowed_tools=rails.allowed_tools,
            max_iterations=rails.max_iterations,
            max_retries_per_action=rails.max_retries_per_action,
            confirmation_required_for=rails.confirmation_required_for,
        ),
        checks=checks,
        orchestration=package.mode,
        skill_name=package.name,
    )


def _choices(step: StepModel) -> tuple[str, ...]:
    return tuple(step.action.options) if step.action.options else APPROVAL_CHOICES


def _step(s: StepModel, confirm: set[str], before: list[str]) -> Step:
    a = s.action
    text = a.description or s.description
    inputs = dict(a.input) or None
    if a.type == "invoke_skill":
        return skill(a.ref or "", input=inputs, retry=RETRY_POLICY, description=text)
    if a.type == "call_tool":
        ref = a.ref or ""
        return tool(ref, input=inputs, retry=RETRY_POLICY, requires_confirmation=ref in confirm, description=text)
    if a.type == "handoff":
        return handoff(a.ref or "", input=inputs, retry=RETRY_POLICY, description=text)
    if a.type == "ask_user":
        source = before[0] if len(before) == 1 else None
        return approval(question=a.question, proposal_from=source, choices=_choices(s), description=text)
    return checkpoint(description=text)


def _check(c: RuntimeCheck, *, step: str | None = None, suffix: str = "") -> Check:
    return Check(
        id=c.id + suffix,
        scope="step" if step is not None else c.scope,
        type=c.type,
        field=c.field,
        equals=c.equals,
        artifact=c.artifact,
        step=step if step is not None else c.step,
    )
