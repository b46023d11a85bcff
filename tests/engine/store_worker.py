"""A separate process that drives a store, for the cross-process tests (run as a script, not collected).

    python store_worker.py race   <kind> <location> <run id> <worker> <commits> <go file>
    python store_worker.py commit <kind> <location> <run id> <event type>
    python store_worker.py show   <kind> <location> <run id>

``kind`` is file, single (FileStore.single) or sqlite. Every command prints one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from comet_engine.errors import ConflictError
from comet_engine.stores import FileStore, SQLiteStore, Store


def open_store(kind: str, location: str) -> Store:
    if kind == "file":
        return FileStore(location)
    if kind == "single":
        return FileStore.single(location)
    if kind == "sqlite":
        return SQLiteStore(location)
    raise SystemExit(f"unknown store kind {kind!r}")


def race(store: Store, run_id: str, worker: str, commits: int, go: Path) -> dict[str, int]:
    """Load, increment, commit with CAS; on ConflictError reload and retry until *commits* succeeded."""
    while not go.exists():  # start together, so the commits really race
        time.sleep(0.001)
    done = conflicts = 0
    while done < commits:
        run = store.load(run_id)
        counts = dict(run.state["byWorker"])
        counts[worker] = counts.get(worker, 0) + 1
        state = {**run.state, "counter": run.state["counter"] + 1, "byWorker": counts}
        event = {"type": "increment", "worker": worker, "loaded": run.revision}
        try:
            store.commit(run_id, run.revision, state, [event])
        except ConflictError as err:
            assert err.expected == run.revision and err.actual is not None and err.actual > run.revision
            conflicts += 1
            continue
        done += 1
    return {"done": done, "conflicts": conflicts}


def main(argv: list[str]) -> None:
    command, kind, location, run_id, *rest = argv
    store = open_store(kind, location)
    if command == "race":
        worker, commits, go = rest
        print(json.dumps(race(store, run_id, worker, int(commits), Path(go))))
    elif command == "commit":
        (event_type,) = rest
        run = store.load(run_id)
        state = {**run.state, "counter": run.state["counter"] + 1}
        result = store.commit(run_id, run.revision, state, [{"type": event_type}, {"type": event_type + "-2"}])
        print(json.dumps({"revision": result.revision}))
    elif command == "show":
        run = store.load(run_id)
        print(json.dumps({"revision": run.revision, "state": run.state, "events": store.events(run_id)}))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
