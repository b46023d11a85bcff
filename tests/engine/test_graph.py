"""The step graph: transitions and outcomes, fan-out and joins, bounded loops, guardrails and runtime checks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from comet_engine import (
    ActionFailed,
    Check,
    ExecutionContext,
    Guardrails,
    Outcome,
    RejectedError,
    Runtime,
    checkpoint,
    define_workflow,
    skill,
    tool,
)
from comet_engine.guardrails import check_action
from comet_engine.stores.memory import MemoryStore


def runtime(**executors: Any) -> Runtime:
    rt = Runtime(MemoryStore())
    for ref, fn in executors.items():
        rt.register_executor(ref, fn)
    return rt


def ok(value: Any, ctx: ExecutionContext) -> Any:
    return {"step": ctx.step}


def test_a_join_waits_for_all_its_parents() -> None:
    order: list[str] = []

    def record(value: Any, ctx: ExecutionContext) -> Any:
        order.append(ctx.step)
        return {}

    wf = define_workflow(
        "fan",
        "1",
        entry="split",
        steps={
            "split": skill("work"),
            "left": skill("work"),
            "right": skill("slow"),
            "merge": dataclasses.replace(skill("work"), join=("left", "right")),
        },
        transitions=[("split", "left"), ("split", "right"), ("left", "merge"), ("right", "merge")],
    )
    rt = runtime(work=record)
    rt.start(wf, "r")
    blocked = rt.run_until_blocked("r")
    # 'right' has no executor yet: 'left' ran, and the join must not fire on one parent.
    assert blocked.reason == "executor-required" and order == ["split", "left"]
    assert blocked.run.raw["arrivals"] == {"merge": ["left"]}
    rt.register_executor("slow", record)
    assert rt.run_until_blocked("r").reason == "completed"
    assert order == ["split", "left", "right", "merge"]


def test_a_join_whose_parent_took_another_path_leaves_the_run_idle() -> None:
    wf = define_workflow(
        "stuck",
        "1",
        entry="a",
        steps={
            "a": skill("work"),
            "b": skill("work"),
            "c": skill("work"),
            "j": dataclasses.replace(checkpoint(), join=("b", "c")),
        },
        transitions=[("a", "b"), ("a", "c", "other"), ("b", "j"), ("c", "j")],
    )
    rt = runtime(work=ok)
    rt.start(wf, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "idle" and "joins wait for parents" in blocked.message
    assert blocked.run.status == "running"


def test_named_outcomes_and_failure_edges_route_the_run() -> None:
    def review(value: Any, ctx: ExecutionContext) -> Any:
        return Outcome.succeeded({"score": 3}, route="needs-work")

    def broken(value: Any, ctx: ExecutionContext) -> Any:
        raise ActionFailed("cannot")

    wf = define_workflow(
        "route",
        "1",
        entry="review",
        steps={"review": skill("review"), "fix": skill("fix"), "ship": skill("ship"), "rollback": skill("undo")},
        transitions=[("review", "ship"), ("review", "fix", "needs-work"), ("fix", "rollback", "failed")],
    )
    rt = runtime(review=review, fix=broken, undo=ok)
    rt.start(wf, "r")
    assert rt.run_until_blocked("r").reason == "completed"
    assert [e["step"] for e in rt.events("r") if e["type"] == "step_completed"] == ["review", "fix", "rollback"]


def test_a_named_outcome_without_its_own_edge_follows_success() -> None:
    wf = define_workflow("w", "1", entry="a", steps={"a": skill("a"), "b": skill("b")}, transitions=[("a", "b")])
    rt = runtime(a=lambda v, c: Outcome.succeeded({}, route="fine"), b=ok)
    rt.start(wf, "r")
    assert rt.run_until_blocked("r").reason == "completed"
    assert "b" in rt.inspect("r").outputs


def loop(limit: int = 1000, iterations: int = 10_000) -> Any:
    return define_workflow(
        "loop",
        "1",
        entry="a",
        steps={"a": skill("spin"), "b": checkpoint()},
        transitions=[("a", "b"), ("b", "a")],
        transition_limit=limit,
        guardrails=Guardrails(max_iterations=iterations),
    )


def test_loops_are_bounded_by_the_transition_limit_default_1000() -> None:
    rt = runtime(spin=ok)
    rt.start(loop(), "r")
    blocked = rt.run_until_blocked("r", max_actions=10_000)
    assert blocked.reason == "failed" and blocked.run.raw["error"]["code"] == "transition-limit"
    assert blocked.run.raw["transitions"] == 1001
    # a, a->b, b->a, a, ...: the 1001st transition is a->b after the 501st run of 'a'.
    assert blocked.actions_run == 501
    assert "transition limit 1000 reached" in blocked.message


def test_loops_are_also_bounded_by_max_iterations_with_the_seed_message() -> None:
    rt = runtime(spin=ok)
    rt.start(loop(iterations=7), "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "failed"
    assert blocked.message.startswith("Blocked: iteration budget exhausted")
    assert blocked.run.iteration == 7


def test_each_loop_visit_is_a_new_action_with_its_own_id() -> None:
    rt = runtime(spin=ok)
    rt.start(loop(limit=6), "r")
    rt.run_until_blocked("r")
    proposed = [e["actionId"] for e in rt.events("r") if e["type"] == "action_proposed"]
    assert len(proposed) == len(set(proposed)) == 4  # the 7th transition (a->b after visit 4) fails


def test_guardrails_check_in_the_seeds_order_with_its_messages() -> None:
    rails = Guardrails(
        allowed_skills=("plan",),
        allowed_tools=("shell",),
        allowed_agents=(),
        max_iterations=5,
        max_retries_per_action=3,
        confirmation_required_for=("shell",),
    )

    def block(**kw: Any) -> str | None:
        args = {"iteration": 0, "kind": "skill", "ref": "plan", "confirmed": False, "retries": 0} | kw
        found = check_action(rails, **args)
        return None if found is None else found.message

    # Every check fails at once: the iteration budget is named first, then the allow list, and so on.
    assert block(iteration=5, ref="rm", retries=9).startswith("Blocked: iteration budget exhausted")  # type: ignore[union-attr]
    assert block(ref="rm", retries=9).startswith("Blocked: skill not declared")  # type: ignore[union-attr]
    assert block(kind="tool", ref="shell", retries=9).startswith("Blocked: user confirmation required")  # type: ignore[union-attr]
    assert block(kind="tool", ref="shell", confirmed=True, retries=4).startswith("Blocked: retry budget exhausted")  # type: ignore[union-attr]
    assert block(kind="handoff", ref="reviewer").startswith("Blocked: agent not declared")  # type: ignore[union-attr]
    assert block(retries=3) is None


def test_an_allow_list_narrower_than_the_declarations_blocks_at_run_time() -> None:
    wf = define_workflow(
        "narrow",
        "1",
        entry="a",
        steps={"a": skill("plan"), "b": tool("shell")},
        transitions=[("a", "b")],
        guardrails=Guardrails(allowed_tools=()),
    )
    rt = runtime(plan=ok, shell=ok)
    rt.start(wf, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "failed" and blocked.message.startswith("Blocked: tool not declared: 'shell'")
    assert [e["type"] for e in rt.events("r")][-1] == "run_failed"


def test_adaptive_actions_pass_the_guardrails_or_write_nothing() -> None:
    wf = define_workflow(
        "agentic", "1", orchestration="adaptive", skills=["plan"], tools=["shell"], checks=[done_check()]
    )
    rt = runtime(plan=ok)
    rt.start(wf, "r")
    assert rt.run_until_blocked("r").reason == "idle"
    before = rt.inspect("r").revision
    with pytest.raises(RejectedError) as info:
        rt.accept_adaptive_action("r", "skill", "deploy")
    assert info.value.code == "not-declared" and info.value.args[0].startswith("Blocked: skill not declared")
    assert rt.inspect("r").revision == before
    rt.accept_adaptive_action("r", "skill", "plan", {"goal": "x"})
    assert rt.run_until_blocked("r").reason == "idle"
    assert rt.inspect("r").outputs == {"skill:plan": {"step": "skill:plan"}}
    run = rt.complete("r")
    assert run.status == "completed" and run.raw["checks"]["done"]["status"] == "PASS"


def done_check() -> Check:
    return Check("done", "completion", "state_equals", field="status", equals="completed")


def test_runtime_checks_in_their_three_scopes() -> None:
    checks = [
        Check("report-written", "step", "artifact_exists", artifact="report.md", step="write"),
        done_check(),
        Check("on-ship", "progress", "state_equals", field="currentStep", equals="ship"),
    ]
    wf = define_workflow(
        "checked", "1", entry="write", steps={"write": skill("w"), "ship": skill("s")}, transitions=[("write", "ship")]
    )
    wf = define_workflow(
        "checked",
        "1",
        entry="write",
        steps=dict(wf.steps),
        transitions=wf.transitions,
        checks=checks,
    )
    rt = runtime(w=lambda v, c: Outcome.succeeded({}, artifacts={"report.md": "reports/r.md"}))
    rt.start(wf, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.run.raw["checks"]["report-written"]["status"] == "PASS"
    progress = rt.check("r", "progress")
    assert [(c.id, c.status) for c in progress] == [("on-ship", "PASS")]
    assert "completion" not in {c["scope"] for c in blocked.run.raw["checks"].values()}
    assert rt.check("r", "completion")[0].status == "FAIL"
    assert rt.check("r", "completion")[0].evidence == "status is 'waiting'; expected 'completed'"
    rt.register_executor("s", ok)
    final = rt.run_until_blocked("r")
    assert final.reason == "completed" and final.run.raw["checks"]["done"]["status"] == "PASS"
    evaluated = [e for e in rt.events("r") if e["type"] == "checks_evaluated"]
    assert [e["scope"] for e in evaluated] == ["step", "completion"]
