"""Walking the step graph: activations, transitions, joins, completion (used by ``machine``).

``Tx`` is a copy-on-write edit of one state that collects the events of one command. ``finish`` ends one
activation of a step and takes the transitions its outcome matches; ``activate`` starts a step (an action
through the guardrails, a wait, a child run, or a checkpoint that ends at once); ``settle`` derives
``status`` and ``pending`` and completes the run when no path is left open.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from comet_engine.canonical import digest, short_id, thaw
from comet_engine.checks import evaluate
from comet_engine.definitions import ACTION_KINDS, Workflow
from comet_engine.guardrails import Block, check_action
from comet_engine.state import TERMINAL, action_id

__all__ = [
    "MAX_DEPTH",
    "Result",
    "Tx",
    "activate",
    "complete_run",
    "edges",
    "fail_run",
    "finish",
    "propose",
    "settle",
    "step_checks",
]

#: Child runs nest at most this deep (a top-level run has depth 0).
MAX_DEPTH = 32
Result = tuple[dict[str, Any], list[dict[str, Any]]]
_MAPS = ("actions", "waits", "open", "arrivals", "outputs", "artifacts", "children", "retries", "checks")


class Tx:
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
        settle(self)
        return self.s, self.events


def edges(wf: Workflow, step_id: str, route: str, status: str) -> list[str]:
    targets = [t.target for t in wf.outgoing(step_id) if t.on == route]
    if not targets and status == "succeeded" and route != "succeeded":
        # A named outcome with no edge of its own follows the plain success edges.
        targets = [t.target for t in wf.outgoing(step_id) if t.on == "succeeded"]
    return targets


def finish(tx: Tx, instance: str, step_id: str, route: str, output: Any, status: str = "succeeded") -> None:
    """End one activation of *step_id* with *route*, then take the matching transitions."""
    tx.s["open"].pop(instance, None)
    targets = edges(tx.wf, step_id, route, status)
    # The trajectory keeps every output; the state only those the graph reads later and path results,
    # so that a state stays small however many steps a run has taken.
    if output is not None and (not targets or step_id in tx.wf.read_steps):
        tx.s["outputs"][step_id] = output
    else:
        tx.s["outputs"].pop(step_id, None)
    tx.emit("step_completed", step=step_id, instance=instance, route=route, next=targets, output=output)
    step_checks(tx, step_id)
    for target in targets:
        if tx.s["status"] in TERMINAL:
            return
        tx.s["transitions"] += 1
        if tx.s["transitions"] > tx.wf.transition_limit:
            fail_run(
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
        activate(tx, target)


def activate(tx: Tx, step_id: str) -> None:
    step = tx.wf.steps[step_id]
    s = tx.s
    iteration = s["iteration"]
    if iteration >= tx.wf.guardrails.max_iterations:
        block = check_action(tx.wf.guardrails, iteration=iteration, kind=step.kind, ref=None, confirmed=True, retries=0)
        assert block is not None
        fail_run(tx, block.code, block.message, step_id)
        return
    s["currentStep"] = step_id
    if step.kind in ACTION_KINDS:
        block = check_action(
            tx.wf.guardrails, iteration=iteration, kind=step.kind, ref=step.ref, confirmed=False, retries=0
        )
        if block is not None and block.code != "confirmation-required":
            fail_run(tx, block.code, block.message, step_id)
            return
        propose(tx, step_id, step.kind, step.ref, action_input(tx, step_id), step.retry, block)
        return
    s["iteration"] = iteration + 1
    iid = action_id(tx.run_id, iteration, step_id)
    if step.kind == "checkpoint":
        tx.emit("checkpoint_recorded", step=step_id, iteration=iteration)
        s["open"][iid] = step_id
        finish(tx, iid, step_id, "succeeded", None)
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
            fail_run(tx, "child-depth", f"step {step_id!r}: child runs nest at most {MAX_DEPTH} deep", step_id)
            return
        child_id = f"{tx.run_id}.{step_id}.{iteration}" if len(tx.run_id) < 64 else f"child-{iid}"
        s["children"][child_id] = {
            "step": step_id,
            "instance": iid,
            "workflow": step.ref,
            "version": step.version,
            "status": "starting",
            "input": action_input(tx, step_id),
        }
        s["open"][iid] = step_id
        tx.emit("child_requested", childRunId=child_id, step=step_id, workflow=step.ref, version=step.version)


def propose(tx: Tx, step_id: str, kind: str, ref: str | None, payload: Any, policy: str, block: Block | None) -> None:
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


def action_input(tx: Tx, step_id: str) -> dict[str, Any]:
    step = tx.wf.steps[step_id]
    if step.input_from is not None:
        base = tx.s["outputs"].get(step.input_from)
        base = dict(base) if isinstance(base, Mapping) else {"value": base}
    else:
        base = dict(tx.s["input"])
    if step.input is not None:
        base.update(thaw(step.input))
    return base


def step_checks(tx: Tx, step_id: str) -> None:
    if any(c.scope == "step" for c in tx.wf.checks):
        record_checks(tx, "step", step_id)


def record_checks(tx: Tx, scope: str, step_id: str | None = None) -> None:
    results = evaluate(tx.wf.checks, tx.s, scope, step=step_id)
    if not results:
        return
    for result in results:
        tx.s["checks"][result.id] = result.to_json()
    tx.emit("checks_evaluated", scope=scope, step=step_id, results=[r.to_json() for r in results])


def fail_run(tx: Tx, code: str, message: str, step: str | None) -> None:
    tx.s["status"] = "failed"
    tx.s["error"] = {"code": code, "message": message, "step": step}
    tx.emit("run_failed", code=code, message=message, step=step)


def complete_run(tx: Tx) -> None:
    tx.s["status"] = "completed"
    tx.s["pending"] = ""
    tx.emit("run_completed")
    record_checks(tx, "completion")


def settle(tx: Tx) -> None:
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
    complete_run(tx)
