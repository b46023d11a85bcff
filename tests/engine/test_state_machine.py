"""Hypothesis drives the real runtime (memory store) and a small model side by side; they must agree.

Workflow under test: ``a`` (a skill, manual retries) -> ``gate`` (an approval) -> ``b`` (a tool) on
``approved``, and back to ``a`` on ``rejected``. Every command is tried in every situation, wanted or
not: the model says whether it must be accepted (the revision moves by exactly one) or refused with a
typed error (nothing is written), and what the run looks like afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from comet_engine import Guardrails, Outcome, Receipt, RejectedError, Runtime, action_id, approval, define_workflow
from comet_engine import skill as skill_step
from comet_engine import tool as tool_step
from comet_engine.stores.memory import MemoryStore

MAX_ITERATIONS = 7
MAX_RETRIES = 1  # small, so that examples reach the end of the budget often
LEASE = 10.0


def workflow(policy: str) -> Any:
    return define_workflow(
        "model",
        "1",
        entry="a",
        steps={
            "a": skill_step("a", retry=policy),
            "gate": approval(question="Go on?", proposal_from="a"),
            "b": tool_step("b", retry=policy),
        },
        transitions=[("a", "gate"), ("gate", "b", "approved"), ("gate", "a", "rejected")],
        guardrails=Guardrails(max_iterations=MAX_ITERATIONS, max_retries_per_action=MAX_RETRIES),
    )


@dataclass
class ModelAction:
    id: str
    step: str
    status: str = "pending"
    attempt: int = 1
    token: str | None = None
    reconciled: bool = False


class RunModel(RuleBasedStateMachine):
    """The model for steps with the ``manual`` retry policy; subclasses check the other two."""

    POLICY = "manual"

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.rt = Runtime(MemoryStore(), clock=lambda: self.now, lease_seconds=LEASE)
        self.rt.start(workflow(self.POLICY), "run")
        self.revision = 1
        self.events = self.rt.events("run")
        self.status = "waiting"
        self.iteration = 0
        self.step = "a"
        self.act: ModelAction | None = None
        self.retries = 0
        self.wait: tuple[str, str] | None = None  # the latest approval wait, kept after it is decided
        self.recorded: list[tuple[str, int, str, Outcome, Receipt]] = []
        self._activate("a", commit=False)

    # --- the model ------------------------------------------------------------------------------------

    def _activate(self, step: str, *, commit: bool = True) -> None:
        if self.iteration >= MAX_ITERATIONS:
            self.status, self.act = "failed", None
            return
        self.step = step
        ident = action_id("run", self.iteration, step)
        self.iteration += 1
        if step == "gate":
            self.act = None
            wait = next(w for w in self.rt.inspect("run").waits if w.id == ident)
            self.wait = (wait.id, wait.digest)
        else:
            self.act, self.retries = ModelAction(ident, step), 0

    def _auto_retry(self, act: ModelAction) -> None:
        """In the same commit: a retry within the budget, or the run fails (retry budget exhausted)."""
        if self.retries < MAX_RETRIES:
            self.retries += 1
            act.status, act.attempt, act.token, act.reconciled = "pending", act.attempt + 1, None, False
        else:
            self.status = "failed"

    def accepted(self, fn: Any) -> Any:
        result = fn()
        self.revision += 1
        return result

    def refused(self, fn: Any, *codes: str) -> None:
        try:
            fn()
        except RejectedError as err:
            assert err.code in codes, (err.code, codes, str(err))
        else:
            raise AssertionError(f"expected a refusal with one of {codes}")

    def record(self, outcome: Outcome, token: str | None = None) -> Any:
        act = self.act
        assert act is not None
        return lambda: self.rt.record_outcome(
            "run", act.id, attempt=act.attempt, token=token or act.token or "none", outcome=outcome
        )

    def refused_or_duplicate(self, outcome: Outcome) -> None:
        """Reporting again for an action that cannot take it: the same outcome again is a duplicate."""
        act = self.act
        assert act is not None
        for aid, attempt, token, done, receipt in self.recorded:
            if (aid, attempt, token, done) == (act.id, act.attempt, act.token, outcome):
                assert self.record(outcome)() == receipt
                return
        self.refused(self.record(outcome), "not-claimed", "run-finished", "claim-mismatch", "outcome-conflict")

    # --- rules ----------------------------------------------------------------------------------------

    @rule()
    def claim(self) -> None:
        act = self.act
        if self.status == "waiting" and act is not None and act.status == "pending":
            claim = self.accepted(lambda: self.rt.claim("run", act.id))
            assert claim.attempt == act.attempt
            act.status, act.token = "claimed", claim.token
        else:
            target = act.id if act is not None else "0" * 16
            self.refused(
                lambda: self.rt.claim("run", target),
                "action-in-flight",
                "not-claimable",
                "run-finished",
                "unknown-action",
            )

    @rule(value=st.integers(0, 3))
    def succeed(self, value: int) -> None:
        act, outcome = self.act, Outcome.succeeded({"v": value})
        if self.status == "waiting" and act is not None and act.status in ("claimed", "unknown") and act.token:
            token = act.token
            receipt = self.accepted(self.record(outcome))
            self.recorded.append((act.id, act.attempt, token, outcome, receipt))
            if act.step == "a":
                self._activate("gate")
            else:
                self.status, self.act = "completed", None
        elif act is not None:
            self.refused_or_duplicate(outcome)

    @rule()
    def fail(self) -> None:
        act, outcome = self.act, Outcome.failed("broken")
        if self.status == "waiting" and act is not None and act.status in ("claimed", "unknown") and act.token:
            token = act.token
            receipt = self.accepted(self.record(outcome))
            self.recorded.append((act.id, act.attempt, token, outcome, receipt))
            if self.POLICY == "manual":
                act.status = "failed"  # no failure edge: the action waits for an explicit retry
            else:
                self._auto_retry(act)
        elif act is not None:
            self.refused_or_duplicate(outcome)

    @precondition(lambda self: self.act is not None and self.act.status == "claimed")
    @rule()
    def forged_token(self) -> None:
        self.refused(self.record(Outcome.succeeded({}), token="forged"), "claim-mismatch", "run-finished")

    @precondition(lambda self: self.act is not None and self.act.status == "claimed")
    @rule(shift=st.sampled_from([-1, 1]))
    def wrong_attempt(self, shift: int) -> None:
        act = self.act
        assert act is not None and act.token is not None
        token = act.token
        self.refused(
            lambda: self.rt.record_outcome(
                "run", act.id, attempt=act.attempt + shift, token=token, outcome=Outcome.succeeded({})
            ),
            "stale-attempt",
            "run-finished",
        )

    @precondition(lambda self: bool(self.recorded))
    @rule(pick=st.integers(0, 50))
    def resubmit(self, pick: int) -> None:
        aid, attempt, token, outcome, receipt = self.recorded[pick % len(self.recorded)]
        again = self.rt.record_outcome("run", aid, attempt=attempt, token=token, outcome=outcome)
        assert again == receipt

    @precondition(lambda self: bool(self.recorded))
    @rule(pick=st.integers(0, 50))
    def conflicting_outcome(self, pick: int) -> None:
        aid, attempt, token, outcome, _ = self.recorded[pick % len(self.recorded)]
        other = Outcome.failed("other") if outcome.status == "succeeded" else Outcome.succeeded({"v": 9})
        self.refused(
            lambda: self.rt.record_outcome("run", aid, attempt=attempt, token=token, outcome=other), "outcome-conflict"
        )

    @rule()
    def lease_runs_out(self) -> None:
        self.now += LEASE + 1
        act = self.act
        lost = self.status == "waiting" and act is not None and act.status == "claimed"
        blocked = self.rt.run_until_blocked("run")  # no executors: it only expires leases and reports
        if lost:
            assert act is not None
            act.status = "unknown"
            self.revision += 1
            if self.POLICY == "idempotent":
                self._auto_retry(act)
        assert blocked.reason == self.expected_reason()

    @rule()
    def reconcile(self) -> None:
        act = self.act
        if self.status == "waiting" and act is not None and act.status == "unknown":
            self.accepted(lambda: self.rt.reconcile("run", act.id, "not-executed", evidence="nothing was sent"))
            act.reconciled = True
            if self.POLICY != "manual":
                self._auto_retry(act)
        elif act is not None:
            self.refused(
                lambda: self.rt.reconcile("run", act.id, "not-executed", evidence="x"), "not-unknown", "run-finished"
            )

    @rule()
    def retry(self) -> None:
        act = self.act
        if act is None:
            return
        unknown_ok = act.reconciled or self.POLICY == "idempotent"
        retryable = act.status == "failed" or (act.status == "unknown" and unknown_ok)
        if self.status == "waiting" and retryable and self.retries < MAX_RETRIES:
            self.accepted(lambda: self.rt.retry("run", act.id))
            self.retries += 1
            act.status, act.attempt, act.token, act.reconciled = "pending", act.attempt + 1, None, False
        else:
            self.refused(
                lambda: self.rt.retry("run", act.id),
                "retry-budget",
                "reconcile-first",
                "not-retryable",
                "run-finished",
            )

    @precondition(lambda self: self.wait is not None)
    @rule(choice=st.sampled_from(["approved", "rejected", "maybe"]), stale=st.booleans())
    def decide(self, choice: str, stale: bool) -> None:
        assert self.wait is not None
        wid, digest = self.wait
        given = "sha256:" + "0" * 64 if stale else digest
        call = lambda: self.rt.resolve_wait("run", wid, proposal_digest=given, choice=choice)  # noqa: E731
        if self.status != "waiting" or self.step != "gate":
            self.refused(call, "wait-closed", "run-finished")
        elif stale or choice == "maybe":
            self.refused(call, "stale-proposal", "invalid-choice")
        else:
            self.accepted(call)
            self._activate("b" if choice == "approved" else "a")

    @rule(dice=st.integers(0, 7))
    def cancel(self, dice: int) -> None:
        if dice:
            return  # cancelling ends the example: only one draw in eight does, so runs get long
        if self.status == "waiting":
            self.accepted(lambda: self.rt.cancel("run", "stop"))
            self.status, self.act = "cancelled", None
        else:
            self.refused(lambda: self.rt.cancel("run", "stop"), "run-finished")

    # --- what must always hold ------------------------------------------------------------------------

    def expected_reason(self) -> str:
        if self.status != "waiting":
            return self.status
        if self.act is None:
            return "approval-required"
        return {
            "pending": "executor-required",
            "claimed": "action-in-flight",
            "unknown": "execution-unknown",
            "failed": "failed",
        }[self.act.status]

    @invariant()
    def the_run_matches_the_model(self) -> None:
        run = self.rt.inspect("run")
        assert run.revision == self.revision
        assert run.status == self.status
        if self.status in ("waiting", "completed"):
            assert run.iteration == self.iteration
        if self.status == "waiting":
            assert run.current_step == self.step
            assert run.pending == (self.act.id if self.act is not None else "")
            if self.act is not None:
                (action,) = run.actions
                assert (action.status, action.attempt) == (self.act.status, self.act.attempt)
                assert run.raw["retries"].get(self.act.id, 0) == self.retries
        else:
            assert run.pending == ""

    @invariant()
    def the_trajectory_only_grows_and_every_event_has_a_published_revision(self) -> None:
        events = self.rt.events("run")
        assert events[: len(self.events)] == self.events
        assert all(1 <= e["revision"] <= self.revision for e in events)
        assert [e["revision"] for e in events] == sorted(e["revision"] for e in events)
        self.events = events


class ReconcileModel(RunModel):
    POLICY = "reconcile"


class IdempotentModel(RunModel):
    POLICY = "idempotent"


SETTINGS = settings(
    max_examples=150, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
RunModel.TestCase.settings = ReconcileModel.TestCase.settings = IdempotentModel.TestCase.settings = SETTINGS
TestManualRetries = RunModel.TestCase
TestReconcileRetries = ReconcileModel.TestCase
TestIdempotentRetries = IdempotentModel.TestCase
