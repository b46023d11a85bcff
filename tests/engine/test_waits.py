"""Waits: approvals bound to wait id + proposal digest, evidence checked by validators, tool confirmations."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from comet_engine import (
    Outcome,
    RejectedError,
    Runtime,
    approval,
    define_workflow,
    evidence,
    skill,
    tool,
)
from comet_engine.stores.base import StoredRun
from comet_engine.stores.memory import MemoryStore

REPORT = define_workflow(
    "report",
    "1",
    entry="draft",
    steps={
        "draft": skill("draft"),
        "approve": approval(question="Publish this?", proposal_from="draft"),
        "publish": tool("publish"),
    },
    transitions=[("draft", "approve"), ("approve", "publish", "approved"), ("approve", "draft", "rejected")],
)


def drafted(rt: Runtime, text: str = "v1") -> Any:
    rt.register_executor("draft", lambda value, ctx: {"text": text})
    if "r" not in rt.store.run_ids():
        rt.start(REPORT, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "approval-required" and blocked.wait is not None
    return blocked.wait


def unchanged(rt: Runtime) -> tuple[int, int]:
    return rt.inspect("r").revision, len(rt.events("r"))


def test_an_approval_shows_the_proposal_and_routes_on_the_decision() -> None:
    rt = Runtime(MemoryStore())
    wait = drafted(rt)
    assert (wait.kind, wait.question, wait.proposal, wait.choices) == (
        "approval",
        "Publish this?",
        {"text": "v1"},
        ("approved", "rejected"),
    )
    rt.resolve_wait("r", wait.id, proposal_digest=wait.digest, choice="approved")
    run = rt.inspect("r")
    assert run.current_step == "publish" and rt.outputs("r")["approve"] == {"decision": "approved"}


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"proposal_digest": "sha256:" + "0" * 64}, "stale-proposal"),
        ({"choice": "maybe"}, "invalid-choice"),
        ({"wait_id": "f" * 16}, "unknown-wait"),
    ],
)
def test_bad_decisions_are_typed_rejections_that_write_nothing(change: dict[str, str], code: str) -> None:
    rt = Runtime(MemoryStore())
    wait = drafted(rt)
    args = {"wait_id": wait.id, "proposal_digest": wait.digest, "choice": "approved"} | change
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.resolve_wait("r", args.pop("wait_id"), **args)
    assert info.value.code == code
    assert unchanged(rt) == before


def test_a_second_decision_is_refused() -> None:
    rt = Runtime(MemoryStore())
    wait = drafted(rt)
    rt.resolve_wait("r", wait.id, proposal_digest=wait.digest, choice="approved")
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.resolve_wait("r", wait.id, proposal_digest=wait.digest, choice="approved")
    assert info.value.code == "wait-closed"
    assert unchanged(rt) == before


def test_an_old_approval_cannot_authorise_a_new_proposal() -> None:
    rt = Runtime(MemoryStore())
    first = drafted(rt, "v1")
    rt.resolve_wait("r", first.id, proposal_digest=first.digest, choice="rejected")
    second = drafted(rt, "v2")
    assert second.id != first.id and second.digest != first.digest
    with pytest.raises(RejectedError) as info:
        rt.resolve_wait("r", second.id, proposal_digest=first.digest, choice="approved")
    assert info.value.code == "stale-proposal"


class LockstepStore:
    """A memory store whose first two loads wait for each other: both writers read the same revision."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.barrier = threading.Barrier(2, timeout=30)
        self.armed = 0  # how many loads still wait at the barrier
        self.lock = threading.Lock()

    def create(self, run_id: str, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> StoredRun:
        return self.inner.create(run_id, state, events)

    def load(self, run_id: str) -> StoredRun:
        stored = self.inner.load(run_id)
        with self.lock:
            wait, self.armed = self.armed > 0, max(self.armed - 1, 0)
        if wait:
            self.barrier.wait()
        return stored

    def commit(
        self, run_id: str, expected_revision: int, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
    ) -> StoredRun:
        return self.inner.commit(run_id, expected_revision, state, events)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        return self.inner.events(run_id)

    def run_ids(self) -> list[str]:
        return self.inner.run_ids()


def test_two_simultaneous_opposite_approvals_exactly_one_is_accepted() -> None:
    store = LockstepStore()
    wait = drafted(Runtime(store))
    results: dict[str, object] = {}

    def decide(choice: str) -> None:
        rt = Runtime(store)  # a separate runtime per writer: no shared cache, both load revision N
        rt.register(REPORT)
        try:
            rt.resolve_wait("r", wait.id, proposal_digest=wait.digest, choice=choice)
            results[choice] = "accepted"
        except RejectedError as err:
            results[choice] = err.code

    store.armed = 2
    threads = [threading.Thread(target=decide, args=(c,)) for c in ("approved", "rejected")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results.values()) == ["accepted", "wait-closed"]
    resolved = [e for e in store.events("r") if e["type"] == "wait_resolved"]
    assert len(resolved) == 1
    winner = next(c for c, r in results.items() if r == "accepted")
    assert resolved[0]["decision"] == winner


EVIDENCE = define_workflow(
    "deploy",
    "1",
    entry="deployed",
    steps={"deployed": evidence("deploy-log", description="the deploy log"), "after": skill("after")},
    transitions=[("deployed", "after")],
)


def test_evidence_is_accepted_only_when_its_validator_finds_no_problem() -> None:
    rt = Runtime(MemoryStore())
    rt.start(EVIDENCE, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "evidence-required" and blocked.wait is not None
    wid = blocked.wait.id
    before = unchanged(rt)
    with pytest.raises(RejectedError) as info:
        rt.record_evidence("r", wid, {"log": "ok"})
    assert info.value.code == "validator-missing"
    rt.register_validator("deploy-log", lambda ev: [] if ev.get("exit") == 0 else ["exit code is not 0"])
    with pytest.raises(RejectedError) as info:
        rt.record_evidence("r", wid, {"exit": 1})
    assert info.value.code == "evidence-invalid" and "exit code is not 0" in str(info.value)
    with pytest.raises(RejectedError) as info:
        rt.resolve_wait("r", wid, proposal_digest="", choice="approved")
    assert info.value.code == "wrong-wait"
    assert unchanged(rt) == before
    rt.record_evidence("r", wid, {"exit": 0})
    run = rt.inspect("r")
    assert rt.outputs("r")["deployed"] == {"exit": 0} and run.current_step == "after"
    with pytest.raises(RejectedError) as info:
        rt.record_evidence("r", wid, {"exit": 0})
    assert info.value.code == "wait-closed"


CONFIRMED = define_workflow(
    "wipe",
    "1",
    entry="wipe",
    steps={"wipe": tool("wipe-disk", requires_confirmation=True), "done": skill("report")},
    transitions=[("wipe", "done")],
)


def test_a_tool_that_requires_confirmation_waits_for_a_user() -> None:
    rt = Runtime(MemoryStore())
    ran: list[str] = []
    rt.register_executor("wipe-disk", lambda value, ctx: ran.append("wiped") or {})
    rt.start(CONFIRMED, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.reason == "approval-required" and ran == []
    assert blocked.wait is not None and blocked.wait.kind == "confirmation"
    with pytest.raises(RejectedError) as info:
        rt.claim("r", blocked.run.pending)
    assert info.value.code == "confirmation-required" and "Blocked: user confirmation required" in str(info.value)
    rt.resolve_wait("r", blocked.wait.id, proposal_digest=blocked.wait.digest, choice="approved")
    assert rt.run_until_blocked("r").reason == "executor-required"
    assert ran == ["wiped"]


def test_a_declined_confirmation_never_runs_the_tool() -> None:
    rt = Runtime(MemoryStore())
    rt.start(CONFIRMED, "r")
    blocked = rt.run_until_blocked("r")
    assert blocked.wait is not None
    rt.resolve_wait("r", blocked.wait.id, proposal_digest=blocked.wait.digest, choice="rejected")
    run = rt.inspect("r")
    assert run.status == "completed" and "done" not in run.outputs
    assert any(e["type"] == "action_cancelled" for e in rt.events("r"))
    with pytest.raises(RejectedError):
        rt.record_outcome("r", blocked.run.pending, attempt=1, token="x", outcome=Outcome.succeeded({}))
