"""SQLiteStore specifics: pragmas, schema versioning, a file that is not a database."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from comet_engine.errors import CorruptRunError, StoreError
from comet_engine.stores import SQLiteStore
from comet_engine.stores.sqlite import SCHEMA_VERSION


def pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as db:
        return db.execute(f"PRAGMA {name}").fetchone()[0]


def test_wal_full_and_versioned_schema(tmp_path: Path) -> None:
    path = tmp_path / "db" / "runs.db"
    with SQLiteStore(path) as store:
        store.create("r", {}, [])
        db = store._connection()
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    assert pragma(path, "journal_mode") == "wal"
    assert pragma(path, "user_version") == SCHEMA_VERSION


def test_synchronous_is_configurable_and_checked(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "runs.db", synchronous="NORMAL") as store:
        store.create("r", {}, [])
        assert store._connection().execute("PRAGMA synchronous").fetchone()[0] == 1
    with pytest.raises(StoreError, match=r"synchronous='SOMETIMES'.*use OFF, NORMAL, FULL or EXTRA"):
        SQLiteStore(tmp_path / "x.db", synchronous="SOMETIMES")  # type: ignore[arg-type]


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match=r"newer than this comet_engine understands.*upgrade"):
        SQLiteStore(path).run_ids()


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.write_text("this is a text file, not SQLite " * 100)
    with pytest.raises(CorruptRunError, match=r"runs.db is not a usable SQLite database"):
        SQLiteStore(path).run_ids()


def test_a_handle_reopens_after_close(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    store.create("r", {}, [{"type": "x"}])
    store.close()
    assert store.events("r") == [{"type": "x", "revision": 1}]
    store.close()


def test_close_from_another_thread_closes_every_threads_connection(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    store.create("r", {}, [])
    seen: list[sqlite3.Connection] = []
    thread = threading.Thread(target=lambda: seen.append(store._connection()))
    thread.start()
    thread.join()
    assert seen[0] is not store._connection()  # one connection per thread
    store.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        seen[0].execute("SELECT 1")
