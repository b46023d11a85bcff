"""A separate process that drives the Runtime over a durable store (run as a script, not collected).

    python runtime_worker.py drive    <kind> <location> <run id> <dispatch log> [clock offset s]
    python runtime_worker.py decide   <kind> <location> <run id> <wait id> <digest> <choice> <go file>
    python runtime_worker.py resubmit <kind> <location> <run id> <action id> <attempt> <token> <n> <go file>

``drive`` runs ``run_until_blocked``; the executor of ref ``work`` appends the action id to the dispatch
log *before* returning (the side effect), so a test can count real dispatches even when the process is
killed right after. With ``COMET_ENGINE_DIE_IN_EXECUTOR=1`` the executor SIGKILLs its process after the
side effect. Every command prints one JSON object.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from comet_engine import ExecutionContext, Outcome, RejectedError, Runtime, approval, define_workflow, skill
from comet_engine.definitions import Workflow
from tests.engine.store_worker import open_store

DIE_ENV = "COMET_ENGINE_DIE_IN_EXECUTOR"
LEASE_SECONDS = 60.0


def chain() -> Workflow:
    """Three skill steps in a line: enough to see each action dispatched once across crashes."""
    return define_workflow(
        "chain",
        "1",
        entry="a",
        steps={"a": skill("work"), "b": skill("work"), "c": skill("work")},
        transitions=[("a", "b"), ("b", "c")],
    )


def gate() -> Workflow:
    """One approval: two processes decide it at once with opposite choices."""
    return define_workflow(
        "gate",
        "1",
        entry="ask",
        steps={"ask": approval(question="Ship it?", proposal={"version": "1.2.3"}), "ship": skill("work")},
        transitions=[("ask", "ship", "approved")],
    )


def runtime(kind: str, location: str, clock_offset: float = 0.0) -> Runtime:
    rt = Runtime(open_store(kind, location), clock=lambda: time.time() + clock_offset, lease_seconds=LEASE_SECONDS)
    rt.register(chain(), gate())
    return rt


def wait_for(go: Path) -> None:
    while not go.exists():
        time.sleep(0.001)


def drive(rt: Runtime, run_id: str, log: Path) -> dict[str, Any]:
    def work(value: Any, ctx: ExecutionContext) -> dict[str, Any]:
        with log.open("a") as file:
            file.write(ctx.action_id + "\n")
            file.flush()
            os.fsync(file.fileno())
        if os.environ.get(DIE_ENV) == "1":
            os.kill(os.getpid(), signal.SIGKILL)
        return {"step": ctx.step}

    rt.register_executor("work", work)
    blocked = rt.run_until_blocked(run_id)
    action = blocked.action.id if blocked.action else None
    return {"reason": blocked.reason, "action": action, "status": blocked.run.status}


def main(argv: list[str]) -> None:
    command, kind, location, run_id, *rest = argv
    if command == "drive":
        log, *offset = rest
        print(json.dumps(drive(runtime(kind, location, float(offset[0]) if offset else 0.0), run_id, Path(log))))
    elif command == "decide":
        wait_id, digest, choice, go = rest
        rt = runtime(kind, location)
        wait_for(Path(go))
        try:
            rt.resolve_wait(run_id, wait_id, proposal_digest=digest, choice=choice)
        except RejectedError as err:
            print(json.dumps({"accepted": False, "code": err.code}))
        else:
            print(json.dumps({"accepted": True}))
    elif command == "resubmit":
        action_id, attempt, token, count, go = rest
        rt = runtime(kind, location)
        wait_for(Path(go))
        outcome = Outcome.succeeded({"step": "a"})
        receipts = {
            repr(rt.record_outcome(run_id, action_id, attempt=int(attempt), token=token, outcome=outcome))
            for _ in range(int(count))
        }
        print(json.dumps({"receipts": sorted(receipts)}))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
