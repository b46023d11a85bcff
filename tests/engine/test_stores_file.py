"""FileStore on disk: the layout, change mode, torn tails of crashed writers, damaged files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from comet_engine.errors import ConflictError, CorruptRunError, RunExistsError, RunNotFoundError
from comet_engine.stores import FileStore
from comet_engine.stores.file import LOCK_FILE, STATE_FILE, TRAJECTORY_FILE


def test_standalone_layout(tmp_path: Path) -> None:
    store = FileStore(tmp_path / ".comet" / "runs")
    store.create("demo-run", {"runId": "demo-run", "status": "running"}, [{"type": "run_started"}])
    store.commit("demo-run", 1, {"status": "completed"}, [{"type": "a"}, {"type": "b"}])
    run_dir = tmp_path / ".comet" / "runs" / "demo-run"
    assert sorted(p.name for p in run_dir.iterdir()) == sorted([LOCK_FILE, STATE_FILE, TRAJECTORY_FILE])
    document = json.loads((run_dir / STATE_FILE).read_text())
    trajectory = (run_dir / TRAJECTORY_FILE).read_bytes()
    assert document == {"status": "completed", "runId": "demo-run", "revision": 2, "trajectoryBytes": len(trajectory)}
    assert [json.loads(line) for line in trajectory.splitlines()] == [
        {"type": "run_started", "revision": 1},
        {"type": "a", "revision": 2},
        {"type": "b", "revision": 2},
    ]
    assert "trajectoryBytes" not in store.load("demo-run").state


def test_single_directory_holds_exactly_one_run(tmp_path: Path) -> None:
    comet = tmp_path / "change" / ".comet"
    store = FileStore.single(comet)
    assert store.run_ids() == []
    store.create("change-run", {"pending": ""}, [{"type": "run_started"}])
    assert (comet / STATE_FILE).is_file()
    assert (comet / TRAJECTORY_FILE).is_file()
    assert store.run_ids() == ["change-run"]
    with pytest.raises(RunExistsError, match=r"'change-run' already exists.*one run per directory"):
        store.create("another", {}, [])
    with pytest.raises(RunNotFoundError, match="holds run 'change-run'"):
        store.load("another")
    assert FileStore.single(comet).load("change-run").revision == 1


def append_unpublished(run_dir: Path, revision: int) -> None:
    """What a writer killed between its events and its state leaves behind: whole and torn lines."""
    with (run_dir / TRAJECTORY_FILE).open("ab") as file:
        file.write(json.dumps({"type": "ghost", "revision": revision}).encode() + b"\n")
        file.write(b'{"type": "torn", "revi')


def test_events_of_an_unpublished_revision_are_invisible_then_repaired(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.create("r", {}, [{"type": "run_started"}])
    append_unpublished(tmp_path / "r", 2)
    assert store.events("r") == [{"type": "run_started", "revision": 1}]
    assert store.load("r").revision == 1
    with pytest.raises(ConflictError):
        store.commit("r", 2, {}, [{"type": "ghost-writer-again"}])  # a conflict repairs nothing and writes nothing
    assert (tmp_path / "r" / TRAJECTORY_FILE).read_bytes().endswith(b"revi")
    store.commit("r", 1, {"n": 2}, [{"type": "real"}])
    lines = (tmp_path / "r" / TRAJECTORY_FILE).read_bytes().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run_started", "real"]
    assert store.events("r") == [{"type": "run_started", "revision": 1}, {"type": "real", "revision": 2}]


def test_a_crashed_create_can_be_created_again(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / TRAJECTORY_FILE).write_text('{"type": "run_started", "revision": 1}\n')
    store = FileStore(tmp_path)
    assert store.run_ids() == []
    with pytest.raises(RunNotFoundError):
        store.load("r")
    store.create("r", {}, [{"type": "fresh"}])
    assert store.events("r") == [{"type": "fresh", "revision": 1}]


def test_damaged_files_are_typed_errors_naming_the_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.create("r", {}, [{"type": "run_started"}, {"type": "second"}])
    state_file, trajectory = tmp_path / "r" / STATE_FILE, tmp_path / "r" / TRAJECTORY_FILE
    trajectory.write_bytes(trajectory.read_bytes()[:10])
    with pytest.raises(CorruptRunError, match=rf"{TRAJECTORY_FILE} holds 10 bytes.*restore it"):
        store.events("r")
    trajectory.write_bytes(b"not json at all, but long enough to cover the published length of the two events\n")
    with pytest.raises(CorruptRunError, match=rf"{TRAJECTORY_FILE} line 1"):
        store.events("r")
    state_file.write_text("{truncated")
    with pytest.raises(CorruptRunError, match=rf"{STATE_FILE} is not valid JSON"):
        store.load("r")
    state_file.write_text('{"runId": "r"}')
    with pytest.raises(CorruptRunError, match="revision"):
        store.load("r")
    state_file.write_text('{"runId": "elsewhere", "revision": 1, "trajectoryBytes": 0}')
    with pytest.raises(CorruptRunError, match="belongs to run 'elsewhere'"):
        store.load("r")


def test_a_run_directory_removed_and_made_again_is_locked_afresh(tmp_path: Path) -> None:
    store, other = FileStore(tmp_path), FileStore(tmp_path)
    store.create("r", {}, [])
    store.commit("r", 1, {}, [{"type": "old"}])
    shutil.rmtree(tmp_path / "r")
    other.create("r", {}, [{"type": "new"}])
    store.commit("r", 1, {}, [{"type": "after"}])  # the stale descriptors of the first handle are replaced
    with pytest.raises(ConflictError):
        other.commit("r", 1, {}, [])
    assert [e["type"] for e in other.events("r")] == ["new", "after"]
    store.close()
    other.close()


def test_missing_directory_commit_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(RunNotFoundError, match="'ghost'"):
        FileStore(tmp_path).commit("ghost", 1, {}, [])
