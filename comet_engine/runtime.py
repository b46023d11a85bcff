"""The runtime: drives runs of registered workflows over a compare-and-swap ``Store``.

Every command loads the run, computes the next state with the pure ``machine`` and commits it naming the
revision it started from. When another writer committed first (``ConflictError``), the command reloads
and recomputes, so a refusal that only the newer state reveals (a second decision on one approval, an
outcome for a cancelled action) surfaces as the typed ``RejectedError`` and nothing is written.
Commands that change nothing (an identical resubmitted outcome) commit nothing.

Executors are plain functions registered by step ref: ``fn(input, context) -> output`` (or an
``Outcome``). An optional ``parse`` turns the action's JSON input into what ``fn`` expects first. An
executor raises ``ActionFailed`` for a known failure; any other exception means the result is lost
(the work may have happened) and the action becomes ``unknown``.

``run_until_blocked`` runs pending actions with registered executors (at most ``max_actions``, counting
those of child runs) and returns one ``Blocked`` whose ``reason`` is one of ``REASONS``.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from comet_engine import machine
from comet_engine.checks import CheckResult, evaluate
from comet_engine.definitions import Workflow
from comet_engine.errors import (
    ConflictError,
    RejectedError,
    RunExistsError,
    RunNotFoundError,
    UnknownDefinitionError,
)
from comet_engine.state import TERMINAL, Action, Outcome, Receipt, RunState, Wait
from comet_engine.stores.base import Store, StoredRun

__all__ = [
    "REASONS",
    "ActionFailed",
    "Blocked",
    "Claim",
    "ExecutionContext",
    "Runtime",
]

REASONS = (
    "completed",
    "approval-required",
    "evidence-required",
    "executor-required",
    "action-in-flight",
    "execution-unknown",
    "failed",
    "action-limit",
    "cancelled",
    "idle",
)
#: When several things block a run at once, the reason reported is the first of these that applies:
#: what needs a person's judgement (unknown results, failures) before what needs their input.
_PRIORITY = (
    "execution-unknown",
    "failed",
    "approval-required",
    "evidence-required",
    "executor-required",
    "action-in-flight",
    "idle",
)
DEFAULT_LEASE_SECONDS = 300.0
_CONFLICT_RETRIES = 200
_CACHE_SIZE = 256  # runs whose last committed state this runtime keeps to skip a load before a commit


class ActionFailed(Exception):
    """Raised by an executor for a known failure: the action is recorded as failed, not unknown."""


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """What an executor may know about the action it runs (``outputs``: those the run state keeps)."""

    run_id: str
    action_id: str
    step: str
    ref: str | None
    attempt: int
    run_input: Mapping[str, Any]
    outputs: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed action: report its outcome with ``attempt`` and ``token`` before ``lease_expires_at``."""

    run_id: str
    action_id: str
    step: str
    ref: str | None
    attempt: int
    token: str
    input: Any
    input_digest: str
    lease_expires_at: float


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why ``run_until_blocked`` stopped. ``run_id`` is the run that blocks (a child run, possibly)."""

    reason: str
    run: RunState
    run_id: str
    actions_run: int
    action: Action | None = None
    wait: Wait | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class _Executor:
    fn: Callable[[Any, ExecutionContext], Any]
    parse: Callable[[Any], Any] | None


Mutation = Callable[[Workflow, Mapping[str, Any]], machine.Result]


class Runtime:
    """Runs of registered workflows in one store. Not tied to a process: any runtime that registers the
    same definitions and executors can continue a run another process started."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.store = store
        self._clock = clock
        self._lease = lease_seconds
        self._by_hash: dict[str, Workflow] = {}
        self._by_id: dict[str, dict[str, Workflow]] = {}
        self._executors: dict[str, _Executor] = {}
        self._validators: dict[str, Callable[[Any], Iterable[str]]] = {}
        self._cache: dict[str, StoredRun] = {}

    # --- registration ---------------------------------------------------------------------------------

    def register(self, *workflows: Workflow) -> None:
        """Make definitions available to start runs of and to resume runs pinned to them."""
        for wf in workflows:
            self._by_hash[wf.hash] = wf
            self._by_id.setdefault(wf.id, {})[wf.version] = wf

    def register_executor(
        self, ref: str, fn: Callable[[Any, ExecutionContext], Any], *, parse: Callable[[Any], Any] | None = None
    ) -> None:
        """Run *fn* for actions of steps with this ref; *parse* converts the JSON input first."""
        self._executors[ref] = _Executor(fn, parse)

    def register_validator(self, name: str, fn: Callable[[Any], Iterable[str]]) -> None:
        """A validator returns the problems it finds (none: valid); used by evidence and output checks."""
        self._validators[name] = fn

    def workflow(self, workflow_id: str, version: str | None = None) -> Workflow:
        """A registered definition (the most recently registered version when *version* is omitted)."""
        versions = self._by_id.get(workflow_id, {})
        wf = versions.get(version) if version is not None else next(reversed(versions.values()), None)
        if wf is None:
            known = ", ".join(f"{k}@{v}" for k, vs in sorted(self._by_id.items()) for v in vs) or "none"
            raise UnknownDefinitionError(
                f"workflow {workflow_id!r} version {version or '(any)'} is not registered (registered: {known}); "
                "call runtime.register(workflow) first"
            )
        return wf

    # --- starting and reading -------------------------------------------------------------------------

    def start(
        self,
        workflow: Workflow | str,
        run_id: str,
        input: Mapping[str, Any] | None = None,
        *,
        version: str | None = None,
        skill_hash: str | None = None,
    ) -> RunState:
        """Start a run pinned to the definition's hash (``RunExistsError`` if *run_id* is taken)."""
        wf = workflow if isinstance(workflow, Workflow) else self.workflow(workflow, version)
        self.register(wf)
        return self._start(wf, run_id, input, skill_hash=skill_hash, parent=None, depth=0)

    def inspect(self, run_id: str) -> RunState:
        """The run as stored. Reads only: no lease is expired, no child started, nothing written."""
        stored = self.store.load(run_id)
        return RunState.from_json(stored.state, stored.revision)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's trajectory, oldest first."""
        return self.store.events(run_id)

    def outputs(self, run_id: str) -> dict[str, Any]:
        """The latest output of every step that has produced one, read from the trajectory."""
        out: dict[str, Any] = {}
        for event in self.store.events(run_id):
            if event["type"] == "step_completed" and event.get("output") is not None:
                out[event["step"]] = event["output"]
        return out

    def check(self, run_id: str, scope: str = "progress") -> list[CheckResult]:
        """Evaluate the definition's checks of *scope* against the stored run; writes nothing."""
        stored = self.store.load(run_id)
        wf = self._pinned(stored.state)
        return evaluate(wf.checks, stored.state, scope, step=stored.state.get("currentStep"))

    # --- commands -------------------------------------------------------------------------------------

    def claim(self, run_id: str, action_id: str) -> Claim:
        """Claim a pending action for execution: returns its attempt, claim token and lease."""
        return self._claim(run_id, action_id)[0]

    def _claim(self, run_id: str, action_id: str) -> tuple[Claim, StoredRun]:
        token = secrets.token_hex(16)
        now = self._clock()

        def change(wf: Workflow, st: Mapping[str, Any]) -> machine.Result:
            # Expired leases first, in the same commit: a claim never races a lease it should have ended.
            st, expired = machine.expire_leases(wf, st, now)
            st, claimed = machine.claim(wf, st, action_id, token=token, now=now, lease=self._lease)
            return st, expired + claimed

        stored = self._mutate(run_id, change)
        act = stored.state["actions"][action_id]
        claim = Claim(
            run_id,
            action_id,
            act["step"],
            act["ref"],
            act["attempt"],
            token,
            act["input"],
            act["inputDigest"],
            act["leaseExpiresAt"],
        )
        return claim, stored

    def record_outcome(self, run_id: str, action_id: str, *, attempt: int, token: str, outcome: Outcome) -> Receipt:
        """Record the outcome of one claimed attempt; an identical resubmission returns an equal receipt."""
        receipts: list[Receipt] = []

        def change(wf: Workflow, st: Mapping[str, Any]) -> machine.Result:
            self._check_output(wf, st, action_id, outcome)
            # An action that ended is only in the trajectory: read it there (rare: a late resubmission).
            past = self._past(run_id, action_id) if action_id not in st["actions"] else ()
            new, events, receipt = machine.record_outcome(
                wf, st, action_id, attempt=attempt, token=token, outcome=outcome, past=past
            )
            receipts.append(receipt)
            return new, events

        self._mutate(run_id, change)
        return receipts[-1]

    def retry(self, run_id: str, action_id: str) -> RunState:
        """Make a failed (or reconciled / idempotent unknown) action pending again, within the budget."""
        return self._view(self._mutate(run_id, lambda wf, st: machine.retry(wf, st, action_id)))

    def reconcile(self, run_id: str, action_id: str, verdict: str, evidence: Any, output: Any = None) -> RunState:
        """Settle an unknown action with evidence: ``not-executed``, ``succeeded`` (with output) or ``failed``."""
        return self._view(
            self._mutate(run_id, lambda wf, st: machine.reconcile(wf, st, action_id, verdict, evidence, output))
        )

    def resolve_wait(self, run_id: str, wait_id: str, *, proposal_digest: str, choice: str) -> RunState:
        """Decide an approval (or confirmation) wait; bound to its id and the digest of its proposal."""
        return self._view(
            self._mutate(
                run_id,
                lambda wf, st: machine.resolve_wait(wf, st, wait_id, proposal_digest=proposal_digest, choice=choice),
            )
        )

    def record_evidence(self, run_id: str, wait_id: str, evidence: Any) -> RunState:
        """Submit evidence for an evidence wait; its registered validator must find no problem."""
        stored = self.store.load(run_id)
        wait = stored.state["waits"].get(wait_id)
        if wait is not None and wait.get("kind") == "evidence":
            self._validate(wait["validator"], evidence, f"wait {wait_id} (step {wait['step']!r})", "evidence-invalid")
        return self._view(self._mutate(run_id, lambda wf, st: machine.record_evidence(wf, st, wait_id, evidence)))

    def cancel(self, run_id: str, reason: str = "cancelled by the caller") -> RunState:
        """Cancel a run and its running child runs."""
        view = self._view(self._mutate(run_id, lambda wf, st: machine.cancel(wf, st, reason)))
        for child_id, entry in view.raw["children"].items():
            if entry["status"] not in TERMINAL:
                # A child that ended meanwhile, or never started, needs nothing.
                with contextlib.suppress(RejectedError, RunNotFoundError):
                    self.cancel(child_id, f"parent run {run_id} cancelled")
        return view

    def upgrade(self, run_id: str, new: Workflow) -> RunState:
        """Move a run to another version of its definition (explicitly; recorded as state_migrated)."""
        self.register(new)
        return self._view(self._mutate(run_id, lambda old, st: machine.upgrade(old, new, st)))

    def accept_adaptive_action(
        self, run_id: str, kind: str, ref: str, input: Mapping[str, Any] | None = None
    ) -> RunState:
        """An agent proposes the next action of an adaptive run; guardrails may refuse it."""
        return self._view(self._mutate(run_id, lambda wf, st: machine.accept_adaptive_action(wf, st, kind, ref, input)))

    def complete(self, run_id: str) -> RunState:
        """End an adaptive run (completion checks run)."""
        return self._view(self._mutate(run_id, machine.complete))

    # --- driving --------------------------------------------------------------------------------------

    def run_until_blocked(self, run_id: str, *, max_actions: int = 100) -> Blocked:
        """Run pending actions with registered executors until the run (or a child) blocks."""
        return self._drive(run_id, max_actions, 0)

    def _drive(self, run_id: str, max_actions: int, done: int) -> Blocked:
        while True:
            stored = self._expire(run_id)
            state = stored.state
            if state["status"] in TERMINAL:
                return self._blocked(state["status"], stored, done)
            progressed, done, child_block = self._drive_children(stored, max_actions, done)
            if progressed:
                continue
            runnable = [
                a
                for iid in state["open"]
                if (a := state["actions"].get(iid)) is not None
                and a["status"] == "pending"
                and a.get("confirmed", True)
                and a["ref"] in self._executors
            ]
            if runnable:
                if done >= max_actions:
                    return self._blocked("action-limit", stored, done, action=runnable[0])
                self._execute(run_id, runnable[0]["id"])
                done += 1
                continue
            return self._why(stored, done, child_block)

    def _drive_children(self, stored: StoredRun, max_actions: int, done: int) -> tuple[bool, int, Blocked | None]:
        """Start missing child runs and drive running ones; returns (progress made, actions, a child's block)."""
        first_block: Blocked | None = None
        for child_id, entry in stored.state["children"].items():
            if entry["status"] in TERMINAL:
                continue
            try:
                wf = self.workflow(entry["workflow"], entry["version"])
            except UnknownDefinitionError as err:
                block = self._blocked("executor-required", stored, done, message=str(err))
                first_block = first_block or block
                continue
            self._ensure_child(stored, child_id, entry, wf)
            block = self._drive(child_id, max_actions, done)
            done = block.actions_run
            if block.reason in TERMINAL:
                return True, done, None  # the child told its parent when it ended; look again
            first_block = first_block or block
        return False, done, first_block

    def _ensure_child(self, stored: StoredRun, child_id: str, entry: Mapping[str, Any], wf: Workflow) -> None:
        parent = {"runId": stored.run_id, "step": entry["step"], "instance": entry["instance"]}
        # Started before (by this process or another): the deterministic child id makes this idempotent.
        with contextlib.suppress(RunExistsError):
            self._start(wf, child_id, entry["input"], skill_hash=None, parent=parent, depth=stored.state["depth"] + 1)

    def _execute(self, run_id: str, action_id: str) -> None:
        try:
            claim, stored = self._claim(run_id, action_id)
        except RejectedError:
            return  # another runner took it first; the caller looks again
        executor = self._executors[claim.ref or ""]
        state = stored.state
        context = ExecutionContext(
            run_id, action_id, claim.step, claim.ref, claim.attempt, state["input"], state["outputs"]
        )
        try:
            value = executor.parse(claim.input) if executor.parse else claim.input
        except Exception as err:  # nothing ran: a bad input is a known failure, not an unknown result
            outcome = Outcome.failed(f"input of step {claim.step!r} could not be parsed: {type(err).__name__}: {err}")
        else:
            try:
                result = executor.fn(value, context)
            except ActionFailed as err:
                outcome = Outcome.failed(str(err) or "the executor reported a failure")
            except Exception as err:
                reason = f"executor raised {type(err).__name__}: {err}"
                self._mutate(run_id, lambda wf, st: machine.mark_unknown(wf, st, action_id, reason))
                return
            else:
                outcome = result if isinstance(result, Outcome) else Outcome.succeeded(result)
        try:
            self.record_outcome(run_id, action_id, attempt=claim.attempt, token=claim.token, outcome=outcome)
        except RejectedError as err:
            if err.code in ("action-cancelled", "run-finished"):
                return  # the run was cancelled or ended while the executor worked: the caller looks again
            if err.code not in ("output-schema", "output-invalid", "output-not-json"):
                raise
            # The output is refused, never stored: the attempt is recorded as a known failure instead.
            self.record_outcome(
                run_id, action_id, attempt=claim.attempt, token=claim.token, outcome=Outcome.failed(str(err))
            )

    def _why(self, stored: StoredRun, done: int, child_block: Blocked | None) -> Blocked:
        state = stored.state
        found: dict[str, tuple[Action | None, Wait | None]] = {}
        for iid in state["open"]:
            if (raw := state["actions"].get(iid)) is not None:
                act = Action.from_json(raw)
                reason = {
                    "unknown": "execution-unknown",
                    "failed": "failed",
                    "claimed": "action-in-flight",
                    "pending": "executor-required",
                }.get(act.status)
                if act.status == "pending" and not act.confirmed:
                    reason = "approval-required"
                    wait = next((Wait.from_json(w) for w in state["waits"].values() if w.get("action") == act.id), None)
                    found.setdefault("approval-required", (act, wait))
                    continue
                if reason:
                    found.setdefault(reason, (act, None))
            elif (raw := state["waits"].get(iid)) is not None:
                reason = "approval-required" if raw["kind"] == "approval" else "evidence-required"
                found.setdefault(reason, (None, Wait.from_json(raw)))
        for reason in _PRIORITY:
            if child_block is not None and child_block.reason == reason and reason not in found:
                return child_block
            if reason in found:
                action, wait = found[reason]
                message = ""
                if reason == "executor-required" and action is not None:
                    message = f"no executor is registered for ref {action.ref!r}: runtime.register_executor(...)"
                return self._blocked(reason, stored, done, action=action, wait=wait, message=message)
        return self._blocked("idle", stored, done, message=self._idle_message(state))

    @staticmethod
    def _idle_message(state: Mapping[str, Any]) -> str:
        if state["arrivals"]:
            joins = ", ".join(f"{j} (arrived: {', '.join(p)})" for j, p in sorted(state["arrivals"].items()))
            return f"no step can run: joins wait for parents that have not arrived: {joins}"
        return "no step is open: propose an action (adaptive run) or complete the run"

    def _blocked(
        self,
        reason: str,
        stored: StoredRun,
        done: int,
        *,
        action: Any = None,
        wait: Wait | None = None,
        message: str = "",
    ) -> Blocked:
        if isinstance(action, Mapping):
            action = Action.from_json(action)
        error = stored.state.get("error")
        if not message and reason == "failed" and error:
            message = error["message"]
        return Blocked(reason, self._view(stored), stored.run_id, done, action, wait, message)

    # --- plumbing -------------------------------------------------------------------------------------

    def _start(
        self,
        wf: Workflow,
        run_id: str,
        input: Mapping[str, Any] | None,
        *,
        skill_hash: str | None,
        parent: Mapping[str, Any] | None,
        depth: int,
    ) -> RunState:
        state, events = machine.start(wf, run_id, input, skill_hash=skill_hash, parent=parent, depth=depth)
        stored = self.store.create(run_id, state, events)
        self._remember(stored)
        self._after(stored)
        return self._view(stored)

    def _pinned(self, state: Mapping[str, Any]) -> Workflow:
        wf = self._by_hash.get(state["definitionHash"])
        if wf is None:
            raise UnknownDefinitionError(
                f"run {state['runId']!r} is pinned to workflow {state.get('definitionId')!r} version "
                f"{state.get('definitionVersion')!r} ({state['definitionHash']}), which this runtime has not "
                "registered: register that exact definition (or upgrade the run explicitly)"
            )
        return wf

    def _mutate(self, run_id: str, change: Mutation) -> StoredRun:
        """Compute the change on the run and compare-and-swap it; on a lost race reload and recompute.

        The state this runtime committed last is reused without a load: if another writer moved the run
        since, the commit loses the race and the change is recomputed on a fresh load, so the result is
        the same as loading first. A refusal or a no-op is only trusted when computed on a fresh load.
        """
        stored = self._cache.get(run_id)
        fresh = stored is None
        if stored is None:
            stored = self.store.load(run_id)
        for _ in range(_CONFLICT_RETRIES):
            try:
                new, events = change(self._pinned(stored.state), stored.state)
            except RejectedError:
                if fresh:
                    raise
                stored, fresh = self.store.load(run_id), True
                continue
            if not events:
                if fresh:
                    self._remember(stored)
                    return stored
                stored, fresh = self.store.load(run_id), True
                continue
            try:
                committed = self.store.commit(run_id, stored.revision, new, events)
            except ConflictError:
                stored, fresh = self.store.load(run_id), True
                continue
            self._remember(committed)
            self._after(committed)
            return committed
        raise ConflictError(run_id, stored.revision, None)

    def _remember(self, stored: StoredRun) -> None:
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[stored.run_id] = stored

    def _after(self, stored: StoredRun) -> None:
        """Tell a parent that its child ended (idempotent: a parent that knows already refuses quietly)."""
        state = stored.state
        parent = state.get("parent")
        if parent is None or state["status"] not in TERMINAL:
            return
        output = dict(state["outputs"])
        error = (state.get("error") or {}).get("message")
        # A parent that already knows refuses with RejectedError: nothing to do then.
        with contextlib.suppress(RejectedError):
            self._mutate(
                parent["runId"],
                lambda wf, st: machine.child_finished(wf, st, stored.run_id, state["status"], output, error),
            )

    def _expire(self, run_id: str) -> StoredRun:
        now = self._clock()
        return self._mutate(run_id, lambda wf, st: machine.expire_leases(wf, st, now))

    def _past(self, run_id: str, action_id: str) -> list[dict[str, Any]]:
        return [e for e in self.store.events(run_id) if e.get("actionId") == action_id]

    def _check_output(self, wf: Workflow, state: Mapping[str, Any], action_id: str, outcome: Outcome) -> None:
        act = state["actions"].get(action_id)
        if outcome.status != "succeeded" or act is None or act["status"] not in ("claimed", "unknown"):
            return  # the machine answers for anything else (a duplicate, an unknown action, ...)
        step = wf.steps.get(act["step"])
        if step is not None and step.validator:
            self._validate(step.validator, outcome.output, f"action {action_id} (step {step.id!r})", "output-invalid")

    def _validate(self, name: str, value: Any, where: str, code: str) -> None:
        fn = self._validators.get(name)
        if fn is None:
            raise RejectedError(
                "validator-missing", f"{where}: validator {name!r} is not registered; runtime.register_validator(...)"
            )
        problems = list(fn(value))
        if problems:
            raise RejectedError(code, f"{where}: validator {name!r} refused it: " + "; ".join(problems))

    @staticmethod
    def _view(stored: StoredRun) -> RunState:
        return RunState.from_json(stored.state, stored.revision)
