"""Compiling skill packages to the core graph, and the companion files projected from a run state."""

from __future__ import annotations

import json
from pathlib import Path

from comet_engine.runtime import Runtime
from comet_engine.skills import load_package
from comet_engine.skills.companions import pending_item, write_companions
from comet_engine.skills.compile import compile_package
from comet_engine.skills.layout import RunLayout
from comet_engine.state import Outcome
from comet_engine.stores.memory import MemoryStore
from tests.engine.skillpkg import EXAMPLE, minimal_skill, write_package


def test_the_example_compiles_to_the_seed_graph() -> None:
    wf = compile_package(load_package(EXAMPLE))

    assert (wf.id, wf.version, wf.skill_name, wf.orchestration, wf.entry) == (
        "release-notes",
        "1",
        "release-notes",
        "deterministic",
        "gather",
    )
    assert {sid: s.kind for sid, s in wf.steps.items()} == {
        "gather": "skill",
        "draft": "skill",
        "review": "approval",
        "publish": "tool",
        "done": "checkpoint",
    }
    assert [(t.source, t.target, t.on) for t in wf.transitions] == [
        ("gather", "draft", "succeeded"),
        ("draft", "review", "succeeded"),
        ("review", "publish", "approve"),
        ("publish", "done", "succeeded"),
    ]
    review = wf.steps["review"]
    assert review.choices == ("approve", "reject") and review.proposal_from == "draft"
    assert {s.retry for s in wf.steps.values() if s.kind in ("skill", "tool")} == {"reconcile"}
    assert dict(wf.steps["publish"].input or {}) == {"channel": "releases"}
    assert (wf.guardrails.max_iterations, wf.guardrails.max_retries_per_action) == (20, 2)
    assert wf.guardrails.allowed_tools == ("publish-notes",)
    derived = next(c for c in wf.checks if c.id == "notes-drafted@draft")
    assert (derived.scope, derived.step, derived.artifact) == ("step", "draft", "draft")


def test_the_compiled_hash_is_stable_and_follows_the_content(tmp_path: Path) -> None:
    one = compile_package(load_package(write_package(tmp_path / "a")))
    two = compile_package(load_package(write_package(tmp_path / "b")))
    other = compile_package(load_package(write_package(tmp_path / "c", minimal_skill(skills=["worker", "spare"]))))

    assert one.hash == two.hash != other.hash


def test_adaptive_and_confirmation(tmp_path: Path) -> None:
    adaptive = minimal_skill(orchestration={"mode": "adaptive"})
    assert compile_package(load_package(write_package(tmp_path / "a", adaptive))).steps == {}

    steps = [{"id": "ship", "action": {"type": "call_tool", "ref": "deploy"}}]
    confirm = minimal_skill(
        orchestration={"mode": "deterministic", "entry": "ship", "steps": steps},
        tools=[{"name": "deploy", "requiresConfirmation": True}],
    )
    wf = compile_package(load_package(write_package(tmp_path / "b", confirm)))
    assert wf.steps["ship"].requires_confirmation
    assert wf.guardrails.confirmation_required_for == ("deploy",)


def test_companions_follow_the_committed_state(tmp_path: Path) -> None:
    package = load_package(EXAMPLE)
    store = MemoryStore()
    runtime = Runtime(store)
    wf = compile_package(package)
    runtime.start(wf, "r1", skill_hash="h")
    layout = RunLayout.standalone(tmp_path, "r1")

    stored = store.load("r1")
    first = pending_item(stored.state, package)
    assert first is not None and (first["kind"], first["stepId"], first["type"]) == ("action", "gather", "invoke_skill")
    claim = runtime.claim("r1", first["id"])
    outcome = Outcome.succeeded({"summary": "ok"}, artifacts={"changes": "C.txt"})
    runtime.record_outcome("r1", first["id"], attempt=claim.attempt, token=claim.token, outcome=outcome)
    stored = store.load("r1")
    write_companions(layout, stored.state, stored.revision, package, store.events("r1"))

    pending = json.loads((layout.run_dir / "pending-action.json").read_text())
    assert pending["revision"] == stored.revision and pending["pending"]["stepId"] == "draft"
    assert json.loads((layout.run_dir / "artifacts.json").read_text())["artifacts"] == {"changes": "C.txt"}
    checkpoint = json.loads((layout.run_dir / "checkpoint.json").read_text())
    assert checkpoint["revision"] == stored.revision and checkpoint["stateDigest"].startswith("sha256:")
    context = (layout.run_dir / "context.md").read_text()
    assert "notes-writer" in context and "--action-id " + pending["pending"]["id"] in context
    assert not list(layout.run_dir.glob(".*.tmp"))
