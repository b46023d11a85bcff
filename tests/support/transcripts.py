"""Trials for the transcript tests and benchmark: Claude Code turn streams of any size, and a long trial."""

from __future__ import annotations

import json
from typing import Any

from scaffold.agents.streams.timeline import timeline
from scaffold.records import TrialRecord
from scaffold.reports.transcript import TrialFolder, TurnStream
from tests.support.records import judge_info, judged, rec

__all__ = ["CHANGES", "EVIL", "claude_lines", "long_trial", "transcript_record"]

EVIL = "<script>alert('x')</script>"
"""Planted in every text: a page must show it escaped, never run it."""


def claude_lines(turn: int, calls: int, result: str) -> list[str]:
    """A Claude Code turn's stream: *calls* Bash calls (the last one fails with exit code 2), each answered
    with *result*, then the turn's result event (cost, duration, usage, a permission denial)."""
    lines = [json.dumps({"type": "system", "subtype": "init", "model": "m", "claude_code_version": "2.1.112"})]
    for i in range(calls):
        tool_id = f"t{turn}-{i}"
        message = {
            "id": f"m{turn}-{i}",
            "model": "m",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {"type": "text", "text": f"step {i} {EVIL}"},
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": f"echo {i} {EVIL}"}},
            ],
        }
        failed = i == calls - 1
        content = ("Exit code 2\n" if failed else "") + result
        answer = {"content": [{"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": failed}]}
        lines += [
            json.dumps({"type": "assistant", "message": message}),
            json.dumps({"type": "user", "message": answer}),
        ]
    result_event = {
        "type": "result",
        "subtype": "success",
        "total_cost_usd": 0.25,
        "duration_ms": 1500,
        "usage": {"input_tokens": 100, "output_tokens": 50},
        "result": "done",
        "permission_denials": [{"tool_name": "WebFetch", "tool_input": {"url": EVIL}}],
    }
    return [*lines, json.dumps(result_event)]


CHANGES: dict[str, Any] = {
    "version": 1,
    "root": "/workspace",
    "files": [
        {"path": "big.bin", "status": "added", "size": 4, "size_before": None, "binary": True, "diff": None,
         "omitted": "binary"},
        {"path": f"src/{EVIL}.py", "status": "modified", "size": 20, "size_before": 10, "binary": False,
         "diff": f"--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-old\n+new {EVIL}\n", "omitted": None},
        {"path": "gone.txt", "status": "deleted", "size": None, "size_before": 3, "binary": False, "diff": None,
         "omitted": "too large"},
    ],
    "truncated": False,
    "counts": {"added": 1, "modified": 1, "deleted": 1},
}  # fmt: skip


def transcript_record(**fields: Any) -> TrialRecord:
    """A failed Claude Code trial with a skill, a failed check, rule and judge dimensions, flagged noise."""
    base: dict[str, Any] = {
        "agent": {"name": "claude-code", "model": "claude-sonnet-4-5", "version": "2.1.112"},
        "config": {"treatment": {"name": "SKILL", "skills": [{"name": "report-skill", "content_hash": "sha256:ab"}]}},
        "checks": [{"name": f"title {EVIL}", "status": "failed", "source": "script:test_x.py", "reason": EVIL}],
        "dimensions": [
            {"name": "completion", "weight": 3.0, "score": 0.5, "reason": f"half {EVIL}"},
            {"name": "skill_invocation", "weight": 1.0, "score": None, "reason": "N/A here"},
            *judged(output_quality=0.8),
        ],
        "judge": judge_info(),
        "noise": {
            "category": "flagged",
            "reason": "validator_assumption",
            "source": "text",
            "evidence": {"line": EVIL},
        },
        "streams": ("agent.turn-1.jsonl", "agent.turn-1.stderr.log"),
        **fields,
    }
    return rec(f"task{EVIL}", "SKILL", 1, "failed", **base)


def long_trial(
    turns: int = 200, calls: int = 12, result_chars: int = 380_000, line: str = "line of output <b>\n"
) -> TrialFolder:
    """A trial of *turns* conversation turns (simulated replies), each with *calls* tool calls whose
    results are *result_chars* of *line* repeated, an instruction of it too, and 50 changed files with
    200,000-line diffs: far more than a page may hold."""
    read = timeline(claude_lines(1, calls, line * (result_chars // len(line))), "claude-code")
    log = tuple(
        {"turn": i, "prompt_kind": "reply", "prompt": "go on " * 500, "decision": True, "pattern": "question",
         "reply": "yes " * 600, "reply_source": "simulator"}
        for i in range(1, turns + 1)
    )  # fmt: skip
    diff = "\n".join(f"+added line {i} {EVIL}" for i in range(200_000))
    files = [{**CHANGES["files"][1], "path": f"f{i}.py", "diff": diff} for i in range(50)]
    trajectory = {"agent": "claude-code", "conversation_turns": turns, "interaction_log": log}
    return TrialFolder(
        transcript_record(trajectory=trajectory),
        instruction=line * (1_000_000 // len(line)),
        turns=tuple(TurnStream(i, f"agent.turn-{i}.jsonl", read) for i in range(1, turns + 1)),  # one turn's events
        changes={**CHANGES, "files": files},
    )
