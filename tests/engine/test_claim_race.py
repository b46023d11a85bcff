"""Eight processes race to claim and record the actions of one run, on the file store and on SQLite.

The run is a self-loop with one pending action at a time, so every step is contended by all eight.
Whatever the interleaving: every step is recorded exactly once (no lost update, no double dispatch),
the trajectory is one unforked history (revisions 1..N, each action proposed, claimed and completed
once, in order), every loser got a typed refusal, and the run completes after exactly the planned steps.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from comet_engine import Runtime
from tests.engine.claim_race_worker import loop
from tests.engine.store_worker import open_store
from tests.engine.test_stores_processes import location, worker_env

WORKER = Path(__file__).with_name("claim_race_worker.py")
WORKERS, STEPS = 8, 500


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_eight_processes_racing_claim_and_record_lose_nothing_and_fork_nothing(kind: str, tmp_path: Path) -> None:
    where = location(kind, tmp_path)
    rt = Runtime(open_store(kind, where))
    rt.start(loop(STEPS), "race")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), kind, where, "race", str(go), str(STEPS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=worker_env(),
        )
        for _ in range(WORKERS)
    ]
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
        results.append(json.loads(out))

    recorded = [action for r in results for action in r["recorded"]]
    assert len(recorded) == STEPS == len(set(recorded))  # each step once, by exactly one process
    assert all(r["status"] == "completed" for r in results)
    assert rt.inspect("race").status == "completed"
    lost = Counter[str]()
    for r in results:
        lost.update(r["lost"])
    assert not any(code.startswith("record:") for code in lost), lost  # a claim once won is never lost
    assert sum(lost.values()) > 0, "the processes never raced"
    print(f"{kind}: {STEPS} steps, refused claims by code: {dict(lost)}")

    events = rt.events("race")
    revisions = [e["revision"] for e in events]
    assert revisions == sorted(revisions) and revisions[0] == 1
    assert sorted(set(revisions)) == list(range(1, revisions[-1] + 1))  # no gap: one linear history
    by_type = Counter(e["type"] for e in events)
    assert by_type["action_proposed"] == by_type["action_claimed"] == by_type["action_completed"] == STEPS
    completed = [e["actionId"] for e in events if e["type"] == "action_completed"]
    assert sorted(completed) == sorted(recorded)
