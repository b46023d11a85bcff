"""Stores across real processes: resume in a new process, racing writers, and SIGKILL at each durable write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from comet_engine.stores import FileStore, SQLiteStore, Store
from comet_engine.stores.codec import CRASH_ENV
from tests.support.factories import REPO

WORKER = Path(__file__).with_name("store_worker.py")
KINDS = ["file", "single", "sqlite"]


def location(kind: str, tmp_path: Path) -> str:
    return str(tmp_path / ("runs.db" if kind == "sqlite" else "runs"))


def open_here(kind: str, where: str) -> Store:
    return {"file": FileStore, "single": FileStore.single, "sqlite": SQLiteStore}[kind](where)


def worker_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def run_worker(*args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = worker_env(**({CRASH_ENV: crash_at} if crash_at else {}))
    return subprocess.run(
        [sys.executable, str(WORKER), *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


def worker_json(*args: str) -> dict[str, Any]:
    result = run_worker(*args)
    assert result.returncode == 0, result.stderr
    value: dict[str, Any] = json.loads(result.stdout)
    return value


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_process_resumes_a_run(kind: str, tmp_path: Path) -> None:
    where = location(kind, tmp_path)
    store = open_here(kind, where)
    store.create("r", {"counter": 0}, [{"type": "run_started"}])
    assert worker_json("commit", kind, where, "r", "from-child") == {"revision": 2}
    assert store.load("r").state["counter"] == 1
    store.commit("r", 2, {"counter": 2}, [{"type": "from-parent"}])
    shown = worker_json("show", kind, where, "r")
    assert (shown["revision"], shown["state"]["counter"]) == (3, 2)
    assert [e["type"] for e in shown["events"]] == ["run_started", "from-child", "from-child-2", "from-parent"]


WORKERS, COMMITS = 8, 500


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_racing_processes_lose_no_update_and_fork_no_history(kind: str, tmp_path: Path) -> None:
    where, go = location(kind, tmp_path), tmp_path / "go"
    open_here(kind, where).create("race", {"counter": 0, "byWorker": {}}, [{"type": "run_started"}])
    env = worker_env()
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "race", kind, where, "race", f"w{i}", str(COMMITS), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(WORKERS)
    ]
    go.touch()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    store = open_here(kind, where)
    final = store.load("race")
    total = WORKERS * COMMITS
    # No lost update: every successful commit is in the counter, each worker's share exactly once.
    assert final.state["counter"] == total
    assert final.state["byWorker"] == {f"w{i}": COMMITS for i in range(WORKERS)}
    assert final.revision == total + 1
    # No forked history: one event per revision, 1..N with no gap or duplicate, each built on the one before.
    events = store.events("race")
    assert [e["revision"] for e in events] == list(range(1, total + 2))
    assert all(e["loaded"] == e["revision"] - 1 for e in events[1:])
    assert Counter(e["worker"] for e in events[1:]) == {f"w{i}": COMMITS for i in range(WORKERS)}
    # Every loser got ConflictError: attempts = wins + typed conflicts, and the workers did race.
    assert all(r["done"] == COMMITS for r in reports)
    conflicts = sum(r["conflicts"] for r in reports)
    assert conflicts > 0
    print(f"{kind}: {total} commits, {conflicts} typed conflicts")


FILE_POINTS = {  # crash point -> is the crashed commit published afterwards?
    "file-events-written": False,
    "file-events-synced": False,
    "file-state-synced": False,
    "file-state-renamed": True,
}


def crash_cases() -> list[tuple[str, str, bool]]:
    cases = [(kind, point, published) for point, published in FILE_POINTS.items() for kind in ("file", "single")]
    return [*cases, ("sqlite", "sqlite-mid-transaction", False)]


@pytest.mark.parametrize(("kind", "point", "published"), crash_cases())
def test_sigkill_at_each_durable_write_leaves_a_consistent_run(
    kind: str, point: str, published: bool, tmp_path: Path
) -> None:
    where = location(kind, tmp_path)
    open_here(kind, where).create("r", {"counter": 0}, [{"type": "run_started"}])
    assert worker_json("commit", kind, where, "r", "before")["revision"] == 2
    crashed = run_worker("commit", kind, where, "r", "doomed", crash_at=point)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    after = worker_json("show", kind, where, "r")  # a new process reloads the run
    revision = 3 if published else 2
    assert after["revision"] == revision
    assert after["state"]["counter"] == revision - 1
    revisions = [e["revision"] for e in after["events"]]
    assert revisions == [1, 2, 2, *([3, 3] if published else [])]  # no event of an unpublished revision
    assert ("doomed" in [e["type"] for e in after["events"]]) is published
    # The next commit works and repairs any torn tail: the history stays 1..N.
    assert worker_json("commit", kind, where, "r", "next")["revision"] == revision + 1
    final = worker_json("show", kind, where, "r")
    assert [e["revision"] for e in final["events"]] == [1, *sorted([*range(2, revision + 2)] * 2)]
    assert [e["type"] for e in final["events"]][-2:] == ["next", "next-2"]


CREATE_POINTS = [("file", "file-events-synced"), ("file", "file-state-synced"), ("sqlite", "sqlite-mid-transaction")]


@pytest.mark.parametrize(("kind", "point"), CREATE_POINTS)
def test_sigkill_during_create_leaves_no_run_and_create_works_again(kind: str, point: str, tmp_path: Path) -> None:
    where = location(kind, tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from tests.engine.store_worker import open_store; "
        "open_store(sys.argv[2], sys.argv[3]).create('r', {'counter': 0}, [{'type': 'run_started'}])"
    )
    crashed = subprocess.run(
        [sys.executable, "-c", code, str(REPO), kind, where],
        env=worker_env(**{CRASH_ENV: point}),
        capture_output=True,
        text=True,
        check=False,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    store = open_here(kind, where)
    assert store.run_ids() == []
    store.create("r", {"counter": 0}, [{"type": "again"}])
    assert store.events("r") == [{"type": "again", "revision": 1}]
