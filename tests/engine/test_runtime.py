"""The runtime: run_until_blocked and its reasons, inspect, pinning, upgrades, cancellation and child runs."""

from __future__ import annotations

from typing import Any

import pytest

from comet_engine import (
    REASONS,
    ActionFailed,
    ExecutionContext,
    Guardrails,
    Outcome,
    RejectedError,
    RunExistsError,
    Runtime,
    UnknownDefinitionError,
    approval,
    checkpoint,
    child,
    define_workflow,
    evidence,
    skill,
)
from comet_engine.machine import MAX_DEPTH
from comet_engine.stores.memory import MemoryStore


def ok(value: Any, ctx: ExecutionContext) -> Any:
    return {"step": ctx.step, "input": value}


def linear(n: int, *, version: str = "1", ref: str = "work", **kw: Any) -> Any:
    return define_workflow(
        "linear",
        version,
        entry="s0",
        steps={f"s{i}": skill(ref) for i in range(n)},
        transitions=[(f"s{i}", f"s{i + 1}") for i in range(n - 1)],
        **kw,
    )


def test_every_reason_is_reachable() -> None:
    """One scenario per reason; together they cover REASONS exactly."""
    seen: set[str] = set()
    store = MemoryStore()

    def drive(wf: Any, run_id: str, **executors: Any) -> Runtime:
        rt = Runtime(store)
        for ref, fn in executors.items():
            rt.register_executor(ref, fn)
        rt.start(wf, run_id)
        seen.add(rt.run_until_blocked(run_id, max_actions=3).reason)
        return rt

    drive(linear(2), "completed", work=ok)
    drive(linear(5), "action-limit", work=ok)
    drive(linear(1), "failed", work=lambda v, c: (_ for _ in ()).throw(ActionFailed("no")))
    drive(linear(1), "execution-unknown", work=lambda v, c: 1 / 0)
    ask = define_workflow("ask", "1", entry="q", steps={"q": approval(question="Go?")})
    drive(ask, "approval-required")
    proof = define_workflow("proof", "1", entry="e", steps={"e": evidence("v")})
    drive(proof, "evidence-required")
    adaptive = define_workflow("free", "1", orchestration="adaptive", skills=["x"])
    drive(adaptive, "idle")
    rt = drive(linear(1), "executor-required")
    rt.claim("executor-required", rt.inspect("executor-required").pending)  # someone else runs it
    seen.add(rt.run_until_blocked("executor-required").reason)  # action-in-flight
    rt.cancel("executor-required", "the user stopped it")
    seen.add(rt.run_until_blocked("executor-required").reason)  # cancelled
    assert seen == set(REASONS)


def test_action_limit_counts_actions_and_the_run_continues_later() -> None:
    rt = Runtime(MemoryStore())
    rt.register_executor("work", ok)
    rt.start(linear(5), "r")
    first = rt.run_until_blocked("r", max_actions=2)
    assert (first.reason, first.actions_run) == ("action-limit", 2)
    assert first.action is not None and first.action.step == "s2"
    second = rt.run_until_blocked("r")
    assert (second.reason, second.actions_run) == ("completed", 3)


def test_inspect_has_no_side_effect() -> None:
    now = [0.0]
    rt = Runtime(MemoryStore(), clock=lambda: now[0], lease_seconds=1)
    rt.start(linear(1), "r")
    rt.claim("r", rt.inspect("r").pending)
    now[0] = 100.0  # the lease has expired: inspect must not be the one to record that
    revision, events = rt.store.load("r").revision, rt.events("r")
    for _ in range(3):
        view = rt.inspect("r")
        assert view.actions[0].status == "claimed"
        rt.check("r", "progress")
    assert rt.store.load("r").revision == revision and rt.events("r") == events


def test_a_run_pins_its_definition_and_another_process_can_resume_it() -> None:
    store = MemoryStore()
    first = Runtime(store)
    first.start(linear(3), "r")
    assert first.inspect("r").definition_hash == linear(3).hash
    resumed = Runtime(store)  # a new process: same store, nothing registered yet
    with pytest.raises(UnknownDefinitionError, match="register that exact definition"):
        resumed.run_until_blocked("r")
    resumed.register(linear(3, version="2"))  # a different definition does not satisfy the pin
    with pytest.raises(UnknownDefinitionError):
        resumed.run_until_blocked("r")
    resumed.register(linear(3))
    resumed.register_executor("work", ok)
    assert resumed.run_until_blocked("r").reason == "completed"
    with pytest.raises(RunExistsError):
        resumed.start(linear(3), "r")


def test_upgrades_are_explicit_guarded_and_recorded() -> None:
    rt = Runtime(MemoryStore())
    rt.start(linear(3), "r")
    v2 = linear(4, version="2")
    with pytest.raises(RejectedError) as info:
        rt.upgrade("r", v2)
    assert info.value.code == "upgrade-pending"

    gated = define_workflow(
        "gated",
        "1",
        entry="ask",
        steps={"ask": approval(question="?"), "go": skill("go")},
        transitions=[("ask", "go", "approved")],
    )
    rt.start(gated, "g")
    other_name = define_workflow("other", "2", entry="ask", steps={"ask": approval(question="?")})
    missing_step = define_workflow("gated", "2", entry="go", steps={"go": skill("go")})
    adaptive = define_workflow("gated", "2", orchestration="adaptive", skills=["go"])
    for bad, code in ((other_name, "upgrade-skill"), (missing_step, "upgrade-step"), (adaptive, "upgrade-mode")):
        before = rt.inspect("g").revision
        with pytest.raises(RejectedError) as info:
            rt.upgrade("g", bad)
        assert info.value.code == code and rt.inspect("g").revision == before

    g2 = define_workflow(
        "gated",
        "2",
        entry="ask",
        steps={"ask": approval(question="Really?"), "go": skill("go"), "after": checkpoint()},
        transitions=[("ask", "go", "approved"), ("go", "after")],
    )
    run = rt.upgrade("g", g2)
    assert run.definition_hash == g2.hash and run.raw["skillVersion"] == "2"
    rt.cancel("r")
    with pytest.raises(RejectedError) as info:
        rt.upgrade("r", v2)
    assert info.value.code == "run-finished"
    migrated = [e for e in rt.events("g") if e["type"] == "state_migrated"]
    assert migrated == [
        {
            "type": "state_migrated",
            "runId": "g",
            "fromVersion": "1",
            "toVersion": "2",
            "fromHash": gated.hash,
            "toHash": g2.hash,
            "revision": run.revision,
        }
    ]


def test_cancel_stops_the_run_and_refuses_later_outcomes() -> None:
    rt = Runtime(MemoryStore())
    rt.start(linear(2), "r")
    aid = rt.inspect("r").pending
    claim = rt.claim("r", aid)
    run = rt.cancel("r", "user pressed stop")
    assert run.status == "cancelled" and run.pending == ""
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({}))
    assert info.value.code == "action-cancelled"
    with pytest.raises(RejectedError) as info:
        rt.cancel("r")
    assert info.value.code == "run-finished"
    assert rt.run_until_blocked("r").reason == "cancelled"


def parent_and_child() -> tuple[Any, Any]:
    inner = define_workflow(
        "inner",
        "1",
        entry="approve",
        steps={"approve": approval(question="Inner ok?"), "build": skill("build")},
        transitions=[("approve", "build", "approved")],
    )
    outer = define_workflow(
        "outer",
        "1",
        entry="prep",
        steps={"prep": skill("prep"), "sub": child("inner", input_from="prep"), "ship": skill("ship")},
        transitions=[("prep", "sub"), ("sub", "ship")],
    )
    return outer, inner


def test_child_workflows_are_linked_and_their_blocks_surface_through_the_parent() -> None:
    outer, inner = parent_and_child()
    rt = Runtime(MemoryStore())
    rt.register(inner)
    for ref in ("prep", "build", "ship"):
        rt.register_executor(ref, ok)
    rt.start(outer, "p")
    blocked = rt.run_until_blocked("p")
    assert blocked.reason == "approval-required" and blocked.run_id != "p"
    child_run = rt.inspect(blocked.run_id)
    assert child_run.raw["parent"] == {"runId": "p", "step": "sub", "instance": child_run.raw["parent"]["instance"]}
    assert child_run.raw["depth"] == 1 and child_run.raw["input"]["step"] == "prep"
    assert blocked.wait is not None
    rt.resolve_wait(blocked.run_id, blocked.wait.id, proposal_digest=blocked.wait.digest, choice="approved")
    done = rt.run_until_blocked("p")
    assert done.reason == "completed" and done.actions_run == 2  # 'build' in the child, then 'ship'
    assert rt.outputs("p")["sub"]["build"]["step"] == "build"  # a child's result: its path results
    assert rt.inspect(blocked.run_id).status == "completed"


def test_a_failed_child_fails_its_parent_and_cancel_reaches_children() -> None:
    outer, inner = parent_and_child()
    rt = Runtime(MemoryStore())
    rt.register(inner)
    rt.register_executor("prep", ok)
    rt.start(outer, "p")
    blocked = rt.run_until_blocked("p")
    rt.cancel("p", "stop everything")
    assert rt.inspect(blocked.run_id).status == "cancelled"

    rt.start(outer, "q")
    blocked = rt.run_until_blocked("q")
    assert blocked.wait is not None
    rt.resolve_wait(blocked.run_id, blocked.wait.id, proposal_digest=blocked.wait.digest, choice="approved")
    rt.register_executor("build", lambda v, c: 1 / 0)
    rt.run_until_blocked("q")
    rt.cancel(blocked.run_id, "give up on the child")
    parent = rt.inspect("q")
    assert parent.status == "failed" and parent.raw["error"]["code"] == "child-failed"


def test_an_unregistered_child_workflow_is_reported_not_guessed() -> None:
    outer, _ = parent_and_child()
    rt = Runtime(MemoryStore())
    rt.register_executor("prep", ok)
    rt.start(outer, "p")
    blocked = rt.run_until_blocked("p")
    assert blocked.reason == "executor-required" and "workflow 'inner'" in blocked.message


def test_child_runs_nest_at_most_32_deep() -> None:
    rt = Runtime(MemoryStore())
    leaf = define_workflow("level-0", "1", entry="end", steps={"end": checkpoint()})
    rt.register(leaf)
    for depth in range(1, MAX_DEPTH + 2):
        rt.register(
            define_workflow(
                f"level-{depth}",
                "1",
                entry="down",
                steps={"down": child(f"level-{depth - 1}")},
                guardrails=Guardrails(max_iterations=5),
            )
        )
    rt.start(rt.workflow(f"level-{MAX_DEPTH}"), "ok")
    assert rt.run_until_blocked("ok").reason == "completed"
    rt.start(rt.workflow(f"level-{MAX_DEPTH + 1}"), "deep")
    blocked = rt.run_until_blocked("deep")
    assert blocked.reason == "failed" and rt.inspect("deep").raw["error"]["code"] == "child-failed"
    deepest = [
        r
        for r in rt.store.run_ids()
        if rt.inspect(r).raw.get("error", {}) and rt.inspect(r).raw["error"]["code"] == "child-depth"
    ]
    assert len(deepest) == 1 and rt.inspect(deepest[0]).raw["depth"] == MAX_DEPTH


def test_a_state_stays_the_size_of_its_open_work_however_long_the_run() -> None:
    import json

    sizes = {}
    for n in (10, 300):
        rt = Runtime(MemoryStore())
        rt.register_executor("work", ok)
        rt.start(linear(n, guardrails=Guardrails(max_iterations=1000)), "s")
        rt.run_until_blocked("s", max_actions=n - 1)  # the last step is still pending
        sizes[n] = len(json.dumps(rt.store.load("s").state))
        assert len(rt.outputs("s")) == n - 1  # every output is kept, in the trajectory
    assert abs(sizes[300] - sizes[10]) < 40  # only counters grow (a few digits)


def test_outputs_other_steps_read_stay_in_the_state() -> None:
    wf = define_workflow(
        "reads",
        "1",
        entry="a",
        steps={"a": skill("work"), "b": skill("work", input_from="a"), "c": skill("work")},
        transitions=[("a", "b"), ("b", "c")],
    )
    rt = Runtime(MemoryStore())
    rt.register_executor("work", ok)
    rt.start(wf, "r", {"x": 1})
    rt.run_until_blocked("r")
    run = rt.inspect("r")
    assert set(run.outputs) == {"a", "c"}  # 'a' is read by 'b'; 'c' ended the path
    assert rt.outputs("r")["b"]["input"] == {"step": "a", "input": {"x": 1}}


def test_run_until_blocked_runs_at_most_100_actions_by_default() -> None:
    rt = Runtime(MemoryStore())
    rt.register_executor("work", ok)
    rt.start(linear(150, guardrails=Guardrails(max_iterations=1000)), "r")
    blocked = rt.run_until_blocked("r")
    assert (blocked.reason, blocked.actions_run) == ("action-limit", 100)
    assert rt.run_until_blocked("r").reason == "completed"
