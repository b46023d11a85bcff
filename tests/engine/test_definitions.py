"""Workflow definitions: every listed validation error, freezing, and a hash that is stable across processes."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from comet_engine import (
    Check,
    DefinitionError,
    Guardrails,
    Transition,
    approval,
    checkpoint,
    child,
    define_workflow,
    evidence,
    handoff,
    skill,
    tool,
)
from tests.support.factories import REPO


def report(**overrides: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "entry": "draft",
        "steps": {
            "draft": skill("draft", output_schema={"type": "object", "required": ["text"]}),
            "approve": approval(question="Publish?", proposal_from="draft"),
            "publish": tool("publish", requires_confirmation=True),
            "done": checkpoint(),
        },
        "transitions": [("draft", "approve"), ("approve", "publish", "approved"), ("publish", "done")],
    }
    spec.update(overrides)
    return spec


def problems_of(**overrides: object) -> tuple[str, ...]:
    with pytest.raises(DefinitionError) as info:
        define_workflow("report", "1", **report(**overrides))  # type: ignore[arg-type]
    return info.value.problems


def test_a_valid_definition_builds_with_resolved_guardrails() -> None:
    wf = define_workflow("report", "1", **report())  # type: ignore[arg-type]
    assert list(wf.steps) == ["draft", "approve", "publish", "done"]
    assert wf.steps["draft"].id == "draft"
    assert wf.transitions[1] == Transition("approve", "publish", "approved")
    assert wf.skills == ("draft",) and wf.tools == ("publish",)
    assert wf.guardrails.allowed_skills == ("draft",)
    assert wf.guardrails.confirmation_required_for == ("publish",)
    assert wf.guardrails.max_iterations == 50 and wf.guardrails.max_retries_per_action == 3
    assert wf.transition_limit == 1000
    assert wf.hash.startswith("sha256:") and len(wf.hash) == 71


def test_unknown_entry_step() -> None:
    (problem,) = problems_of(entry="nowhere")
    assert "unknown entry step 'nowhere'" in problem and "'draft'" in problem


def test_duplicate_step_id() -> None:
    steps = [skill("draft", id="draft"), skill("draft", id="draft")]
    problems = problems_of(steps=steps, transitions=[])
    assert any("duplicate step id 'draft'" in p for p in problems)


def test_undeclared_refs_in_steps_and_in_allow_lists() -> None:
    problems = problems_of(skills=["other"], guardrails=Guardrails(allowed_tools=("publish", "rm")))
    assert any("step 'draft': undeclared ref 'draft'" in p and "declared: other" in p for p in problems)
    assert any("allowedTools: 'rm' is not declared" in p for p in problems)


def test_approval_without_question_or_proposal() -> None:
    steps = {"draft": skill("draft"), "approve": approval()}
    (problem,) = problems_of(steps=steps, transitions=[("draft", "approve")])
    assert "step 'approve': an approval needs a question or a proposal" in problem


def test_join_parents_must_match_incoming_edges() -> None:
    steps = {"a": skill("a"), "b": skill("b"), "c": skill("c"), "j": dataclasses.replace(skill("j"), join=("b",))}
    edges = [("a", "b"), ("a", "c"), ("b", "j"), ("c", "j")]
    (problem,) = problems_of(entry="a", steps=steps, transitions=edges)
    assert "join parents ['b'] do not match" in problem and "['b', 'c']" in problem


def test_unreachable_steps() -> None:
    steps = {"draft": skill("draft"), "orphan": skill("orphan")}
    (problem,) = problems_of(steps=steps, transitions=[])
    assert "step 'orphan' is unreachable from entry 'draft'" in problem


def test_every_problem_is_reported_at_once() -> None:
    steps = {"draft": skill("draft"), "approve": approval(), "orphan": evidence("")}
    problems = problems_of(entry="missing", steps=steps, transitions=[("draft", "approve"), ("approve", "x")])
    assert len(problems) >= 4
    text = "\n".join(problems)
    for expected in ("unknown entry step", "approval needs a question", "needs a validator", "unknown step 'x'"):
        assert expected in text


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"transitions": [("draft", "approve"), ("approve", "publish", "maybe"), ("publish", "done")]}, "never fires"),
        (
            {"steps": {"draft": skill("draft", output_schema={"type": "nope"}), "x": checkpoint()}},
            "not a valid JSON Schema",
        ),
        ({"steps": {"draft": skill("draft", retry="sometimes")}, "transitions": []}, "retry 'sometimes'"),
        ({"steps": {"draft": skill("draft", input={"when": float("nan")})}, "transitions": []}, "plain JSON"),
        ({"transition_limit": 0}, "transition_limit must be a positive integer"),
        ({"checks": [Check("c", "sometimes", "state_equals", field="status", equals="x")]}, "scope 'sometimes'"),
        ({"steps": {"draft": child("")}, "transitions": []}, "needs a ref"),
    ],
)
def test_other_mistakes_are_named(overrides: dict[str, object], expected: str) -> None:
    assert any(expected in p for p in problems_of(**overrides))


def test_adaptive_definitions_have_no_entry_or_steps() -> None:
    wf = define_workflow("agentic", "1", orchestration="adaptive", skills=["plan"], tools=["shell"])
    assert wf.entry is None and wf.guardrails.allowed_tools == ("shell",)
    with pytest.raises(DefinitionError, match="adaptive orchestration cannot define"):
        define_workflow("agentic", "1", orchestration="adaptive", entry="x", steps={"x": skill("x")})


def test_definitions_are_frozen_deeply() -> None:
    wf = define_workflow("w", "1", entry="a", steps={"a": skill("a", input={"list": [1, 2], "map": {"k": "v"}})})
    with pytest.raises(dataclasses.FrozenInstanceError):
        wf.entry = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        wf.steps["b"] = skill("b")  # type: ignore[index]
    step_input = wf.steps["a"].input
    with pytest.raises(TypeError):
        step_input["map"]["k"] = "changed"
    assert step_input["list"] == (1, 2)


def test_the_builder_copies_its_inputs() -> None:
    given = {"k": ["v"]}
    wf = define_workflow("w", "1", entry="a", steps={"a": skill("a", input=given)})
    before = wf.hash
    given["k"].append("w")
    assert wf.steps["a"].input["k"] == ("v",)
    assert define_workflow("w", "1", entry="a", steps={"a": skill("a", input={"k": ["v"]})}).hash == before


def test_hash_is_stable_and_sensitive() -> None:
    one = define_workflow("report", "1", **report())  # type: ignore[arg-type]
    two = define_workflow("report", "1", **report())  # type: ignore[arg-type]
    assert one.hash == two.hash and one == two
    changed = define_workflow("report", "1", **report(guardrails=Guardrails(max_iterations=51)))  # type: ignore[arg-type]
    assert changed.hash != one.hash
    renamed = report(steps={**report()["steps"], "draft": skill("draft", description="Write it")})  # type: ignore[dict-item]
    assert define_workflow("report", "1", **renamed).hash != one.hash  # type: ignore[arg-type]


def test_hash_is_the_same_in_another_process() -> None:
    code = (
        "import json; from tests.engine.test_definitions import report; from comet_engine import define_workflow; "
        "print(json.dumps(define_workflow('report', '1', **report()).hash))"
    )
    env_code = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO, env={"PYTHONHASHSEED": "7"}
    )
    assert json.loads(env_code.stdout) == define_workflow("report", "1", **report()).hash  # type: ignore[arg-type]


def test_transitions_accept_mappings_tuples_and_objects() -> None:
    wf = define_workflow(
        "w",
        "1",
        entry="a",
        steps={"a": skill("a"), "b": handoff("reviewer"), "c": checkpoint()},
        transitions=[{"from": "a", "to": "b"}, Transition("b", "c"), ("b", "a", "failed")],
    )
    assert [t.to_json() for t in wf.transitions] == [
        {"from": "a", "to": "b", "on": "succeeded"},
        {"from": "b", "to": "c", "on": "succeeded"},
        {"from": "b", "to": "a", "on": "failed"},
    ]
    assert wf.agents == ("reviewer",)
    assert wf.outgoing("b") == (Transition("b", "c"), Transition("b", "a", "failed"))
    with pytest.raises(DefinitionError, match="use the keys 'from', 'to'"):
        define_workflow("w", "1", entry="a", steps={"a": skill("a")}, transitions=[{"source": "a", "to": "a"}])
