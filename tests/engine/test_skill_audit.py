"""comet_engine.skills.audit: the run files a real ``comet skill run`` leaves in a change folder read back
as whole, and every kind of damage (edited state, reordered trajectory, broken JSON, missing fields)
named with the file and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from comet_engine.errors import CorruptRunError
from comet_engine.skills.audit import read_checkpoint, read_pending, read_state, read_trajectory
from tests.engine.skillpkg import EXAMPLE
from tests.engine.test_skill_cli import Project


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    project = Project(tmp_path / "project")
    change = project.root / "openspec" / "changes" / "add-login"
    change.mkdir(parents=True)
    project.ok("run", str(EXAMPLE), "--change", change)
    project.ok("continue", "--change", change, "--status", "succeeded")
    return change / ".comet"


def test_a_real_run_reads_back_whole(run_dir: Path) -> None:
    state = read_state((run_dir / "run-state.json").read_text())
    assert state.run_id == "add-login" and state.current_step == "draft"
    assert read_trajectory((run_dir / "trajectory.jsonl").read_text(), state.run_id) >= 2
    assert read_checkpoint((run_dir / "checkpoint.json").read_text(), state)["runId"] == "add-login"
    assert read_pending((run_dir / "pending-action.json").read_text()) is not None  # it waits for a report


def test_a_state_edited_after_its_checkpoint_is_named(run_dir: Path) -> None:
    raw = json.loads((run_dir / "run-state.json").read_text())
    raw["currentStep"] = "publish"  # skipped ahead by hand
    edited = read_state(json.dumps(raw))
    with pytest.raises(CorruptRunError, match=r"checkpoint.json was made from another state"):
        read_checkpoint((run_dir / "checkpoint.json").read_text(), edited)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"runId": "r"}', "lacks status, iteration"),
        ('{"runId": "r", "status": "running", "iteration": 1, "actions": {"a": 3}}', "malformed part"),
    ],
)
def test_a_broken_state_is_a_corrupt_run(text: str, message: str) -> None:
    with pytest.raises(CorruptRunError, match=message):
        read_state(text)


def test_a_reordered_or_broken_trajectory_is_named() -> None:
    with pytest.raises(CorruptRunError, match="revision 1 after 2"):
        read_trajectory('{"revision": 2}\n{"revision": 1}\n', "r")
    with pytest.raises(CorruptRunError, match="line 2"):
        read_trajectory('{"revision": 1}\nnot json\n', "r")
    assert read_trajectory('{"revision": 1}\n\n{"revision": 1}\n', "r") == 2


def test_the_original_checkpoint_layout_is_accepted_and_an_empty_one_is_not() -> None:
    original = {"runId": "r", "contextHash": None, "artifactsHash": "a1", "createdAt": "2026-01-01T00:00:00Z"}
    assert read_checkpoint(json.dumps(original), None)["runId"] == "r"
    with pytest.raises(CorruptRunError, match="names no runId"):
        read_checkpoint("{}", None)
    with pytest.raises(CorruptRunError, match="neither a stateDigest"):
        read_checkpoint('{"runId": "r"}', None)


def test_pending_files() -> None:
    assert read_pending("") is None
    assert read_pending('{"pending": null}') is None
    assert read_pending("{}") is None
    assert read_pending('{"pending": {"id": "a"}}') == {"id": "a"}
    with pytest.raises(CorruptRunError, match="not valid JSON"):
        read_pending("{")
