"""What the agent changed (scaffold.trial.changes) on the local backend: real folders, real commands, and a real
trial through the Runner whose changes.json and record tell the same story."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from scaffold.catalog.tasks import load_task
from scaffold.experiment import CHANGES_FILE
from scaffold.experiment.cases import Case
from scaffold.judge import JudgeRequest
from scaffold.judge.prompts import generic_prompt
from scaffold.records import ChangeCounts, JudgeInfo
from scaffold.records.files import read_record
from scaffold.rubrics import Dimension
from scaffold.trial import changes as changes_module
from scaffold.trial.changes import TEXT_LIMIT, Changes, FileChange, capture, changes, diff_text, record_changes
from scaffold.validation.results import ValidationOutcome
from scaffold.workspaces.base import Workspace
from scaffold.workspaces.local import LocalBackend, LocalWorkspace
from scaffold.workspaces.testing import ScriptedWorkspace
from tests.support.factories import TaskFactory, make_runner


@pytest.fixture
def local(factory: TaskFactory, tmp_path: Path) -> Iterator[LocalWorkspace]:
    """A local workspace holding a small project (text, binary, a link, a nested folder, a script)."""
    folder = factory.task(
        "project",
        files={"src/app.py": "def main():\n    return 1\n", "README.md": "# Project\n", "gone.txt": "old\n"},
    )
    env = folder / "environment"
    (env / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    (env / "run.sh").write_text("echo hi\n")
    (env / "readme-link").symlink_to("README.md")
    backend = LocalBackend(tmp_path / "ws")
    workspace = backend.create(load_task(folder), "exp/trial")
    yield workspace
    backend.destroy(workspace, keep=False)
    backend.close()


def sh(workspace: Workspace, script: str, tmp_path: Path) -> None:
    """Run *script* in the workspace as an agent's command would be."""
    result = workspace.exec(
        ["sh", "-c", script], timeout=30, env={}, stdout_path=tmp_path / "o.log", stderr_path=tmp_path / "e.log"
    )
    assert result.exit_code == 0, result.stderr()


def by_path(found: Changes) -> dict[str, FileChange]:
    return {f.path: f for f in found.files}


def test_added_modified_deleted_binary_large_and_links(local: LocalWorkspace, tmp_path: Path) -> None:
    before = capture(local)
    outside = Path(f"/tmp/comet-changes-outside-{uuid.uuid4().hex}")
    try:
        sh(
            local,
            "printf 'def main():\\n    return 2\\n' > src/app.py; rm gone.txt; mkdir -p docs; echo notes > docs/n.md;"
            f" printf '\\000\\001\\003' > blob.bin; head -c {TEXT_LIMIT + 1} /dev/zero | tr '\\0' a > big.txt;"
            " chmod +x run.sh; ln -sf src/app.py readme-link; printf 'no newline' > tail.txt;"
            f" echo outside > {outside}; echo tmp > $TMPDIR/scratch",
            tmp_path,
        )
        found = changes(local, before)
    finally:
        outside.unlink(missing_ok=True)
    files = by_path(found)
    assert list(files) == sorted(files)
    assert set(files) == {
        "src/app.py",
        "gone.txt",
        "docs/n.md",
        "blob.bin",
        "big.txt",
        "run.sh",
        "readme-link",
        "tail.txt",
    }  # neither the file outside the workspace nor the backend's TMPDIR
    assert found.counts == ChangeCounts(added=3, modified=4, deleted=1)
    assert not found.truncated and found.error is None

    app = files["src/app.py"]
    assert (app.status, app.size, app.size_before, app.binary, app.omitted) == ("modified", 25, 25, False, None)
    assert app.diff == (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def main():\n-    return 1\n+    return 2\n"
    )
    gone = files["gone.txt"]
    assert (gone.status, gone.size, gone.size_before) == ("deleted", None, 4)
    assert gone.diff == "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
    assert files["docs/n.md"].diff == "--- /dev/null\n+++ b/docs/n.md\n@@ -0,0 +1 @@\n+notes\n"
    blob = files["blob.bin"]
    assert (blob.status, blob.binary, blob.diff, blob.omitted) == ("modified", True, None, "binary")
    big = files["big.txt"]
    assert (big.status, big.size, big.diff, big.omitted) == ("added", TEXT_LIMIT + 1, None, "too large")
    assert files["run.sh"].diff == "old mode 100644\nnew mode 100755\n"
    assert "-README.md\n\\ No newline at end of file\n+src/app.py\n" in (files["readme-link"].diff or "")
    assert (files["tail.txt"].diff or "").endswith("+no newline\n\\ No newline at end of file\n")


def test_harness_files_are_left_out_but_installed_skills_are_watched(local: LocalWorkspace, tmp_path: Path) -> None:
    local.write_text(".claude/skills/s/SKILL.md", "---\nname: s\n---\nUse it.\n")  # installed before the agent
    local.write_text("CLAUDE.md", "Be brief.\n")
    before = capture(local)
    sh(
        local,
        "mkdir -p .eval-validation .eval-solution; echo x > .eval-validation/check.py;"
        " echo s > .eval-solution/solve.sh; echo '{}' > _test_context.json; echo '{}' > _test_results.json;"
        " echo Changed. >> .claude/skills/s/SKILL.md",
        tmp_path,
    )
    found = changes(local, before)
    assert [(f.path, f.status) for f in found.files] == [(".claude/skills/s/SKILL.md", "modified")]
    assert "+Changed.\n" in (found.files[0].diff or "")


def test_nothing_changed_is_an_empty_list(local: LocalWorkspace, tmp_path: Path) -> None:
    before = capture(local)
    sh(local, "cat README.md > /dev/null; touch README.md", tmp_path)  # read, and a new mtime: no change
    found = changes(local, before)
    assert found.files == () and found.counts == ChangeCounts() and diff_text(found) == ""


def test_bounds_diff_room_listed_files_and_manifest(
    local: LocalWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = capture(local)
    sh(local, "for i in 1 2 3 4 5 6; do seq 1 50 > f$i.txt; done", tmp_path)
    monkeypatch.setattr(changes_module, "DIFF_LIMIT", 600)
    found = changes(local, before)
    with_diff = [f.path for f in found.files if f.diff is not None]
    limited = [f.path for f in found.files if f.omitted == "limit"]
    assert with_diff == ["f1.txt", "f2.txt"] and limited == ["f3.txt", "f4.txt", "f5.txt", "f6.txt"]
    assert sum(len(f.diff or "") for f in found.files) <= 600

    monkeypatch.setattr(changes_module, "LISTED_LIMIT", 2)
    listed = changes(local, before)
    assert [f.path for f in listed.files] == ["f1.txt", "f2.txt"] and listed.truncated
    assert listed.counts.added == 6  # counted, though not listed

    # A manifest cut at 3 files: only the paths both manifests cover are compared, and it says so.
    monkeypatch.setattr(changes_module, "MANIFEST_LIMIT", 3)
    cut = changes(local, capture(local))
    assert cut.files == () and cut.truncated


def test_a_file_over_the_snapshot_budget_is_named_with_limit(
    local: LocalWorkspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes_module, "SNAPSHOT_LIMIT", 30)  # README.md (10) and gone.txt (4) fit, app.py not
    before = capture(local)
    sh(local, "echo more >> README.md; echo more >> src/app.py", tmp_path)
    files = by_path(changes(local, before))
    assert files["README.md"].diff is not None
    assert (files["src/app.py"].diff, files["src/app.py"].omitted) == (None, "limit")


def test_a_capture_problem_is_written_down_never_raised(tmp_path: Path) -> None:
    workspace = ScriptedWorkspace(tmp_path / "ws")
    workspace.host_path.rmdir()  # the folder is gone: nothing can be listed
    found = record_changes(workspace, capture(workspace), tmp_path / CHANGES_FILE)
    data = json.loads((tmp_path / CHANGES_FILE).read_text())
    assert data["files"] == [] and data["counts"] == {"added": 0, "modified": 0, "deleted": 0}
    assert data["error"].startswith("WorkspaceError: cannot list the workspace") and found.error == data["error"]


def test_changes_json_has_the_agreed_schema(local: LocalWorkspace, tmp_path: Path) -> None:
    before = capture(local)
    sh(local, "echo new > new.txt", tmp_path)
    record_changes(local, before, tmp_path / CHANGES_FILE)
    data = json.loads((tmp_path / CHANGES_FILE).read_text())
    assert list(data) == ["version", "root", "files", "truncated", "counts"]
    assert data["version"] == 1 and data["root"] == local.root and data["truncated"] is False
    assert data["files"] == [
        {
            "path": "new.txt",
            "status": "added",
            "size": 4,
            "size_before": None,
            "binary": False,
            "diff": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n",
            "omitted": None,
        }
    ]


def test_diff_text_for_the_judge_is_bounded_and_names_files_without_a_diff() -> None:
    found = Changes(
        "/w",
        (
            FileChange("a.txt", "added", 2, None, diff="--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+a\n"),
            FileChange("b.bin", "modified", 9, 8, binary=True, omitted="binary"),
        ),
        counts=ChangeCounts(added=1, modified=1),
    )
    text = diff_text(found)
    assert text.startswith("--- /dev/null\n+++ b/a.txt\n") and "# b.bin: modified, binary (9 bytes)\n" in text
    cut = diff_text(found, limit=20)
    assert cut.startswith(text[:20]) and cut.endswith("# (cut here)\n")
    prompt = generic_prompt("Do it.", (), ValidationOutcome(), _Empty(), text)
    # Inside the markers of untrusted data: the judge grades it, never takes it as instructions.
    assert re.search(
        r"=== what the agent changed \(unified diffs\) ===\n<<<BEGIN UNTRUSTED DATA \w+: diffs>>>\n--- /dev/null",
        prompt,
    )
    assert "what the agent changed" not in generic_prompt("Do it.", (), ValidationOutcome(), _Empty())


class _Empty:
    def glob(self, pattern: str) -> list[str]:
        return []

    def read_text(self, rel: str) -> str | None:
        return None


class _RecordingJudge:
    def __init__(self) -> None:
        self.requests: list[JudgeRequest] = []

    def judge(self, request: JudgeRequest) -> tuple[tuple[Dimension, ...], JudgeInfo]:
        self.requests.append(request)
        return (), JudgeInfo("skipped", reason="recording only")


def test_a_trial_writes_changes_json_and_counts_them_in_its_record(factory: TaskFactory, tmp_path: Path) -> None:
    factory.task(
        "edits",
        files={"notes.md": "first\n", "old.txt": "bye\n"},
        solve=f"echo done > out.txt; echo second >> notes.md; rm old.txt; echo elsewhere > {tmp_path}/outside.txt\n",
    )
    runner = make_runner([factory.tasks_dir], [factory.treatments_dir], tmp_path)
    judge = _RecordingJudge()
    runner.judge = judge
    result = runner.run(Case("edits", "CONTROL", 1))
    record = result.record
    assert record.verdict == "passed", (record.errors, record.checks)
    data = json.loads((result.record_path.parent / CHANGES_FILE).read_text())
    assert [(f["path"], f["status"]) for f in data["files"]] == [
        ("notes.md", "modified"),
        ("old.txt", "deleted"),
        ("out.txt", "added"),
    ]  # nor the validation files, nor the file outside the workspace
    assert (tmp_path / "outside.txt").is_file()
    assert data["counts"] == {"added": 1, "modified": 1, "deleted": 1}
    assert record.changes == ChangeCounts(added=1, modified=1, deleted=1)
    assert read_record(result.record_path).changes == record.changes
    assert "changes_s" in record.phases
    assert "+second\n" in judge.requests[0].changes and "+++ b/out.txt" in judge.requests[0].changes


def test_a_repository_s_internals_are_not_listed(local: LocalWorkspace, tmp_path: Path) -> None:
    sh(local, "mkdir -p .git/objects/ab && echo ref > .git/HEAD", tmp_path)
    before = capture(local)
    sh(local, "echo obj > .git/objects/ab/cdef; echo new > .git/HEAD; echo code > main.py", tmp_path)
    assert list(by_path(changes(local, before))) == ["main.py"]


def test_a_credential_the_agent_wrote_into_a_file_is_redacted(local: LocalWorkspace, tmp_path: Path) -> None:
    key = "sk-ant-planted-" + uuid.uuid4().hex
    before = capture(local)
    sh(local, f"echo 'ANTHROPIC_API_KEY={key}' > leaked.env", tmp_path)
    out = tmp_path / CHANGES_FILE
    found = record_changes(local, before, out, lambda text: text.replace(key, "[REDACTED]"))
    assert key not in out.read_text(encoding="utf-8") and key not in diff_text(found)
    assert "ANTHROPIC_API_KEY=[REDACTED]" in (by_path(found)["leaked.env"].diff or "")
