"""The per-turn events of raw streams (scaffold.agents.streams.timeline), from the captured fixtures in
tests/data/streams/ (real Claude Code and Codex captures, and hand-written pitfalls)."""

from __future__ import annotations

import json

from scaffold.agents.streams.timeline import MAX_EVENTS, MAX_TEXT, Timeline, stream_format, timeline
from tests.support.factories import REPO

STREAMS = REPO / "tests" / "data" / "streams"


def read(name: str, agent: str) -> Timeline:
    with (STREAMS / name).open(encoding="utf-8") as lines:
        return timeline(lines, agent)


def kinds(t: Timeline) -> list[str]:
    return [e.kind for e in t.events]


def test_real_claude_capture_pairs_each_call_with_its_result_and_reads_the_turn_end() -> None:
    t = read("claude-code-basic.jsonl", "claude-code")
    calls = t.tool_calls
    assert [c.name for c in calls] == ["Bash", "Skill", "Write"]
    assert calls[1].skill == "markdown-report" and not calls[1].skill_failed
    bash = calls[0]
    assert bash.command and bash.command.startswith("ls -la /workspace")
    assert bash.result is not None and "total 12" in bash.result.text
    assert bash.is_error is False and bash.exit_code == 0
    assert all(c.result is not None for c in calls)
    assert kinds(t)[0] == "session" and "2.1.112" in t.events[0].label
    texts = [e.text.text for e in t.events if e.kind == "text" and e.text]
    assert texts[0] == "I'll look around first." and texts[-1] == "Done: result.md written."
    # The result event: cost, duration, totals.
    assert t.cost_usd == 0.0024000000000000002 and t.duration_s == 0.405 and t.outcome == "success"
    assert t.tokens is not None and (t.tokens.input, t.tokens.output) == (400, 80)
    assert t.model_messages == len([e for e in t.events if e.kind == "message"]) > 0
    assert t.final_text == "Done: result.md written." and not t.is_error


def test_failed_skill_call_is_marked_failed_with_the_clis_answer() -> None:
    t = read("claude-skill-unknown.jsonl", "claude-code")
    skill = t.tool_calls[0]
    assert (skill.name, skill.skill, skill.skill_failed, skill.is_error) == ("Skill", "markdown-report", True, True)
    assert skill.result is not None and "Unknown skill: markdown-report" in skill.result.text


def test_pitfalls_sub_agents_retries_denials_and_repeated_usage() -> None:
    t = read("claude-pitfalls.jsonl", "claude-code")
    by_name = {c.id: c for c in t.tool_calls}
    assert by_name["toolu_01"].skill == "pdf-tools" and not by_name["toolu_01"].skill_failed
    assert by_name["toolu_02"].skill == "csv-kit" and not by_name["toolu_02"].skill_failed  # Read of SKILL.md
    assert by_name["toolu_03"].is_error is True  # the write the permission check refused
    assert by_name["toolu_05"].is_error is True and by_name["toolu_05"].exit_code is None  # no "Exit code" line
    sub = [e for e in t.events if e.sub]
    assert sub and all(e.sub for e in sub) and any(e.call and e.call.id == "toolu_sub_01" for e in sub)
    assert by_name["toolu_sub_01"].result is None  # never answered
    retries = [e for e in t.events if e.kind == "api"]
    assert (
        len(retries) == 1 and not retries[0].final and "overloaded" in (retries[0].text.text if retries[0].text else "")
    )
    denials = [e for e in t.events if e.kind == "denial"]
    assert [d.label for d in denials] == ["Write"] and denials[0].text and "new-skill" in denials[0].text.text
    # One message per id: its usage repeated on each line counted once, the last one kept.
    messages = [e for e in t.events if e.kind == "message" and not e.sub]
    assert len(messages) == t.model_messages == 5
    assert t.malformed == 3 and t.cost_usd == 0.0421 and t.duration_s == 12.345


def test_failed_bash_result_gives_the_exit_code() -> None:
    lines = [
        json.dumps({"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat missing.txt"}}]}}),
        json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": "Exit code 1\ncat: missing.txt: No such file or directory"}]}}),
    ]  # fmt: skip
    call = timeline(lines, "claude-code").tool_calls[0]
    assert (call.command, call.exit_code, call.is_error) == ("cat missing.txt", 1, True)


def test_api_failure_at_the_end_is_final_with_its_status_once() -> None:
    t = read("claude-http-500.jsonl", "claude-code")
    api = [e for e in t.events if e.kind == "api"]
    assert len(api) == 1 and api[0].final and "500" in (api[0].text.text if api[0].text else "")


def test_codex_commands_exit_codes_skills_and_failures() -> None:
    t = read("codex-pitfalls.jsonl", "codex")
    shells = [c for c in t.tool_calls if c.name == "shell"]
    assert shells[0].command == "cat .agents/skills/csv-kit/SKILL.md" and shells[0].skill == "csv-kit"
    assert (
        shells[0].exit_code == 0
        and not shells[0].skill_failed
        and "name: csv-kit" in (shells[0].result.text if shells[0].result else "")
    )
    assert len(shells) == 2  # the repeated completed item is shown once
    assert any(c.name == "file_change" for c in t.tool_calls)
    assert [e.label for e in t.events if e.kind == "message"] == ["turn.completed", "turn.completed"]
    assert t.tokens is not None and t.tokens.cache_read == 2100 and t.malformed == 2
    assert any(e.kind == "api" and not e.final for e in t.events)  # "Reconnecting..." retry
    failed = read("codex-failed.jsonl", "codex")
    assert failed.is_error and failed.outcome == "turn.failed"
    assert any(e.kind == "api" and e.final and e.text and "401" in e.text.text for e in failed.events)


def test_codex_failed_command_is_an_error_with_its_exit_code() -> None:
    lines = [
        json.dumps({"type": "item.started", "item": {"id": "i1", "type": "command_execution",
                    "command": "/bin/bash -lc 'cat .agents/skills/x/SKILL.md'", "exit_code": None}}),
        json.dumps({"type": "item.completed", "item": {"id": "i1", "type": "command_execution",
                    "command": "/bin/bash -lc 'cat .agents/skills/x/SKILL.md'", "aggregated_output": "no such file",
                    "exit_code": 2, "status": "failed"}}),
    ]  # fmt: skip
    call = timeline(lines, "codex").tool_calls[0]
    assert (call.exit_code, call.is_error, call.skill, call.skill_failed) == (2, True, "x", True)


def test_custom_agents_lines_stay_raw_and_bad_input_never_raises() -> None:
    assert stream_format("my-adapter") == "raw" and stream_format("qoder") == "claude"
    t = read("custom-agent.jsonl", "my-adapter")
    assert t.format == "raw" and kinds(t) == ["raw"] * 7
    odd = timeline(
        ["{", "[]", '{"type": "assistant", "message": 3}', '{"type": "user", "message": {"content": 5}}'], "claude-code"
    )
    assert odd.malformed == 2 and odd.events == []


def test_bounds_on_texts_and_events() -> None:
    big = "x" * (MAX_TEXT * 2)
    lines = [json.dumps({"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": big}]}})]
    text = timeline(lines, "claude-code").events[-1].text
    assert text is not None and len(text.text) == MAX_TEXT and text.size == len(big)
    many = (
        json.dumps({"type": "assistant", "message": {"id": f"m{i}", "content": []}}) for i in range(MAX_EVENTS + 10)
    )
    t = timeline(many, "claude-code")
    assert len(t.events) == MAX_EVENTS and t.dropped == 10 and t.model_messages == MAX_EVENTS + 10
