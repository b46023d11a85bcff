"""Workflow definitions: steps, declared transitions, guardrails and checks, validated, frozen and hashed.

Build one with ``define_workflow`` and the step helpers::

    wf = define_workflow(
        "report", "1", entry="draft",
        steps={"draft": skill("draft"), "approve": approval(proposal_from="draft"), "publish": tool("publish")},
        transitions=[("draft", "approve"), ("approve", "publish", "approved")],
    )

A transition ``{from, to, on}`` fires when its source step ends with outcome ``on`` (default
``succeeded``; also ``failed``, an approval's choices, or a named outcome an executor reports). A step
whose outcome matches no transition ends its path; the run completes when no path is left open. A step
with ``join`` waits for every listed parent to arrive; other steps start on each arrival (loops), and
every run is bounded by ``transition_limit`` transitions (default 1000).

``define_workflow`` reports every problem at once in one ``DefinitionError``. The result is frozen
(mappings are read-only proxies, sequences tuples) and ``Workflow.hash`` is a stable SHA-256 of its
canonical JSON, so a run can pin the exact definition it started with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jsonschema

from comet_engine.canonical import digest, freeze, thaw
from comet_engine.checks import Check
from comet_engine.errors import DefinitionError
from comet_engine.guardrails import Guardrails

__all__ = [
    "DEFAULT_TRANSITION_LIMIT",
    "RETRY_POLICIES",
    "STEP_KINDS",
    "Step",
    "Transition",
    "Workflow",
    "approval",
    "checkpoint",
    "child",
    "define_workflow",
    "evidence",
    "handoff",
    "skill",
    "tool",
]

STEP_KINDS = ("skill", "tool", "approval", "evidence", "child", "handoff", "checkpoint")
#: ``manual``: a failed or unknown action waits for an explicit ``retry`` (unknown ones for a reconciliation
#: first); ``reconcile``: known failures are retried automatically, unknown ones need a reconciliation;
#: ``idempotent``: re-running is safe, so failed and unknown actions are both retried automatically.
RETRY_POLICIES = ("manual", "reconcile", "idempotent")
DEFAULT_TRANSITION_LIMIT = 1000
DEFAULT_CHOICES = ("approved", "rejected")
#: Step kinds whose work an executor performs through an action.
ACTION_KINDS = ("skill", "tool", "handoff")


@dataclass(frozen=True, slots=True)
class Step:
    """One node of the graph. Build it with a helper (``skill``, ``tool``, ``approval``, ...)."""

    kind: str
    id: str = ""
    ref: str | None = None
    input: Any = None
    input_from: str | None = None
    output_schema: Any = None
    validator: str | None = None
    retry: str = "manual"
    question: str | None = None
    proposal: Any = None
    proposal_from: str | None = None
    choices: tuple[str, ...] = ()
    join: tuple[str, ...] = ()
    requires_confirmation: bool = False
    version: str | None = None
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        """Every field, in a fixed camelCase form (the form that is hashed)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "ref": self.ref,
            "input": thaw(self.input),
            "inputFrom": self.input_from,
            "outputSchema": thaw(self.output_schema),
            "validator": self.validator,
            "retry": self.retry,
            "question": self.question,
            "proposal": thaw(self.proposal),
            "proposalFrom": self.proposal_from,
            "choices": list(self.choices),
            "join": list(self.join),
            "requiresConfirmation": self.requires_confirmation,
            "version": self.version,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class Transition:
    """A declared edge: when step ``source`` ends with outcome ``on``, step ``target`` becomes ready."""

    source: str
    target: str
    on: str = "succeeded"

    def to_json(self) -> dict[str, str]:
        return {"from": self.source, "to": self.target, "on": self.on}


@dataclass(frozen=True, slots=True)
class Workflow:
    """A validated, frozen workflow definition. Create it with ``define_workflow``, never directly."""

    id: str
    version: str
    entry: str | None
    steps: Mapping[str, Step]
    transitions: tuple[Transition, ...]
    skills: tuple[str, ...]
    tools: tuple[str, ...]
    agents: tuple[str, ...]
    guardrails: Guardrails
    checks: tuple[Check, ...]
    transition_limit: int
    orchestration: str
    skill_name: str
    hash: str = field(default="", compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "version": self.version,
            "entry": self.entry,
            "orchestration": self.orchestration,
            "skill": self.skill_name,
            "steps": [step.to_json() for step in self.steps.values()],
            "transitions": [t.to_json() for t in self.transitions],
            "skills": list(self.skills),
            "tools": list(self.tools),
            "agents": list(self.agents),
            "guardrails": self.guardrails.to_json(),
            "checks": [c.to_json() for c in self.checks],
            "transitionLimit": self.transition_limit,
        }

    def outgoing(self, step_id: str) -> tuple[Transition, ...]:
        """The transitions leaving *step_id*, in declaration order."""
        return _outgoing(self)[step_id] if step_id in self.steps else ()

    @property
    def read_steps(self) -> frozenset[str]:
        """Steps whose output another step reads (``proposal_from``/``input_from``)."""
        read = _READ.get(self.hash)
        if read is None:
            read = frozenset(
                ref for s in self.steps.values() for ref in (s.proposal_from, s.input_from) if ref is not None
            )
            _READ[self.hash] = read
        return read


# Cached per definition: the machine asks for edges on every outcome.
_EDGES: dict[str, dict[str, tuple[Transition, ...]]] = {}
_READ: dict[str, frozenset[str]] = {}


def _outgoing(wf: Workflow) -> dict[str, tuple[Transition, ...]]:
    edges = _EDGES.get(wf.hash)
    if edges is None:
        edges = {sid: tuple(t for t in wf.transitions if t.source == sid) for sid in wf.steps}
        _EDGES[wf.hash] = edges
    return edges


# --- step helpers -------------------------------------------------------------------------------------


def skill(
    ref: str,
    *,
    id: str = "",
    input: Mapping[str, Any] | None = None,
    input_from: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    validator: str | None = None,
    retry: str = "manual",
    description: str = "",
) -> Step:
    """A step an agent platform performs by loading and running skill *ref*."""
    return Step("skill", id, ref, input, input_from, output_schema, validator, retry, description=description)


def tool(
    ref: str,
    *,
    id: str = "",
    input: Mapping[str, Any] | None = None,
    input_from: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    validator: str | None = None,
    retry: str = "manual",
    requires_confirmation: bool = False,
    description: str = "",
) -> Step:
    """A step that calls tool *ref*; ``requires_confirmation`` makes the guardrails ask a user first."""
    return Step(
        "tool",
        id,
        ref,
        input,
        input_from,
        output_schema,
        validator,
        retry,
        requires_confirmation=requires_confirmation,
        description=description,
    )


def handoff(
    ref: str, *, id: str = "", input: Mapping[str, Any] | None = None, retry: str = "manual", description: str = ""
) -> Step:
    """A step that hands control to agent *ref* (an action like any other, allow-listed as an agent)."""
    return Step("handoff", id, ref, input, retry=retry, description=description)


def approval(
    *,
    id: str = "",
    question: str | None = None,
    proposal: Any = None,
    proposal_from: str | None = None,
    choices: Sequence[str] = DEFAULT_CHOICES,
    description: str = "",
) -> Step:
    """A wait for a user's decision on a proposal (static, or the latest output of step ``proposal_from``).

    The decision is one of *choices* and is the step's outcome, so transitions route on it.
    """
    return Step(
        "approval",
        id,
        question=question,
        proposal=proposal,
        proposal_from=proposal_from,
        choices=tuple(choices),
        description=description,
    )


def evidence(validator: str, *, id: str = "", description: str = "") -> Step:
    """A wait for evidence, accepted only when the runtime's validator *validator* finds no problem."""
    return Step("evidence", id, validator=validator, description=description)


def child(
    workflow_id: str,
    *,
    version: str | None = None,
    id: str = "",
    input: Mapping[str, Any] | None = None,
    input_from: str | None = None,
    description: str = "",
) -> Step:
    """A step that starts a run of workflow *workflow_id* linked to this run and ends when it ends."""
    return Step("child", id, workflow_id, input, input_from, version=version, description=description)


def checkpoint(*, id: str = "", description: str = "") -> Step:
    """A step that records a checkpoint and succeeds at once (usually a terminal step)."""
    return Step("checkpoint", id, description=description)


# --- building and validating ---------------------------------------------------------------------------

TransitionLike = Transition | Mapping[str, str] | Sequence[str]


def define_workflow(
    id: str,
    version: str,
    *,
    entry: str | None = None,
    steps: Mapping[str, Step] | Iterable[Step] = (),
    transitions: Iterable[TransitionLike] = (),
    skills: Iterable[str] | None = None,
    tools: Iterable[str] | None = None,
    agents: Iterable[str] | None = None,
    guardrails: Guardrails | None = None,
    checks: Iterable[Check] = (),
    transition_limit: int = DEFAULT_TRANSITION_LIMIT,
    orchestration: str = "deterministic",
    skill_name: str | None = None,
) -> Workflow:
    """Validate and freeze a workflow; ``DefinitionError`` lists every problem found.

    *steps* is a mapping of step id to step, or steps that carry their ``id``. *transitions* are
    ``Transition`` objects, ``{"from", "to", "on"}`` mappings or ``(from, to[, on])`` tuples.
    ``skills``/``tools``/``agents`` declare the refs the workflow may use; left out, they are the refs
    its steps use. ``guardrails`` allow lists left as ``None`` mean everything declared.
    *skill_name* is the ``skill`` recorded in run states (default: the workflow id).
    """
    where = f"workflow {id!r} version {version!r}"
    problems: list[str] = []
    if not isinstance(id, str) or not id:
        problems.append("workflow id is empty: give the workflow a non-empty string id")
    if not isinstance(version, str) or not version:
        problems.append(f"workflow {id!r}: version must be a non-empty string (e.g. '1')")
    if orchestration not in ("deterministic", "adaptive"):
        problems.append(f"orchestration {orchestration!r} is not 'deterministic' or 'adaptive'")

    ordered = _collect_steps(steps, problems)
    edges = _collect_transitions(transitions, problems)
    declared = {
        "skill": _declared(skills, ordered, "skill"),
        "tool": _declared(tools, ordered, "tool"),
        "agent": _declared(agents, ordered, "handoff"),
    }
    explicit = {"skill": skills is not None, "tool": tools is not None, "agent": agents is not None}

    if orchestration == "adaptive":
        if entry is not None or ordered:
            problems.append("adaptive orchestration cannot define 'entry' or 'steps': an agent proposes the actions")
    elif orchestration == "deterministic":
        if not entry:
            problems.append("deterministic orchestration needs 'entry': the id of the first step")
        elif entry not in ordered:
            problems.append(f"unknown entry step {entry!r}: known steps are {_names(ordered)}")

    for step in ordered.values():
        problems.extend(_step_problems(step, ordered, declared, explicit))
    problems.extend(_edge_problems(edges, ordered))
    if orchestration == "deterministic" and entry in ordered:
        problems.extend(_reachability(entry, ordered, edges))

    rails = _resolve_guardrails(guardrails or Guardrails(), declared, ordered, problems)
    check_list = tuple(checks)
    seen_checks: set[str] = set()
    for check in check_list:
        problems.extend(check.problems())
        if check.id in seen_checks:
            problems.append(f"duplicate check id {check.id!r}: check ids must be unique")
        seen_checks.add(check.id)
        if check.step is not None and check.step not in ordered:
            problems.append(f"check {check.id!r}: step {check.step!r} is not a step of this workflow")
    if not isinstance(transition_limit, int) or transition_limit < 1:
        problems.append(f"transition_limit must be a positive integer, got {transition_limit!r}")

    if problems:
        raise DefinitionError(f"{where} is invalid", problems)

    wf = Workflow(
        id=id,
        version=version,
        entry=entry,
        steps=_frozen_mapping(ordered),
        transitions=tuple(edges),
        skills=declared["skill"],
        tools=declared["tool"],
        agents=declared["agent"],
        guardrails=rails,
        checks=check_list,
        transition_limit=transition_limit,
        orchestration=orchestration,
        skill_name=skill_name or id,
    )
    return replace(wf, hash=digest(wf.to_json()))


def _frozen_mapping(steps: dict[str, Step]) -> Mapping[str, Step]:
    from types import MappingProxyType

    return MappingProxyType(dict(steps))


def _names(steps: Mapping[str, Step]) -> str:
    return ", ".join(repr(s) for s in steps) or "(none)"


def _collect_steps(steps: Mapping[str, Step] | Iterable[Step], problems: list[str]) -> dict[str, Step]:
    pairs: list[tuple[str, Any]] = (
        list(steps.items()) if isinstance(steps, Mapping) else [(getattr(s, "id", ""), s) for s in steps]
    )
    out: dict[str, Step] = {}
    for key, step in pairs:
        if not isinstance(step, Step):
            problems.append(
                f"step {key!r} is a {type(step).__name__}: build steps with skill(), tool(), approval() ..."
            )
            continue
        if step.id and step.id != key:
            problems.append(f"step {key!r} carries a different id {step.id!r}: use one id")
            continue
        if not isinstance(key, str) or not key:
            problems.append("a step has no id: pass steps as {id: step} or give each helper id=...")
            continue
        if key in out:
            problems.append(f"duplicate step id {key!r}: every step id must be unique")
            continue
        try:
            frozen = replace(
                step,
                id=key,
                input=freeze(step.input),
                output_schema=freeze(step.output_schema),
                proposal=freeze(step.proposal),
                choices=tuple(step.choices),
                join=tuple(step.join),
            )
        except (TypeError, ValueError) as err:
            problems.append(f"step {key!r}: input, output_schema and proposal must be plain JSON ({err})")
            continue
        out[key] = frozen
    return out


def _collect_transitions(transitions: Iterable[TransitionLike], problems: list[str]) -> list[Transition]:
    out: list[Transition] = []
    seen: set[Transition] = set()
    for raw in transitions:
        edge: Transition | None = None
        if isinstance(raw, Transition):
            edge = raw
        elif isinstance(raw, Mapping):
            unknown = set(raw) - {"from", "to", "on"}
            if unknown or "from" not in raw or "to" not in raw:
                problems.append(f"transition {dict(raw)!r}: use the keys 'from', 'to' and optional 'on'")
            else:
                edge = Transition(raw["from"], raw["to"], raw.get("on", "succeeded"))
        elif isinstance(raw, Sequence) and not isinstance(raw, str) and len(raw) in (2, 3):
            edge = Transition(*raw)
        else:
            problems.append(f"transition {raw!r}: give (from, to[, on]), a mapping or a Transition")
        if edge is None:
            continue
        if not all(isinstance(v, str) and v for v in (edge.source, edge.target, edge.on)):
            problems.append(f"transition {edge.to_json()!r}: 'from', 'to' and 'on' must be non-empty strings")
            continue
        if edge in seen:
            problems.append(f"duplicate transition {edge.to_json()!r}: declare each edge once")
            continue
        seen.add(edge)
        out.append(edge)
    return out


def _declared(given: Iterable[str] | None, steps: Mapping[str, Step], kind: str) -> tuple[str, ...]:
    if given is not None:
        return tuple(dict.fromkeys(given))
    return tuple(dict.fromkeys(s.ref for s in steps.values() if s.kind == kind and s.ref))


def _step_problems(
    step: Step, steps: Mapping[str, Step], declared: Mapping[str, tuple[str, ...]], explicit: Mapping[str, bool]
) -> list[str]:
    where = f"step {step.id!r}"
    out: list[str] = []
    if step.kind not in STEP_KINDS:
        return [f"{where}: kind {step.kind!r} is not one of {', '.join(STEP_KINDS)}"]
    if step.retry not in RETRY_POLICIES:
        out.append(f"{where}: retry {step.retry!r} is not one of {', '.join(RETRY_POLICIES)}")
    if step.kind in (*ACTION_KINDS, "child") and not step.ref:
        out.append(f"{where}: a {step.kind} step needs a ref (the name its executor or workflow is registered by)")
    word = {"skill": "skill", "tool": "tool", "handoff": "agent"}.get(step.kind)
    if word and step.ref and step.ref not in declared[word]:
        out.append(
            f"{where}: undeclared ref {step.ref!r}: add it to the workflow's {word}s "
            f"(declared: {', '.join(declared[word]) or 'none'})"
        )
    if step.kind == "approval":
        if not step.question and step.proposal is None and not step.proposal_from:
            out.append(f"{where}: an approval needs a question or a proposal (question=..., proposal_from=...)")
        if not step.choices or len(set(step.choices)) != len(step.choices) or not all(step.choices):
            out.append(f"{where}: choices must be distinct non-empty strings, got {list(step.choices)!r}")
    if step.kind == "evidence" and not step.validator:
        out.append(f"{where}: an evidence step needs a validator (the name of a registered evidence validator)")
    for name, target in (("proposal_from", step.proposal_from), ("input_from", step.input_from)):
        if target is not None and target not in steps:
            out.append(f"{where}: {name} {target!r} is not a step of this workflow")
    if step.input is not None and not isinstance(step.input, Mapping):
        out.append(f"{where}: input must be a JSON object (a mapping)")
    if step.output_schema is not None:
        if step.kind not in ACTION_KINDS:
            out.append(f"{where}: output_schema applies to skill, tool and handoff steps only")
        try:
            jsonschema.Draft202012Validator.check_schema(thaw(step.output_schema))
        except jsonschema.SchemaError as err:
            out.append(f"{where}: output_schema is not a valid JSON Schema (2020-12): {err.message}")
    if step.requires_confirmation and step.kind != "tool":
        out.append(f"{where}: requires_confirmation applies to tool steps only")
    return out


def _edge_problems(edges: Sequence[Transition], steps: Mapping[str, Step]) -> list[str]:
    out: list[str] = []
    incoming: dict[str, set[str]] = {sid: set() for sid in steps}
    for edge in edges:
        where = f"transition {edge.source!r} -> {edge.target!r}"
        for end in (edge.source, edge.target):
            if end not in steps:
                out.append(f"{where}: unknown step {end!r}; known steps are {_names(steps)}")
        if edge.source in steps and edge.target in steps:
            incoming[edge.target].add(edge.source)
            src = steps[edge.source]
            if src.kind == "approval" and edge.on not in src.choices:
                out.append(f"{where}: on {edge.on!r} never fires: approval {src.id!r} offers {list(src.choices)!r}")
    for step in steps.values():
        if step.join and set(step.join) != incoming[step.id]:
            out.append(
                f"step {step.id!r}: join parents {sorted(step.join)!r} do not match the steps with edges into it "
                f"{sorted(incoming[step.id])!r}; list exactly those parents"
            )
    return out


def _reachability(entry: str, steps: Mapping[str, Step], edges: Sequence[Transition]) -> list[str]:
    seen, todo = {entry}, [entry]
    while todo:
        here = todo.pop()
        for edge in edges:
            if edge.source == here and edge.target in steps and edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return [
        f"step {sid!r} is unreachable from entry {entry!r}: add a transition into it or remove it"
        for sid in steps
        if sid not in seen
    ]


def _resolve_guardrails(
    rails: Guardrails, declared: Mapping[str, tuple[str, ...]], steps: Mapping[str, Step], problems: list[str]
) -> Guardrails:
    """Fill ``None`` lists with the declared refs; an allow list may only name declared items."""
    lists = {}
    for word, given in (
        ("skill", rails.allowed_skills),
        ("tool", rails.allowed_tools),
        ("agent", rails.allowed_agents),
    ):
        if given is None:
            lists[word] = declared[word]
            continue
        for ref in given:
            if ref not in declared[word]:
                problems.append(
                    f"guardrails allowed{word.capitalize()}s: {ref!r} is not declared in the workflow's {word}s; "
                    "an allow list can only narrow what is declared"
                )
        lists[word] = tuple(given)
    confirm = rails.confirmation_required_for
    if confirm is None:
        confirm = tuple(dict.fromkeys(s.ref for s in steps.values() if s.requires_confirmation and s.ref))
    for name, value in (("maxIterations", rails.max_iterations), ("maxRetriesPerAction", rails.max_retries_per_action)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problems.append(f"guardrails {name} must be a non-negative integer, got {value!r}")
    return replace(
        rails,
        allowed_skills=lists["skill"],
        allowed_tools=lists["tool"],
        allowed_agents=lists["agent"],
        confirmation_required_for=tuple(confirm),
    )
