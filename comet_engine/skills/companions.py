"""The companion files of a run directory: projections of the committed state, never read as the truth.

    pending-action.json   what the run waits for now (an action, an approval, a confirmation), or
                          ``{"pending": null}``; with the ``--status`` answers ``comet skill continue`` takes
    artifacts.json        the run's artifacts
    context.md            the agent's context: goal, current step, what to do next, exact commands
    checkpoint.json       the revision and sha256 of the state these projections were made from, and the
                          checkpoint steps passed (a reader compares it with run-state.json to detect
                          projections that lag behind the state, e.g. after a crash between the two)

They are written after every commit (temp file + rename, so each is whole) and rewritten by every
``comet skill continue``, so a crash between a commit and its projections is repaired by the next command.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from comet_engine.skills.compile import KINDS
from comet_engine.skills.layout import ARTIFACTS, CHECKPOINT, CONTEXT, PENDING, RunLayout
from comet_engine.skills.package import SkillPackage

__all__ = ["SCHEMA_VERSION", "pending_item", "write_companions"]

SCHEMA_VERSION = 1
_SEED_TYPE = {core: seed for seed, core in KINDS.items()}


def pending_item(state: Mapping[str, Any], package: SkillPackage) -> dict[str, Any] | None:
    """What the run waits for: the first open wait or action (a confirmation before its action).

    None once the run has ended: a failed run keeps its failed action open for inspection, but nothing
    can be reported on it any more.
    """
    if state.get("status") in ("completed", "failed", "cancelled"):
        return None
    opened = state.get("open") or {}
    waits = state.get("waits") or {}
    actions = state.get("actions") or {}
    for wait in waits.values():
        if wait.get("status") == "open" and wait.get("kind") == "confirmation":
            return _wait_item(wait, package)
    for iid in opened:
        if iid in actions:
            return _action_item(actions[iid], state, package)
        if iid in waits:
            return _wait_item(waits[iid], package)
    return None


def _action_item(act: Mapping[str, Any], state: Mapping[str, Any], package: SkillPackage) -> dict[str, Any]:
    step = package.step(act["step"])
    kind = act["kind"]
    answers = {
        "pending": ["succeeded", "failed"],
        "claimed": ["succeeded", "failed"],
        # The command line is the only claimant of a skill run's actions, so it can still report the
        # real result of an action whose lease ran out (the core accepts it with the right claim token).
        "unknown": ["succeeded", "failed"],
    }.get(act["status"], [])
    return {
        "kind": "action",
        "id": act["id"],
        "stepId": act["step"],
        "type": step.action.type if step is not None else _SEED_TYPE.get(kind, kind),
        "ref": act.get("ref"),
        "input": act.get("input"),
        "description": (step.action.description or step.description) if step is not None else "",
        "status": act["status"],
        "attempt": act["attempt"],
        "retries": (state.get("retries") or {}).get(act["id"], 0),
        "answers": answers,
        "error": act.get("error"),
    }


def _wait_item(wait: Mapping[str, Any], package: SkillPackage) -> dict[str, Any]:
    step = package.step(wait["step"])
    return {
        "kind": wait["kind"],  # approval (an ask_user step) or confirmation (a tool that needs one)
        "id": wait["id"],
        "stepId": wait["step"],
        "type": step.action.type if step is not None else wait["kind"],
        "question": wait.get("question"),
        "proposal": wait.get("proposal"),
        "digest": wait.get("digest"),
        "answers": list(wait.get("choices") or ()),
        "action": wait.get("action"),
    }


def state_digest(state: Mapping[str, Any]) -> str:
    text = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def write_companions(
    layout: RunLayout,
    state: Mapping[str, Any],
    revision: int,
    package: SkillPackage,
    events: Sequence[Mapping[str, Any]],
) -> None:
    pending = pending_item(state, package)
    base = {"schemaVersion": SCHEMA_VERSION, "runId": state["runId"], "revision": revision}
    _write(layout.file(PENDING), _json({**base, "status": state["status"], "pending": pending}))
    _write(layout.file(ARTIFACTS), _json({**base, "artifacts": dict(state.get("artifacts") or {})}))
    checkpoints = [e["step"] for e in events if e.get("type") == "checkpoint_recorded"]
    _write(
        layout.file(CHECKPOINT),
        _json(
            {
                **base,
                "status": state["status"],
                "currentStep": state.get("currentStep"),
                "skillHash": state.get("skillHash"),
                "stateDigest": state_digest(state),
                "checkpoints": checkpoints,
            }
        ),
    )
    _write(layout.file(CONTEXT), context_markdown(layout, state, revision, package, pending))


def context_markdown(
    layout: RunLayout,
    state: Mapping[str, Any],
    revision: int,
    package: SkillPackage,
    pending: Mapping[str, Any] | None,
) -> str:
    where = " ".join(layout.address())
    lines = [
        f"# Run {state['runId']}: {package.name} {package.version}",
        "",
        f"Goal: {package.definition.goal.statement}",
        "",
        f"- status: {state['status']} (revision {revision})",
        f"- current step: {state.get('currentStep') or '-'}",
        f"- orchestration: {state.get('orchestration')}",
        f"- skill hash: {state.get('skillHash')}",
        "",
        "## What to do now",
        "",
    ]
    if pending is None:
        if state["status"] == "completed":
            lines.append(f"Nothing: the run is completed. Check it: `comet skill check {where} --scope completion`.")
        elif state["status"] in ("failed", "cancelled"):
            error = state.get("error") or {}
            lines.append(f"Nothing: the run is {state['status']}. {error.get('message', '')}".rstrip())
        else:
            lines.append(
                "The agent proposes the next action (adaptive run): "
                f"`comet skill continue {where} --propose KIND:REF [--input JSON]`, or ends the run with "
                f"`comet skill continue {where} --complete`."
            )
    elif pending["kind"] == "action":
        lines += [
            f"Perform action `{pending['id']}` of step `{pending['stepId']}`: {pending['type']} "
            f"`{pending['ref']}` (attempt {pending['attempt']}).",
        ]
        if pending["description"]:
            lines.append(f"\n{pending['description']}")
        if pending["input"]:
            lines.append(f"\nInput: `{json.dumps(pending['input'], sort_keys=True)}`")
        if pending["answers"]:
            lines.append(
                f"\nThen report it: `comet skill continue {where} --action-id {pending['id']} --status succeeded "
                '--summary "..." [--artifact NAME=VALUE]` (or `--status failed`).'
            )
        else:
            lines.append(f"\nIts result is {pending['status']}: {pending.get('error') or ''}".rstrip())
    else:
        lines += [
            f"Ask the user ({pending['kind']} `{pending['id']}`, step `{pending['stepId']}`): {pending['question']}",
            f"\nChoices: {', '.join(pending['answers'])}. Report the choice: "
            f"`comet skill continue {where} --status CHOICE --digest {pending['digest']}`.",
        ]
    artifacts = state.get("artifacts") or {}
    if artifacts:
        lines += ["", "## Artifacts", ""]
        lines += [f"- {name}: {json.dumps(value, ensure_ascii=False)}" for name, value in sorted(artifacts.items())]
    checks = state.get("checks") or {}
    if checks:
        lines += ["", "## Checks", ""]
        lines += [f"- {cid}: {r['status']} ({r['evidence']})" for cid, r in sorted(checks.items())]
    return "\n".join(lines) + "\n"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(path)
