"""The run state machine: pure transitions ``(definition, state, command) -> (new state, events)``.

Nothing here reads a clock, a store or an executor: the runtime passes ``now`` and claim tokens in, and
commits what comes out. Every function leaves its input state untouched, and every refusal is a
``RejectedError`` raised before anything is computed, so a refused command writes nothing.

Rules (issue 5): an outcome must match the action, its attempt and its claim token; the identical outcome
resubmitted returns the same receipt with no new event; a different one is ``outcome-conflict``. A claimed
action whose result is lost becomes ``unknown``; retrying it needs a ``not-executed`` reconciliation unless
the step is idempotent. Approvals are bound to the wait id and the proposal digest. Guardrails are applied
at every activation and retry (see ``guardrails``). Output schemas are checked before any state is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from comet_engine.canonical import digest, short_id, thaw
from comet_engine.checks import evaluate
from comet_engine.definitions import ACTION_KINDS, Workflow
from comet_engine.errors import RejectedError
from comet_engine.guardrails import Block, check_action
from comet_engine.state import SCHEMA_VERSION, TERMINAL, Outcome, Receipt, action_id

__all__ = [
    "MAX_DEPTH",
    "Result",
    "accept_adaptive_action",
    "cancel",
    "child_finished",
    "claim",
    "complete",
    "expire_leases",
    "mark_unknown",
    "reconcile",
    "record_evidence",
    "record_outcome",
    "resolve_wait",
    "retry",
    "start",
    "upgrade",
]

#: Child runs nest at most this deep (a top-level run has depth 0).
MAX_DEPTH = 32
Result = tuple[dict[str, Any], list[dict[str, Any]]]
_MAPS = ("actions", "waits", "open", "arrivals", "outputs", "artifacts", "children", "retries", "checks")


class _Tx:
    """A copy-on-write edit of one state: top-level maps are copied once, entries replaced, never mutated."""

    def __init__(self, wf: Workflow, state: Mapping[str, Any]) -> None:
        self.wf = wf
        self.s: dict[str, Any] = dict(state)
        for key in _MAPS:
            self.s[key] = dict(state.get(key) or {})
        self.events: list[dict[str, Any]] = []

    @property
    def run_id(self) -> str:
        return str(self.s["runId"])

    def emit(self, event: str, /, **fields: Any) -> None:
        self.events.append({"type": event, "runId": self.run_id, **fields})

    def action(self, aid: str) -> dict[str, Any]:
        return dict(self.s["actions"][aid])

    def done(self) -> Result:
        _settle(self)
        return self.s, self.events


# --- starting -------------------------------------------------------------------------------------------


def start(
    wf: Workflow,
    run_id: str,
    input: Mapping[str, Any] | None = None,
    *,
    skill_hash: str | None = None,
    parent: Mapping[str, Any] | None = None,
    depth: int = 0,
) -> Result:
    """The first state of a run of *wf* (its entry step already activated) and its first events."""
    state: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "runId": run_id,
        "skill": wf.skill_name,
        "skillVersion": wf.version,
        "skillHash": skill_hash or wf.hash,
        "orchestration": wf.orchestration,
        "currentStep": wf.entry,
        "iteration": 0,
        "pending": "",
        "status": "running",
        "retries": {},
        "definitionId": wf.id,
        "definitionVersion": wf.version,
        "definitionHash": wf.hash,
        "input": thaw(input) if input is not None else {},
        "actions": {},
        "waits": {},
        "open": {},
        "arrivals": {},
        "outputs": {},
        "artifacts": {},
        "children": {},
        "parent": dict(parent) if parent is not None else None,
        "depth": depth,
        "transitions": 0,
        "error": None,
        "checks": {},
    }
    tx = _Tx(wf, state)
    tx.emit("run_started", definitionId=wf.id, definitionVersion=wf.version, definitionHash=wf.hash)
    if wf.orchestration == "deterministic" and wf.entry is not None:
        _activate(tx, wf.entry)
    return tx.done()


# --- actions --------------------------------------------------------------------------------------------


def claim(wf: Workflow, state: Mapping[str, Any], aid: str, *, token: str, now: float, lease: float) -> Result:
    """Claim pending action *aid* with *token*; its lease expires at ``now + lease``."""
    _live(state)
    act = _get_action(state, aid)
    if act["status"] == "claimed":
        raise RejectedError("action-in-flight", f"action {aid}: already claimed (attempt {act['attempt']})")
    if act["status"] != "pending":
        raise RejectedError("not-claimable", f"action {aid}: is {act['status']}, only a pending action can be claimed")
    if not act.get("confirmed", True):
        raise RejectedError(
            "confirmation-required", f"action {aid}: Blocked: user confirmation required; resolve its confirmation wait"
        )
    tx = _Tx(wf, state)
    act = tx.action(aid)
    act.update(status="claimed", claimToken=token, leaseExpiresAt=now + lease)
    tx.s["actions"][aid] = act
    tx.emit("action_claimed", actionId=aid, step=act["step"], attempt=act["attempt"])
    return tx.done()


def record_outcome(
    wf: Workflow,
    state: Mapping[str, Any],
    aid: str,
    *,
    attempt: int,
    token: str,
    outcome: Outcome,
    past: Sequence[Mapping[str, Any]] = (),
) -> tuple[dict[str, Any], list[dict[str, Any]], Receipt]:
    """Record *outcome* for *attempt* of action *aid* claimed with *token*.

    The identical outcome resubmitted returns the same receipt, the state unchanged and no event. An
    action that has ended is no longer in the state: *past* are its trajectory events (the runtime
    passes them then), which hold what is needed to recognise a resubmission.
    """
    act = state["actions"].get(aid)
    try:
        receipt = Receipt(aid, attempt, outcome.status, outcome.digest)
    except (TypeError, ValueError) as err:
        raise RejectedError(
            "output-not-json",
            f"action {aid}: the outcome is not plain JSON ({err}); report dicts, lists, strings, numbers, "
            "booleans and null only",
        ) from None
    token_digest = short_id(token)
    if act is not None:
        history = act.get("history", ())
    else:
        history = [
            {"attempt": e["attempt"], "tokenDigest": e.get("tokenDigest"), "digest": e["digest"], "status": e["status"]}
            for e in past
            if e.get("type") == "action_completed" and e.get("actionId") == aid
        ]
    for old in history:
        if old["attempt"] == attempt and old["tokenDigest"] == token_digest:
            if old["digest"] == receipt.digest:
                return dict(state), [], receipt
            raise RejectedError(
                "outcome-conflict",
                f"action {aid} attempt {attempt}: a different outcome ({old['status']}) is already recorded; "
                "an outcome cannot be changed",
            )
    if act is None:
        if any(e.get("type") == "action_cancelled" and e.get("actionId") == aid for e in past):
            raise RejectedError("action-cancelled", f"action {aid}: was cancelled; its outcome is not accepted")
        if history:
            raise RejectedError(
                "stale-attempt",
                f"action {aid}: has ended with an outcome for attempt {history[-1]['attempt']} under another claim",
            )
        raise RejectedError("unknown-action", f"run {state['runId']}: has no action {aid!r}")
    _live(state)
    if act["status"] == "cancelled":
        raise RejectedError("action-cancelled", f"action {aid}: was cancelled; its outcome is not accepted")
    # An unknown action whose claimer reports late with the right token has its real result: take it.
    if act["status"] not in ("claimed", "unknown"):
        raise RejectedError("not-claimed", f"action {aid}: is {act['status']}; claim it before reporting an outcome")
    if attempt != act["attempt"]:
        raise RejectedError(
            "stale-attempt", f"action {aid}: outcome is for attempt {attempt}, the current attempt is {act['attempt']}"
        )
    if token != act.get("claimToken"):
        raise RejectedError("claim-mismatch", f"action {aid}: the claim token does not match the current claim")
    _check_outcome(wf, act, outcome)
    tx = _Tx(wf, state)
    _apply_outcome(tx, aid, outcome, token)
    state_out, events = tx.done()
    return state_out, events, receipt


def mark_unknown(wf: Workflow, state: Mapping[str, Any], aid: str, reason: str) -> Result:
    """A claimed action's result is lost (executor raised, lease expired): it becomes ``unknown``."""
    _live(state)
    act = _get_action(state, aid)
    if act["status"] != "claimed":
        raise RejectedError("not-claimed", f"action {aid}: is {act['status']}; only a claimed action can be unknown")
    tx = _Tx(wf, state)
    _to_unknown(tx, aid, reason)
    return tx.done()


def expire_leases(wf: Workflow, state: Mapping[str, Any], now: float) -> Result:
    """Every claimed action whose lease ended before *now* becomes ``unknown`` (no events if none did)."""
    expired = [
        aid
        for aid in state["open"]
        if (act := state["actions"].get(aid)) is not None
        and act["status"] == "claimed"
        and act["leaseExpiresAt"] is not None
        and act["leaseExpiresAt"] <= now
    ]
    if not expired or state["status"] in TERMINAL:
        return dict(state), []  # the common case: no copy of the maps, no event
    tx = _Tx(wf, state)
    for aid in expired:
        _to_unknown(tx, aid, "lease expired before an outcome was recorded")
    return tx.done()


def retry(wf: Workflow, state: Mapping[str, Any], aid: str) -> Result:
    """Retry a failed action, or an unknown one that is idempotent or reconciled as not executed."""
    _live(state)
    act = _get_action(state, aid)
    if aid not in state["open"]:
        raise RejectedError("not-retryable", f"action {aid}: is {act['status']} and no longer open")
    if act["status"] == "unknown":
        reconciled = (act.get("reconciliation") or {}).get("verdict") == "not-executed"
        if act["retry"] != "idempotent" and not reconciled:
            raise RejectedError(
                "reconcile-first",
                f"action {aid}: its result is unknown and step {act['step']!r} is not idempotent; "
                "reconcile it as 'not-executed' (with evidence) before retrying",
            )
    elif act["status"] != "failed":
        raise RejectedError("not-retryable", f"action {aid}: is {act['status']}; only failed or unknown actions retry")
    block = _retry_block(wf, state, act)
    if block is not None:
        raise RejectedError(block.code, f"action {aid}: {block.message}")
    tx = _Tx(wf, state)
    _grant_retry(tx, aid)
    return tx.done()


def reconcile(
    wf: Workflow, state: Mapping[str, Any], aid: str, verdict: str, evidence: Any, output: Any = None
) -> Result:
    """Settle an unknown action: ``not-executed`` (retry allowed), ``succeeded`` (with output) or ``failed``."""
    _live(state)
    act = _get_action(state, aid)
    if act["status"] != "unknown":
        raise RejectedError("not-unknown", f"action {aid}: is {act['status']}; only an unknown action is reconciled")
    if evidence in (None, "", {}, []):
        raise RejectedError("evidence-required", f"action {aid}: a reconciliation needs evidence of what happened")
    if verdict not in ("not-executed", "succeeded", "failed"):
        raise RejectedError(
            "invalid-verdict", f"action {aid}: verdict {verdict!r} is not not-executed, succeeded or failed"
        )
    if verdict == "succeeded":
        _check_outcome(wf, act, Outcome.succeeded(output))
    tx = _Tx(wf, state)
    act = tx.action(aid)
    act["reconciliation"] = {"verdict": verdict, "evidence": thaw(evidence)}
    tx.s["actions"][aid] = act
    tx.emit("action_reconciled", actionId=aid, step=act["step"], attempt=act["attempt"], verdict=verdict)
    if verdict == "succeeded":
        _apply_outcome(tx, aid, Outcome.succeeded(output), act.get("claimToken"))
    elif verdict == "failed":
        _apply_outcome(tx, aid, Outcome.failed("reconciled as failed"), act.get("claimToken"))
    elif act["retry"] != "manual":
        _auto_retry(tx, aid)
    return tx.done()


# --- waits ----------------------------------------------------------------------------------------------


def resolve_wait(wf: Workflow, state: Mapping[str, Any], wid: str, *, proposal_digest: str, choice: str) -> Result:
    """Decide an approval or confirmation wait: bound to its id and the digest of its proposal."""
    _live(state)
    wait = _open_wait(state, wid)
    if wait["kind"] not in ("approval", "confirmation"):
        raise RejectedError(
            "wrong-wait", f"wait {wid}: is an {wait['kind']} wait; submit evidence with record_evidence"
        )
    if proposal_digest != wait["digest"]:
        raise RejectedError(
            "stale-proposal",
            f"wait {wid}: the decision is for another proposal (digest {proposal_digest}); "
            f"show the current proposal ({wait['digest']}) and decide again",
        )
    if choice not in wait["choices"]:
        raise RejectedError("invalid-choice", f"wait {wid}: {choice!r} is not offered; choose one of {wait['choices']}")
    tx = _Tx(wf, state)
    wait = dict(wait, status="resolved", decision=choice)
    tx.s["waits"][wid] = wait
    tx.emit("wait_resolved", waitId=wid, step=wait["step"], kind=wait["kind"], decision=choice)
    if wait["kind"] == "approval":
        _finish(tx, wid, wait["step"], choice, {"decision": choice})
    else:
        aid = wait["action"]
        act = tx.action(aid)
        if choice == "approved":
            act["confirmed"] = True
            tx.s["actions"][aid] = act
        else:
            # Declined: the tool never runs; the step ends with the decision as its outcome.
            _close(tx, aid)
            tx.emit("action_cancelled", actionId=aid, step=act["step"], reason="confirmation declined")
            _finish(tx, aid, act["step"], choice, None, status="failed" if choice != "approved" else "succeeded")
    return tx.done()


def record_evidence(wf: Workflow, state: Mapping[str, Any], wid: str, evidence: Any) -> Result:
    """Accept evidence for an open evidence wait (the runtime has run its validator already)."""
    _live(state)
    wait = _open_wait(state, wid)
    if wait["kind"] != "evidence":
        raise RejectedError("wrong-wait", f"wait {wid}: is a {wait['kind']} wait; decide it with resolve_wait")
    tx = _Tx(wf, state)
    tx.s["waits"][wid] = dict(wait, status="resolved", evidence=thaw(evidence))
    tx.emit("wait_resolved", waitId=wid, step=wait["step"], kind="evidence", evidenceDigest=digest(evidence))
    _finish(tx, wid, wait["step"], "succeeded", thaw(evidence))
    return tx.done()


# --- children, cancellation, upgrades, adaptive runs ------------------------------------------------------


def child_finished(
    wf: Workflow, state: Mapping[str, Any], child_run_id: str, status: str, output: Any, error: str | None = None
) -> Result:
    """Child run *child_run_id* ended with *status*: its step ends (``succeeded`` or ``failed``)."""
    _live(state)
    entry = (state.get("children") or {}).get(child_run_id)
    if entry is None or entry["status"] in TERMINAL:
        raise RejectedError("unknown-child", f"run {state['runId']}: no running child {child_run_id!r}")
    tx = _Tx(wf, state)
    tx.s["children"][child_run_id] = dict(entry, status=status)
    tx.emit("child_finished", childRunId=child_run_id, step=entry["step"], status=status)
    route = "succeeded" if status == "completed" else "failed"
    if route == "failed" and not _edges(wf, entry["step"], "failed", "failed"):
        _fail_run(tx, "child-failed", f"child run {child_run_id} {status}: {error or 'no error given'}", entry["step"])
    else:
        _finish(tx, entry["instance"], entry["step"], route, output, status=route)
    return tx.done()


def cancel(wf: Workflow, state: Mapping[str, Any], reason: str) -> Result:
    """Cancel a run: open actions and waits are cancelled; outcomes for them are refused afterwards."""
    if state["status"] in TERMINAL:
        raise RejectedError("run-finished", f"run {state['runId']}: is already {state['status']}")
    tx = _Tx(wf, state)
    for iid in list(tx.s["open"]):
        if iid in tx.s["actions"]:
            _close(tx, iid)
            tx.emit("action_cancelled", actionId=iid, step=tx.s["open"][iid], reason=reason)
        if iid in tx.s["waits"]:
            tx.s["waits"][iid] = dict(tx.s["waits"][iid], status="cancelled")
    for wid, wait in list(tx.s["waits"].items()):
        if wait["status"] == "open":
            tx.s["waits"][wid] = dict(wait, status="cancelled")
    tx.s["open"] = {}
    tx.s["status"] = "cancelled"
    tx.emit("run_cancelled", reason=reason)
    return tx.done()


def upgrade(old: Workflow, new: Workflow, state: Mapping[str, Any]) -> Result:
    """Move a run to definition *new*, with the seed's guards; recorded as ``state_migrated``."""
    run = state["runId"]
    open_actions = [i for i in state["open"] if i in state["actions"]]
    if open_actions:
        raise RejectedError("upgrade-pending", f"run {run}: cannot upgrade with a pending action ({open_actions[0]})")
    if new.skill_name != old.skill_name:
        raise RejectedError("upgrade-skill", f"run {run}: skill {new.skill_name!r} is not the run's {old.skill_name!r}")
    if new.orchestration != old.orchestration:
        raise RejectedError(
            "upgrade-mode", f"run {run}: orchestration {new.orchestration!r} differs from {old.orchestration!r}"
        )
    current = state.get("currentStep")
    if current is not None and current not in new.steps:
        raise RejectedError(
            "upgrade-step", f"run {run}: current step {current!r} does not exist in version {new.version!r}"
        )
    for sid in state["open"].values():
        if sid not in new.steps:
            raise RejectedError(
                "upgrade-step", f"run {run}: open step {sid!r} does not exist in version {new.version!r}"
            )
    tx = _Tx(new, state)
    tx.s.update(
        skillVersion=new.version,
        definitionId=new.id,
        definitionVersion=new.version,
        definitionHash=new.hash,
    )
    if state.get("skillHash") == old.hash:
        tx.s["skillHash"] = new.hash
    tx.emit("state_migrated", fromVersion=old.version, toVersion=new.version, fromHash=old.hash, toHash=new.hash)
    return tx.done()


def accept_adaptive_action(
    wf: Workflow, state: Mapping[str, Any], kind: str, ref: str, input: Mapping[str, Any] | None = None
) -> Result:
    """An agent proposes an action in an adaptive run; the guardrails decide (a block writes nothing)."""
    _live(state)
    if wf.orchestration != "adaptive":
        raise RejectedError("not-adaptive", f"run {state['runId']}: is deterministic; the engine proposes its actions")
    if kind not in ACTION_KINDS:
        raise RejectedError("invalid-kind", f"an adaptive action is one of {', '.join(ACTION_KINDS)}, not {kind!r}")
    step_id = f"{kind}:{ref}"
    block = check_action(wf.guardrails, iteration=state["iteration"], kind=kind, ref=ref, confirmed=False, retries=0)
    if block is not None and block.code != "confirmation-required":
        raise RejectedError(block.code, block.message)
    tx = _Tx(wf, state)
    _propose(tx, step_id, kind, ref, thaw(input) if input is not None else {}, "manual", block)
    return tx.done()


def complete(wf: Workflow, state: Mapping[str, Any]) -> Result:
    """End an adaptive run (its agent decides when it is done); open actions must be settled first."""
    _live(state)
    if wf.orchestration != "adaptive":
        raise RejectedError("not-adaptive", f"run {state['runId']}: completes when its graph has no open path")
    if state["open"]:
        raise RejectedError("open-work", f"run {state['runId']}: settle its open actions before completing it")
    tx = _Tx(wf, state)
    _complete(tx)
    return tx.done()


# --- internals ------------------------------------------------------------------------------------------


def _live(state: Mapping[str, Any]) -> None:
    if state["status"] in TERMINAL:
        raise RejectedError("run-finished", f"run {state['runId']}: is {state['status']}; it accepts no more changes")


def _get_action(state: Mapping[str, Any], aid: str) -> Mapping[str, Any]:
    act = state["actions"].get(aid)
    if act is None:
        raise RejectedError(
            "unknown-action", f"run {state['runId']}: has no open action {aid!r} (it ended, or never existed)"
        )
    return act  # type: ignore[no-any-return]


def _open_wait(state: Mapping[str, Any], wid: str) -> Mapping[str, Any]:
    wait = state["waits"].get(wid)
    if wait is None:
        raise RejectedError("unknown-wait", f"run {state['runId']}: has no wait {wid!r}")
    if wait["status"] != "open":
        raise RejectedError("wait-closed", f"wait {wid}: is already {wait['status']}; a wait is decided once")
    return wait  # type: ignore[no-any-return]


_VALIDATORS: dict[tuple[str, str], jsonschema.Draft202012Validator] = {}


def _check_outcome(wf: Workflow, act: Mapping[str, Any], outcome: Outcome) -> None:
    if outcome.status not in ("succeeded", "failed"):
        raise RejectedError(
            "invalid-outcome", f"action {act['id']}: status {outcome.status!r} is not succeeded or failed"
        )
    step = wf.steps.get(act["step"])
    if outcome.status != "succeeded" or step is None or step.output_schema is None:
        return
    key = (wf.hash, step.id)
    validator = _VALIDATORS.get(key)
    if validator is None:
        validator = jsonschema.Draft202012Validator(thaw(step.output_schema))
        _VALIDATORS[key] = validator
    error = jsonschema.exceptions.best_match(validator.iter_errors(outcome.output))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise RejectedError(
            "output-schema",
            f"action {act['id']} (step {step.id!r}): output at {at} does not match the step's output_schema: "
            f"{error.message}",
        )


def _apply_outcome(tx: _Tx, aid: str, outcome: Outcome, token: str | None) -> None:
    act = tx.action(aid)
    token_digest = short_id(token) if token is not None else None
    entry = {"attempt": act["attempt"], "tokenDigest": token_digest, "digest": outcome.digest, "status": outcome.status}
    history = [*act.get("history", ()), entry]
    act.update(status=outcome.status, outcome=outcome.to_json(), history=history, leaseExpiresAt=None)
    tx.s["actions"][aid] = act
    tx.emit(
        "action_completed",
        actionId=aid,
        step=act["step"],
        attempt=act["attempt"],
        status=outcome.status,
        route=outcome.route,
        error=outcome.error,
        digest=outcome.digest,
        tokenDigest=token_digest,
    )
    if outcome.status == "succeeded":
        if outcome.artifacts:
            tx.s["artifacts"].update(thaw(outcome.artifacts))
        _close(tx, aid)
        _finish(tx, aid, act["step"], outcome.route or "succeeded", thaw(outcome.output))
    elif _edges(tx.wf, act["step"], "failed", "failed"):
        _close(tx, aid)
        _finish(tx, aid, act["step"], "failed", None, status="failed")
    elif act["retry"] != "manual":
        _auto_retry(tx, aid)
    else:
        _step_checks(tx, act["step"])


def _close(tx: _Tx, aid: str) -> None:
    """An action that has ended leaves the state (its history is in the trajectory): states stay small."""
    del tx.s["actions"][aid]
    tx.s["retries"].pop(aid, None)


def _to_unknown(tx: _Tx, aid: str, reason: str) -> None:
    act = tx.action(aid)
    act.update(status="unknown", error=reason)
    tx.s["actions"][aid] = act
    tx.emit("action_unknown", actionId=aid, step=act["step"], attempt=act["attempt"], reason=reason)
    if act["retry"] == "idempotent":
        _auto_retry(tx, aid)


def _retry_block(wf: Workflow, state: Mapping[str, Any], act: Mapping[str, Any]) -> Block | None:
    retries = int(state["retries"].get(act["id"], 0)) + 1
    # The iteration check used the action's own iteration: a retry is the same activation, not a new one.
    return check_action(
        wf.guardrails, iteration=act["iteration"], kind=act["kind"], ref=act["ref"], confirmed=True, retries=retries
    )


def _auto_retry(tx: _Tx, aid: str) -> None:
    act = tx.s["actions"][aid]
    block = _retry_block(tx.wf, tx.s, act)
    if block is not None:
        _fail_run(tx, block.code, f"action {aid}: {block.message}", act["step"])
        return
    _grant_retry(tx, aid)


def _grant_retry(tx: _Tx, aid: str) -> None:
    retries = int(tx.s["retries"].get(aid, 0)) + 1
    tx.s["retries"][aid] = retries
    act = tx.action(aid)
    act.update(
        status="pending", attempt=act["attempt"] + 1, claimToken=None, leaseExpiresAt=None, outcome=None, error=None
    )
    act.pop("reconciliation", None)
    tx.s["actions"][aid] = act
    tx.emit("action_retried", actionId=aid, step=act["step"], attempt=act["attempt"], retries=retries)


def _edges(wf: Workflow, step_id: str, route: str, status: str) -> list[str]:
    targets = [t.target for t in wf.outgoing(step_id) if t.on == route]
    if not targets and status == "succeeded" and route != "succeeded":
        # A named outcome with no edge of its own follows the plain success edges.
        targets = [t.target for t in wf.outgoing(step_id) if t.on == "succeeded"]
    return targets


def _finish(tx: _Tx, instance: str, step_id: str, route: str, output: Any, status: str = "succeeded") -> None:
    """End one activation of *step_id* with *route*, then take the matching transitions."""
    tx.s["open"].pop(instance, None)
    targets = _edges(tx.wf, step_id, route, status)
    # The trajectory keeps every output; the state only those the graph reads later and path results,
    # so that a state stays small however many steps a run has taken.
    if output is not None and (not targets or step_id in tx.wf.read_steps):
        tx.s["outputs"][step_id] = output
    else:
        tx.s["outputs"].pop(step_id, None)
    tx.emit("step_completed", step=step_id, instance=instance, route=route, next=targets, output=output)
    _step_checks(tx, step_id)
    for target in targets:
        if tx.s["status"] in TERMINAL:
            return
        tx.s["transitions"] += 1
        if tx.s["transitions"] > tx.wf.transition_limit:
            _fail_run(
                tx,
                "transition-limit",
                f"transition limit {tx.wf.transition_limit} reached at {step_id!r} -> {target!r}: "
                "a loop did not end; raise transition_limit only if the loop is meant to run longer",
                step_id,
            )
            return
        join = tx.wf.steps[target].join
        if join:
            arrived = sorted({*tx.s["arrivals"].get(target, ()), step_id})
            if set(arrived) != set(join):
                tx.s["arrivals"][target] = arrived
                continue
            tx.s["arrivals"].pop(target, None)
        _activate(tx, target)


def _activate(tx: _Tx, step_id: str) -> None:
    step = tx.wf.steps[step_id]
    s = tx.s
    iteration = s["iteration"]
    if iteration >= tx.wf.guardrails.max_iterations:
        block = check_action(tx.wf.guardrails, iteration=iteration, kind=step.kind, ref=None, confirmed=True, retries=0)
        assert block is not None
        _fail_run(tx, block.code, block.message, step_id)
        return
    s["currentStep"] = step_id
    if step.kind in ACTION_KINDS:
        block = check_action(
            tx.wf.guardrails, iteration=iteration, kind=step.kind, ref=step.ref, confirmed=False, retries=0
        )
        if block is not None and block.code != "confirmation-required":
            _fail_run(tx, block.code, block.message, step_id)
            return
        _propose(tx, step_id, step.kind, step.ref, _action_input(tx, step_id), step.retry, block)
        return
    s["iteration"] = iteration + 1
    iid = action_id(tx.run_id, iteration, step_id)
    if step.kind == "checkpoint":
        tx.emit("checkpoint_recorded", step=step_id, iteration=iteration)
        s["open"][iid] = step_id
        _finish(tx, iid, step_id, "succeeded", None)
    elif step.kind == "approval":
        proposal = s["outputs"].get(step.proposal_from) if step.proposal_from else thaw(step.proposal)
        body = {"question": step.question, "proposal": proposal, "choices": list(step.choices)}
        wait = {"id": iid, "kind": "approval", "step": step_id, "iteration": iteration, "status": "open"}
        wait |= body | {"digest": digest(body)}
        s["waits"][iid] = wait
        s["open"][iid] = step_id
        tx.emit("wait_opened", waitId=iid, step=step_id, kind="approval", digest=wait["digest"])
    elif step.kind == "evidence":
        wait = {"id": iid, "kind": "evidence", "step": step_id, "iteration": iteration, "status": "open"}
        wait |= {"validator": step.validator, "description": step.description, "digest": ""}
        s["waits"][iid] = wait
        s["open"][iid] = step_id
        tx.emit("wait_opened", waitId=iid, step=step_id, kind="evidence", validator=step.validator)
    elif step.kind == "child":
        if s.get("depth", 0) + 1 > MAX_DEPTH:
            _fail_run(tx, "child-depth", f"step {step_id!r}: child runs nest at most {MAX_DEPTH} deep", step_id)
            return
        child_id = f"{tx.run_id}.{step_id}.{iteration}" if len(tx.run_id) < 64 else f"child-{iid}"
        s["children"][child_id] = {
            "step": step_id,
            "instance": iid,
            "workflow": step.ref,
            "version": step.version,
            "status": "starting",
            "input": _action_input(tx, step_id),
        }
        s["open"][iid] = step_id
        tx.emit("child_requested", childRunId=child_id, step=step_id, workflow=step.ref, version=step.version)


def _propose(tx: _Tx, step_id: str, kind: str, ref: str | None, payload: Any, policy: str, block: Block | None) -> None:
    s = tx.s
    iteration = s["iteration"]
    s["iteration"] = iteration + 1
    aid = action_id(tx.run_id, iteration, step_id)
    confirmed = block is None
    s["actions"][aid] = {
        "id": aid,
        "step": step_id,
        "kind": kind,
        "ref": ref,
        "iteration": iteration,
        "status": "pending",
        "attempt": 1,
        "claimToken": None,
        "leaseExpiresAt": None,
        "input": payload,
        "inputDigest": digest(payload),
        "confirmed": confirmed,
        "retry": policy,
        "outcome": None,
    }
    s["open"][aid] = step_id
    s["currentStep"] = step_id
    tx.emit("action_proposed", actionId=aid, step=step_id, kind=kind, ref=ref, iteration=iteration, attempt=1)
    if not confirmed:
        wid = short_id(tx.run_id, iteration, step_id, "confirmation")
        body = {"question": f"Run {kind} {ref!r}?", "proposal": {"action": aid, "ref": ref, "input": payload}}
        body["choices"] = ["approved", "rejected"]
        s["waits"][wid] = {
            "id": wid,
            "kind": "confirmation",
            "step": step_id,
            "iteration": iteration,
            "status": "open",
            "action": aid,
            **body,
            "digest": digest(body),
        }
        tx.emit("wait_opened", waitId=wid, step=step_id, kind="confirmation", actionId=aid)


def _action_input(tx: _Tx, step_id: str) -> dict[str, Any]:
    step = tx.wf.steps[step_id]
    if step.input_from is not None:
        base = tx.s["outputs"].get(step.input_from)
        base = dict(base) if isinstance(base, Mapping) else {"value": base}
    else:
        base = dict(tx.s["input"])
    if step.input is not None:
        base.update(thaw(step.input))
    return base


def _step_checks(tx: _Tx, step_id: str) -> None:
    if any(c.scope == "step" for c in tx.wf.checks):
        _record_checks(tx, "step", step_id)


def _record_checks(tx: _Tx, scope: str, step_id: str | None = None) -> None:
    results = evaluate(tx.wf.checks, tx.s, scope, step=step_id)
    if not results:
        return
    for result in results:
        tx.s["checks"][result.id] = result.to_json()
    tx.emit("checks_evaluated", scope=scope, step=step_id, results=[r.to_json() for r in results])


def _fail_run(tx: _Tx, code: str, message: str, step: str | None) -> None:
    tx.s["status"] = "failed"
    tx.s["error"] = {"code": code, "message": message, "step": step}
    tx.emit("run_failed", code=code, message=message, step=step)


def _complete(tx: _Tx) -> None:
    tx.s["status"] = "completed"
    tx.s["pending"] = ""
    tx.emit("run_completed")
    _record_checks(tx, "completion")


def _settle(tx: _Tx) -> None:
    """Derive ``status`` and ``pending`` from what is open; complete the run when no path is left."""
    s = tx.s
    if s["status"] in TERMINAL:
        s["pending"] = ""
        return
    open_ = s["open"]
    pending = next((iid for iid in open_ if iid in s["actions"]), "")
    s["pending"] = pending
    if open_:
        s["status"] = "waiting"
        s["currentStep"] = open_[next(iter(open_))]
        return
    if tx.wf.orchestration == "adaptive" or s["arrivals"]:
        # Adaptive runs end when their agent says so; a join still missing parents is stuck (idle).
        s["status"] = "running"
        return
    _complete(tx)
