"""Actions and outcomes: claims, idempotent resubmission, conflicts, unknown results, retries, reconciliation."""

from __future__ import annotations

from typing import Any

import pytest

from comet_engine import (
    ActionFailed,
    ExecutionContext,
    Guardrails,
    Outcome,
    RejectedError,
    Runtime,
    define_workflow,
    skill,
    tool,
)
from comet_engine.stores.memory import MemoryStore


class Clock:
    """A clock the test moves by hand, so lease expiry needs no sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def two_steps(retry: str = "manual", **rails: Any) -> Any:
    return define_workflow(
        "two",
        "1",
        entry="work",
        steps={"work": skill("work", retry=retry, output_schema={"type": "object"}), "ship": tool("ship")},
        transitions=[("work", "ship")],
        guardrails=Guardrails(**rails),
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def rt(clock: Clock) -> Runtime:
    return Runtime(MemoryStore(), clock=clock, lease_seconds=60)


def started(rt: Runtime, retry: str = "manual", **rails: Any) -> str:
    rt.start(two_steps(retry, **rails), "r")
    return rt.inspect("r").pending


def unchanged(rt: Runtime, run_id: str = "r") -> tuple[int, int]:
    return rt.inspect(run_id).revision, len(rt.events(run_id))


def test_claim_then_record_advances_and_the_action_id_is_the_seeds(rt: Runtime) -> None:
    aid = started(rt)
    import hashlib

    assert aid == hashlib.sha256(b"r:0:work").hexdigest()[:16]
    claim = rt.claim("r", aid)
    assert (claim.attempt, claim.step, claim.ref, claim.lease_expires_at) == (1, "work", "work", 1060.0)
    receipt = rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({"n": 1}))
    assert receipt.status == "succeeded" and receipt.attempt == 1
    run = rt.inspect("r")
    assert run.current_step == "ship" and run.status == "waiting"
    # The output is in the trajectory; the state keeps only outputs the graph reads, and path results.
    assert rt.outputs("r") == {"work": {"n": 1}} and run.outputs == {}
    assert run.pending != aid and run.iteration == 2


@pytest.mark.parametrize(
    ("attempt", "token", "code"),
    [(2, None, "stale-attempt"), (1, "forged", "claim-mismatch")],
)
def test_an_outcome_must_match_attempt_and_claim_token(rt: Runtime, attempt: int, token: str | None, code: str) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", aid, attempt=attempt, token=token or claim.token, outcome=Outcome.succeeded({}))
    assert info.value.code == code
    assert unchanged(rt) == before


def test_an_outcome_needs_a_claim_and_a_known_action(rt: Runtime) -> None:
    aid = started(rt)
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", aid, attempt=1, token="t", outcome=Outcome.succeeded({}))
    assert info.value.code == "not-claimed"
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", "0" * 16, attempt=1, token="t", outcome=Outcome.succeeded({}))
    assert info.value.code == "unknown-action"
    rt.claim("r", aid)
    with pytest.raises(RejectedError) as info:
        rt.claim("r", aid)
    assert info.value.code == "action-in-flight"


def test_identical_resubmission_returns_the_same_receipt_and_writes_nothing(rt: Runtime) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    outcome = Outcome.succeeded({"n": 1})
    first = rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=outcome)
    before = unchanged(rt)
    # Also from a fresh runtime (another process): the action has left the state, its events remain.
    other = Runtime(rt.store)
    other.register(two_steps())
    for runtime in (rt, other):
        again = runtime.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({"n": 1}))
        assert again == first
    assert unchanged(rt) == before


def test_a_different_outcome_for_the_same_attempt_is_a_conflict(rt: Runtime) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({"n": 1}))
    before = unchanged(rt)
    for different in (Outcome.succeeded({"n": 2}), Outcome.failed("no")):
        with pytest.raises(RejectedError) as info:
            rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=different)
        assert info.value.code == "outcome-conflict"
    assert unchanged(rt) == before


def test_a_thousand_resubmissions_make_one_trajectory_entry(rt: Runtime) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    receipts = {
        rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({"n": 1}))
        for _ in range(1000)
    }
    assert len(receipts) == 1
    completed = [e for e in rt.events("r") if e["type"] == "action_completed" and e["actionId"] == aid]
    assert len(completed) == 1


def test_output_schema_is_checked_before_anything_is_written(rt: Runtime) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded(["not", "an", "object"]))
    assert info.value.code == "output-schema" and "output at (root)" in str(info.value)
    assert unchanged(rt) == before
    # The claim still stands: the executor can report a corrected output.
    rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({}))


def test_an_executor_output_that_fails_the_schema_is_a_known_failure_and_never_stored(rt: Runtime) -> None:
    rt.register_executor("work", lambda value, ctx: "a string")
    started(rt)
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "failed" and blocked.action is not None
    assert blocked.action.status == "failed" and "output_schema" in (blocked.action.outcome or {})["error"]
    assert "work" not in rt.outputs("r")


def test_executor_exceptions_make_the_result_unknown_and_retry_needs_reconciliation(rt: Runtime) -> None:
    calls: list[ExecutionContext] = []

    def flaky(value: Any, ctx: ExecutionContext) -> Any:
        calls.append(ctx)
        if len(calls) == 1:
            raise ConnectionError("socket closed after sending")
        return {"sent": True}

    rt.register_executor("work", flaky)
    aid = started(rt)
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "execution-unknown" and blocked.action is not None
    assert blocked.action.id == aid and "ConnectionError" in (blocked.action.error or "")
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.retry("r", aid)
    assert info.value.code == "reconcile-first"
    with pytest.raises(RejectedError) as info:
        rt.reconcile("r", aid, "not-executed", evidence="")
    assert info.value.code == "evidence-required"
    assert unchanged(rt) == before
    rt.reconcile("r", aid, "not-executed", evidence={"mail server log": "no message id"})
    rt.retry("r", aid)
    assert rt.inspect("r").raw["retries"] == {aid: 1}
    assert rt.run_until_blocked("r").reason == "executor-required"  # 'ship' has no executor
    assert [c.attempt for c in calls] == [1, 2]


def test_an_idempotent_step_retries_an_unknown_result_without_reconciliation(rt: Runtime) -> None:
    attempts: list[int] = []

    def flaky(value: Any, ctx: ExecutionContext) -> Any:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise TimeoutError("no answer")
        return {}

    rt.register_executor("work", flaky)
    rt.register_executor("ship", lambda value, ctx: None)
    started(rt, retry="idempotent")
    assert rt.run_until_blocked("r").reason == "completed"
    assert attempts == [1, 2]
    kinds = [e["type"] for e in rt.events("r")]
    assert kinds.count("action_unknown") == 1 and kinds.count("action_retried") == 1


def test_a_lost_lease_makes_the_action_unknown_and_a_late_true_result_is_still_taken(rt: Runtime, clock: Clock) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    clock.now += 61
    assert rt.inspect("r").actions[0].status == "claimed"  # inspect writes nothing, not even expiry
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "execution-unknown" and "lease expired" in (blocked.action.error or "")  # type: ignore[union-attr]
    # The original claimer reports after all: its real result settles the unknown.
    rt.record_outcome("r", aid, attempt=claim.attempt, token=claim.token, outcome=Outcome.succeeded({}))
    assert rt.inspect("r").current_step == "ship"


def test_reconcile_as_succeeded_takes_the_output_and_advances(rt: Runtime, clock: Clock) -> None:
    aid = started(rt)
    rt.claim("r", aid)
    clock.now += 61
    rt.run_until_blocked("r")
    with pytest.raises(RejectedError) as info:
        rt.reconcile("r", aid, "succeeded", evidence="receipt #4", output=[1])
    assert info.value.code == "output-schema"
    rt.reconcile("r", aid, "succeeded", evidence="receipt #4", output={"receipt": 4})
    assert rt.outputs("r")["work"] == {"receipt": 4}


def test_known_failures_wait_for_a_manual_retry(rt: Runtime) -> None:
    def broken(value: Any, ctx: ExecutionContext) -> Any:
        raise ActionFailed("disk full")

    rt.register_executor("work", broken)
    aid = started(rt)
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "failed" and (blocked.action.outcome or {})["error"] == "disk full"  # type: ignore[union-attr]
    rt.retry("r", aid)
    assert rt.inspect("r").actions[0].attempt == 2


@pytest.mark.parametrize("policy", ["reconcile", "idempotent"])
def test_max_retries_per_action_allows_exactly_that_many_retries(rt: Runtime, policy: str) -> None:
    attempts: list[int] = []

    def broken(value: Any, ctx: ExecutionContext) -> Any:
        attempts.append(ctx.attempt)
        raise ActionFailed("still broken")

    rt.register_executor("work", broken)
    started(rt, retry=policy, max_retries_per_action=3)
    blocked = rt.run_until_blocked("r")
    assert attempts == [1, 2, 3, 4]  # the first try and exactly three retries
    assert blocked.reason == "failed" and blocked.run.status == "failed"
    assert blocked.message.endswith("Blocked: retry budget exhausted (4 retries, maxRetriesPerAction 3)")


def test_manual_retries_stop_at_the_budget_with_a_typed_rejection(rt: Runtime) -> None:
    rt.register_executor("work", lambda value, ctx: (_ for _ in ()).throw(ActionFailed("no")))
    aid = started(rt, max_retries_per_action=1)
    rt.run_until_blocked("r")
    rt.retry("r", aid)
    rt.run_until_blocked("r")
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.retry("r", aid)
    assert info.value.code == "retry-budget" and "Blocked: retry budget exhausted" in str(info.value)
    assert unchanged(rt) == before


def test_input_parsing_failures_are_known_failures(rt: Runtime) -> None:
    def parse(raw: Any) -> int:
        return int(raw["count"])

    seen: list[int] = []
    rt.register_executor("work", lambda value, ctx: seen.append(value) or {}, parse=parse)
    rt.start(two_steps(), "ok", {"count": "3"})
    rt.run_until_blocked("ok")
    assert seen == [3]
    rt.start(two_steps(), "bad", {"count": "three"})
    blocked = rt.run_until_blocked("bad")
    assert blocked.reason == "failed" and "could not be parsed: ValueError" in (blocked.action.outcome or {})["error"]  # type: ignore[union-attr]


def test_output_validators_refuse_outputs_by_name(rt: Runtime) -> None:
    wf = define_workflow("v", "1", entry="work", steps={"work": skill("work", validator="has-url")})
    rt.register_validator("has-url", lambda out: [] if "url" in out else ["the output has no 'url'"])
    rt.start(wf, "r")
    aid = rt.inspect("r").pending
    claim = rt.claim("r", aid)
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({}))
    assert info.value.code == "output-invalid" and "has no 'url'" in str(info.value)
    rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({"url": "x"}))
    assert rt.inspect("r").status == "completed"


def test_an_output_that_is_not_plain_json_is_refused_and_an_executors_becomes_a_failure(rt: Runtime) -> None:
    aid = started(rt)
    claim = rt.claim("r", aid)
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.record_outcome("r", aid, attempt=1, token=claim.token, outcome=Outcome.succeeded({"when": {1, 2}}))
    assert info.value.code == "output-not-json"
    assert unchanged(rt) == before
    rt.start(two_steps(), "exec")
    rt.register_executor("work", lambda value, ctx: {"nan": float("nan")})
    blocked = rt.run_until_blocked("exec")
    assert blocked.reason == "failed" and "not plain JSON" in (blocked.action.outcome or {})["error"]  # type: ignore[union-attr]


def test_a_run_cancelled_while_its_executor_works_stops_quietly(rt: Runtime) -> None:
    def cancels_meanwhile(value: Any, ctx: ExecutionContext) -> Any:
        rt.cancel(ctx.run_id, "the user stopped it while the action ran")
        return {}

    rt.register_executor("work", cancels_meanwhile)
    started(rt)
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "cancelled" and blocked.actions_run == 1


def test_racing_claims_from_many_runtimes_exactly_one_wins() -> None:
    import threading

    store = MemoryStore()
    first = Runtime(store)
    first.start(two_steps(), "r")
    aid = first.inspect("r").pending
    results: list[str] = []
    start = threading.Barrier(8, timeout=30)

    def race() -> None:
        rt = Runtime(store)
        rt.register(two_steps())
        start.wait()
        try:
            rt.claim("r", aid)
            results.append("won")
        except RejectedError as err:
            results.append(err.code)

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["action-in-flight"] * 7 + ["won"]
    assert [e["type"] for e in store.events("r")].count("action_claimed") == 1


def test_executors_can_parse_their_input_into_a_typed_model(rt: Runtime) -> None:
    from pydantic import BaseModel, ValidationError

    class Order(BaseModel):
        sku: str
        quantity: int

    seen: list[Order] = []

    def place(order: Order, ctx: ExecutionContext) -> Any:
        seen.append(order)
        return {"placed": order.quantity}

    rt.register_executor("work", place, parse=Order.model_validate)
    rt.start(two_steps(), "good", {"sku": "A-1", "quantity": "2"})
    rt.run_until_blocked("good")
    assert seen == [Order(sku="A-1", quantity=2)]
    rt.start(two_steps(), "bad", {"sku": "A-1"})
    blocked = rt.run_until_blocked("bad")
    assert blocked.reason == "failed" and len(seen) == 1
    assert ValidationError.__name__ in (blocked.action.outcome or {})["error"]  # type: ignore[union-attr]
