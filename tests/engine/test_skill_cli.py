"""`comet skill` end to end: the real installed command, one new process per step, on real files.

Every command is a fresh process, so every step of these runs is also a resume from disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from comet_engine.skills.snapshot import SNAPSHOTS
from comet_engine.stores.codec import CRASH_ENV
from tests.engine.skillpkg import EXAMPLE, copy_example, minimal_skill, write_package

pytestmark = pytest.mark.slow


def comet_script() -> str:
    found = shutil.which("comet", path=str(Path(sys.executable).parent)) or shutil.which("comet")
    if found is None:
        pytest.fail("the comet console script is not installed next to the interpreter")
    return found


class Project:
    """A temporary project driven through `comet skill ...` subprocesses."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def comet(self, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [comet_script(), "skill", *map(str, args)],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **(env or {})},
            check=False,
        )

    def ok(self, *args: str | Path, code: int = 0) -> dict[str, Any]:
        """Run with --json; assert the exit code and that no traceback leaked; return the JSON."""
        done = self.comet(*args, "--json")
        assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    def run_dir(self, run_id: str) -> Path:
        return self.root / ".comet" / "runs" / run_id

    def state(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / "run-state.json").read_text())  # type: ignore[no-any-return]

    def pending(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / "pending-action.json").read_text())  # type: ignore[no-any-return]

    def events(self, run_id: str) -> list[dict[str, Any]]:
        lines = (self.run_dir(run_id) / "trajectory.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path / "project")


def report(project: Project, run_id: str, status: str, *extra: str, code: int = 0) -> dict[str, Any]:
    pending = project.pending(run_id)["pending"]
    return project.ok(
        "continue", "--run-id", run_id, "--action-id", pending["id"], "--status", status, *extra, code=code
    )


def test_the_example_package_from_add_to_a_passing_completion_check(project: Project) -> None:
    added = project.ok("add", EXAMPLE)
    assert added["skill"] == "release-notes"
    assert Path(added["path"]) == Path(".comet/skills/release-notes")
    shown = project.ok("show", "release-notes")
    assert shown["source"] == "project" and shown["skillHash"] == added["skillHash"]
    assert [s["id"] for s in shown["steps"]] == ["gather", "draft", "review", "publish", "done"]

    started = project.ok("run", "release-notes", "--run-id", "notes-1")
    assert started["status"] == "waiting" and started["skillHash"] == added["skillHash"]
    assert started["pending"]["type"] == "invoke_skill" and started["pending"]["ref"] == "changelog-reader"
    assert (project.root / SNAPSHOTS / added["skillHash"] / "comet" / "skill.yaml").is_file()
    run_dir = project.run_dir("notes-1")
    assert sorted(p.name for p in run_dir.iterdir() if not p.name.endswith(".lock")) == [
        "artifacts.json",
        "checkpoint.json",
        "context.md",
        "pending-action.json",
        "run-state.json",
        "trajectory.jsonl",
    ]
    state = project.state("notes-1")
    for key in ("runId", "skill", "skillVersion", "skillHash", "orchestration", "currentStep", "iteration"):
        assert key in state
    assert state["pending"] == started["pending"]["id"] == project.pending("notes-1")["pending"]["id"]
    assert "comet skill continue --run-id notes-1" in (run_dir / "context.md").read_text()

    gathered = report(project, "notes-1", "succeeded", "--summary", "3 changes", "--artifact", "changes=CHANGES.txt")
    assert gathered["currentStep"] == "draft"
    assert json.loads((run_dir / "artifacts.json").read_text())["artifacts"] == {"changes": "CHANGES.txt"}

    # A reported failure keeps the step and proposes the same action again (the next attempt).
    draft_id = project.pending("notes-1")["pending"]["id"]
    failed = report(project, "notes-1", "failed", "--summary", "writer crashed")
    assert failed["pending"]["id"] == draft_id and failed["pending"]["attempt"] == 2
    assert "retry 1 of 2" in failed["message"]
    drafted = report(project, "notes-1", "succeeded", "--artifact", "draft=notes/v1.2.md")
    assert drafted["pending"]["kind"] == "approval"
    assert {c["id"]: c["status"] for c in drafted["checks"]}["notes-drafted@draft"] == "PASS"

    question = project.pending("notes-1")["pending"]
    assert question["answers"] == ["approve", "reject"] and question["question"].startswith("Publish")
    approved = project.ok("continue", "--run-id", "notes-1", "--status", "approve", "--digest", question["digest"])
    assert approved["pending"]["type"] == "call_tool"
    done = report(project, "notes-1", "succeeded", "--artifact", "published=releases/v1.2.md")
    assert done["status"] == "completed" and done["pending"] is None
    assert project.pending("notes-1")["pending"] is None

    checked = project.ok("check", "--run-id", "notes-1", "--scope", "completion")
    assert checked["passed"] is True
    assert {c["id"]: c["status"] for c in checked["checks"]} == {"notes-published": "PASS", "release-completed": "PASS"}
    text = project.comet("check", "--run-id", "notes-1", "--scope", "completion")
    assert text.returncode == 0 and "PASS  release-completed" in text.stdout

    checkpoint = json.loads((run_dir / "checkpoint.json").read_text())
    assert checkpoint["revision"] == done["revision"] and checkpoint["checkpoints"] == ["done"]
    types = [e["type"] for e in project.events("notes-1")]
    assert types[0] == "run_started" and types.count("action_completed") == 4 and "run_completed" in types
    # Each event carries the revision that published it, and the revisions never go back.
    revisions = [e["revision"] for e in project.events("notes-1")]
    assert revisions == sorted(revisions) and revisions[-1] == done["revision"]


def test_reports_that_do_not_fit_are_refused_and_write_nothing(project: Project) -> None:
    project.ok("run", str(EXAMPLE), "--run-id", "r")
    before = (project.run_dir("r") / "run-state.json").read_bytes()

    stale = project.ok("continue", "--run-id", "r", "--action-id", "0000000000000000", "--status", "succeeded", code=3)
    assert stale["error"]["code"] == "stale-action" and "pending-action.json" in stale["error"]["message"]
    wrong = project.ok("continue", "--run-id", "r", "--status", "approve", code=2)
    assert wrong["error"]["code"] == "invalid-choice" and "answers: succeeded, failed" in wrong["error"]["message"]
    again = project.ok("run", str(EXAMPLE), "--run-id", "r", code=3)
    assert "already exists" in again["error"]["message"]
    missing = project.ok("continue", "--run-id", "nope", "--status", "succeeded", code=2)
    assert missing["error"]["type"] == "RunNotFoundError"

    assert (project.run_dir("r") / "run-state.json").read_bytes() == before


def test_a_stale_approval_digest_is_a_conflict(project: Project) -> None:
    project.ok("run", str(EXAMPLE), "--run-id", "r")
    report(project, "r", "succeeded")
    report(project, "r", "succeeded", "--artifact", "draft=d.md")

    refused = project.ok("continue", "--run-id", "r", "--status", "approve", "--digest", "sha256:old", code=3)

    assert refused["error"]["code"] == "stale-proposal"
    assert project.pending("r")["pending"]["kind"] == "approval"


def test_rejecting_ends_the_path_and_the_completion_check_fails(project: Project) -> None:
    project.ok("run", str(EXAMPLE), "--run-id", "r")
    report(project, "r", "succeeded")
    report(project, "r", "succeeded", "--artifact", "draft=d.md")

    rejected = project.ok("continue", "--run-id", "r", "--status", "reject", code=1)

    assert rejected["status"] == "completed"
    assert {c["id"]: c["status"] for c in rejected["checks"] if c["scope"] == "completion"} == {
        "notes-published": "FAIL",
        "release-completed": "PASS",
    }
    failing = project.comet("check", "--run-id", "r", "--scope", "completion")
    assert failing.returncode == 1 and "FAIL  notes-published" in failing.stdout


def test_the_retry_budget_is_exact_and_then_the_run_fails(project: Project) -> None:
    project.ok("run", str(EXAMPLE), "--run-id", "r")  # maxRetriesPerAction: 2

    for attempt in (1, 2):
        assert report(project, "r", "failed")["pending"]["attempt"] == attempt + 1
    failed = report(project, "r", "failed", code=1)

    assert failed["status"] == "failed"
    assert failed["error"]["message"].endswith("Blocked: retry budget exhausted (3 retries, maxRetriesPerAction 2)")
    after = project.ok("continue", "--run-id", "r", "--status", "succeeded", code=3)
    assert after["error"]["code"] == "run-finished"


def test_change_mode_keeps_one_run_in_the_change_directory(project: Project) -> None:
    change = project.root / "openspec" / "changes" / "add-login"
    change.mkdir(parents=True)

    started = project.ok("run", str(EXAMPLE), "--change", change)

    assert started["runId"] == "add-login" and started["mode"] == "change"
    assert (change / ".comet" / "run-state.json").is_file()
    assert (change / ".comet" / "pending-action.json").is_file()
    assert not (project.root / ".comet" / "runs").exists()
    assert project.ok("run", str(EXAMPLE), "--change", change, code=3)["error"]["type"] == "RunExistsError"
    moved = project.ok("continue", "--change", change, "--status", "succeeded")
    assert moved["currentStep"] == "draft"
    assert project.ok("check", "--change", change, "--scope", "progress", code=1)["passed"] is False


def test_a_report_resumes_after_a_process_died_at_each_commit_point(project: Project) -> None:
    for point in ("file-events-synced", "file-state-synced", "file-state-renamed"):
        run_id = f"crash-{point}"
        project.ok("run", str(EXAMPLE), "--run-id", run_id)
        pending = project.pending(run_id)["pending"]["id"]
        killed = project.comet("continue", "--run-id", run_id, "--status", "succeeded", env={CRASH_ENV: point})
        assert killed.returncode == -9, (point, killed.stdout, killed.stderr)

        resumed = project.ok("continue", "--run-id", run_id, "--action-id", pending, "--status", "succeeded")

        assert resumed["currentStep"] == "draft", point
        # The companion files lagged behind the commit the killed process made; the next command caught up.
        checkpoint = json.loads((project.run_dir(run_id) / "checkpoint.json").read_text())
        assert checkpoint["revision"] == resumed["revision"], point
        completed = [e for e in project.events(run_id) if e["type"] == "action_completed"]
        assert [e["actionId"] for e in completed] == [pending], point


def test_racing_reports_of_one_action_advance_the_run_once(project: Project) -> None:
    project.ok("run", str(EXAMPLE), "--run-id", "r")
    pending = project.pending("r")["pending"]["id"]
    args = [comet_script(), "skill", "continue", "--run-id", "r", "--action-id", pending, "--status", "succeeded"]

    racers = [
        subprocess.Popen(args, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)
    ]
    codes = [p.wait(timeout=120) for p in racers]
    for racer in racers:
        assert racer.stdout is not None and racer.stderr is not None
        racer.stdout.close()
        assert b"Traceback" not in racer.stderr.read()
        racer.stderr.close()

    assert 0 in codes and set(codes) <= {0, 3}, codes
    completed = [e for e in project.events("r") if e["type"] == "action_completed"]
    assert [e["actionId"] for e in completed] == [pending]
    assert project.state("r")["currentStep"] == "draft"


def test_a_tampered_snapshot_stops_the_run(project: Project) -> None:
    started = project.ok("run", str(EXAMPLE), "--run-id", "r")
    skill_yaml = project.root / SNAPSHOTS / started["skillHash"] / "comet" / "skill.yaml"
    skill_yaml.chmod(0o644)
    skill_yaml.write_text(skill_yaml.read_text().replace("maxIterations", "maxIterations") + "\n# edited\n")
    before = (project.run_dir("r") / "run-state.json").read_bytes()

    refused = project.ok("continue", "--run-id", "r", "--status", "succeeded", code=4)

    assert refused["error"]["type"] == "SnapshotError"
    assert str(skill_yaml.relative_to(project.root)) in refused["error"]["message"]
    assert "modified after the snapshot was taken" in refused["error"]["message"]
    assert (project.run_dir("r") / "run-state.json").read_bytes() == before
    assert project.ok("check", "--run-id", "r", code=4)["error"]["type"] == "SnapshotError"


def test_later_edits_of_the_package_do_not_reach_a_running_run(project: Project, tmp_path: Path) -> None:
    package = copy_example(tmp_path / "pkg")
    project.ok("run", str(package), "--run-id", "r")
    (package / "comet" / "skill.yaml").write_text("broken: [")

    moved = project.ok("continue", "--run-id", "r", "--status", "succeeded")

    assert moved["currentStep"] == "draft"


def versioned(tmp_path: Path, name: str, version: str, *, drop_review: bool = False, mode: str | None = None) -> Path:
    root = copy_example(tmp_path / name)
    skill_file = root / "comet" / "skill.yaml"
    skill = yaml.safe_load(skill_file.read_text())
    skill["metadata"]["version"] = version
    if drop_review:
        steps = skill["orchestration"]["steps"]
        skill["orchestration"]["steps"] = [s for s in steps if s["id"] != "review"]
        next(s for s in skill["orchestration"]["steps"] if s["id"] == "draft")["next"] = "publish"
    if mode == "adaptive":
        skill["orchestration"] = {"mode": "adaptive"}
        (root / "comet" / "checks.yaml").write_text("runtime: []\n")
    skill_file.write_text(yaml.safe_dump(skill, sort_keys=False))
    return root


def test_upgrade_guards_and_a_recorded_migration(project: Project, tmp_path: Path) -> None:
    started = project.ok("run", str(EXAMPLE), "--run-id", "r")
    v2 = versioned(tmp_path, "v2", "2")

    pending = project.ok("continue", "--run-id", "r", "--upgrade", str(v2), code=3)
    assert pending["error"]["code"] == "upgrade-pending"

    report(project, "r", "succeeded")
    report(project, "r", "succeeded", "--artifact", "draft=d.md")  # now at the review question: no action pending
    other = write_package(tmp_path / "other", minimal_skill("other"))
    assert project.ok("continue", "--run-id", "r", "--upgrade", str(other), code=3)["error"]["code"] == "upgrade-skill"
    adaptive = versioned(tmp_path, "adaptive", "3", mode="adaptive")
    assert (
        project.ok("continue", "--run-id", "r", "--upgrade", str(adaptive), code=3)["error"]["code"] == "upgrade-mode"
    )
    no_review = versioned(tmp_path, "v4", "4", drop_review=True)
    refused = project.ok("continue", "--run-id", "r", "--upgrade", str(no_review), code=3)
    assert refused["error"]["code"] == "upgrade-step" and "'review'" in refused["error"]["message"]

    upgraded = project.ok("continue", "--run-id", "r", "--upgrade", str(v2))

    assert upgraded["skillVersion"] == "2" and upgraded["skillHash"] != started["skillHash"]
    migrated = [e for e in project.events("r") if e["type"] == "state_migrated"]
    assert len(migrated) == 1
    assert (migrated[0]["fromSkillHash"], migrated[0]["toSkillHash"]) == (started["skillHash"], upgraded["skillHash"])
    assert project.ok("continue", "--run-id", "r", "--status", "approve")["pending"]["type"] == "call_tool"


def test_resolution_fails_closed_on_an_invalid_project_override(project: Project) -> None:
    builtin = project.ok("run", "comet-classic", "--run-id", "classic")
    assert builtin["pending"]["ref"] == "comet-open"

    write_package(project.root / ".comet" / "skills" / "comet-classic", minimal_skill("comet-classic", goal={}))
    refused = project.ok("run", "comet-classic", "--run-id", "classic-2", code=2)

    assert refused["error"]["type"] == "SkillPackageError"
    assert "goal.statement: required field is missing" in "\n".join(refused["error"]["problems"])
    assert not project.run_dir("classic-2").exists()
    unknown = project.ok("run", "no-such-skill", "--run-id", "x", code=2)
    assert unknown["error"]["type"] == "SkillNotFoundError"


def test_invalid_packages_are_reported_without_a_traceback(project: Project, tmp_path: Path) -> None:
    bad = write_package(tmp_path / "bad", minimal_skill(metadata={"name": "bad", "version": 1}))

    done = project.comet("add", bad)

    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{bad / 'comet' / 'skill.yaml'}: metadata.version" in done.stderr and "quote it" in done.stderr
    assert not (project.root / ".comet" / "skills" / "bad").exists()


def test_add_refuses_to_overwrite_without_force(project: Project, tmp_path: Path) -> None:
    project.ok("add", EXAMPLE)
    v2 = versioned(tmp_path, "v2", "2")

    assert project.ok("add", v2, code=3)["error"]["type"] == "PackageExistsError"
    assert project.ok("add", v2, "--force")["version"] == "2"
    assert project.ok("show", "release-notes")["version"] == "2"


def adaptive_package(tmp_path: Path) -> Path:
    skill = minimal_skill(
        "helper",
        orchestration={"mode": "adaptive"},
        skills=["worker", "reviewer"],
        tools=[{"name": "deploy", "requiresConfirmation": True}],
    )
    checks = {"runtime": [{"id": "done", "scope": "completion", "type": "artifact_exists", "artifact": "result"}]}
    return write_package(tmp_path / "helper", skill, guardrails={"allowedSkills": ["worker"]}, checks=checks)


def test_adaptive_runs_take_agent_proposals_through_the_guardrails(project: Project, tmp_path: Path) -> None:
    package = adaptive_package(tmp_path)
    started = project.ok("run", str(package), "--run-id", "a")
    assert started["status"] == "running" and started["pending"] is None and "--propose" in started["message"]

    undeclared = project.ok("continue", "--run-id", "a", "--propose", "invoke_skill:ghost", code=1)
    assert undeclared["error"]["message"].startswith("Blocked: skill not declared")
    not_allowed = project.ok("continue", "--run-id", "a", "--propose", "invoke_skill:reviewer", code=1)
    assert not_allowed["error"]["code"] == "not-declared"

    proposed = project.ok("continue", "--run-id", "a", "--propose", "invoke_skill:worker", "--input", '{"n": 1}')
    assert proposed["pending"]["ref"] == "worker" and proposed["pending"]["input"] == {"n": 1}
    busy = project.ok("continue", "--run-id", "a", "--propose", "invoke_skill:worker", code=3)
    assert busy["error"]["code"] == "action-pending"
    report(project, "a", "succeeded", "--artifact", "result=out.txt")

    # A tool that needs confirmation waits for the user's decision before it can be reported.
    confirm = project.ok("continue", "--run-id", "a", "--propose", "call_tool:deploy")
    assert confirm["pending"]["kind"] == "confirmation" and confirm["pending"]["answers"] == ["approved", "rejected"]
    assert project.ok("continue", "--run-id", "a", "--status", "approved")["pending"]["kind"] == "action"
    report(project, "a", "succeeded")

    completed = project.ok("continue", "--run-id", "a", "--complete")
    assert completed["status"] == "completed"
    assert project.ok("check", "--run-id", "a", "--scope", "completion")["passed"] is True


def test_usage_errors(project: Project) -> None:
    no_run = project.ok("continue", code=2)
    assert "--run-id ID" in no_run["error"]["message"]
    bad_id = project.ok("run", str(EXAMPLE), "--run-id", "../escape", code=2)
    assert bad_id["error"]["type"] == "UnsafePathError"
    malformed = project.comet("continue", "--run-id", "r", "--propose", "nonsense")
    assert malformed.returncode == 2 and "KIND:REF" in malformed.stderr
    help_text = project.comet()
    assert help_text.returncode == 2 and "add" in help_text.stdout and "continue" in help_text.stdout
