"""The run state machine: pure transitions ``(definition, state, command) -> (new state, events)``.

Nothing here reads a clock, a store or an executor: the runtime passes ``now`` and claim tokens in, and
commits what comes out. Every function leaves its input state untouched, and every refusal is a
``RejectedError`` raised before anything is computed, so a refused command writes nothing.

Rules: an outcome must match the action, its attempt and its claim token; the identical outcome
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
from comet_engine.definitions import ACTION_KINDS, Workflow
from comet_engine.errors import RejectedError
from comet_engine.graph import (
    MAX_DEPTH,
    Result,
    Tx,
    activate,
    complete_run,
    edges,
    fail_run,
    finish,
    propose,
    step_checks,
)
from comet_engine.guardrails import Block, check_action
from comet_engine.state import SCHEMA_VERSION, TERMINAL, Outcome, Receipt

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
    tx = Tx(wf, state)
    tx.emit("run_started", definitionId=wf.id, definitionVersion=wf.version, definitionHash=wf.hash)
    if wf.orchestration == "deterministic" and wf.entry is not None:
        activate(tx, wf.entry)
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
    tx = Tx(wf, state)
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
    tx = Tx(wf, state)
    _apply_outcome(tx, aid, outcome, token, receipt.digest)
    state_out, events = tx.done()
    return state_out, events, receipt


def mark_unknown(wf: Workflow, state: Mapping[str, Any], aid: str, reason: str) -> Result:
    """A claimed action's result is lost (executor raised, lease expired): it becomes ``unknown``."""
    _live(state)
    act = _get_action(state, aid)
    if act["status"] != "claimed":
        raise RejectedError("not-claimed", f"action {aid}: is {act['status']}; only a claimed action can be unknown")
    tx = Tx(wf, state)
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
    tx = Tx(wf, state)
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
    tx = Tx(wf, state)
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
    tx = Tx(wf, state)
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
    tx = Tx(wf, state)
    wait = dict(wait, status="resolved", decision=choice)
    tx.s["waits"][wid] = wait
    tx.emit("wait_resolved", waitId=wid, step=wait["step"], kind=wait["kind"], decision=choice)
    if wait["kind"] == "approval":
        finish(tx, wid, wait["step"], choice, {"decision": choice})
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
            finish(tx, aid, act["step"], choice, None, status="failed" if choice != "approved" else "succeeded")
    return tx.done()


def record_evidence(wf: Workflow, state: Mapping[str, Any], wid: str, evidence: Any) -> Result:
    """Accept evidence for an open evidence wait (the runtime has run its validator already)."""
    _live(state)
    wait = _open_wait(state, wid)
    if wait["kind"] != "evidence":
        raise RejectedError("wrong-wait", f"wait {wid}: is a {wait['kind']} wait; decide it with resolve_wait")
    tx = Tx(wf, state)
    tx.s["waits"][wid] = dict(wait, status="resolved", evidence=thaw(evidence))
    tx.emit("wait_resolved", waitId=wid, step=wait["step"], kind="evidence", evidenceDigest=digest(evidence))
    finish(tx, wid, wait["step"], "succeeded", thaw(evidence))
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
    tx = Tx(wf, state)
    tx.s["children"][child_run_id] = dict(entry, status=status)
    tx.emit("child_finished", childRunId=child_run_id, step=entry["step"], status=status)
    route = "succeeded" if status == "completed" else "failed"
    if route == "failed" and not edges(wf, entry["step"], "failed", "failed"):
        fail_run(tx, "child-failed", f"child run {child_run_id} {status}: {error or 'no error given'}", entry["step"])
    else:
        finish(tx, entry["instance"], entry["step"], route, output, status=route)
    return tx.done()


def cancel(wf: Workflow, state: Mapping[str, Any], reason: str) -> Result:
    """Cancel a run: open actions and waits are cancelled; outcomes for them are refused afterwards."""
    if state["status"] in TERMINAL:
        raise RejectedError("run-finished", f"run {state['runId']}: is already {state['status']}")
    tx = Tx(wf, state)
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
    """Move a run to definition *new*, with the original Comet engine's guards; recorded as ``state_migrated``."""
    _live(state)
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
    tx = Tx(new, state)
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
    tx = Tx(wf, state)
    propose(tx, step_id, kind, ref, thaw(input) if input is not None else {}, "manual", block)
    return tx.done()


def complete(wf: Workflow, state: Mapping[str, Any]) -> Result:
    """End an adaptive run (its agent decides when it is done); open actions must be settled first."""
    _live(state)
    if wf.orchestration != "adaptive":
        raise RejectedError("not-adaptive", f"run {state['runId']}: completes when its graph has no open path")
    if state["open"]:
        raise RejectedError("open-work", f"run {state['runId']}: settle its open actions before completing it")
    tx = Tx(wf, state)
    complete_run(tx)
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


def _apply_outcome(tx: Tx, aid: str, outcome: Outcome, token: str | None, known_digest: str = "") -> None:
    outcome_digest = known_digest or outcome.digest  # hashing the outcome is the costly part: once only
    act = tx.action(aid)
    token_digest = short_id(token) if token is not None else None
    entry = {"attempt": act["attempt"], "tokenDigest": token_digest, "digest": outcome_digest, "status": outcome.status}
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
        digest=outcome_digest,
        tokenDigest=token_digest,
    )
    if outcome.status == "succeeded":
        if outcome.artifacts:
            tx.s["artifacts"].update(thaw(outcome.artifacts))
        _close(tx, aid)
        finish(tx, aid, act["step"], outcome.route or "succeeded", thaw(outcome.output))
    elif edges(tx.wf, act["step"], "failed", "failed"):
        _close(tx, aid)
        finish(tx, aid, act["step"], "failed", None, status="failed")
    elif act["retry"] != "manual":
        _auto_retry(tx, aid)
    else:
        step_checks(tx, act["step"])


def _close(tx: Tx, aid: str) -> None:
    """An action that has ended leaves the state (its history is in the trajectory): states stay small."""
    del tx.s["actions"][aid]
    tx.s["retries"].pop(aid, None)


def _to_unknown(tx: Tx, aid: str, reason: str) -> None:
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


def _auto_retry(tx: Tx, aid: str) -> None:
    act = tx.s["actions"][aid]
    block = _retry_block(tx.wf, tx.s, act)
    if block is not None:
        fail_run(tx, block.code, f"action {aid}: {block.message}", act["step"])
        return
    _grant_retry(tx, aid)


def _grant_retry(tx: Tx, aid: str) -> None:
    retries = int(tx.s["retries"].get(aid, 0)) + 1
    tx.s["retries"][aid] = retries
    act = tx.action(aid)
    act.update(
        status="pending", attempt=act["attempt"] + 1, claimToken=None, leaseExpiresAt=None, outcome=None, error=None
    )
    act.pop("reconciliation", None)
    tx.s["actions"][aid] = act
    tx.emit("action_retried", actionId=aid, step=act["step"], attempt=act["attempt"], retries=retries)
