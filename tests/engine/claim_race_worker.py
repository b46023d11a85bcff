"""A process that races others to claim and record the actions of one run (run as a script, not collected).

    python claim_race_worker.py <kind> <location> <run id> <go file> <steps>

The run is a self-loop (tests/engine/test_claim_race.py): one pending action at a time. The worker
inspects the run, claims its pending action and records its outcome; another process may claim first
(a typed ``RejectedError``, or ``ConflictError`` from the store when a commit raced), and then it tries
the next one. The last step's outcome routes out of the loop, which completes the run. Prints one JSON
object: the actions this worker recorded and how many claims or records it lost, by error code.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from comet_engine import Outcome, RejectedError, Runtime, define_workflow, skill
from comet_engine.definitions import Workflow
from comet_engine.errors import ConflictError
from comet_engine.guardrails import Guardrails
from tests.engine.store_worker import open_store


def loop(steps: int) -> Workflow:
    """One skill step that follows itself on the outcome "again"; "stop" matches no edge and ends the run."""
    return define_workflow(
        "claim-race",
        "1",
        entry="work",
        steps={"work": skill("work")},
        transitions=[("work", "work", "again")],
        guardrails=Guardrails(max_iterations=steps + 1),
        transition_limit=steps + 1,
    )


def main(kind: str, location: str, run_id: str, go: str, steps: str) -> None:
    rt = Runtime(open_store(kind, location))
    rt.register(loop(int(steps)))
    while not Path(go).exists():  # start together, so the claims really race
        time.sleep(0.001)
    recorded: list[str] = []
    lost: Counter[str] = Counter()
    while True:
        state = rt.inspect(run_id)
        if state.status not in {"running", "waiting"}:
            break
        pending = [a for a in state.open_actions() if a.status == "pending"]
        if not pending:
            continue  # claimed by another process, its outcome not in yet
        action = pending[0]
        try:
            claim = rt.claim(run_id, action.id)
        except (RejectedError, ConflictError) as exc:
            lost[getattr(exc, "code", "conflict")] += 1
            continue
        route = "again" if action.iteration < int(steps) - 1 else "stop"  # iterations count from 0
        try:
            rt.record_outcome(
                run_id,
                claim.action_id,
                attempt=claim.attempt,
                token=claim.token,
                outcome=Outcome.succeeded({"by": sys.argv[0]}, route=route),
            )
        except (RejectedError, ConflictError) as exc:  # never expected: the claim was ours
            lost["record:" + getattr(exc, "code", "conflict")] += 1
            continue
        recorded.append(claim.action_id)
    print(json.dumps({"recorded": recorded, "lost": dict(lost), "status": state.status}))


if __name__ == "__main__":
    main(*sys.argv[1:6])
