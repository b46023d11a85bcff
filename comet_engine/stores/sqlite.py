"""SQLiteStore: every run of a project in one SQLite database (WAL, ``synchronous=FULL`` by default).

A commit is one ``BEGIN IMMEDIATE`` transaction: it takes the database's write lock first, so the
revision it reads cannot move before it writes (compare-and-swap), and its events and new state become
visible together or not at all. Each thread and each process gets its own connection (SQLite
connections must not cross threads or a fork); waiting for the write lock is bounded by the busy timeout.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from comet_engine.errors import ConflictError, CorruptRunError, RunExistsError, RunNotFoundError, StoreError
from comet_engine.stores.base import StoredRun
from comet_engine.stores.codec import crash_point, decode_event, decode_state, encode_events, encode_state, stamped
from comet_engine.stores.paths import check_run_id

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION = 1
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

# Statements run one by one inside our own transaction (executescript would commit it early).
_SCHEMA = (
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        revision INTEGER NOT NULL,
        event_count INTEGER NOT NULL,
        state TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID""",
)


class SQLiteStore:
    """Runs in the database file *path* (created with its schema on first use)."""

    def __init__(
        self, path: str | os.PathLike[str], synchronous: Synchronous = "FULL", busy_timeout_s: float = 30.0
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise StoreError(f"synchronous={synchronous!r} is not a SQLite level; use OFF, NORMAL, FULL or EXTRA")
        self.path = Path(path)
        self.synchronous = synchronous
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._all: list[tuple[int, sqlite3.Connection]] = []
        self._all_lock = threading.Lock()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections this process opened (any thread's); a forked child leaves its parent's alone."""
        with self._all_lock:
            for pid, connection in self._all:
                if pid == os.getpid():
                    connection.close()
            self._all.clear()
        self._local = threading.local()

    # --- the Store protocol ----------------------------------------------------------------------------

    def create(self, run_id: str, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> StoredRun:
        check_run_id(run_id)
        text, lines = encode_state(run_id, 1, state), encode_events(run_id, 1, events)
        with self._write(run_id) as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise RunExistsError(f"run {run_id!r} already exists in {self.path}; choose another run id")
            db.executemany(
                "INSERT INTO events (run_id, seq, revision, body) VALUES (?, ?, 1, ?)",
                [(run_id, seq, line) for seq, line in enumerate(lines)],
            )
            crash_point("sqlite-mid-transaction")
            db.execute("INSERT INTO runs VALUES (?, 1, ?, ?)", (run_id, len(lines), text))
        return StoredRun(run_id, 1, stamped(run_id, 1, state))

    def load(self, run_id: str) -> StoredRun:
        row = self._connection().execute("SELECT revision, state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFoundError(f"run {run_id!r} does not exist in {self.path}")
        return StoredRun(run_id, row[0], decode_state(run_id, row[1], f"{self.path} runs.state"))

    def commit(
        self, run_id: str, expected_revision: int, state: Mapping[str, Any], events: Sequence[Mapping[str, Any]]
    ) -> StoredRun:
        revision = expected_revision + 1
        text, lines = encode_state(run_id, revision, state), encode_events(run_id, revision, events)
        with self._write(run_id) as db:
            row = db.execute("SELECT revision, event_count FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFoundError(f"run {run_id!r} does not exist in {self.path}")
            if row[0] != expected_revision:
                raise ConflictError(run_id, expected_revision, row[0])
            db.executemany(
                "INSERT INTO events (run_id, seq, revision, body) VALUES (?, ?, ?, ?)",
                [(run_id, row[1] + offset, revision, line) for offset, line in enumerate(lines)],
            )
            crash_point("sqlite-mid-transaction")
            db.execute(
                "UPDATE runs SET revision = ?, event_count = ?, state = ? WHERE run_id = ?",
                (revision, row[1] + len(lines), text, run_id),
            )
        return StoredRun(run_id, revision, stamped(run_id, revision, state))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        db = self._connection()
        # One read transaction: the existence check and the rows come from the same snapshot.
        db.execute("BEGIN")
        try:
            if not db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise RunNotFoundError(f"run {run_id!r} does not exist in {self.path}")
            rows = db.execute("SELECT seq, body FROM events WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        finally:
            db.execute("COMMIT")
        where = f"{self.path} events"
        return [decode_event(run_id, body, f"{where} seq {seq}") for seq, body in rows]

    def run_ids(self) -> list[str]:
        return [row[0] for row in self._connection().execute("SELECT run_id FROM runs ORDER BY run_id")]

    # --- internals -------------------------------------------------------------------------------------

    @contextmanager
    def _write(self, run_id: str) -> Iterator[sqlite3.Connection]:
        db = self._connection()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            raise self._busy(run_id, err) from err
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error as err:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise StoreError(f"run {run_id!r}: cannot commit to {self.path} ({err}); nothing was written") from err

    def _connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None and self._local.pid == os.getpid():
            return db
        # A new thread, or a forked child: never reuse a connection opened elsewhere.
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Each thread opens its own connection (threading.local); the check is off only so that
            # close() may close them all from whichever thread ends the store.
            db = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute(f"PRAGMA synchronous = {self.synchronous}")
            self._migrate(db)
        except sqlite3.OperationalError as err:
            raise StoreError(f"cannot open {self.path} ({err}); check the file and its directory are writable") from err
        except sqlite3.DatabaseError as err:
            raise CorruptRunError(
                f"{self.path} is not a usable SQLite database ({err}); point the store at another file"
            ) from err
        except OSError as err:
            raise StoreError(f"cannot open {self.path} ({err.strerror}); check the directory is writable") from err
        self._local.db, self._local.pid = db, os.getpid()
        with self._all_lock:
            self._all.append((os.getpid(), db))
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        """Create the schema in an empty database; refuse a database written by a newer engine."""
        if self._schema_version(db) == SCHEMA_VERSION:
            return
        db.execute("BEGIN IMMEDIATE")  # two processes opening a new database must not both create it
        try:
            if self._schema_version(db) == 0:
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _schema_version(self, db: sqlite3.Connection) -> int:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has store schema {version}, newer than this comet_engine understands "
                f"({SCHEMA_VERSION}); upgrade comet_engine to read it"
            )
        return version

    def _busy(self, run_id: str, err: sqlite3.OperationalError) -> StoreError:
        return StoreError(
            f"run {run_id!r}: could not lock {self.path} within {self.busy_timeout_s} s ({err}); another process "
            "holds it: retry, or raise busy_timeout_s"
        )
