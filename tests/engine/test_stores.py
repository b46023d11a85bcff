"""The store contract, run against every backend: compare-and-swap, revision stamps, isolation, errors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from comet_engine.errors import (
    ConflictError,
    RunExistsError,
    RunNotFoundError,
    StoreError,
    UnsafePathError,
)
from comet_engine.stores import FileStore, MemoryStore, SQLiteStore, Store

MakeStore = Callable[[], Store]


def make_memory(tmp_path: Path) -> MakeStore:
    store = MemoryStore()
    return lambda: store


def make_file(tmp_path: Path) -> MakeStore:
    return lambda: FileStore(tmp_path / "runs")


def make_sqlite(tmp_path: Path) -> MakeStore:
    return lambda: SQLiteStore(tmp_path / "runs.db")


BACKENDS: dict[str, Callable[[Path], MakeStore]] = {"memory": make_memory, "file": make_file, "sqlite": make_sqlite}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStore]:
    """A factory of store handles on one storage: each call opens another handle (a new reader/writer)."""
    yield BACKENDS[request.param](tmp_path)


@pytest.fixture
def store(backend: MakeStore) -> Store:
    return backend()


def started(store: Store, run_id: str = "run-1") -> None:
    store.create(run_id, {"runId": run_id, "counter": 0}, [{"type": "run_started"}])


def test_create_publishes_revision_one_with_stamped_events(store: Store) -> None:
    created = store.create("run-1", {"runId": "run-1", "n": 1}, [{"type": "run_started"}])
    expected = {"runId": "run-1", "n": 1, "revision": 1}
    assert (created.run_id, created.revision, dict(created.state)) == ("run-1", 1, expected)
    loaded = store.load("run-1")
    assert (loaded.revision, dict(loaded.state)) == (1, expected)
    assert store.events("run-1") == [{"type": "run_started", "revision": 1}]


def test_commit_advances_revision_and_appends_events_in_order(store: Store) -> None:
    started(store)
    for revision in range(1, 6):
        result = store.commit("run-1", revision, {"counter": revision}, [{"type": "a"}, {"type": "b"}])
        assert result.revision == revision + 1
    loaded = store.load("run-1")
    assert (loaded.revision, loaded.state["counter"]) == (6, 5)
    events = store.events("run-1")
    assert [e["revision"] for e in events] == [1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    assert [e["type"] for e in events[1:3]] == ["a", "b"]


def test_commit_without_events_still_advances(store: Store) -> None:
    started(store)
    assert store.commit("run-1", 1, {"counter": 1}, []).revision == 2
    assert len(store.events("run-1")) == 1


def test_stale_revision_is_a_conflict_and_writes_nothing(store: Store) -> None:
    started(store)
    store.commit("run-1", 1, {"counter": 1}, [{"type": "winner"}])
    with pytest.raises(ConflictError) as info:
        store.commit("run-1", 1, {"counter": 99}, [{"type": "loser"}])
    assert (info.value.run_id, info.value.expected, info.value.actual) == ("run-1", 1, 2)
    assert "reload the run and retry" in str(info.value)
    with pytest.raises(ConflictError):
        store.commit("run-1", 7, {"counter": 99}, [{"type": "from-the-future"}])
    assert store.load("run-1").state["counter"] == 1
    assert [e["type"] for e in store.events("run-1")] == ["run_started", "winner"]


def test_second_handle_sees_commits_and_loses_races(backend: MakeStore) -> None:
    first, second = backend(), backend()
    started(first)
    assert second.load("run-1").revision == 1
    first.commit("run-1", 1, {"counter": 1}, [{"type": "first"}])
    with pytest.raises(ConflictError):
        second.commit("run-1", 1, {"counter": 2}, [{"type": "second"}])
    reloaded = second.load("run-1")
    second.commit("run-1", reloaded.revision, {"counter": 2}, [{"type": "second"}])
    assert first.load("run-1").state == {"counter": 2, "runId": "run-1", "revision": 3}
    assert [e["revision"] for e in first.events("run-1")] == [1, 2, 3]


def test_create_twice_is_refused(store: Store) -> None:
    started(store)
    with pytest.raises(RunExistsError, match="run-1"):
        started(store)
    assert store.load("run-1").revision == 1


def test_missing_run(store: Store) -> None:
    for call in (
        lambda: store.load("nope"),
        lambda: store.events("nope"),
        lambda: store.commit("nope", 1, {}, []),
    ):
        with pytest.raises(RunNotFoundError, match="'nope'"):
            call()


def test_run_ids_are_sorted(store: Store) -> None:
    assert store.run_ids() == []
    for run_id in ("b", "a-2", "a-10", "c.x"):
        started(store, run_id)
    assert store.run_ids() == ["a-10", "a-2", "b", "c.x"]


@pytest.mark.parametrize("run_id", ["", "..", ".", "a/b", "/abs", "~", "C:run", "a\\b", "x\0y", "tab\there"])
def test_unsafe_run_ids_are_refused(store: Store, run_id: str) -> None:
    with pytest.raises(UnsafePathError):
        store.create(run_id, {}, [])
    assert store.run_ids() == []


def test_stored_values_are_isolated_from_callers(store: Store) -> None:
    state: dict[str, Any] = {"items": [1, 2]}
    event: dict[str, Any] = {"type": "x", "data": {"k": 1}}
    store.create("run-1", state, [event])
    state["items"].append(3)
    event["data"]["k"] = 2
    loaded = store.load("run-1")
    assert loaded.state == {"items": [1, 2], "runId": "run-1", "revision": 1}
    loaded.state["items"].append(4)
    store.events("run-1")[0]["data"]["k"] = 5
    assert store.load("run-1").state["items"] == [1, 2]
    assert store.events("run-1") == [{"type": "x", "data": {"k": 1}, "revision": 1}]
    assert "revision" not in event


def test_a_loaded_state_can_be_committed_back_unchanged(store: Store) -> None:
    """The stamped ``revision`` is the store's: handing a loaded state back never trips over it."""
    started(store)
    loaded = store.load("run-1")
    result = store.commit("run-1", loaded.revision, loaded.state, [])
    assert result.state == {**loaded.state, "revision": 2}


def test_caller_revision_in_an_event_is_overwritten_by_the_store(store: Store) -> None:
    store.create("run-1", {}, [{"type": "x", "revision": 42}])
    assert store.events("run-1") == [{"type": "x", "revision": 1}]


def test_unicode_round_trips(store: Store) -> None:
    state = {"title": "技能 ✓", "nested": {"list": [None, True, 1.5, -3, "é"]}}
    store.create("run-1", state, [{"type": "note", "text": "第一步\nline two"}])
    assert store.load("run-1").state == {**state, "runId": "run-1", "revision": 1}
    assert store.events("run-1")[0]["text"] == "第一步\nline two"


@pytest.mark.parametrize(
    ("state", "events"),
    [
        ({"bad": object()}, []),
        ({"nan": float("nan")}, []),
        ({}, [{"type": "x", "when": {1, 2}}]),
        ({}, ["not an object"]),
        ({"runId": "someone-else"}, []),
        ({"trajectoryBytes": 0}, []),
        (["not", "an", "object"], []),
    ],
)
def test_values_that_are_not_plain_json_are_refused_before_anything_is_written(
    store: Store, state: Any, events: Any
) -> None:
    started(store)
    with pytest.raises(StoreError, match="run 'run-1'"):
        store.commit("run-1", 1, state, events)
    assert store.load("run-1").revision == 1
    assert len(store.events("run-1")) == 1


def test_threads_racing_lose_no_update(backend: MakeStore) -> None:
    """Threads of one process (each with its own handle): every commit lands once, losers see ConflictError."""
    started(backend())
    threads_count, per_thread = 4, 50
    conflicts = [0] * threads_count

    def work(index: int) -> None:
        store = backend()
        done = 0
        while done < per_thread:
            run = store.load("run-1")
            try:
                store.commit("run-1", run.revision, {"counter": run.state["counter"] + 1}, [{"type": "inc"}])
            except ConflictError:
                conflicts[index] += 1
                continue
            done += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = backend().load("run-1")
    assert final.state["counter"] == threads_count * per_thread
    assert final.revision == threads_count * per_thread + 1
    assert [e["revision"] for e in backend().events("run-1")] == list(range(1, final.revision + 1))
