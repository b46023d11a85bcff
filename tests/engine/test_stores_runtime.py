"""The Runtime over durable stores across real processes: crashes never re-dispatch silently, races resolve once.

Each scenario runs the runtime in separate Python processes (tests/engine/runtime_worker.py) on the file
store and on SQLite. The executor writes the action id to a dispatch log (fsynced) before it returns, so
the log counts real dispatches even when its process is killed right after.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from comet_engine import Outcome, Runtime
from comet_engine.stores.codec import CRASH_ENV
from tests.engine.runtime_worker import DIE_ENV, LEASE_SECONDS, chain, gate, runtime
from tests.engine.test_stores_processes import FILE_POINTS, location, worker_env

WORKER = Path(__file__).with_name("runtime_worker.py")
DURABLE = ["file", "sqlite"]
EXPIRED = str(2 * LEASE_SECONDS)  # a clock offset past every lease taken "now"


def spawn(*args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_env(**env),
    )


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    value: dict[str, Any] = json.loads(out)
    return value


def killed(proc: subprocess.Popen[str]) -> None:
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err


def dispatched(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def started_chain(kind: str, tmp_path: Path) -> tuple[str, Runtime]:
    """A chain run started in this process: its store location and the runtime that started it."""
    where = location(kind, tmp_path)
    rt = runtime(kind, where)
    rt.start(chain(), "r")
    return where, rt


def action_ids(rt: Runtime) -> dict[str, str]:
    return {event["step"]: event["actionId"] for event in rt.events("r") if event["type"] == "action_proposed"}


@pytest.mark.parametrize("kind", DURABLE)
def test_an_action_whose_process_died_is_flagged_and_never_dispatched_again(kind: str, tmp_path: Path) -> None:
    where, rt = started_chain(kind, tmp_path)
    log = tmp_path / "dispatch.log"
    killed(spawn("drive", kind, where, "r", str(log), **{DIE_ENV: "1"}))  # dies after the side effect
    first = action_ids(rt)["a"]
    assert dispatched(log) == [first]
    # A new process sees the claim: the action is in flight (its lease runs), not pending again.
    in_flight = finish(spawn("drive", kind, where, "r", str(log)))
    assert (in_flight["reason"], in_flight["action"]) == ("action-in-flight", first)
    # Once the lease has expired the result counts as lost: execution-unknown, still not re-dispatched.
    assert finish(spawn("drive", kind, where, "r", str(log), EXPIRED))["reason"] == "execution-unknown"
    assert dispatched(log) == [first]
    state = runtime(kind, where).inspect("r")
    assert {a.id: a.status for a in state.actions}[first] == "unknown"


def crash_cases() -> list[tuple[str, str, bool]]:
    """(store, crash point, published): the Nth durable commit of the worker is the one killed."""
    cases = [("file", point, published) for point, published in FILE_POINTS.items()]
    return [*cases, ("sqlite", "sqlite-mid-transaction", False)]


@pytest.mark.parametrize(("kind", "point", "published"), crash_cases())
@pytest.mark.parametrize("commit", ["claim", "record"])
def test_sigkill_in_a_claim_or_record_commit_never_dispatches_twice_unflagged(
    kind: str, point: str, published: bool, commit: str, tmp_path: Path
) -> None:
    where, rt = started_chain(kind, tmp_path)
    log = tmp_path / "dispatch.log"
    nth = 1 if commit == "claim" else 2  # the worker's first commit claims action a, its second records it
    killed(spawn("drive", kind, where, "r", str(log), **{CRASH_ENV: f"{point}#{nth}"}))
    ids = action_ids(rt)
    a = ids["a"]
    assert dispatched(log) == ([] if commit == "claim" else [a])
    after = finish(spawn("drive", kind, where, "r", str(log)))
    claim_published = commit == "record" or published
    record_published = commit == "record" and published
    if not claim_published:
        # The claim never became visible: nothing was dispatched, so running the action now is its first time.
        assert after["reason"] == "completed"
    elif not record_published:
        # Claimed (and perhaps executed) but no outcome: flagged as in flight, never silently run again.
        assert (after["reason"], after["action"]) == ("action-in-flight", a)
        expired = finish(spawn("drive", kind, where, "r", str(log), EXPIRED))
        assert (expired["reason"], expired["action"]) == ("execution-unknown", a)
    else:
        assert after["reason"] == "completed"
    log_now = dispatched(log)
    assert len(log_now) == len(set(log_now)), f"an action was dispatched twice: {log_now}"
    # The history stays whole: every revision 1..N published events (the runtime never commits an empty
    # change), in order, and the torn tail of the killed commit is gone.
    reader = runtime(kind, where)
    revisions = [e["revision"] for e in reader.events("r")]
    assert revisions == sorted(revisions)
    assert sorted(set(revisions)) == list(range(1, reader.inspect("r").revision + 1))


@pytest.mark.slow
@pytest.mark.parametrize("kind", DURABLE)
def test_two_simultaneous_opposite_approvals_exactly_one_accepted(kind: str, tmp_path: Path) -> None:
    where = location(kind, tmp_path)
    rt = runtime(kind, where)
    for round_ in range(5):
        run_id = f"gate-{round_}"
        rt.start(gate(), run_id)
        blocked = rt.run_until_blocked(run_id)
        assert blocked.reason == "approval-required"
        assert blocked.wait is not None
        go = tmp_path / f"go-{round_}"
        procs = [
            spawn("decide", kind, where, run_id, blocked.wait.id, blocked.wait.digest, choice, str(go))
            for choice in ("approved", "rejected")
        ]
        go.touch()
        results = [finish(proc) for proc in procs]
        assert sorted(r["accepted"] for r in results) == [False, True], results
        resolved = [e for e in runtime(kind, where).events(run_id) if e["type"] == "wait_resolved"]
        assert len(resolved) == 1
        winner = ("approved", "rejected")[[r["accepted"] for r in results].index(True)]
        assert resolved[0]["decision"] == winner


@pytest.mark.slow
@pytest.mark.parametrize("kind", DURABLE)
def test_a_thousand_resubmissions_of_one_outcome_leave_one_trajectory_entry(kind: str, tmp_path: Path) -> None:
    where, rt = started_chain(kind, tmp_path)
    a = action_ids(rt)["a"]
    claim = rt.claim("r", a)
    first = rt.record_outcome(
        "r", a, attempt=claim.attempt, token=claim.token, outcome=Outcome.succeeded({"step": "a"})
    )
    revision = rt.inspect("r").revision
    go = tmp_path / "go"
    procs = [spawn("resubmit", kind, where, "r", a, str(claim.attempt), claim.token, "250", str(go)) for _ in range(4)]
    go.touch()
    receipts = {receipt for proc in procs for receipt in finish(proc)["receipts"]}
    assert receipts == {repr(first)}
    assert runtime(kind, where).inspect("r").revision == revision
    completed = [e for e in rt.events("r") if e["type"] == "action_completed" and e["actionId"] == a]
    assert len(completed) == 1
