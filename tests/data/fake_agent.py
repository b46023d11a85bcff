#!/usr/bin/env python3
"""A stand-in agent CLI speaking the custom-adapter contract, for tests of the harness's agent plumbing.

    fake_agent.py -p PROMPT --output-format stream-json [--model M] [--resume SESSION]

Asked to play the simulated user, it answers with ``.fake-simulator.txt``. Otherwise it follows
``.fake-agent.json`` in its working directory: a list of turns, the N-th call of a session
playing turn N. A turn may write files (``write``; ``write_env``: a file holding the value of an
environment variable, and one named after it), print text, invoke a skill, echo its environment, sleep,
or end without a result event (an incomplete turn). It may be refused by a rate limit as Claude Code
reports one (``rate_limited``: true, every call; an absolute path, only a call that does not find the
file there, which it then leaves, so that the first attempt of a trial is refused and a retry is not).
Every call is appended to ``$HOME/calls.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from pathlib import Path


def emit(event: dict[str, object]) -> None:
    print(json.dumps(event), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-p", dest="prompt", required=True)
    parser.add_argument("--output-format", required=True)
    parser.add_argument("--model")
    parser.add_argument("--resume")
    parser.add_argument("--version", action="version", version="fake-agent 1.2.3")
    args = parser.parse_args()

    home = Path(os.environ["HOME"])
    home.mkdir(parents=True, exist_ok=True)
    session = args.resume or f"sess-{uuid.uuid4().hex[:8]}"
    counter = home / "sessions" / session
    counter.parent.mkdir(parents=True, exist_ok=True)
    index = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(index + 1))
    with (home / "calls.jsonl").open("a") as log:
        log.write(
            json.dumps(
                {"prompt": args.prompt, "resume": args.resume, "model": args.model, "session": session, "turn": index}
            )
            + "\n"
        )

    if args.prompt.startswith("You are simulating the user"):
        # Playing the simulated user: answer with the workspace's .fake-simulator.txt.
        reply = Path(".fake-simulator.txt").read_text().strip()
        emit({"type": "system", "subtype": "init", "session_id": session})
        emit({"type": "result", "subtype": "success", "is_error": False, "result": reply, "session_id": session})
        return 0
    plan = json.loads(Path(".fake-agent.json").read_text())
    turn = plan[min(index, len(plan) - 1)]
    emit({"type": "system", "subtype": "init", "session_id": session})
    if turn.get("sleep"):
        time.sleep(float(turn["sleep"]))
    limited = turn.get("rate_limited")
    if limited and not (isinstance(limited, str) and Path(limited).exists()):
        if isinstance(limited, str):
            Path(limited).write_text("refused once\n")
        return rate_limited(session)
    if turn.get("skill"):
        emit({"type": "skill_invocation", "skill": turn["skill"]})
    for path, content in (turn.get("write") or {}).items():
        Path(path).write_text(content)
        emit(
            {
                "type": "assistant",
                "session_id": session,
                "message": {
                    "id": f"m{index}-w",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": path}}],
                },
            }
        )
    for path, variable in (turn.get("write_env") or {}).items():
        value = os.environ.get(variable, "")
        Path(path).write_text(f"{variable}={value}\n")
        Path(f"named-{value}.txt").write_text("a file named after a value\n")
    if turn.get("bash"):
        emit(
            {
                "type": "assistant",
                "session_id": session,
                "message": {
                    "id": f"m{index}-b",
                    "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": turn["bash"]}}],
                },
            }
        )
    if turn.get("echo_env"):
        emit({"type": "debug", "env": dict(os.environ)})
    print("not json at all")
    text = turn.get("text", "done")
    emit(
        {
            "type": "assistant",
            "session_id": session,
            "message": {
                "id": f"m{index}",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        }
    )
    if turn.get("incomplete"):
        return 1
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": text,
            "session_id": session,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 2,
                "cache_creation_input_tokens": 1,
            },
            "total_cost_usd": 0.01,
        }
    )
    return 0


def rate_limited(session: str) -> int:
    """What Claude Code prints when the API refuses it with 429 after its own retries (its synthetic message)."""
    text = "API Error: 429 rate limit exceeded"
    emit({"type": "system", "subtype": "api_retry", "attempt": 1, "error": "rate_limit", "session_id": session})
    emit(
        {
            "type": "assistant",
            "session_id": session,
            "error": "rate_limit",
            "message": {"id": "synthetic", "model": "<synthetic>", "content": [{"type": "text", "text": text}]},
        }
    )
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "result": text,
            "session_id": session,
            "total_cost_usd": 0,
        }
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
