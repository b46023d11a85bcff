"""Skill runs over the core runtime: start, continue (report, decide, propose, complete, upgrade), check.

Every operation opens the run's ``FileStore``, reloads the pinned snapshot (verifying it), compiles it to
the definition the run is pinned to, applies one runtime command and rewrites the companion files. Any
process can therefore continue a run another process started; nothing is kept between commands.

The command line is the executor's proxy: the agent performs the pending action and reports it with
``comet skill continue --status``. That command claims the action on the agent's behalf and records the
outcome with the claim it just made. If a process dies between the two commits, the action stays claimed
with its token in ``run-state.json``; the next report finishes it with that same claim (the command
line is the only claimant of a skill run's actions), and an identical report made twice is recorded once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from comet_engine import machine
from comet_engine.checks import CheckResult
from comet_engine.definitions import Workflow
from comet_engine.errors import CorruptRunError, RejectedError, RunExistsError
from comet_engine.runtime import Runtime
from comet_engine.skills.companions import pending_item, write_companions
from comet_engine.skills.compile import compile_package
from comet_engine.skills.layout import RunLayout
from comet_engine.skills.package import SkillPackage
from comet_engine.skills.resolve import BUILTIN_ROOT, resolve
from comet_engine.skills.snapshot import Snapshot, load_snapshot, write_snapshot
from comet_engine.state import TERMINAL, Outcome
from comet_engine.stores.base import Store, StoredRun

__all__ = [
    "ADAPTIVE_KINDS",
    "Report",
    "check_run",
    "complete_run",
    "propose_action",
    "report_outcome",
    "show_run",
    "start_run",
    "upgrade_run",
]

#: ``--propose KIND:REF`` accepts the original Comet engine's action types and the core's kinds.
ADAPTIVE_KINDS = {
    "invoke_skill": "skill",
    "skill": "skill",
    "call_tool": "tool",
    "tool": "tool",
    "handoff": "handoff",
}


@dataclass(frozen=True, slots=True)
class Report:
    """The run after a command: what the CLI prints (``to_json``) and derives its exit code from."""

    layout: RunLayout
    state: Mapping[str, Any]
    revision: int
    package: SkillPackage
    pending: Mapping[str, Any] | None
    message: str = ""
    checks: tuple[CheckResult, ...] = field(default=())

    @property
    def status(self) -> str:
        return str(self.state["status"])

    def to_json(self) -> dict[str, Any]:
        error = self.state.get("error")
        return {
            "runId": self.state["runId"],
            "mode": self.layout.mode,
            "runDir": str(self.layout.run_dir),
            "skill": self.state.get("skill"),
            "skillVersion": self.state.get("skillVersion"),
            "skillHash": self.state.get("skillHash"),
            "orchestration": self.state.get("orchestration"),
            "status": self.status,
            "currentStep": self.state.get("currentStep"),
            "iteration": self.state.get("iteration"),
            "revision": self.revision,
            "pending": self.pending,
            "artifacts": dict(self.state.get("artifacts") or {}),
            "error": error,
            "checks": [c.to_json() for c in self.checks] or list((self.state.get("checks") or {}).values()),
            "message": self.message,
        }


@dataclass
class _Open:
    store: Store
    runtime: Runtime
    snapshot: Snapshot
    workflow: Workflow
    stored: StoredRun


@contextlib.contextmanager
def _store(layout: RunLayout) -> Iterator[Store]:
    store = layout.open_store()
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def _open(layout: RunLayout, store: Store) -> _Open:
    stored = store.load(layout.run_id)
    state = stored.state
    snap = load_snapshot(layout.project, str(state.get("skillHash")), run_id=layout.run_id)
    workflow = compile_package(snap.package)
    if workflow.hash != state.get("definitionHash"):
        raise CorruptRunError(
            f"{layout.state_file}: run {layout.run_id!r} is pinned to definition {state.get('definitionHash')}, "
            f"but its snapshot {snap.path} compiles to {workflow.hash}; the snapshot or this engine version "
            "changed how the skill compiles: finish the run with the engine version that started it"
        )
    runtime = Runtime(store)
    runtime.register(workflow)
    return _Open(store, runtime, snap, workflow, stored)


def _report(layout: RunLayout, opened: _Open, message: str = "", checks: tuple[CheckResult, ...] = ()) -> Report:
    stored = opened.store.load(layout.run_id)
    package = opened.snapshot.package
    write_companions(layout, stored.state, stored.revision, package, opened.store.events(layout.run_id))
    return Report(layout, stored.state, stored.revision, package, pending_item(stored.state, package), message, checks)


# --- commands -------------------------------------------------------------------------------------------


def start_run(
    layout: RunLayout, ref: str, *, input: Mapping[str, Any] | None = None, builtin_root: Path = BUILTIN_ROOT
) -> Report:
    """Resolve *ref*, snapshot it, start the run and propose its first action."""
    if layout.state_file.exists():
        where = "this change directory" if layout.mode == "change" else f"run id {layout.run_id!r}"
        raise RunExistsError(
            f"{layout.state_file}: a run already exists for {where}; continue it with "
            f"`comet skill continue {' '.join(layout.address())}`, or choose another run id"
        )
    package = resolve(ref, layout.project, builtin_root=builtin_root).package
    snap = write_snapshot(package, layout.project)
    workflow = compile_package(snap.package)
    with _store(layout) as store:
        runtime = Runtime(store)
        stored_state = runtime.start(workflow, layout.run_id, input, skill_hash=snap.skill_hash)
        opened = _Open(store, runtime, snap, workflow, store.load(layout.run_id))
        message = "" if stored_state.pending else _idle_message(stored_state.raw)
        return _report(layout, opened, message)


def show_run(layout: RunLayout) -> Report:
    """The run as stored (the original Comet engine's continue without an outcome); companions are rewritten."""
    with _store(layout) as store:
        opened = _open(layout, store)
        return _report(layout, opened, _idle_message(opened.stored.state))


def report_outcome(
    layout: RunLayout,
    status: str,
    *,
    action_id: str | None = None,
    summary: str | None = None,
    artifacts: Mapping[str, Any] | None = None,
    output: Mapping[str, Any] | None = None,
    digest: str | None = None,
) -> Report:
    """Report what the agent did about the pending item: an action's outcome or a user's choice."""
    with _store(layout) as store:
        opened = _open(layout, store)
        state = opened.stored.state
        _live(layout, state)
        item = pending_item(state, opened.snapshot.package)
        if item is None:
            raise RejectedError(
                "nothing-pending",
                f"run {layout.run_id!r}: nothing is pending, so there is nothing to report "
                f"(status {state['status']}); see `comet skill continue {' '.join(layout.address())}`",
            )
        if action_id is not None and action_id not in (item["id"], item.get("action")):
            raise RejectedError(
                "stale-action",
                f"run {layout.run_id!r}: you reported on {action_id}, but the pending {item['kind']} is "
                f"{item['id']} (step {item['stepId']!r}); read pending-action.json again and report on that",
            )
        if status not in item["answers"]:
            offered = ", ".join(item["answers"]) or "none (see its status)"
            raise RejectedError(
                "invalid-choice",
                f"run {layout.run_id!r}: --status {status!r} does not answer the pending {item['kind']} "
                f"{item['id']} (step {item['stepId']!r}); answers: {offered}",
            )
        runtime = opened.runtime
        attempt = 0
        if item["kind"] == "action":
            act = state["actions"][item["id"]]
            if act["status"] == "pending":
                claim = runtime.claim(layout.run_id, item["id"])
                token, attempt = claim.token, claim.attempt
            else:  # claimed by an earlier report that died before recording: finish that claim
                token, attempt = act["claimToken"], act["attempt"]
            result: dict[str, Any] = dict(output or {})
            if summary is not None:
                result["summary"] = summary
            outcome = (
                Outcome.succeeded(result or None, artifacts=dict(artifacts or {}) or None)
                if status == "succeeded"
                else Outcome.failed(summary or "the agent reported a failure")
            )
            runtime.record_outcome(layout.run_id, item["id"], attempt=attempt, token=token, outcome=outcome)
        else:
            runtime.resolve_wait(layout.run_id, item["id"], proposal_digest=digest or item["digest"], choice=status)
        after = store.load(layout.run_id).state
        message = _idle_message(after)
        retried = (after.get("actions") or {}).get(item["id"])
        if status == "failed" and retried is not None and retried["status"] == "pending":
            budget = opened.workflow.guardrails.max_retries_per_action
            message = (
                f"attempt {attempt} failed; retry {after['retries'].get(item['id'], 0)} of {budget} "
                "proposed (same action, next attempt)"
            )
        return _report(layout, opened, message)


def propose_action(layout: RunLayout, kind: str, ref: str, input: Mapping[str, Any] | None = None) -> Report:
    """An agent proposes the next action of an adaptive run; the guardrails may refuse it."""
    core_kind = ADAPTIVE_KINDS.get(kind)
    if core_kind is None:
        raise RejectedError(
            "invalid-kind", f"--propose {kind}:{ref}: KIND is one of {', '.join(ADAPTIVE_KINDS)}, not {kind!r}"
        )
    with _store(layout) as store:
        opened = _open(layout, store)
        _live(layout, opened.stored.state)
        if pending_item(opened.stored.state, opened.snapshot.package) is not None:
            raise RejectedError(
                "action-pending",
                f"run {layout.run_id!r}: an action is still pending; report it before proposing the next one",
            )
        opened.runtime.accept_adaptive_action(layout.run_id, core_kind, ref, input)
        return _report(layout, opened)


def complete_run(layout: RunLayout) -> Report:
    """End an adaptive run (its completion checks run)."""
    with _store(layout) as store:
        opened = _open(layout, store)
        _live(layout, opened.stored.state)
        opened.runtime.complete(layout.run_id)
        return _report(layout, opened)


def upgrade_run(layout: RunLayout, ref: str, *, builtin_root: Path = BUILTIN_ROOT) -> Report:
    """Move the run to another version of its skill, with the original Comet engine's guards; one commit,
    ``state_migrated``.

    The core's upgrade guards (no pending action, same skill, same orchestration, the current step
    exists) decide; the skill hash is re-pinned to the new snapshot in the same commit.
    """
    with _store(layout) as store:
        opened = _open(layout, store)
        state = opened.stored.state
        _live(layout, state)
        package = resolve(ref, layout.project, builtin_root=builtin_root).package
        snap = write_snapshot(package, layout.project)
        if snap.skill_hash == state["skillHash"]:
            return _report(layout, opened, f"run {layout.run_id!r} is already at skill hash {snap.skill_hash}")
        new = compile_package(snap.package)
        new_state, events = machine.upgrade(opened.workflow, new, state)
        new_state = dict(new_state, skillHash=snap.skill_hash)
        events = [
            dict(e, fromSkillHash=state["skillHash"], toSkillHash=snap.skill_hash)
            if e.get("type") == "state_migrated"
            else e
            for e in events
        ]
        store.commit(layout.run_id, opened.stored.revision, new_state, events)
        opened = replace(opened, snapshot=snap, workflow=new)
        return _report(layout, opened, f"upgraded to {package.name} {package.version} ({snap.skill_hash})")


def check_run(layout: RunLayout, scope: str) -> Report:
    """Evaluate the run's checks of *scope* against the stored state; writes nothing but companions."""
    with _store(layout) as store:
        opened = _open(layout, store)
        results = tuple(opened.runtime.check(layout.run_id, scope))
        return _report(layout, opened, checks=results)


def _live(layout: RunLayout, state: Mapping[str, Any]) -> None:
    if state["status"] in TERMINAL:
        raise RejectedError("run-finished", f"run {layout.run_id!r} is {state['status']}; it accepts no more changes")


def _idle_message(state: Mapping[str, Any]) -> str:
    if state["status"] == "failed":
        return str((state.get("error") or {}).get("message", "the run failed"))
    if state["status"] == "running" and not state.get("open") and state.get("orchestration") == "adaptive":
        return "adaptive run: propose the next action with --propose KIND:REF, or end it with --complete"
    return ""
